//===- SelectConvAlgorithm.cpp - Direct or Winograd per convolution -------===//
//
// Sets each nn.conv2d's `algorithm`. The decision (chooseAlgorithm) reads
// only the convolution's geometry; the pass reads it off each op and writes
// the answer back. Autodiff later copies a convolution's algorithm to its
// input and filter gradients, so one layer runs one algorithm in all three
// of its passes: the rules compare the three passes' times together. A bf16
// build runs the layers Winograd does not take in bf16, so its rule
// compares f32 Winograd with the bf16 direct kernels instead.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "dialects/nn/IR/NNOps.h"
#include "dialects/nn/IR/ShapeInference.h"
#include "dialects/pipe/IR/PipeOps.h"

#include "llvm/ADT/StringSwitch.h"

namespace mlir::dpc {
#define GEN_PASS_DEF_SELECTCONVALGORITHMPASS
#include "passes/Passes.h.inc"
} // namespace mlir::dpc

using namespace mlir;
using namespace mlir::dpc;

namespace {

// What the decision needs of a convolution: its sizes, and whether the
// backend's Winograd kernels compute it at all (nn::winogradFits' attributes,
// the same the op's verifier holds, in f32).
struct ConvGeometry {
  int64_t channels, filters, outputH, outputW;
  bool winogradApplies;
};

// Whether it is faster than the direct kernel over the layer's forward,
// input-gradient and filter-gradient passes together. Measured with
// oneDNN 2.6 on AVX-512 (docs/ARCHITECTURE.md), batch 16: from 64 channels
// in and out, Winograd takes 0.3-0.75x the direct time at 7x7 outputs and
// larger, from 32 channels at 8x8 (at 7x7 it is 1.03x on one thread and
// 1.19x on two), from 16 channels at 16x16; at 4x4, where one tile covers
// the image, it loses at batch 16 and wins at batch 64, and is left out.
bool winogradPays(const ConvGeometry &g) {
  int64_t channels = std::min(g.channels, g.filters);
  int64_t side = std::min(g.outputH, g.outputW);
  return (channels >= 64 && side >= 7) || (channels >= 32 && side >= 8) ||
         (channels >= 16 && side >= 16);
}

// Whether f32 Winograd is faster than bf16 direct convolution over the
// three passes, where bf16's dot products do twice f32's multiply-adds a
// cycle (AVX512-BF16). Measured with oneDNN 2.6, batch 16 (docs/
// ARCHITECTURE.md): from 64 channels at 20x20 outputs and larger, Winograd
// takes 0.78-0.90x the bf16 time on one and two threads; at 14x14 it takes
// 1.13-1.18x, and with 32 channels it wins at 28x28 on two threads only.
bool winogradBeatsBf16(const ConvGeometry &g) {
  int64_t channels = std::min(g.channels, g.filters);
  int64_t side = std::min(g.outputH, g.outputW);
  return channels >= 64 && side >= 20;
}

enum class Mode { Auto, Winograd, Direct };

StringRef chooseAlgorithm(const ConvGeometry &g, Mode mode, bool bf16) {
  if (mode == Mode::Direct || !g.winogradApplies)
    return "direct";
  if (mode == Mode::Winograd)
    return "winograd";
  return (bf16 ? winogradBeatsBf16(g) : winogradPays(g)) ? "winograd"
                                                         : "direct";
}

ConvGeometry geometryOf(nn::Conv2dOp conv) {
  ArrayRef<int64_t> filter = nn::shapeOf(conv.getFilter());
  ArrayRef<int64_t> result = nn::shapeOf(conv.getResult());
  bool f32 = cast<RankedTensorType>(conv.getResult().getType())
                 .getElementType()
                 .isF32();
  return {filter[1] * int64_t(conv.getGroups()), filter[0], result[2],
          result[3],
          f32 && nn::winogradFits(filter, conv.getStrides(), conv.getPads(),
                                  conv.getDilations(), conv.getGroups())};
}

struct SelectConvAlgorithmPass
    : public mlir::dpc::impl::SelectConvAlgorithmPassBase<
          SelectConvAlgorithmPass> {
  using SelectConvAlgorithmPassBase::SelectConvAlgorithmPassBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    std::optional<Mode> mode =
        llvm::StringSwitch<std::optional<Mode>>(algorithm)
            .Case("auto", Mode::Auto)
            .Case("winograd", Mode::Winograd)
            .Case("direct", Mode::Direct)
            .Default(std::nullopt);
    if (!mode) {
      module.emitError("select-conv-algorithm: unknown algorithm '")
          << algorithm << "'; expected auto, winograd or direct";
      return signalPassFailure();
    }
    // A bf16 build gives f32 Winograd only to the layers where it beats
    // bf16; forcing it on every layer would undo the build's precision.
    bool bf16 = pipe::isBf16(module);
    if (bf16 && *mode == Mode::Winograd) {
      module.emitError("select-conv-algorithm: winograd convolutions are "
                       "f32; a bf16 build takes them only where auto finds "
                       "them faster than bf16");
      return signalPassFailure();
    }
    module.walk([&](nn::Conv2dOp conv) {
      conv.setAlgorithm(chooseAlgorithm(geometryOf(conv), *mode, bf16));
    });
  }
};

} // namespace
