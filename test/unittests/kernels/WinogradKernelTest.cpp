//===- WinogradKernelTest.cpp - Winograd convolutions against references --===//
//
// The _winograd convolutions of the C ABI (select-conv-algorithm, CPU only)
// on random data: forward with and without bias, input and filter
// gradients, against the double reference of the direct convolution. Their
// tile transforms round differently from a direct sum, so the bound is
// relative to the sum of the products' magnitudes, as for oneDNN's direct
// filter gradient (1e-6 in the conformance suite), at 1e-5: every case
// here passes at 3e-6 and all but one input gradient at 1e-6, while at
// 1e-7 the direct kernels fail too. Shapes cover partial 4x4 tiles (7x7, 9x9),
// a tile-exact 8x8, channel counts off the 16-wide vector, and no padding. On
// an AVX-512 CPU (where oneDNN has Winograd kernels) the results also differ
// from the direct kernels', which shows the Winograd kernel ran; uneven pads
// and pads of 2 run the direct kernels.
//
//===----------------------------------------------------------------------===//

#include "test/unittests/kernels/Reference.h"

#include "dpc/runtime/Abi.h"

#include <gtest/gtest.h>

#include <string>

using namespace dpc::testing;

namespace {

struct WinogradCase {
  ConvConfig conv;
  bool bias;
};
void PrintTo(const WinogradCase &c, std::ostream *os) { *os << c.conv.name; }

class WinogradConvTest : public ::testing::TestWithParam<WinogradCase> {};

// The bound for a result of float sums that Winograd's transforms reorder.
const Tolerance kWinograd = {Tolerance::RelativeToSums, 1e-5};

// Sums of the magnitudes of each output's terms.
template <typename Term, typename Index>
Doubles absSums(const ConvConfig &c, size_t outputs, Term term, Index out) {
  Doubles sums(outputs, 0.0);
  c.forEachTap([&](size_t yi, size_t xi, size_t wi) {
    sums[out(yi, xi, wi)] += std::abs(term(yi, xi, wi));
  });
  return sums;
}

// Whether oneDNN computes `c` by Winograd here: on AVX-512, with the same
// pad of 0 or 1 on every side (what the verifier allows). Otherwise the
// _winograd kernels run the direct ones, and must still be right: oneDNN
// 2.6's Winograd input gradient is wrong with uneven pads (UnevenPads
// fails without the runtime's check).
bool runsWinograd(const ConvConfig &c) {
  const dpc_conv_params &p = c.params;
  bool samePads = p.pad_top == p.pad_left && p.pad_left == p.pad_bottom &&
                  p.pad_bottom == p.pad_right && p.pad_top <= 1;
  return samePads && __builtin_cpu_supports("avx512f");
}

TEST_P(WinogradConvTest, Forward) {
  const ConvConfig &c = GetParam().conv;
  Shape ys = c.y();
  Floats x = randomFloats(countOf(c.x), 1), w = randomFloats(countOf(c.w), 2);
  Floats bias = GetParam().bias ? randomFloats(size_t(c.w[0]), 3) : Floats();
  Floats y(countOf(ys), 123.0f), direct(countOf(ys));
  dpc_conv2d_winograd(x.data(), c.x.data(), w.data(), c.w.data(),
                      bias.empty() ? nullptr : bias.data(), y.data(), ys.data(),
                      &c.params);
  Doubles sums = absSums(
      c, y.size(),
      [&](size_t, size_t xi, size_t wi) { return double(x[xi]) * w[wi]; },
      [](size_t yi, size_t, size_t) { return yi; });
  expectClose(y, convForward(c, x, w, bias), kWinograd, &sums);
  if (runsWinograd(c)) {
    dpc_conv2d(x.data(), c.x.data(), w.data(), c.w.data(),
               bias.empty() ? nullptr : bias.data(), direct.data(), ys.data(),
               &c.params);
    EXPECT_NE(y, direct) << "the Winograd kernel gave the direct one's bits";
  }
}

TEST_P(WinogradConvTest, GradInput) {
  const ConvConfig &c = GetParam().conv;
  Shape ys = c.y();
  Floats dy = randomFloats(countOf(ys), 4), w = randomFloats(countOf(c.w), 5);
  Floats dx(countOf(c.x), 123.0f);
  dpc_conv2d_grad_input_winograd(dy.data(), ys.data(), w.data(), c.w.data(),
                                 dx.data(), c.x.data(), &c.params);
  Doubles sums = absSums(
      c, dx.size(),
      [&](size_t yi, size_t, size_t wi) { return double(dy[yi]) * w[wi]; },
      [](size_t, size_t xi, size_t) { return xi; });
  expectClose(dx, convGradInput(c, dy, w), kWinograd, &sums);
}

TEST_P(WinogradConvTest, GradFilter) {
  const ConvConfig &c = GetParam().conv;
  Shape ys = c.y();
  Floats dy = randomFloats(countOf(ys), 6), x = randomFloats(countOf(c.x), 7);
  Floats dw(countOf(c.w), 123.0f);
  dpc_conv2d_grad_filter_winograd(dy.data(), ys.data(), x.data(), c.x.data(),
                                  dw.data(), c.w.data(), &c.params);
  Doubles sums;
  Doubles ref = convGradFilter(c, dy, x, &sums);
  expectClose(dw, ref, kWinograd, &sums);
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, WinogradConvTest,
    ::testing::Values(
        // ResNet's 3x3 blocks at a small scale: whole and partial tiles.
        WinogradCase{{"Tiles8x8",
                      {2, 32, 8, 8},
                      {32, 32, 3, 3},
                      {1, 1, 1, 1, 1, 1, 1, 1, 1}},
                     true},
        WinogradCase{{"Partial7x7",
                      {3, 64, 7, 7},
                      {32, 64, 3, 3},
                      {1, 1, 1, 1, 1, 1, 1, 1, 1}},
                     false},
        WinogradCase{{"Partial9x9",
                      {2, 16, 9, 9},
                      {48, 16, 3, 3},
                      {1, 1, 1, 1, 1, 1, 1, 1, 1}},
                     true},
        // Channels off the vector width, no padding, uneven padding.
        WinogradCase{{"OddChannels",
                      {2, 5, 12, 10},
                      {7, 5, 3, 3},
                      {1, 1, 0, 0, 0, 0, 1, 1, 1}},
                     true},
        // Pads oneDNN's Winograd kernels get wrong or refuse: the direct
        // kernels run.
        WinogradCase{{"UnevenPads",
                      {1, 24, 11, 13},
                      {40, 24, 3, 3},
                      {1, 1, 1, 0, 0, 1, 1, 1, 1}},
                     false},
        WinogradCase{{"Pads2FallBack",
                      {1, 16, 10, 10},
                      {16, 16, 3, 3},
                      {1, 1, 2, 0, 1, 2, 1, 1, 1}},
                     true}),
    [](const auto &info) { return std::string(info.param.conv.name); });

} // namespace
