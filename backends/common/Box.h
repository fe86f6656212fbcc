//===- Box.h - The layout of a strided box in a tensor ----------*- C++ -*-===//
//
// dpc_slice and dpc_insert copy a strided box out of and into a row-major
// tensor on both targets; this is where the box's layout is checked and
// computed once for both (on the host, before a loop or a launch).
//
//===----------------------------------------------------------------------===//

#ifndef DPC_BACKENDS_COMMON_BOX_H
#define DPC_BACKENDS_COMMON_BOX_H

#include <cstdint>

namespace dpc::box {

/// Fills `strides` (one per dimension: the whole tensor's row-major stride
/// times the step, the distance between neighbours of the box) and `base`
/// (the offset of the box's first element), and returns -1; or returns the
/// first dimension, counted from the last, where the box (`box` elements at
/// `offsets` with `steps`) leaves `whole` or a step or offset is invalid.
inline int64_t layout(const int64_t *whole, const int64_t *box, int64_t rank,
                      const int64_t *offsets, const int64_t *steps,
                      int64_t *strides, int64_t &base) {
  base = 0;
  int64_t stride = 1;
  for (int64_t d = rank - 1; d >= 0; --d) {
    if (steps[d] < 1 || offsets[d] < 0 ||
        (box[d] > 0 && offsets[d] + (box[d] - 1) * steps[d] >= whole[d]))
      return d;
    strides[d] = stride * steps[d];
    base += offsets[d] * stride;
    stride *= whole[d];
  }
  return -1;
}

/// The number of elements of a tensor of `shape`.
inline int64_t elements(const int64_t *shape, int64_t rank) {
  int64_t count = 1;
  for (int64_t d = 0; d < rank; ++d)
    count *= shape[d];
  return count;
}

} // namespace dpc::box

#endif // DPC_BACKENDS_COMMON_BOX_H
