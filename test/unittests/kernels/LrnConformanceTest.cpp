//===- LrnConformanceTest.cpp - dpc_lrn on every target
//--------------------===//
//
// dpc_lrn and dpc_lrn_grad against a double reference written from ONNX
// LRN's definition (the window [c - floor((size-1)/2), c + ceil((size-1)/2)]
// clipped to the channels), over odd and even windows, windows wider than
// the channels, one channel and no spatial dimensions. The gradient's
// reference is the derivative of that definition, written out term by term
// and itself checked against central differences of the forward reference,
// so that a wrong formula in both places cannot pass. Part of the
// conformance suite (ConformanceTest.cpp): compiled once per target, with
// the tensors in the target's memory.
//
//===----------------------------------------------------------------------===//

#include "test/unittests/kernels/Reference.h"
#include "test/unittests/kernels/TargetDevice.h"

#include "dpc/runtime/Abi.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <ostream>
#include <string>

using namespace dpc::testing;

namespace {

struct LrnConfig {
  int64_t n, c, s, size;
  float alpha, beta, bias;
};

/// Printed by its fields, not by its bytes (padding included).
void PrintTo(const LrnConfig &c, std::ostream *os) {
  *os << c.n << "x" << c.c << "x" << c.s << " size " << c.size << " alpha "
      << c.alpha << " beta " << c.beta << " bias " << c.bias;
}

size_t countOf(const LrnConfig &c) { return size_t(c.n * c.c * c.s); }

/// The first and last channel of channel k's window, ONNX's way.
std::pair<int64_t, int64_t> windowOf(const LrnConfig &c, int64_t k) {
  int64_t below = int64_t(std::floor((c.size - 1) / 2.0));
  int64_t above = int64_t(std::ceil((c.size - 1) / 2.0));
  return {std::max<int64_t>(0, k - below), std::min(c.c - 1, k + above)};
}

/// bias + alpha / size * (sum of squares over k's window) at every element.
Doubles basesOf(const LrnConfig &c, const Doubles &x) {
  Doubles base(x.size());
  for (int64_t i = 0; i < c.n; ++i)
    for (int64_t k = 0; k < c.c; ++k)
      for (int64_t j = 0; j < c.s; ++j) {
        auto [first, last] = windowOf(c, k);
        double sum = 0;
        for (int64_t m = first; m <= last; ++m) {
          double v = x[size_t((i * c.c + m) * c.s + j)];
          sum += v * v;
        }
        base[size_t((i * c.c + k) * c.s + j)] =
            c.bias + double(c.alpha) / double(c.size) * sum;
      }
  return base;
}

Doubles lrnReference(const LrnConfig &c, const Doubles &x) {
  Doubles base = basesOf(c, x), y(x.size());
  for (size_t e = 0; e < x.size(); ++e)
    y[e] = x[e] * std::pow(base[e], -double(c.beta));
  return y;
}

/// d(sum of dy * y)/dx: x_j's own term through y_j's numerator, and the
/// term through the base of every element whose window holds x_j.
Doubles lrnGradReference(const LrnConfig &c, const Doubles &dy,
                         const Doubles &x) {
  Doubles base = basesOf(c, x), dx(x.size(), 0.0);
  double beta = c.beta, slope = 2.0 * double(c.alpha) / double(c.size);
  for (int64_t i = 0; i < c.n; ++i)
    for (int64_t k = 0; k < c.c; ++k)
      for (int64_t j = 0; j < c.s; ++j) {
        size_t e = size_t((i * c.c + k) * c.s + j);
        dx[e] += dy[e] * std::pow(base[e], -beta);
        // y_e = x_e * base_e^-beta; base_e depends on x_m for m in e's
        // window: d base_e / d x_m = slope * x_m.
        double outer = dy[e] * x[e] * -beta * std::pow(base[e], -beta - 1.0);
        auto [first, last] = windowOf(c, k);
        for (int64_t m = first; m <= last; ++m) {
          size_t f = size_t((i * c.c + m) * c.s + j);
          dx[f] += outer * slope * x[f];
        }
      }
  return dx;
}

/// float32 powers and sums of a few squares on every target: within a
/// few units in the last place of the double result.
Tolerance forwardBound() { return {Tolerance::Relative, 1e-5}; }
/// The gradient subtracts two terms of similar size: bound it by the
/// result's scale.
Tolerance gradBound() { return {Tolerance::RelativeToRms, 1e-5}; }

class Lrn : public TargetKernelTest,
            public ::testing::WithParamInterface<LrnConfig> {};

TEST_P(Lrn, MatchesTheDefinition) {
  const LrnConfig &c = GetParam();
  Floats x = randomFloats(countOf(c), 11, -2.0f, 2.0f);
  Buffer<float> dX(x), dY(countOf(c));
  dpc_lrn(dX.get(), c.n, c.c, c.s, c.size, c.alpha, c.beta, c.bias, dY.get());
  expectClose(dY.host(), lrnReference(c, toDoubles(x)), forwardBound());
}

TEST_P(Lrn, GradientMatchesTheDerivative) {
  const LrnConfig &c = GetParam();
  Floats x = randomFloats(countOf(c), 12, -2.0f, 2.0f);
  Floats dy = randomFloats(countOf(c), 13);
  Buffer<float> dX(x), dDy(dy), dDx(countOf(c));
  dpc_lrn_grad(dDy.get(), dX.get(), c.n, c.c, c.s, c.size, c.alpha, c.beta,
               c.bias, dDx.get());
  expectClose(dDx.host(), lrnGradReference(c, toDoubles(dy), toDoubles(x)),
              gradBound());
}

/// The derivative written out above against central differences of the
/// forward definition, in double: the reference the kernel is held to is
/// the gradient of the reference its forward is held to.
TEST_P(Lrn, ReferenceGradientIsTheDefinitionsSlope) {
  const LrnConfig &c = GetParam();
  Doubles x = toDoubles(randomFloats(countOf(c), 14, -2.0f, 2.0f));
  Doubles dy = toDoubles(randomFloats(countOf(c), 15));
  Doubles analytic = lrnGradReference(c, dy, x);
  const double h = 1e-6;
  for (size_t e = 0; e < x.size(); ++e) {
    double saved = x[e], loss[2];
    for (int side = 0; side < 2; ++side) {
      x[e] = saved + (side ? h : -h);
      Doubles y = lrnReference(c, x);
      loss[side] = 0;
      for (size_t k = 0; k < y.size(); ++k)
        loss[side] += dy[k] * y[k];
    }
    x[e] = saved;
    EXPECT_NEAR(analytic[e], (loss[1] - loss[0]) / (2 * h), 1e-6)
        << "element " << e;
  }
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, Lrn,
    ::testing::Values(
        // AlexNet's setting (size 5, alpha 1e-4, beta 0.75, bias 1) and
        // stronger ones, so that the normalization is far from the identity.
        LrnConfig{2, 7, 6, 5, 1e-4f, 0.75f, 1.0f},
        LrnConfig{2, 7, 6, 5, 2.0f, 0.75f, 1.0f},
        LrnConfig{1, 6, 4, 3, 1.0f, 0.5f, 2.0f},
        // Even windows reach one channel further up than down.
        LrnConfig{2, 5, 3, 2, 1.5f, 0.75f, 1.0f},
        LrnConfig{1, 8, 5, 4, 1.0f, 1.0f, 0.5f},
        // Windows wider than the channels; one channel; size 1.
        LrnConfig{2, 3, 4, 9, 1.0f, 0.75f, 1.0f},
        LrnConfig{3, 1, 5, 3, 1.0f, 0.75f, 1.0f},
        LrnConfig{2, 6, 3, 1, 1.0f, 0.75f, 1.0f},
        // No spatial dimensions (N x C).
        LrnConfig{4, 9, 1, 3, 1.0f, 0.75f, 1.0f},
        LrnConfig{2, 33, 40, 5, 0.5f, 0.75f, 2.0f}),
    // Named by the fields: ctest filters by the name listed at build time.
    [](const ::testing::TestParamInfo<LrnConfig> &info) {
      const LrnConfig &c = info.param;
      return std::to_string(c.n) + "x" + std::to_string(c.c) + "x" +
             std::to_string(c.s) + "_size" + std::to_string(c.size) + "_" +
             std::to_string(info.index);
    });

} // namespace
