//===- ConvTransposeConformanceTest.cpp - ConvTranspose on every target ---===//
//
// dpc_conv_transpose2d against ConvTransposeReference.h's double reference
// of ONNX ConvTranspose, and the gradients autodiff builds for it (the
// conv2d kernels: the input's a dpc_conv2d by the same filter, the
// filter's a dpc_conv2d_grad_filter with x as the output gradient, the
// bias's a dpc_conv2d_grad_bias) against finite differences of that
// reference. Part of the conformance suite (ConformanceTest.cpp): compiled
// once per target, with the tensors in the target's memory.
//
//===----------------------------------------------------------------------===//

#include "test/unittests/kernels/ConvTransposeReference.h"
#include "test/unittests/kernels/TargetDevice.h"

#include "dpc/runtime/Abi.h"

#include <gtest/gtest.h>

#include <string>

using namespace dpc::testing;

namespace {

/// The bound of every check here: the conv2d checks' of ConformanceTest.cpp
/// (kTolerances), whose kernels these are.
Tolerance bound() {
#ifdef DPC_TEST_TARGET_CUDA
  return {Tolerance::RelativeToRms, 1e-4};
#else
  return {Tolerance::Relative, 1e-5};
#endif
}

class ConvTranspose
    : public TargetKernelTest,
      public ::testing::WithParamInterface<ConvTransposeConfig> {};

TEST_P(ConvTranspose, ForwardWithAndWithoutBias) {
  const ConvTransposeConfig &c = GetParam();
  Shape ys = c.y();
  Floats x = randomFloats(countOf(c.x), 1), w = randomFloats(countOf(c.w), 2),
         b = randomFloats(size_t(c.cout()), 3);
  Buffer<float> dX(x), dW(w), dB(b), dY(countOf(ys)), dY2(countOf(ys));
  dpc_conv_transpose2d(dX.get(), c.x.data(), dW.get(), c.w.data(), dB.get(),
                       dY.get(), ys.data(), &c.params);
  dpc_conv_transpose2d(dX.get(), c.x.data(), dW.get(), c.w.data(), nullptr,
                       dY2.get(), ys.data(), &c.params);
  expectClose(dY.host(),
              convTransposeForward(c, toDoubles(x), toDoubles(w), toDoubles(b)),
              bound());
  expectClose(dY2.host(),
              convTransposeForward(c, toDoubles(x), toDoubles(w), {}), bound());
}

/// The gradients of L = sum(r * convTranspose(x, w) + r * bias) by x, w and
/// bias, from the conv2d kernels as autodiff calls them, against central
/// differences of the reference (exact up to rounding: L is linear in each).
TEST_P(ConvTranspose, GradientsAreTheConvolutionKernels) {
  const ConvTransposeConfig &c = GetParam();
  Shape ys = c.y();
  Floats x = randomFloats(countOf(c.x), 4), w = randomFloats(countOf(c.w), 5),
         r = randomFloats(countOf(ys), 6);
  Buffer<float> dX(x), dW(w), dR(r), dDx(countOf(c.x)), dDw(countOf(c.w)),
      dDb(size_t(c.cout()));
  // The conv2d that the transposed convolution is the input gradient of
  // reads r (the shape of y) and writes the shape of x.
  dpc_conv2d(dR.get(), ys.data(), dW.get(), c.w.data(), nullptr, dDx.get(),
             c.x.data(), &c.params);
  dpc_conv2d_grad_filter(dX.get(), c.x.data(), dR.get(), ys.data(), dDw.get(),
                         c.w.data(), &c.params);
  dpc_conv2d_grad_bias(dR.get(), ys.data(), dDb.get());

  Doubles xd = toDoubles(x), wd = toDoubles(w), bd(size_t(c.cout()), 0.0);
  auto loss = [&] {
    Doubles y = convTransposeForward(c, xd, wd, bd);
    double sum = 0;
    for (size_t i = 0; i < y.size(); ++i)
      sum += double(r[i]) * y[i];
    return sum;
  };
  auto differences = [&](Doubles &v) {
    Doubles d(v.size());
    for (size_t i = 0; i < v.size(); ++i)
      d[i] = centralDifference(v, i, loss, 1e-3);
    return d;
  };
  expectClose(dDx.host(), differences(xd), bound());
  expectClose(dDw.host(), differences(wd), bound());
  expectClose(dDb.host(), differences(bd), bound());
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, ConvTranspose,
    ::testing::Values(
        // ONNX's node test: 3x3 to 5x5, one input channel, two outputs.
        ConvTransposeConfig{"Basic",
                            {1, 1, 3, 3},
                            {1, 2, 3, 3},
                            {1, 1, 0, 0, 0, 0, 1, 1, 1, 0},
                            {0, 0}},
        // torch's nn.ConvTranspose2d(4, 6, 3, stride=2, padding=1,
        // output_padding=1, groups=2): 5x5 to 10x10.
        ConvTransposeConfig{"Stride2OutputPaddingGroups",
                            {2, 4, 5, 5},
                            {4, 3, 3, 3},
                            {2, 2, 1, 1, 1, 1, 1, 1, 2, 0},
                            {1, 1}},
        // Dilations, uneven strides and pads, padding on one side only.
        ConvTransposeConfig{"DilationsUnevenPads",
                            {2, 3, 4, 4},
                            {3, 2, 2, 3},
                            {1, 2, 0, 1, 1, 0, 2, 1, 1, 0},
                            {0, 1}},
        ConvTransposeConfig{"UnevenPadsOutputPadding",
                            {1, 2, 5, 4},
                            {2, 3, 4, 2},
                            {2, 1, 2, 0, 1, 1, 1, 1, 1, 0},
                            {1, 0}},
        // A 1-D ConvTranspose as the importer writes it: a height of 1.
        ConvTransposeConfig{"OneDimensional",
                            {2, 4, 1, 9},
                            {4, 2, 1, 5},
                            {1, 3, 0, 2, 0, 1, 1, 2, 2, 0},
                            {0, 2}},
        ConvTransposeConfig{"Depthwise",
                            {1, 4, 6, 6},
                            {4, 1, 3, 3},
                            {2, 2, 1, 1, 1, 1, 1, 1, 4, 0},
                            {1, 1}}),
    [](const auto &info) { return std::string(info.param.name); });

} // namespace
