//===- CumSumConformanceTest.cpp - dpc_cumsum on every target -------------===//
//
// dpc_cumsum against a double reference written from ONNX CumSum's
// definition (exclusive and reverse), over shapes whose summed axis is
// first, middle and last, and its gradient (the same kernel with reverse
// flipped, as nn.cumsum's rule builds it) against the adjoint of the
// reference read off unit inputs: the sum is linear, so that is exact. Part
// of the conformance suite (ConformanceTest.cpp): compiled once per target,
// with the tensors in the target's memory.
//
//===----------------------------------------------------------------------===//

#include "test/unittests/kernels/Reference.h"
#include "test/unittests/kernels/TargetDevice.h"

#include "dpc/runtime/Abi.h"

#include <gtest/gtest.h>

#include <string>

using namespace dpc::testing;

namespace {

struct CumSumConfig {
  int64_t outer, length, inner;
  bool exclusive, reverse;
};

/// y[o, j, i] = sum of x[o, k, i] over k <= j (k < j exclusive; k >= j and
/// k > j reverse), straight from the definition.
Doubles cumsumReference(const CumSumConfig &c, const Doubles &x) {
  Doubles y(x.size(), 0.0);
  for (int64_t o = 0; o < c.outer; ++o)
    for (int64_t i = 0; i < c.inner; ++i)
      for (int64_t j = 0; j < c.length; ++j)
        for (int64_t k = 0; k < c.length; ++k) {
          bool summed = c.reverse ? (c.exclusive ? k > j : k >= j)
                                  : (c.exclusive ? k < j : k <= j);
          if (summed)
            y[(o * c.length + j) * c.inner + i] +=
                x[(o * c.length + k) * c.inner + i];
        }
  return y;
}

/// A float32 sum in order along the axis, as on every target: within its
/// rounding of the double sum.
Tolerance bound() { return {Tolerance::Relative, 1e-5}; }

class CumSum : public TargetKernelTest,
               public ::testing::WithParamInterface<CumSumConfig> {};

TEST_P(CumSum, MatchesTheDefinition) {
  const CumSumConfig &c = GetParam();
  size_t n = size_t(c.outer * c.length * c.inner);
  Floats x = randomFloats(n, 1);
  Buffer<float> dX(x), dY(n);
  dpc_cumsum(dX.get(), dY.get(), c.outer, c.length, c.inner, c.exclusive,
             c.reverse);
  expectClose(dY.host(), cumsumReference(c, toDoubles(x)), bound());
}

/// dL/dx for L = sum(r * cumsum(x)), from the kernel with reverse flipped,
/// against the reference's adjoint: dL/dx[e] = L at the unit input e.
TEST_P(CumSum, GradientIsTheSumTheOtherWay) {
  const CumSumConfig &c = GetParam();
  size_t n = size_t(c.outer * c.length * c.inner);
  Floats r = randomFloats(n, 2);
  Buffer<float> dR(r), dDx(n);
  dpc_cumsum(dR.get(), dDx.get(), c.outer, c.length, c.inner, c.exclusive,
             !c.reverse);
  Doubles expected(n, 0.0), unit(n, 0.0);
  for (size_t e = 0; e < n; ++e) {
    unit[e] = 1.0;
    Doubles y = cumsumReference(c, unit);
    for (size_t k = 0; k < n; ++k)
      expected[e] += double(r[k]) * y[k];
    unit[e] = 0.0;
  }
  expectClose(dDx.host(), expected, bound());
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, CumSum,
    ::testing::Values(
        CumSumConfig{1, 7, 1, false, false}, CumSumConfig{1, 7, 1, true, false},
        CumSumConfig{1, 7, 1, false, true}, CumSumConfig{1, 7, 1, true, true},
        CumSumConfig{3, 5, 4, false, false}, CumSumConfig{3, 5, 4, true, true},
        CumSumConfig{2, 9, 1, true, false}, CumSumConfig{1, 6, 5, false, true},
        CumSumConfig{4, 1, 3, true, false},
        CumSumConfig{2, 33, 2, false, false}),
    // Named by the fields: gtest's default prints the struct's bytes,
    // padding included, which differ from run to run, and ctest filters
    // by the name it listed at build time.
    [](const ::testing::TestParamInfo<CumSumConfig> &info) {
      const CumSumConfig &c = info.param;
      return std::to_string(c.outer) + "x" + std::to_string(c.length) + "x" +
             std::to_string(c.inner) + (c.exclusive ? "_exclusive" : "") +
             (c.reverse ? "_reverse" : "");
    });

} // namespace
