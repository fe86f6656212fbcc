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

#include "test/unittests/kernels/Reference.h"

#include "dpc/runtime/Abi.h"
#include "dpc/runtime/Bf16.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <ostream>
#include <string>
#include <vector>

namespace {

using dpc::runtime::bf16ToFloat;
using dpc::runtime::floatToBf16;
using namespace dpc::testing;

Floats roundedToBf16(const Floats &v) {
  Floats r(v.size());
  for (size_t i = 0; i < v.size(); ++i)
    r[i] = bf16ToFloat(floatToBf16(v[i]));
  return r;
}

/// The bound of a result against the exact product of its f32 inputs
/// (bf16's rounding), or of its inputs rounded to bf16 (float's).
Tolerance bf16Tolerance(bool rounded) {
  return {Tolerance::RelativeToSums, rounded ? 1e-5 : 1e-2};
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

struct Bf16ConvCase {
  ConvConfig conv;
  bool bias;
};
void PrintTo(const Bf16ConvCase &c, std::ostream *os) { *os << c.conv.name; }

class Bf16ConvTest : public ::testing::TestWithParam<Bf16ConvCase> {};

// Checks `kernel`'s output against the exact sums of `term` over the taps,
// for the f32 inputs (bf16 tolerance) and, on a native CPU, for the inputs
// rounded to bf16 (float tolerance).
template <typename Run, typename Term, typename Index>
void checkConv(const ConvConfig &s, size_t outputs, Run run, Term term,
               Index out, const Floats &in1, const Floats &in2) {
  Floats result(outputs, 123.0f);
  run(in1, in2, result);
  ASSERT_FALSE(result.empty());
  for (bool rounded : {false, true}) {
    if (rounded && !dpc_bf16_native())
      continue;
    Floats a = rounded ? roundedToBf16(in1) : in1;
    Floats b = rounded ? roundedToBf16(in2) : in2;
    Doubles ref(outputs, 0.0), sums(outputs, 0.0);
    s.forEachTap([&](size_t yi, size_t xi, size_t wi) {
      double t = term(a, b, yi, xi, wi);
      ref[out(yi, xi, wi)] += t;
      sums[out(yi, xi, wi)] += std::abs(t);
    });
    SCOPED_TRACE(rounded ? "inputs rounded to bf16" : "f32 inputs");
    expectClose(result, ref, bf16Tolerance(rounded), &sums);
  }
}

TEST_P(Bf16ConvTest, Forward) {
  const ConvConfig &c = GetParam().conv;
  Shape ys = c.y();
  Floats x = randomFloats(countOf(c.x), 1), w = randomFloats(countOf(c.w), 2);
  Floats bias(size_t(c.w[0]), 0.0f);
  checkConv(
      c, countOf(ys),
      [&](const Floats &x, const Floats &w, Floats &y) {
        dpc_conv2d_bf16(x.data(), c.x.data(), w.data(), c.w.data(),
                        GetParam().bias ? bias.data() : nullptr, y.data(),
                        ys.data(), &c.params);
      },
      [](const Floats &x, const Floats &w, size_t, size_t xi, size_t wi) {
        return double(x[xi]) * w[wi];
      },
      [](size_t yi, size_t, size_t) { return yi; }, x, w);
}

TEST_P(Bf16ConvTest, ForwardAddsTheBiasInF32) {
  const ConvConfig &c = GetParam().conv;
  if (!GetParam().bias)
    GTEST_SKIP() << "no bias in this case";
  Shape ys = c.y();
  Floats x = randomFloats(countOf(c.x), 3), w = randomFloats(countOf(c.w), 4);
  // A bias bf16 cannot hold (257.5 rounds to 258 in bf16) is added to the
  // f32 sum as is. Where the kernel adds it (first or last) moves every
  // rounding of the sum, so the two runs agree only within the f32 error
  // bound of a sum of (taps + 1) terms; it stays far below 0.5.
  const float value = 257.5f;
  const double bf16Error = 0.5;
  Floats bias(size_t(c.w[0]), value), zero(size_t(c.w[0]), 0.0f);
  Floats with(countOf(ys)), without(countOf(ys));
  dpc_conv2d_bf16(x.data(), c.x.data(), w.data(), c.w.data(), bias.data(),
                  with.data(), ys.data(), &c.params);
  dpc_conv2d_bf16(x.data(), c.x.data(), w.data(), c.w.data(), zero.data(),
                  without.data(), ys.data(), &c.params);
  Doubles sums(with.size(), value), taps(with.size(), 1.0);
  c.forEachTap([&](size_t yi, size_t xi, size_t wi) {
    sums[yi] += std::abs(double(x[xi]) * w[wi]);
    taps[yi] += 1.0;
  });
  for (size_t i = 0; i < with.size(); ++i) {
    double bound =
        2 * (taps[i] + 1) * std::numeric_limits<float>::epsilon() * sums[i];
    ASSERT_LT(bound, bf16Error / 4) << "sums too large to tell; element " << i;
    ASSERT_NEAR(with[i] - without[i], value, bound) << "element " << i;
  }
}

TEST_P(Bf16ConvTest, GradInput) {
  const ConvConfig &c = GetParam().conv;
  Shape ys = c.y();
  Floats dy = randomFloats(countOf(ys), 5), w = randomFloats(countOf(c.w), 6);
  checkConv(
      c, countOf(c.x),
      [&](const Floats &dy, const Floats &w, Floats &dx) {
        dpc_conv2d_grad_input_bf16(dy.data(), ys.data(), w.data(), c.w.data(),
                                   dx.data(), c.x.data(), &c.params);
      },
      [](const Floats &dy, const Floats &w, size_t yi, size_t, size_t wi) {
        return double(dy[yi]) * w[wi];
      },
      [](size_t, size_t xi, size_t) { return xi; }, dy, w);
}

TEST_P(Bf16ConvTest, GradFilter) {
  const ConvConfig &c = GetParam().conv;
  Shape ys = c.y();
  Floats dy = randomFloats(countOf(ys), 7), x = randomFloats(countOf(c.x), 8);
  checkConv(
      c, countOf(c.w),
      [&](const Floats &dy, const Floats &x, Floats &dw) {
        dpc_conv2d_grad_filter_bf16(dy.data(), ys.data(), x.data(), c.x.data(),
                                    dw.data(), c.w.data(), &c.params);
      },
      [](const Floats &dy, const Floats &x, size_t yi, size_t xi, size_t) {
        return double(dy[yi]) * x[xi];
      },
      [](size_t, size_t, size_t wi) { return wi; }, dy, x);
}

TEST_P(Bf16ConvTest, DiffersFromF32WhereNative) {
  // The bf16 kernel is not the f32 one under another name.
  if (!dpc_bf16_native())
    GTEST_SKIP() << "this CPU falls back to f32";
  const ConvConfig &c = GetParam().conv;
  Shape ys = c.y();
  Floats x = randomFloats(countOf(c.x), 9), w = randomFloats(countOf(c.w), 10);
  Floats y16(countOf(ys)), y32(countOf(ys));
  dpc_conv2d_bf16(x.data(), c.x.data(), w.data(), c.w.data(), nullptr,
                  y16.data(), ys.data(), &c.params);
  dpc_conv2d(x.data(), c.x.data(), w.data(), c.w.data(), nullptr, y32.data(),
             ys.data(), &c.params);
  EXPECT_NE(y16, y32);
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, Bf16ConvTest,
    ::testing::Values(
        // LeNet-5's layers.
        Bf16ConvCase{{"LeNetConv1",
                      {2, 1, 28, 28},
                      {6, 1, 5, 5},
                      {1, 1, 2, 2, 2, 2, 1, 1, 1}},
                     true},
        Bf16ConvCase{{"LeNetConv2",
                      {3, 6, 14, 14},
                      {16, 6, 5, 5},
                      {1, 1, 0, 0, 0, 0, 1, 1, 1}},
                     false},
        // ResNet's: a strided 3x3 over 16-channel blocks, a 1x1 shortcut.
        Bf16ConvCase{{"ResNetStrided3x3",
                      {2, 16, 12, 12},
                      {32, 16, 3, 3},
                      {2, 2, 1, 1, 1, 1, 1, 1, 1}},
                     true},
        Bf16ConvCase{{"ResNetShortcut1x1",
                      {2, 32, 8, 8},
                      {16, 32, 1, 1},
                      {2, 2, 0, 0, 0, 0, 1, 1, 1}},
                     false},
        // Groups.
        Bf16ConvCase{{"Groups4",
                      {2, 8, 9, 9},
                      {8, 2, 3, 3},
                      {1, 1, 1, 1, 1, 1, 1, 1, 4}},
                     true}),
    [](const auto &info) { return std::string(info.param.conv.name); });

//===----------------------------------------------------------------------===//
// Matmul
//===----------------------------------------------------------------------===//

class Bf16MatmulTest : public ::testing::TestWithParam<MatmulConfig> {};

TEST_P(Bf16MatmulTest, MatchesTheProductInBf16Tolerance) {
  const MatmulConfig &c = GetParam();
  Floats a = randomFloats(c.aCount(), 11), b = randomFloats(c.bCount(), 12);
  Floats y(c.yCount(), 123.0f);
  dpc_matmul_bf16(a.data(), b.data(), y.data(), c.batch, c.m, c.n, c.k, c.ta,
                  c.tb, c.aStride(), c.bStride(), c.accumulate);
  ASSERT_FALSE(y.empty());
  for (bool rounded : {false, true}) {
    if (rounded && !dpc_bf16_native())
      continue;
    Doubles sums;
    Doubles ref = matmul(c, rounded ? roundedToBf16(a) : a,
                         rounded ? roundedToBf16(b) : b, &sums);
    SCOPED_TRACE(rounded ? "inputs rounded to bf16" : "f32 inputs");
    expectClose(y, ref, bf16Tolerance(rounded), &sums);
  }
}

INSTANTIATE_TEST_SUITE_P(Shapes, Bf16MatmulTest,
                         ::testing::ValuesIn(kMatmulShapes),
                         [](const auto &info) {
                           return std::string(info.param.name);
                         });

TEST(Bf16Matmul, ZeroInnerSizeGivesZeros) {
  Floats a(6), b(6), y(9, 123.0f);
  dpc_matmul_bf16(a.data(), b.data(), y.data(), 1, 3, 3, 0, 0, 0, 0, 0, 0);
  EXPECT_EQ(y, Floats(9, 0.0f));
}

} // namespace
