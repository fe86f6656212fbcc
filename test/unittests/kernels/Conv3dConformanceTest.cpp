//===- Conv3dConformanceTest.cpp - 3-D convolutions on every target -------===//
//
// dpc_conv3d, its input and filter gradients, dpc_conv_transpose3d and the
// bias gradient of a rank-5 result (dpc_conv2d_grad_bias over depth x
// height as one dimension, as the lowering calls it) against
// Conv3dReference.h's double references. Part of the conformance suite
// (ConformanceTest.cpp): compiled once per target, the tensors in the
// target's memory. cuDNN takes even pads only in 3-D, so every shape here
// has them.
//
//===----------------------------------------------------------------------===//

#include "test/unittests/kernels/Conv3dReference.h"
#include "test/unittests/kernels/TargetDevice.h"

#include "dpc/runtime/Abi.h"

#include <gtest/gtest.h>

#include <string>

using namespace dpc::testing;

namespace {

/// The bounds of ConformanceTest.cpp's conv2d checks (kTolerances), whose
/// kernels these are in one more dimension.
Tolerance bound(bool filterGradient = false) {
#ifdef DPC_TEST_TARGET_CUDA
  (void)filterGradient;
  return {Tolerance::RelativeToRms, 1e-4};
#else
  return filterGradient ? Tolerance{Tolerance::RelativeToSums, 1e-6}
                        : Tolerance{Tolerance::Relative, 1e-5};
#endif
}

class Conv3d : public TargetKernelTest,
               public ::testing::WithParamInterface<Conv3dConfig> {};

TEST_P(Conv3d, ForwardWithBias) {
  const Conv3dConfig &c = GetParam();
  Shape ys = c.y();
  Floats x = randomFloats(countOf(c.x), 1), w = randomFloats(countOf(c.w), 2),
         b = randomFloats(size_t(c.w[0]), 3);
  Buffer<float> dX(x), dW(w), dB(b), dY(countOf(ys));
  dpc_conv3d(dX.get(), c.x.data(), dW.get(), c.w.data(), dB.get(), dY.get(),
             ys.data(), &c.params);
  expectClose(dY.host(), conv3dForward(c, x, w, b), bound());
}

TEST_P(Conv3d, Gradients) {
  const Conv3dConfig &c = GetParam();
  Shape ys = c.y();
  Floats x = randomFloats(countOf(c.x), 4), w = randomFloats(countOf(c.w), 5),
         dy = randomFloats(countOf(ys), 6);
  Buffer<float> dX(x), dW(w), dDy(dy), dDx(countOf(c.x)), dDw(countOf(c.w)),
      dDb(size_t(c.w[0]));
  dpc_conv3d_grad_input(dDy.get(), ys.data(), dW.get(), c.w.data(), dDx.get(),
                        c.x.data(), &c.params);
  dpc_conv3d_grad_filter(dDy.get(), ys.data(), dX.get(), c.x.data(), dDw.get(),
                         c.w.data(), &c.params);
  Shape folded = {ys[0], ys[1], ys[2] * ys[3], ys[4]};
  dpc_conv2d_grad_bias(dDy.get(), folded.data(), dDb.get());
  expectClose(dDx.host(), conv3dGradInput(c, dy, w), bound());
  Doubles absSums;
  Doubles want = conv3dGradFilter(c, dy, x, &absSums);
  expectClose(dDw.host(), want, bound(true), &absSums);
  expectClose(dDb.host(), convGradBias(dy, folded), bound());
}

/// ConvTranspose of a [N, O, ...] input by the [O, C/groups, ...] filter is
/// the conv3d's input gradient plus the bias: the output has the conv3d's
/// input shape (an output padding where a stride dropped rows).
TEST_P(Conv3d, TransposedIsTheInputGradientPlusBias) {
  const Conv3dConfig &c = GetParam();
  Shape ys = c.y();
  Floats x = randomFloats(countOf(ys), 7), w = randomFloats(countOf(c.w), 8),
         b = randomFloats(size_t(c.x[1]), 9);
  Buffer<float> dX(x), dW(w), dB(b), dY(countOf(c.x));
  dpc_conv_transpose3d(dX.get(), ys.data(), dW.get(), c.w.data(), dB.get(),
                       dY.get(), c.x.data(), &c.params);
  Doubles want = conv3dGradInput(c, x, w);
  size_t spatial = size_t(c.x[2] * c.x[3] * c.x[4]);
  for (size_t i = 0; i < want.size(); ++i)
    want[i] += b[(i / spatial) % size_t(c.x[1])];
  expectClose(dY.host(), want, bound());
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, Conv3d,
    ::testing::Values(Conv3dConfig{"Basic",
                                   {2, 3, 4, 5, 5},
                                   {4, 3, 3, 3, 3},
                                   {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0}},
                      // Depth 5 at stride 2 by 2 drops its last plane: the
                      // transposed convolution gets it back as output padding.
                      Conv3dConfig{"StridesDilationsGroups",
                                   {1, 4, 5, 6, 7},
                                   {6, 2, 2, 3, 3},
                                   {2, 1, 2, 0, 1, 1, 0, 1, 1, 1, 2, 1, 2, 0}},
                      Conv3dConfig{"Depthwise",
                                   {2, 4, 3, 6, 6},
                                   {4, 1, 1, 3, 3},
                                   {1, 2, 2, 0, 1, 1, 0, 1, 1, 1, 1, 1, 4, 0}}),
    [](const auto &info) { return std::string(info.param.name); });

} // namespace
