//===- NNLoss.cpp - nn softmax and losses ---------------------------------===//
//
// Verifiers and gradient rules of the ops of NNLoss.td.
//
//===----------------------------------------------------------------------===//

#include "dialects/nn/IR/NNOpsCommon.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/TypeSwitch.h"

#include <cmath>

using namespace mlir;
using namespace mlir::dpc::nn;

//===----------------------------------------------------------------------===//
// Softmax
//===----------------------------------------------------------------------===//

static LogicalResult verifySoftmaxAxis(Operation *op, Value input,
                                       int64_t axis) {
  return normalizeAxis(axis, shapeOf(input).size(),
                       [&] { return op->emitOpError(); });
}

LogicalResult SoftmaxOp::verify() {
  return verifySoftmaxAxis(*this, getInput(), getAxis());
}
LogicalResult LogSoftmaxOp::verify() {
  return verifySoftmaxAxis(*this, getInput(), getAxis());
}
LogicalResult SoftmaxGradOp::verify() {
  return verifySoftmaxAxis(*this, getResult(), getAxis());
}
LogicalResult LogSoftmaxGradOp::verify() {
  return verifySoftmaxAxis(*this, getResult(), getAxis());
}

//===----------------------------------------------------------------------===//
// Loss
//===----------------------------------------------------------------------===//

template <typename LossOp> static LogicalResult verifyLossOperands(LossOp op) {
  ArrayRef<int64_t> logits = shapeOf(op.getLogits());
  ArrayRef<int64_t> labels = shapeOf(op.getLabels());
  if (logits.size() < 2)
    return op.emitOpError("expects logits of rank >= 2 (batch, positions..., "
                          "classes), got ")
           << formatShape(logits);
  if (labels != logits.drop_back())
    return op.emitOpError("expects a label per row of the logits (shape ")
           << formatShape(logits.drop_back()) << "), got labels of shape "
           << formatShape(labels);
  float scale = op.getScale().convertToFloat();
  if (!(scale > 0.0f) || !std::isfinite(scale))
    return op.emitOpError("expects a positive finite scale, got ") << scale;
  if (op.getIgnoreIndex() && scale != 1.0f)
    return op.emitOpError("expects scale = 1 with ignore_index (the run time "
                          "scales by the step's counted labels), got ")
           << scale;
  float smoothing = op.getLabelSmoothing().convertToFloat();
  if (!(smoothing >= 0.0f && smoothing < 1.0f))
    return op.emitOpError("expects label_smoothing in [0, 1), got ")
           << smoothing;
  return success();
}

LogicalResult SoftmaxCrossEntropyOp::verify() {
  if (failed(verifyLossOperands(*this)))
    return failure();
  return expectType(*this, "a 0-d loss", getLoss(), {},
                    elementTypeOf(getLogits()));
}

LogicalResult SoftmaxCrossEntropyGradOp::verify() {
  if (failed(verifyLossOperands(*this)))
    return failure();
  return expectType(*this, "logits_grad", getLogitsGrad(), shapeOf(getLogits()),
                    elementTypeOf(getLogits()));
}

template <typename LossOp> static LogicalResult verifyMseOperands(LossOp op) {
  ArrayRef<int64_t> prediction = shapeOf(op.getPrediction());
  ArrayRef<int64_t> target = shapeOf(op.getTarget());
  if (target != prediction)
    return op.emitOpError("expects a target of the prediction's shape ")
           << formatShape(prediction) << ", got target of shape "
           << formatShape(target);
  if (failed(expectType(op, "target", op.getTarget(), prediction,
                        elementTypeOf(op.getPrediction()))))
    return failure();
  float scale = op.getScale().convertToFloat();
  if (!(scale > 0.0f) || !std::isfinite(scale))
    return op.emitOpError("expects a positive finite scale, got ") << scale;
  return success();
}

LogicalResult MseLossOp::verify() {
  if (failed(verifyMseOperands(*this)))
    return failure();
  return expectType(*this, "a 0-d loss", getLoss(), {},
                    elementTypeOf(getPrediction()));
}

LogicalResult MseLossGradOp::verify() {
  if (failed(verifyMseOperands(*this)))
    return failure();
  return expectType(*this, "prediction_grad", getPredictionGrad(),
                    shapeOf(getPrediction()), elementTypeOf(getPrediction()));
}

bool mlir::dpc::nn::isLoss(Operation *op) {
  return isa<SoftmaxCrossEntropyOp, MseLossOp>(op);
}

SmallVector<Operation *> mlir::dpc::nn::getLosses(Block &block) {
  SmallVector<Operation *> losses;
  for (Operation &op : block)
    if (isLoss(&op))
      losses.push_back(&op);
  return losses;
}

//===----------------------------------------------------------------------===//
// Costs
//===----------------------------------------------------------------------===//

CostRule mlir::dpc::nn::estimateLossWork(Operation *op, OpWork &work) {
  CostRule rule = CostRule::Counted;
  llvm::TypeSwitch<Operation *>(op)
      .Case<SoftmaxOp, LogSoftmaxOp>([&](Operation *) {
        // max, exp, sum and a scale per element; the gradient is a sum of
        // products and an elementwise pass.
        work.flops = 5 * elementsOf(op->getResult(0));
        work.gradFlops = 4 * elementsOf(op->getResult(0));
        work.gradBytes = work.bytes * 3 / 2;
      })
      .Case<SoftmaxGradOp, LogSoftmaxGradOp>(
          [&](Operation *) { work.flops = 4 * elementsOf(op->getOperand(0)); })
      .Case([&](SoftmaxCrossEntropyOp loss) {
        // max, exp, sum, log per row; the gradient is softmax minus one-hot.
        work.flops = 4 * elementsOf(loss.getLogits());
        work.gradFlops = 3 * elementsOf(loss.getLogits());
        work.gradBytes = 2 * getSizeInBytes(loss.getLogits());
      })
      .Case([&](SoftmaxCrossEntropyGradOp) {
        work.flops = elementsOf(op->getOperand(0));
      })
      .Case([&](MseLossOp loss) {
        // A difference, a square and a sum per element, reading both
        // tensors; the gradient is a scaled difference.
        work.flops = 3 * elementsOf(loss.getPrediction());
        work.gradFlops = 2 * elementsOf(loss.getPrediction());
        work.gradBytes = 3 * getSizeInBytes(loss.getPrediction());
      })
      .Case([&](MseLossGradOp grad) {
        work.flops = 2 * elementsOf(grad.getPrediction());
      })
      .Default([&](Operation *) { rule = CostRule::NotInFamily; });
  return rule;
}
