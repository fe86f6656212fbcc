//===- Bf16KernelTest.cpp - bf16 kernels against f32 references -----------===//
//
// The _bf16 convolutions and matmul of the C ABI (dpc compile --precision
// bf16) on random data: within bf16's rounding (relative 1e-2 of the sum of
// the products' magnitudes) of the exact product of the f32 inputs, and, on
// a CPU that computes bf16 natively, to float tolerance of the exact product
// of the inputs rounded to bf16, which shows the inputs really were read as
// bf16 and the sums kept in f32. Also the conversions the transfers use.
//
//===----------------------------------------------------------------------===//

#include "dpc/runtime/Abi.h"
#include "dpc/runtime/Bf16.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

namespace {

using Vec = std::vector<float>;
using dpc::runtime::bf16ToFloat;
using dpc::runtime::floatToBf16;

Vec randomVec(size_t n, uint32_t seed) {
  std::mt19937 gen(seed);
  Vec v(n);
  for (float &x : v)
    x = -1 + 2 * float(gen() >> 8) * 0x1p-24f;
  return v;
}

Vec roundedToBf16(const Vec &v) {
  Vec r(v.size());
  for (size_t i = 0; i < v.size(); ++i)
    r[i] = bf16ToFloat(floatToBf16(v[i]));
  return r;
}

/// |a - e| <= tol * max(1, sum of |terms|) elementwise, and at least one
/// output is checked.
void expectCloseToSums(const Vec &actual, const std::vector<double> &expected,
                       const std::vector<double> &absSums, double tol) {
  ASSERT_EQ(actual.size(), expected.size());
  ASSERT_FALSE(actual.empty());
  for (size_t i = 0; i < actual.size(); ++i)
    ASSERT_LE(std::abs(actual[i] - expected[i]),
              tol * std::max(1.0, absSums[i]))
        << "element " << i << ": " << actual[i] << " vs " << expected[i];
}

uint32_t bitsOf(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

float fromBits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

TEST(Bf16Conversion, RoundsToNearestEven) {
  EXPECT_EQ(floatToBf16(1.0f), 0x3f80);
  EXPECT_EQ(floatToBf16(-2.0f), 0xc000);
  // Exactly halfway: to the even neighbour, up or down.
  EXPECT_EQ(floatToBf16(fromBits(0x3f808000u)), 0x3f80);
  EXPECT_EQ(floatToBf16(fromBits(0x3f818000u)), 0x3f82);
  // Above halfway rounds up, below down.
  EXPECT_EQ(floatToBf16(fromBits(0x3f808001u)), 0x3f81);
  EXPECT_EQ(floatToBf16(fromBits(0x3f807fffu)), 0x3f80);
  // The largest finite float rounds to infinity, as in IEEE.
  EXPECT_EQ(floatToBf16(std::numeric_limits<float>::max()), 0x7f80);
}

TEST(Bf16Conversion, KeepsSpecialValues) {
  EXPECT_EQ(floatToBf16(std::numeric_limits<float>::infinity()), 0x7f80);
  EXPECT_EQ(floatToBf16(-std::numeric_limits<float>::infinity()), 0xff80);
  EXPECT_EQ(floatToBf16(-0.0f), 0x8000);
  // A NaN whose payload sits in the low half stays a NaN.
  float nan = fromBits(0x7f800001u);
  EXPECT_TRUE(std::isnan(bf16ToFloat(floatToBf16(nan))));
  EXPECT_TRUE(std::isnan(bf16ToFloat(floatToBf16(std::nanf("")))));
  EXPECT_EQ(bitsOf(bf16ToFloat(0x3f80)), 0x3f800000u);
}

//===----------------------------------------------------------------------===//
// Convolution
//===----------------------------------------------------------------------===//

struct ConvCase {
  int64_t n, c, h, w, o, k, stride, pad, groups;
  bool bias;
};

struct Conv {
  ConvCase k;
  int64_t oh, ow;
  int64_t x[4], wt[4], y[4], p[9];
  explicit Conv(const ConvCase &c) : k(c) {
    oh = (c.h + 2 * c.pad - c.k) / c.stride + 1;
    ow = (c.w + 2 * c.pad - c.k) / c.stride + 1;
    int64_t xs[4] = {c.n, c.c, c.h, c.w},
            ws[4] = {c.o, c.c / c.groups, c.k, c.k}, ys[4] = {c.n, c.o, oh, ow},
            ps[9] = {c.stride, c.stride, c.pad, c.pad,   c.pad,
                     c.pad,    1,        1,     c.groups};
    std::memcpy(x, xs, sizeof x);
    std::memcpy(wt, ws, sizeof wt);
    std::memcpy(y, ys, sizeof y);
    std::memcpy(p, ps, sizeof p);
  }
  size_t xn() const { return size_t(k.n * k.c * k.h * k.w); }
  size_t wn() const { return size_t(k.o * (k.c / k.groups) * k.k * k.k); }
  size_t yn() const { return size_t(k.n * k.o * oh * ow); }

  template <typename F> void forEachTap(F f) const {
    int64_t cg = k.c / k.groups, og = k.o / k.groups;
    for (int64_t b = 0; b < k.n; ++b)
      for (int64_t oc = 0; oc < k.o; ++oc)
        for (int64_t i = 0; i < oh; ++i)
          for (int64_t j = 0; j < ow; ++j)
            for (int64_t ic = 0; ic < cg; ++ic)
              for (int64_t u = 0; u < k.k; ++u)
                for (int64_t v = 0; v < k.k; ++v) {
                  int64_t hi = i * k.stride - k.pad + u;
                  int64_t wi = j * k.stride - k.pad + v;
                  if (hi < 0 || hi >= k.h || wi < 0 || wi >= k.w)
                    continue;
                  int64_t c = oc / og * cg + ic;
                  f(size_t(((b * k.o + oc) * oh + i) * ow + j),
                    size_t(((b * k.c + c) * k.h + hi) * k.w + wi),
                    size_t(((oc * cg + ic) * k.k + u) * k.k + v));
                }
  }
};

class Bf16ConvTest : public ::testing::TestWithParam<ConvCase> {};

// Checks `kernel`'s output against the exact sums of `term` over the taps,
// for the f32 inputs (bf16 tolerance) and, on a native CPU, for the inputs
// rounded to bf16 (float tolerance).
template <typename Run, typename Term, typename Index>
void checkConv(const Conv &s, size_t outputs, Run run, Term term, Index out,
               const Vec &in1, const Vec &in2) {
  Vec result(outputs, 123.0f);
  run(in1, in2, result);
  for (bool rounded : {false, true}) {
    if (rounded && !dpc_bf16_native())
      continue;
    Vec a = rounded ? roundedToBf16(in1) : in1;
    Vec b = rounded ? roundedToBf16(in2) : in2;
    std::vector<double> ref(outputs, 0.0), sums(outputs, 0.0);
    s.forEachTap([&](size_t yi, size_t xi, size_t wi) {
      double t = term(a, b, yi, xi, wi);
      ref[out(yi, xi, wi)] += t;
      sums[out(yi, xi, wi)] += std::abs(t);
    });
    SCOPED_TRACE(rounded ? "inputs rounded to bf16" : "f32 inputs");
    expectCloseToSums(result, ref, sums, rounded ? 1e-5 : 1e-2);
  }
}

TEST_P(Bf16ConvTest, Forward) {
  Conv s(GetParam());
  Vec x = randomVec(s.xn(), 1), w = randomVec(s.wn(), 2);
  Vec bias(size_t(s.k.o), 0.0f);
  checkConv(
      s, s.yn(),
      [&](const Vec &x, const Vec &w, Vec &y) {
        dpc_conv2d_bf16(x.data(), s.x, w.data(), s.wt,
                        s.k.bias ? bias.data() : nullptr, y.data(), s.y, s.p);
      },
      [](const Vec &x, const Vec &w, size_t, size_t xi, size_t wi) {
        return double(x[xi]) * w[wi];
      },
      [](size_t yi, size_t, size_t) { return yi; }, x, w);
}

TEST_P(Bf16ConvTest, ForwardAddsTheBiasInF32) {
  Conv s(GetParam());
  if (!s.k.bias)
    GTEST_SKIP() << "no bias in this case";
  Vec x = randomVec(s.xn(), 3), w = randomVec(s.wn(), 4);
  // A bias bf16 cannot hold exactly: it is added to the f32 sum as is.
  Vec bias(size_t(s.k.o), 1.0f + 0x1p-20f), zero(size_t(s.k.o), 0.0f);
  Vec with(s.yn()), without(s.yn());
  dpc_conv2d_bf16(x.data(), s.x, w.data(), s.wt, bias.data(), with.data(), s.y,
                  s.p);
  dpc_conv2d_bf16(x.data(), s.x, w.data(), s.wt, zero.data(), without.data(),
                  s.y, s.p);
  for (size_t i = 0; i < with.size(); ++i)
    ASSERT_NEAR(with[i] - without[i], 1.0 + 0x1p-20, 1e-6) << "element " << i;
}

TEST_P(Bf16ConvTest, GradInput) {
  Conv s(GetParam());
  Vec dy = randomVec(s.yn(), 5), w = randomVec(s.wn(), 6);
  checkConv(
      s, s.xn(),
      [&](const Vec &dy, const Vec &w, Vec &dx) {
        dpc_conv2d_grad_input_bf16(dy.data(), s.y, w.data(), s.wt, dx.data(),
                                   s.x, s.p);
      },
      [](const Vec &dy, const Vec &w, size_t yi, size_t, size_t wi) {
        return double(dy[yi]) * w[wi];
      },
      [](size_t, size_t xi, size_t) { return xi; }, dy, w);
}

TEST_P(Bf16ConvTest, GradFilter) {
  Conv s(GetParam());
  Vec dy = randomVec(s.yn(), 7), x = randomVec(s.xn(), 8);
  checkConv(
      s, s.wn(),
      [&](const Vec &dy, const Vec &x, Vec &dw) {
        dpc_conv2d_grad_filter_bf16(dy.data(), s.y, x.data(), s.x, dw.data(),
                                    s.wt, s.p);
      },
      [](const Vec &dy, const Vec &x, size_t yi, size_t xi, size_t) {
        return double(dy[yi]) * x[xi];
      },
      [](size_t, size_t, size_t wi) { return wi; }, dy, x);
}

TEST_P(Bf16ConvTest, DiffersFromF32WhereNative) {
  // The bf16 kernel is not the f32 one under another name.
  if (!dpc_bf16_native())
    GTEST_SKIP() << "this CPU falls back to f32";
  Conv s(GetParam());
  Vec x = randomVec(s.xn(), 9), w = randomVec(s.wn(), 10);
  Vec y16(s.yn()), y32(s.yn());
  dpc_conv2d_bf16(x.data(), s.x, w.data(), s.wt, nullptr, y16.data(), s.y, s.p);
  dpc_conv2d(x.data(), s.x, w.data(), s.wt, nullptr, y32.data(), s.y, s.p);
  EXPECT_NE(y16, y32);
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, Bf16ConvTest,
    ::testing::Values(
        // LeNet-5's layers.
        ConvCase{2, 1, 28, 28, 6, 5, 1, 2, 1, true},
        ConvCase{3, 6, 14, 14, 16, 5, 1, 0, 1, false},
        // ResNet's: a strided 3x3 over 16-channel blocks, a 1x1 shortcut.
        ConvCase{2, 16, 12, 12, 32, 3, 2, 1, 1, true},
        ConvCase{2, 32, 8, 8, 16, 1, 2, 0, 1, false},
        // Groups.
        ConvCase{2, 8, 9, 9, 8, 3, 1, 1, 4, true}));

//===----------------------------------------------------------------------===//
// Matmul
//===----------------------------------------------------------------------===//

struct MatmulCase {
  int64_t batch, m, n, k;
  bool ta, tb, shareA, shareB, accumulate;
};

class Bf16MatmulTest : public ::testing::TestWithParam<MatmulCase> {};

TEST_P(Bf16MatmulTest, MatchesTheProductInBf16Tolerance) {
  MatmulCase c = GetParam();
  int64_t as = c.shareA ? 0 : c.m * c.k, bs = c.shareB ? 0 : c.k * c.n;
  Vec a = randomVec(size_t(c.shareA ? c.m * c.k : c.batch * c.m * c.k), 11);
  Vec b = randomVec(size_t(c.shareB ? c.k * c.n : c.batch * c.k * c.n), 12);
  int64_t outs = c.accumulate ? 1 : c.batch;
  Vec y(size_t(outs * c.m * c.n), 123.0f);
  dpc_matmul_bf16(a.data(), b.data(), y.data(), c.batch, c.m, c.n, c.k, c.ta,
                  c.tb, as, bs, c.accumulate);
  for (bool rounded : {false, true}) {
    if (rounded && !dpc_bf16_native())
      continue;
    Vec ra = rounded ? roundedToBf16(a) : a;
    Vec rb = rounded ? roundedToBf16(b) : b;
    std::vector<double> ref(y.size(), 0.0), sums(y.size(), 0.0);
    for (int64_t bi = 0; bi < c.batch; ++bi)
      for (int64_t i = 0; i < c.m; ++i)
        for (int64_t j = 0; j < c.n; ++j)
          for (int64_t l = 0; l < c.k; ++l) {
            double t =
                double(
                    ra[size_t(bi * as + (c.ta ? l * c.m + i : i * c.k + l))]) *
                rb[size_t(bi * bs + (c.tb ? j * c.k + l : l * c.n + j))];
            size_t o =
                size_t((c.accumulate ? 0 : bi) * c.m * c.n + i * c.n + j);
            ref[o] += t;
            sums[o] += std::abs(t);
          }
    SCOPED_TRACE(rounded ? "inputs rounded to bf16" : "f32 inputs");
    expectCloseToSums(y, ref, sums, rounded ? 1e-5 : 1e-2);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, Bf16MatmulTest,
    ::testing::Values(
        // LeNet-5's fully connected layers as ONNX exports them (transB).
        MatmulCase{1, 16, 120, 400, false, true, false, false, false},
        MatmulCase{1, 7, 5, 3, false, false, false, false, false},
        MatmulCase{1, 7, 5, 3, true, false, false, false, false},
        MatmulCase{1, 7, 5, 3, true, true, false, false, false},
        MatmulCase{4, 6, 5, 9, false, false, false, false, false},
        MatmulCase{4, 6, 5, 9, true, true, false, true, false},
        MatmulCase{3, 6, 5, 9, false, true, true, false, false},
        // The weight gradient of a shared weight: summed over the batch.
        MatmulCase{5, 6, 4, 7, true, false, false, false, true},
        MatmulCase{3, 2, 3, 4, false, false, true, true, true}));

TEST(Bf16Matmul, ZeroInnerSizeGivesZeros) {
  Vec a(6), b(6), y(9, 123.0f);
  dpc_matmul_bf16(a.data(), b.data(), y.data(), 1, 3, 3, 0, 0, 0, 0, 0, 0);
  EXPECT_EQ(y, Vec(9, 0.0f));
}

} // namespace
