//===- Losses.cpp - Softmax cross-entropy and mean squared error ----------===//
//
// The losses and their gradients. A loss with an ignored label takes its
// scale from the runtime (dpc_loss_scale: one over the step's count of the
// other labels) and tells the manifest which label it leaves out.
//
//===----------------------------------------------------------------------===//

#include "passes/lowering/RuntimeLowering.h"

#include "dialects/nn/IR/NNOps.h"
#include "dialects/nn/IR/ShapeInference.h"

#include <type_traits>

using namespace mlir;
using namespace mlir::dpc;
using namespace mlir::dpc::lowering;

void lowering::populateLossLowerings(RuntimeLoweringTable &table) {
  // A gradient takes the loss's operands; its kernel is the loss's _grad.
  table.add<nn::SoftmaxCrossEntropyOp, nn::SoftmaxCrossEntropyGradOp>(
      [](auto op, RuntimeLowering &rt) {
        std::string suffix =
            std::is_same_v<decltype(op), nn::SoftmaxCrossEntropyGradOp>
                ? "_grad"
                : "";
        // Logits .. x C: every position but the last dimension is a row.
        ArrayRef<int64_t> logits = shapeOf(op.getLogits());
        Ptr out = rt.alloc(op);
        float smoothing = op.getLabelSmoothing().convertToFloat();
        std::optional<int64_t> ignoredIndex = op.getIgnoreIndex();
        if (ignoredIndex)
          rt.manifest.ignoreIndex = *ignoredIndex;
        if (smoothing != 0.0f) {
          F32 scale = ignoredIndex ? rt.call<abi::dpc_loss_scale>({rt.context})
                                   : rt.f32(op.getScale().convertToFloat());
          rt.callAs<abi::dpc_softmax_cross_entropy_smoothed>(
              "dpc_softmax_cross_entropy_smoothed" + suffix,
              {rt.ptrOf(op.getLogits()), rt.ptrOf(op.getLabels()),
               rt.i64(nn::getNumElements(logits.drop_back())),
               rt.i64(logits.back()), rt.i64(ignoredIndex ? 1 : 0),
               rt.i64(ignoredIndex.value_or(0)), rt.f32(smoothing), scale,
               out});
        } else if (std::optional<int64_t> ignored = ignoredIndex) {
          rt.callAs<abi::dpc_softmax_cross_entropy_ignore>(
              "dpc_softmax_cross_entropy_ignore" + suffix,
              {rt.ptrOf(op.getLogits()), rt.ptrOf(op.getLabels()),
               rt.i64(nn::getNumElements(logits.drop_back())),
               rt.i64(logits.back()), rt.i64(*ignored),
               rt.call<abi::dpc_loss_scale>({rt.context}), out});
        } else {
          rt.callAs<abi::dpc_softmax_cross_entropy>(
              "dpc_softmax_cross_entropy" + suffix,
              {rt.ptrOf(op.getLogits()), rt.ptrOf(op.getLabels()),
               rt.i64(nn::getNumElements(logits.drop_back())),
               rt.i64(logits.back()), rt.f32(op.getScale().convertToFloat()),
               out});
        }
        rt.define(op, out);
      });
  table.add<nn::MseLossOp, nn::MseLossGradOp>([](auto op, RuntimeLowering &rt) {
    Ptr out = rt.alloc(op);
    rt.callAs<abi::dpc_mse_loss>(
        std::is_same_v<decltype(op), nn::MseLossGradOp> ? "dpc_mse_loss_grad"
                                                        : "dpc_mse_loss",
        {rt.ptrOf(op.getPrediction()), rt.ptrOf(op.getTarget()),
         rt.i64(nn::getNumElements(shapeOf(op.getPrediction()))),
         rt.f32(op.getScale().convertToFloat()), out});
    rt.define(op, out);
  });
}
