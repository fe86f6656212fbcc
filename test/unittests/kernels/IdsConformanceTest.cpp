//===- IdsConformanceTest.cpp - int64 ids through the layout kernels ------===//
//
// Slices, concats and transposes of int64 ids (#43) run dpc_slice,
// dpc_insert and dpc_transpose on the ids' 32-bit words: an int64 tensor of
// shape S is passed as a float tensor of shape S x 2 whose last dimension
// goes whole (passes/lowering/Views.cpp). The kernels must move those words
// bit for bit, including words that as floats are NaNs, infinities and
// subnormals, so the ids here are such patterns, checked against the int64
// result computed on the host. Part of the conformance suite
// (ConformanceTest.cpp): compiled once per target.
//
//===----------------------------------------------------------------------===//

#include "test/unittests/kernels/TargetDevice.h"

#include "dpc/runtime/Abi.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <vector>

using namespace dpc::testing;

namespace {

using Ids = std::vector<int64_t>;

/// `n` ids cycling through words that are not ordinary floats: quiet and
/// signalling NaNs, infinities, subnormals, negative zero, and the extremes.
Ids awkwardIds(size_t n) {
  const Ids patterns = {
      1,
      -1,
      63,
      std::numeric_limits<int64_t>::min(),
      std::numeric_limits<int64_t>::max(),
      int64_t(0x7FC0000100000001),  // quiet NaN over a subnormal
      int64_t(0x7F80000100000002),  // signalling NaN over a subnormal
      int64_t(0x7F80000080000000),  // +inf over -0
      int64_t(0x00000001FFC00001),  // NaN under a subnormal
      int64_t(0x80000000007FFFFF)}; // -0 over the largest subnormal
  Ids ids(n);
  for (size_t i = 0; i < n; ++i)
    // Wrapping addition (in uint64_t: int64_t's would overflow at max()).
    ids[i] = int64_t(uint64_t(patterns[i % patterns.size()]) +
                     uint64_t(i / patterns.size()));
  return ids;
}

const float *words(const Buffer<int64_t> &ids) {
  return reinterpret_cast<const float *>(ids.get());
}
float *words(Buffer<int64_t> &ids) {
  return reinterpret_cast<float *>(ids.get());
}

using IdKernels = TargetKernelTest;

TEST_F(IdKernels, SliceMovesEveryBit) {
  // ids[1:3, 2::3] of a [3, 8] tensor.
  Ids x = awkwardIds(24);
  Buffer<int64_t> dX(x), dY(4);
  const int64_t whole[] = {3, 8, 2}, box[] = {2, 2, 2};
  const int64_t offsets[] = {1, 2, 0}, steps[] = {1, 3, 1};
  dpc_slice(words(dX), whole, words(dY), box, 3, offsets, steps);
  EXPECT_EQ(dY.host(), (Ids{x[10], x[13], x[18], x[21]}));
}

TEST_F(IdKernels, ConcatMovesEveryBit) {
  // Two [2, 3] tensors joined along the first dimension, as nn.concat
  // lowers: each inserted at its offset, the rest left as it is.
  Ids a = awkwardIds(6), b = awkwardIds(12);
  b.erase(b.begin(), b.begin() + 6);
  Buffer<int64_t> dA(a), dB(b), dY(12);
  const int64_t part[] = {2, 3, 2}, whole[] = {4, 3, 2}, steps[] = {1, 1, 1};
  const int64_t first[] = {0, 0, 0}, second[] = {2, 0, 0};
  dpc_insert(words(dA), part, words(dY), whole, 3, first, steps, 0, 0.0f);
  dpc_insert(words(dB), part, words(dY), whole, 3, second, steps, 0, 0.0f);
  Ids expected = a;
  expected.insert(expected.end(), b.begin(), b.end());
  EXPECT_EQ(dY.host(), expected);
}

TEST_F(IdKernels, TransposeMovesEveryBit) {
  // [3, 4] -> [4, 3], the words of each id kept together and in order.
  Ids x = awkwardIds(12);
  Buffer<int64_t> dX(x), dY(12);
  const int64_t shape[] = {3, 4, 2}, perm[] = {1, 0, 2};
  dpc_transpose(words(dX), shape, words(dY), perm, 3);
  Ids expected(12);
  for (int64_t i = 0; i < 3; ++i)
    for (int64_t j = 0; j < 4; ++j)
      expected[size_t(j * 3 + i)] = x[size_t(i * 4 + j)];
  EXPECT_EQ(dY.host(), expected);
}

} // namespace
