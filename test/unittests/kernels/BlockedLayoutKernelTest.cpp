//===- BlockedLayoutKernelTest.cpp - Channel-blocked activations ----------===//
//
// The kernels that take channel-blocked (nChw16c) activations, as
// propagate-layouts leaves them in a CPU build: dpc_relayout, the
// convolutions' `layouts` and batch normalization's `block`. On the same
// values, each gives what it gives on plain tensors: the convolutions the
// same bits (the same primitive, fed the same values; a filter gradient
// added into its buffer too), batch normalization
// to within the rounding of its double sums, which add a channel's values
// in another order.
//
//===----------------------------------------------------------------------===//

#include "test/unittests/kernels/Reference.h"

#include "dpc/runtime/Abi.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace {

using namespace dpc::testing;

/// x (N, C, H, W) in the blocked layout, or back from it.
Floats relayout(const Floats &x, const Shape &shape, bool toBlocked) {
  Floats y(x.size(), -7.0f);
  dpc_relayout(x.data(), shape.data(), toBlocked ? 1 : 0, y.data());
  return y;
}

TEST(Relayout, PutsEachBlockOfSixteenChannelsInTheLanes) {
  Shape shape = {2, 32, 3, 5};
  int64_t n = shape[0], c = shape[1], s = shape[2] * shape[3];
  Floats x = randomFloats(countOf(shape), 1);
  Floats blocked = relayout(x, shape, true);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t k = 0; k < c; ++k)
      for (int64_t j = 0; j < s; ++j) {
        int64_t plain = (i * c + k) * s + j;
        int64_t at = ((i * (c / 16) + k / 16) * s + j) * 16 + k % 16;
        ASSERT_EQ(blocked[size_t(at)], x[size_t(plain)])
            << "image " << i << " channel " << k << " element " << j;
      }
  EXPECT_EQ(relayout(blocked, shape, false), x);
}

/// Batch normalization's four kernels and the bias gradient on x and dy
/// with `block`, every output plain.
struct BatchNormResults {
  Floats stats, runningMean, runningVar, y, dx, dscale, dbias;
};

BatchNormResults batchNorm(const Floats &x, const Floats &dy,
                           const Floats &scale, const Floats &bias,
                           const Shape &shape, int64_t block) {
  int64_t n = shape[0], c = shape[1], s = shape[2] * shape[3];
  bool blocked = block != 1;
  Floats bx = blocked ? relayout(x, shape, true) : x;
  Floats bdy = blocked ? relayout(dy, shape, true) : dy;
  BatchNormResults r;
  r.stats.assign(size_t(2 * c), 0.0f);
  r.runningMean.assign(size_t(c), 0.25f);
  r.runningVar.assign(size_t(c), 2.0f);
  dpc_batch_norm_stats(bx.data(), n, c, s, block, r.runningMean.data(),
                       r.runningVar.data(), 0.9f, 1, r.stats.data());
  Floats y(x.size()), dx(x.size());
  float epsilon = 1e-5f;
  dpc_batch_norm(bx.data(), r.stats.data(), scale.data(), bias.data(), n, c, s,
                 block, epsilon, y.data());
  dpc_batch_norm_grad_input(bdy.data(), bx.data(), r.stats.data(), scale.data(),
                            n, c, s, block, epsilon, dx.data());
  r.dscale.assign(size_t(c), 0.0f);
  r.dbias.assign(size_t(c), 0.0f);
  dpc_batch_norm_grad_scale(bdy.data(), bx.data(), r.stats.data(), n, c, s,
                            block, epsilon, r.dscale.data());
  dpc_batch_norm_grad_bias(bdy.data(), n, c, s, block, r.dbias.data());
  r.y = blocked ? relayout(y, shape, false) : y;
  r.dx = blocked ? relayout(dx, shape, false) : dx;
  return r;
}

void expectNear(const Floats &got, const Floats &want, const char *what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i)
    ASSERT_NEAR(got[i], want[i], 1e-6 * std::max(1.0f, std::fabs(want[i])))
        << what << " element " << i;
}

TEST(BlockedBatchNorm, GivesThePlainKernelsResults) {
  Shape shape = {3, 48, 5, 7};
  int64_t c = shape[1];
  Floats x = randomFloats(countOf(shape), 2, -2.0f, 3.0f);
  Floats dy = randomFloats(x.size(), 3);
  Floats scale = randomFloats(size_t(c), 4, 0.5f, 1.5f);
  Floats bias = randomFloats(size_t(c), 5);
  // A constant channel: the same arithmetic, so the same bits (its mean and
  // x cancel exactly).
  for (int64_t i = 0; i < shape[0]; ++i)
    for (int64_t j = 0; j < shape[2] * shape[3]; ++j)
      x[size_t((i * c + 17) * shape[2] * shape[3] + j)] = 0.3f;
  BatchNormResults plain = batchNorm(x, dy, scale, bias, shape, 1);
  BatchNormResults blocked =
      batchNorm(x, dy, scale, bias, shape, DPC_CHANNEL_BLOCK);
  expectNear(blocked.stats, plain.stats, "stats");
  expectNear(blocked.runningMean, plain.runningMean, "running mean");
  expectNear(blocked.runningVar, plain.runningVar, "running variance");
  expectNear(blocked.y, plain.y, "y");
  expectNear(blocked.dx, plain.dx, "dx");
  expectNear(blocked.dscale, plain.dscale, "dscale");
  expectNear(blocked.dbias, plain.dbias, "dbias");
  for (int64_t i = 0; i < shape[0]; ++i) {
    size_t at = size_t((i * c + 17) * shape[2] * shape[3]);
    EXPECT_EQ(blocked.y[at], plain.y[at]);
  }
}

/// One convolution ABI kernel family: forward, input and filter gradient.
struct ConvKernels {
  const char *name;
  decltype(&dpc_conv2d) forward;
  decltype(&dpc_conv2d_grad_input) gradInput;
  decltype(&dpc_conv2d_grad_filter) gradFilter;
};

class BlockedConv : public ::testing::TestWithParam<ConvKernels> {};

TEST_P(BlockedConv, EveryLayoutGivesThePlainBits) {
  const ConvKernels &k = GetParam();
  for (int64_t stride : {1, 2}) {
    Shape xs = {2, 32, 9, 9}, ws = {48, 32, 3, 3};
    dpc_conv_params params = {stride, stride, 1, 1, 1, 1, 1, 1, 1, 0};
    int64_t side = (9 + 2 - 3) / stride + 1;
    Shape ys = {2, 48, side, side};
    Floats x = randomFloats(countOf(xs), 6), w = randomFloats(countOf(ws), 7);
    Floats dy = randomFloats(countOf(ys), 8);
    Floats y(countOf(ys)), dx(countOf(xs)), dw(countOf(ws));
    k.forward(x.data(), xs.data(), w.data(), ws.data(), nullptr, y.data(),
              ys.data(), &params);
    k.gradInput(dy.data(), ys.data(), w.data(), ws.data(), dx.data(), xs.data(),
                &params);
    k.gradFilter(dy.data(), ys.data(), x.data(), xs.data(), dw.data(),
                 ws.data(), &params);
    for (int64_t layouts :
         {int64_t(DPC_CONV_BLOCKED_X), int64_t(DPC_CONV_BLOCKED_Y),
          int64_t(DPC_CONV_BLOCKED_X | DPC_CONV_BLOCKED_Y)}) {
      SCOPED_TRACE(std::string(k.name) + " stride " + std::to_string(stride) +
                   " layouts " + std::to_string(layouts));
      params.layouts = layouts;
      bool bx = layouts & DPC_CONV_BLOCKED_X, by = layouts & DPC_CONV_BLOCKED_Y;
      Floats xIn = bx ? relayout(x, xs, true) : x;
      Floats dyIn = by ? relayout(dy, ys, true) : dy;
      Floats y2(y.size()), dx2(dx.size()), dw2(dw.size());
      k.forward(xIn.data(), xs.data(), w.data(), ws.data(), nullptr, y2.data(),
                ys.data(), &params);
      k.gradInput(dyIn.data(), ys.data(), w.data(), ws.data(), dx2.data(),
                  xs.data(), &params);
      k.gradFilter(dyIn.data(), ys.data(), xIn.data(), xs.data(), dw2.data(),
                   ws.data(), &params);
      EXPECT_EQ(by ? relayout(y2, ys, false) : y2, y);
      EXPECT_EQ(bx ? relayout(dx2, xs, false) : dx2, dx);
      EXPECT_EQ(dw2, dw);
      // Adding into dw itself (DPC_CONV_ACCUMULATE_DW) doubles it exactly.
      params.layouts = layouts | DPC_CONV_ACCUMULATE_DW;
      k.gradFilter(dyIn.data(), ys.data(), xIn.data(), xs.data(), dw2.data(),
                   ws.data(), &params);
      for (size_t i = 0; i < dw.size(); ++i)
        ASSERT_EQ(dw2[i], 2 * dw[i]) << "accumulated element " << i;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    Kernels, BlockedConv,
    ::testing::Values(ConvKernels{"direct", dpc_conv2d, dpc_conv2d_grad_input,
                                  dpc_conv2d_grad_filter},
                      ConvKernels{"bf16", dpc_conv2d_bf16,
                                  dpc_conv2d_grad_input_bf16,
                                  dpc_conv2d_grad_filter_bf16},
                      ConvKernels{"winograd", dpc_conv2d_winograd,
                                  dpc_conv2d_grad_input_winograd,
                                  dpc_conv2d_grad_filter_winograd}),
    [](const ::testing::TestParamInfo<ConvKernels> &info) {
      return std::string(info.param.name);
    });

} // namespace
