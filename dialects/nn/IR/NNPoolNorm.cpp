//===- NNPoolNorm.cpp - nn pooling and normalization ----------------------===//
//
// Verifiers and gradient rules of the ops of NNPoolNorm.td.
//
//===----------------------------------------------------------------------===//

#include "dialects/nn/IR/NNOpsCommon.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::dpc::nn;

//===----------------------------------------------------------------------===//
// Pooling
//===----------------------------------------------------------------------===//

template <typename PoolOp> static FailureOr<Shape> inferPoolFrom(PoolOp op) {
  return inferPool2dShape(shapeOf(op.getInput()), op.getKernelShape(),
                          op.getStrides(), op.getPads(), op.getCeilMode(),
                          [&] { return op.emitOpError(); });
}

FailureOr<RankedTensorType> MaxPool2dOp::inferResultType() {
  FailureOr<Shape> shape = inferPoolFrom(*this);
  return inferredType(shape, elementTypeOf(getInput()));
}

LogicalResult MaxPool2dGradOp::verify() {
  FailureOr<Shape> shape = inferPoolFrom(*this);
  if (failed(shape))
    return failure();
  Type elementType = elementTypeOf(getInput());
  if (failed(
          expectForwardResultGrad(*this, shape, getResultGrad(), elementType)))
    return failure();
  return expectType(*this, "input_grad", getInputGrad(), shapeOf(getInput()),
                    elementType);
}

FailureOr<RankedTensorType> AvgPool2dOp::inferResultType() {
  FailureOr<Shape> shape = inferPoolFrom(*this);
  return inferredType(shape, elementTypeOf(getInput()));
}

LogicalResult AvgPool2dGradOp::verify() {
  FailureOr<Shape> shape =
      inferPool2dShape(shapeOf(getInputGrad()), getKernelShape(), getStrides(),
                       getPads(), getCeilMode(), [&] { return emitOpError(); });
  return expectForwardResultGrad(*this, shape, getResultGrad(),
                                 elementTypeOf(getInputGrad()));
}

FailureOr<RankedTensorType> GlobalAvgPoolOp::inferResultType() {
  FailureOr<Shape> shape = inferGlobalAvgPoolShape(
      shapeOf(getInput()), [&] { return emitOpError(); });
  return inferredType(shape, elementTypeOf(getInput()));
}

LogicalResult GlobalAvgPoolGradOp::verify() {
  return expectForwardResultGrad(
      *this,
      inferGlobalAvgPoolShape(shapeOf(getInputGrad()),
                              [&] { return emitOpError(); }),
      getResultGrad(), elementTypeOf(getInputGrad()));
}

//===----------------------------------------------------------------------===//
// Normalization
//===----------------------------------------------------------------------===//

// Checks `stats` (2 x C) and, when given, the per-channel operands (C) of a
// batch_norm op on `input`.
static LogicalResult verifyBatchNormOperands(Operation *op, Value input,
                                             Value stats,
                                             ArrayRef<Value> perChannel,
                                             ArrayRef<StringRef> names) {
  FailureOr<Shape> statsShape = inferBatchNormStatsShape(
      shapeOf(input), [&] { return op->emitOpError(); });
  if (failed(statsShape))
    return failure();
  Type elementType = elementTypeOf(input);
  if (stats && failed(expectType(op, "stats (mean and variance rows)", stats,
                                 *statsShape, elementType)))
    return failure();
  int64_t channels = (*statsShape)[1];
  for (auto [value, name] : llvm::zip(perChannel, names))
    if (failed(expectType(op, name, value, {channels}, elementType)))
      return failure();
  return success();
}

static LogicalResult verifyEpsilon(Operation *op, APFloat epsilon) {
  if (!(epsilon.convertToFloat() >= 0.0f))
    return op->emitOpError("expects a non-negative epsilon");
  return success();
}

// A normalization's input gradient op: result_grad and input_grad have the
// input's type.
static LogicalResult expectGradsLikeInput(Operation *op, Value input,
                                          Value resultGrad, Value inputGrad) {
  Type elementType = elementTypeOf(input);
  if (failed(expectType(op, "result_grad", resultGrad, shapeOf(input),
                        elementType)))
    return failure();
  return expectType(op, "input_grad", inputGrad, shapeOf(input), elementType);
}

LogicalResult BatchNormStatsOp::verify() {
  for (Value running : {getRunningMean(), getRunningVar()})
    if (!running.getDefiningOp<ParamOp>())
      return emitOpError("expects the running statistics to come from "
                         "nn.param");
  float momentum = getMomentum().convertToFloat();
  if (!(momentum >= 0.0f && momentum <= 1.0f))
    return emitOpError("expects momentum in [0, 1], got ") << momentum;
  return verifyBatchNormOperands(*this, getInput(), getStats(),
                                 {getRunningMean(), getRunningVar()},
                                 {"running_mean", "running_var"});
}

LogicalResult BatchNormOp::verify() {
  if (failed(verifyEpsilon(*this, getEpsilon())) ||
      failed(verifyBatchNormOperands(*this, getInput(), getStats(),
                                     {getScale(), getBias()},
                                     {"scale", "bias"})))
    return failure();
  return expectType(*this, "result", getResult(), shapeOf(getInput()),
                    elementTypeOf(getInput()));
}

LogicalResult BatchNormGradInputOp::verify() {
  if (failed(verifyEpsilon(*this, getEpsilon())) ||
      failed(verifyBatchNormOperands(*this, getInput(), getStats(),
                                     {getScale()}, {"scale"})))
    return failure();
  return expectGradsLikeInput(*this, getInput(), getResultGrad(),
                              getInputGrad());
}

LogicalResult BatchNormGradScaleOp::verify() {
  if (failed(verifyEpsilon(*this, getEpsilon())) ||
      failed(verifyBatchNormOperands(*this, getInput(), getStats(),
                                     {getScaleGrad()}, {"scale_grad"})))
    return failure();
  return expectType(*this, "result_grad", getResultGrad(), shapeOf(getInput()),
                    elementTypeOf(getInput()));
}

LogicalResult BatchNormGradBiasOp::verify() {
  return verifyBatchNormOperands(*this, getResultGrad(), Value(),
                                 {getBiasGrad()}, {"bias_grad"});
}

// Checks the axis of a layer_norm op on `input` and the operands of the
// normalized shape among `weights` (null ones are absent).
static LogicalResult verifyLayerNormOperands(Operation *op, Value input,
                                             int64_t axis,
                                             ArrayRef<Value> weights,
                                             ArrayRef<StringRef> names) {
  FailureOr<Shape> weightShape = inferLayerNormWeightShape(
      shapeOf(input), axis, [&] { return op->emitOpError(); });
  if (failed(weightShape))
    return failure();
  for (auto [value, name] : llvm::zip(weights, names))
    if (value &&
        failed(expectType(op, name, value, *weightShape, elementTypeOf(input))))
      return failure();
  return success();
}

LogicalResult LayerNormOp::verify() {
  if (failed(verifyEpsilon(*this, getEpsilon())) ||
      failed(verifyLayerNormOperands(
          *this, getInput(), getAxis(), {getScale(), getBias()},
          {"scale (the normalized shape)", "bias (the normalized shape)"})))
    return failure();
  return expectType(*this, "result", getResult(), shapeOf(getInput()),
                    elementTypeOf(getInput()));
}

LogicalResult LayerNormGradInputOp::verify() {
  if (failed(verifyEpsilon(*this, getEpsilon())) ||
      failed(verifyLayerNormOperands(*this, getInput(), getAxis(), {getScale()},
                                     {"scale (the normalized shape)"})))
    return failure();
  return expectGradsLikeInput(*this, getInput(), getResultGrad(),
                              getInputGrad());
}

LogicalResult LayerNormGradScaleOp::verify() {
  if (failed(verifyEpsilon(*this, getEpsilon())) ||
      failed(verifyLayerNormOperands(*this, getInput(), getAxis(),
                                     {getScaleGrad()},
                                     {"scale_grad (the normalized shape)"})))
    return failure();
  return expectType(*this, "result_grad", getResultGrad(), shapeOf(getInput()),
                    elementTypeOf(getInput()));
}

// The statistics operand gets no gradient of its own: the input gradient
// covers the path through them (nn.batch_norm_stats has no rule).
void BatchNormOp::buildGradients(OpBuilder &b, ValueRange resultGrads,
                                 ArrayRef<bool> needed,
                                 SmallVectorImpl<Value> &grads) {
  resetGrads(*this, grads);
  Value dy = resultGrads[0];
  Location loc = getLoc();
  if (needed[0])
    grads[0] = b.create<BatchNormGradInputOp>(loc, getInput().getType(), dy,
                                              getInput(), getStats(),
                                              getScale(), getEpsilonAttr());
  if (needed[2])
    grads[2] = b.create<BatchNormGradScaleOp>(loc, getScale().getType(), dy,
                                              getInput(), getStats(),
                                              getEpsilonAttr());
  if (needed[3])
    grads[3] = b.create<BatchNormGradBiasOp>(loc, getBias().getType(), dy);
}

// The bias gradient is the result gradient summed to the normalized shape,
// which nn.sum_to_shape already is (numpy broadcasting aligns the trailing
// dimensions).
void LayerNormOp::buildGradients(OpBuilder &b, ValueRange resultGrads,
                                 ArrayRef<bool> needed,
                                 SmallVectorImpl<Value> &grads) {
  resetGrads(*this, grads);
  Value dy = resultGrads[0];
  Location loc = getLoc();
  if (needed[0])
    grads[0] = b.create<LayerNormGradInputOp>(loc, getInput().getType(), dy,
                                              getInput(), getScale(),
                                              getAxisAttr(), getEpsilonAttr());
  if (getScale() && needed[1])
    grads[1] = b.create<LayerNormGradScaleOp>(loc, getScale().getType(), dy,
                                              getInput(), getAxisAttr(),
                                              getEpsilonAttr());
  if (getBias()) {
    unsigned index = getScale() ? 2 : 1;
    if (needed[index])
      grads[index] = b.create<SumToShapeOp>(loc, getBias().getType(), dy);
  }
}

//===----------------------------------------------------------------------===//
// Costs
//===----------------------------------------------------------------------===//

static void estimateMaxPool(MaxPool2dOp pool, OpWork &work) {
  ArrayRef<int64_t> kernel = pool.getKernelShape();
  double compares = elementsOf(pool.getResult()) * kernel[0] * kernel[1];
  work.flops = compares;
  work.gradFlops = compares;
  work.gradBytes = work.bytes + getSizeInBytes(pool.getInput());
  // The gradient visits the same windows again.
  work.loopMs = compares * kMaxPoolWindowMs;
  work.gradLoopMs = work.loopMs;
}

//===----------------------------------------------------------------------===//
// Local response normalization
//===----------------------------------------------------------------------===//

FailureOr<Shape> LrnOp::inferShape(ArrayRef<int64_t> input, int64_t size,
                                   function_ref<InFlightDiagnostic()> error) {
  if (input.size() < 2) {
    error() << "expects an input of rank at least 2 (N x C x ...), got rank "
            << input.size();
    return failure();
  }
  if (size < 1) {
    error() << "expects size at least 1, got " << size;
    return failure();
  }
  return Shape(input);
}

FailureOr<RankedTensorType> LrnOp::inferResultType() {
  FailureOr<Shape> shape =
      inferShape(shapeOf(getInput()), getSize(), [&] { return emitOpError(); });
  return inferredType(shape, elementTypeOf(getInput()));
}

LogicalResult LrnGradOp::verify() {
  FailureOr<Shape> shape = LrnOp::inferShape(shapeOf(getInput()), getSize(),
                                             [&] { return emitOpError(); });
  if (failed(shape))
    return failure();
  Type elementType = elementTypeOf(getInput());
  if (failed(
          expectForwardResultGrad(*this, shape, getResultGrad(), elementType)))
    return failure();
  return expectType(*this, "input_grad", getInputGrad(), *shape, elementType);
}

CostRule mlir::dpc::nn::estimatePoolNormWork(Operation *op, OpWork &work) {
  CostRule rule = CostRule::Counted;
  llvm::TypeSwitch<Operation *>(op)
      .Case([&](MaxPool2dOp pool) { estimateMaxPool(pool, work); })
      .Case([&](AvgPool2dOp pool) {
        ArrayRef<int64_t> kernel = pool.getKernelShape();
        double adds = elementsOf(pool.getResult()) * kernel[0] * kernel[1];
        work.flops = adds;
        work.gradFlops = adds;
        work.gradBytes = work.bytes;
      })
      .Case([&](GlobalAvgPoolOp pool) {
        work.flops = elementsOf(pool.getInput());
        work.gradFlops = work.flops;
        work.gradBytes = work.bytes;
      })
      .Case([&](BatchNormStatsOp stats) {
        // A sum and a sum of squares per element; no gradient of its own.
        work.flops = 2 * elementsOf(stats.getInput());
      })
      .Case([&](BatchNormOp norm) {
        // Subtract, scale, shift. Backward: two reductions over dy and
        // dy * xhat, the input gradient's elementwise pass, and the scale
        // and bias sums, reading dy and the input more than once.
        double elements = elementsOf(norm.getInput());
        work.flops = 3 * elements;
        work.gradFlops = 9 * elements;
        work.gradBytes = 3 * work.bytes;
      })
      .Case([&](LayerNormOp norm) {
        // Two passes for the row's moments, then normalize, scale and
        // shift. Backward: the input gradient recomputes the moments and
        // takes two sums before its elementwise pass; the scale gradient
        // recomputes them too; the bias gradient is a sum.
        double elements = elementsOf(norm.getInput());
        work.flops = 7 * elements;
        work.gradFlops = 18 * elements;
        work.gradBytes = 3 * work.bytes;
        work.callMs = kOneDnnCallMs;
      })
      .Case([&](LayerNormGradInputOp) {
        work.flops = 11 * elementsOf(op->getOperand(0));
        work.callMs = kOneDnnCallMs;
      })
      .Case([&](LayerNormGradScaleOp) {
        work.flops = 6 * elementsOf(op->getOperand(0));
        work.callMs = kOneDnnCallMs;
      })
      .Case([&](LrnOp lrn) {
        // A multiply-add per window channel, then the base's power and the
        // product. Backward: the bases again, each share's power and
        // product, the gather over the turned windows, and the element's
        // own term; reading dy and the input twice.
        double elements = elementsOf(lrn.getInput());
        double window = double(lrn.getSize());
        work.flops = elements * (2 * window + 3);
        work.gradFlops = elements * (4 * window + 10);
        work.gradBytes = 3 * work.bytes;
      })
      .Case([&](LrnGradOp grad) {
        work.flops = elementsOf(grad.getInput()) * (4 * grad.getSize() + 10);
      })
      .Case<BatchNormGradInputOp, BatchNormGradScaleOp>(
          [&](Operation *) { work.flops = 4 * elementsOf(op->getOperand(0)); })
      .Case([&](MaxPool2dGradOp grad) {
        work.flops = elementsOf(grad.getResultGrad());
        ArrayRef<int64_t> kernel = grad.getKernelShape();
        work.loopMs = work.flops * kernel[0] * kernel[1] * kMaxPoolWindowMs;
      })
      .Case<AvgPool2dGradOp, GlobalAvgPoolGradOp, BatchNormGradBiasOp>(
          [&](Operation *) { work.flops = elementsOf(op->getOperand(0)); })
      .Default([&](Operation *) { rule = CostRule::NotInFamily; });
  return rule;
}
