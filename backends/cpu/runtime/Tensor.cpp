//===- Tensor.cpp - Tensor movement ---------------------------------------===//
//
// The kernels that move elements without computing on them: transpose, the
// strided boxes of slice and insert (slice, its gradient, concat and pad,
// laid out by backends/common/Box.h), gather with its gradient, and copy;
// and resize, which moves elements with interpolation
// (backends/common/Resize.h).
//
//===----------------------------------------------------------------------===//

#include "backends/cpu/runtime/Internal.h"

#include "backends/common/Box.h"
#include "backends/common/Resize.h"

#include <cstring>

using namespace dpc::cpu;

namespace {

// The box of a strided slice as forEachRow walks it: its strides in the
// whole tensor (backends/common/Box.h), the offset of its first element,
// and its last dimension's size and stride.
struct BoxWalk {
  std::vector<int64_t> strides;
  int64_t base = 0, lastStep = 1, last = 1;
};

BoxWalk boxWalk(const char *kernel, const int64_t *whole, const int64_t *box,
                int64_t rank, const int64_t *offsets, const int64_t *steps) {
  BoxWalk walk;
  walk.strides.assign(size_t(rank), 1);
  int64_t bad = dpc::box::layout(whole, box, rank, offsets, steps,
                                 walk.strides.data(), walk.base);
  if (bad >= 0)
    fail(kernel, "box " + shapeText(box, int(rank)) + " out of " +
                     shapeText(whole, int(rank)) + " in dimension " +
                     std::to_string(bad));
  if (rank) {
    walk.lastStep = walk.strides.back();
    walk.last = box[rank - 1];
  }
  return walk;
}

/// Calls row(offsetInWhole, offsetInBox) for every last-dimension run of the
/// box, the box's leading slices on the kernel threads.
template <typename Row>
void forEachBoxSlice(const int64_t *box, int64_t rank, const BoxWalk &walk,
                     Row row) {
  if (rank < 2) {
    forEachRow(box, rank, walk.strides, walk.strides,
               [&](int64_t ow, int64_t, int64_t ob) { row(ow, ob); });
    return;
  }
  std::vector<int64_t> rest(walk.strides.begin() + 1, walk.strides.end());
  int64_t slice = dpc::box::elements(box + 1, rank - 1);
  parallelFor(box[0], box[0] * slice, [&](int64_t s) {
    forEachRow(box + 1, rank - 1, rest, rest,
               [&](int64_t ow, int64_t, int64_t ob) {
                 row(s * walk.strides[0] + ow, s * slice + ob);
               });
  });
}

// Every axis's taps (by output index) and readers (by input index), built
// once a call from the same functions the per-element path calls, so the
// kernels read the same elements with the same weights without a floor or
// a binary search an element.
struct TapTables {
  std::vector<dpc::resize::Taps> taps[dpc::resize::kMaxAxes];
  std::vector<int64_t> lo[dpc::resize::kMaxAxes], hi[dpc::resize::kMaxAxes];

  TapTables(const dpc::resize::Geometry &g, bool readers) {
    for (int a = 0; a < dpc::resize::kMaxAxes; ++a) {
      const dpc::resize::Axis &axis = g.axis[a];
      for (int64_t o = 0; o < axis.out; ++o)
        taps[a].push_back(dpc::resize::taps(g, axis, o));
      for (int64_t i = 0; readers && i < axis.in; ++i) {
        int64_t l, h;
        dpc::resize::readers(g, axis, i, l, h);
        lo[a].push_back(l);
        hi[a].push_back(h);
      }
    }
  }
  dpc::resize::Taps at(int axis, int64_t o) const { return taps[axis][o]; }
  void readersOf(int axis, int64_t i, int64_t &l, int64_t &h) const {
    l = lo[axis][i];
    h = hi[axis][i];
  }
};

} // namespace

extern "C" {

void dpc_transpose(const float *x, const int64_t *x_shape, float *y,
                   const int64_t *perm, int64_t rank) {
  // y's dimension d walks x with the stride of x's dimension perm[d].
  size_t n = size_t(rank);
  std::vector<int64_t> xStrides(n, 1), yShape(n), strides(n);
  std::vector<bool> seen(n, false);
  for (int64_t d = rank - 2; d >= 0; --d)
    xStrides[size_t(d)] = xStrides[size_t(d + 1)] * x_shape[d + 1];
  for (int64_t d = 0; d < rank; ++d) {
    if (perm[d] < 0 || perm[d] >= rank || seen[size_t(perm[d])])
      fail("dpc_transpose",
           "not a permutation of " + std::to_string(rank) + " dimensions");
    seen[size_t(perm[d])] = true;
    yShape[size_t(d)] = x_shape[perm[d]];
    strides[size_t(d)] = xStrides[size_t(perm[d])];
  }
  int64_t last = rank ? yShape.back() : 1, step = rank ? strides.back() : 0;
  // y's leading slices on the kernel threads (the leading dimension split
  // off when there are two or more); each walks the rest in rows.
  int64_t split = rank > 1 ? 1 : 0;
  int64_t lead = split ? yShape[0] : 1;
  std::vector<int64_t> restShape(yShape.begin() + split, yShape.end());
  std::vector<int64_t> restStrides(strides.begin() + split, strides.end());
  int64_t slice =
      dpc::box::elements(restShape.data(), int64_t(restShape.size()));
  parallelFor(lead, lead * slice, [&](int64_t s) {
    const float *xs = x + (split ? s * strides[0] : 0);
    float *ys = y + s * slice;
    forEachRow(restShape.data(), int64_t(restShape.size()), restStrides,
               restStrides, [&](int64_t ox, int64_t, int64_t oy) {
                 const float *px = xs + ox;
                 float *py = ys + oy;
                 for (int64_t i = 0; i < last; ++i)
                   py[i] = px[i * step];
               });
  });
}

void dpc_slice(const float *whole, const int64_t *whole_shape, float *box,
               const int64_t *box_shape, int64_t rank, const int64_t *offsets,
               const int64_t *steps) {
  BoxWalk w =
      boxWalk("dpc_slice", whole_shape, box_shape, rank, offsets, steps);
  forEachBoxSlice(box_shape, rank, w, [&](int64_t ow, int64_t ob) {
    const float *from = whole + w.base + ow;
    for (int64_t i = 0; i < w.last; ++i)
      box[ob + i] = from[i * w.lastStep];
  });
}

void dpc_insert(const float *box, const int64_t *box_shape, float *whole,
                const int64_t *whole_shape, int64_t rank,
                const int64_t *offsets, const int64_t *steps, int64_t fill_rest,
                float fill_value) {
  BoxWalk w =
      boxWalk("dpc_insert", whole_shape, box_shape, rank, offsets, steps);
  if (fill_rest)
    parallelChunks(dpc::box::elements(whole_shape, rank),
                   [&](int64_t begin, int64_t end) {
                     std::fill(whole + begin, whole + end, fill_value);
                   });
  forEachBoxSlice(box_shape, rank, w, [&](int64_t ow, int64_t ob) {
    float *to = whole + w.base + ow;
    for (int64_t i = 0; i < w.last; ++i)
      to[i * w.lastStep] = box[ob + i];
  });
}

static int64_t gatherRow(const char *kernel, const int64_t *indices, int64_t i,
                         int64_t rows) {
  int64_t index = indices[i];
  if (index < -rows || index >= rows)
    fail(kernel, "index " + std::to_string(index) + " at position " +
                     std::to_string(i) + " is outside the table's " +
                     std::to_string(rows) + " rows");
  return index < 0 ? index + rows : index;
}

void dpc_gather(const float *table, const int64_t *indices, int64_t rows,
                int64_t width, int64_t n, float *out) {
  for (int64_t i = 0; i < n; ++i)
    std::memcpy(out + i * width,
                table + gatherRow("dpc_gather", indices, i, rows) * width,
                size_t(width) * sizeof(float));
}

void dpc_gather_grad(const float *dy, const int64_t *indices, int64_t rows,
                     int64_t width, int64_t n, float *dtable) {
  std::fill(dtable, dtable + rows * width, 0.0f);
  for (int64_t i = 0; i < n; ++i) {
    float *row =
        dtable + gatherRow("dpc_gather_grad", indices, i, rows) * width;
    const float *g = dy + i * width;
    for (int64_t j = 0; j < width; ++j)
      row[j] += g[j];
  }
}

static dpc::resize::Geometry resizeGeometry(const char *kernel,
                                            const int64_t *x_shape,
                                            const int64_t *y_shape,
                                            int64_t rank,
                                            const dpc_resize_params *p) {
  dpc::resize::Geometry g;
  if (!dpc::resize::makeGeometry(x_shape, y_shape, rank, *p, g))
    fail(kernel, "cannot resize " +
                     shapeText(x_shape, int(std::clamp<int64_t>(rank, 0, 8))) +
                     " to " +
                     shapeText(y_shape, int(std::clamp<int64_t>(rank, 0, 8))) +
                     " with these codes");
  return g;
}

// One output (forward) or input (gradient) row of a plane per iteration,
// each written by one thread.
void dpc_resize(const float *x, const int64_t *x_shape, float *y,
                const int64_t *y_shape, int64_t rank,
                const dpc_resize_params *params) {
  dpc::resize::Geometry g =
      resizeGeometry("dpc_resize", x_shape, y_shape, rank, params);
  int64_t in = dpc::resize::inputPlane(g), out = dpc::resize::outputPlane(g);
  int64_t height = g.axis[1].out, width = g.axis[2].out;
  int64_t rows = g.planes * (out / width);
  TapTables t(g, /*readers=*/false);
  parallelFor(rows, rows * width * 8, [&](int64_t r) {
    int64_t plane = r / (out / width), rowInPlane = r % (out / width);
    dpc::resize::Taps td = t.at(0, rowInPlane / height),
                      th = t.at(1, rowInPlane % height);
    float *row = y + plane * out + rowInPlane * width;
    for (int64_t i = 0; i < width; ++i)
      row[i] = dpc::resize::combine(x + plane * in, g, td, th, t.at(2, i));
  });
}

void dpc_resize_grad(const float *dy, const int64_t *dy_shape, float *dx,
                     const int64_t *dx_shape, int64_t rank,
                     const dpc_resize_params *params) {
  dpc::resize::Geometry g =
      resizeGeometry("dpc_resize_grad", dx_shape, dy_shape, rank, params);
  int64_t in = dpc::resize::inputPlane(g), out = dpc::resize::outputPlane(g);
  int64_t height = g.axis[1].in, width = g.axis[2].in;
  int64_t rows = g.planes * (in / width);
  int64_t reads = (out + in - 1) / in + 1;
  TapTables t(g, /*readers=*/true);
  parallelFor(rows, rows * width * reads * 4, [&](int64_t r) {
    int64_t plane = r / (in / width), rowInPlane = r % (in / width);
    float *row = dx + plane * in + rowInPlane * width;
    for (int64_t i = 0; i < width; ++i)
      row[i] = dpc::resize::gradientAt(
          dy + plane * out, g, t, rowInPlane / height, rowInPlane % height, i);
  });
}

void dpc_copy(const void *src, void *dst, int64_t bytes) {
  if (bytes > 0 && src != dst)
    std::memmove(dst, src, size_t(bytes));
}

} // extern "C"
