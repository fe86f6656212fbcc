//===- NNOps.cpp - nn dialect operations ----------------------------------===//
//
// Verifiers: every op checks that its result type is the one its operands and
// attributes imply, through the shared rules of ShapeInference.h.
//
//===----------------------------------------------------------------------===//

#include "dialects/nn/IR/NNOps.h"
#include "dialects/nn/IR/ShapeInference.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"

#include <cmath>

using namespace mlir;
using namespace mlir::dpc::nn;

static Type elementTypeOf(Value value) {
  return cast<RankedTensorType>(value.getType()).getElementType();
}

// Checks that `value` has shape `expected` and element type `elementType`.
static LogicalResult expectType(Operation *op, StringRef what, Value value,
                                ArrayRef<int64_t> expected, Type elementType) {
  if (shapeOf(value) != expected)
    return op->emitOpError("expects ")
           << what << " of shape " << formatShape(expected) << ", got "
           << formatShape(shapeOf(value));
  if (elementTypeOf(value) != elementType)
    return op->emitOpError("expects ")
           << what << " of element type " << elementType << ", got "
           << elementTypeOf(value);
  return success();
}

// A gradient op's result_grad has the forward op's result shape, which the
// forward shape rule gives from the operands the gradient op carries.
static LogicalResult expectForwardResultGrad(Operation *op,
                                             FailureOr<Shape> forward,
                                             Value resultGrad,
                                             Type elementType) {
  if (failed(forward))
    return failure();
  return expectType(op, "result_grad (the forward result's shape)", resultGrad,
                    *forward, elementType);
}

//===----------------------------------------------------------------------===//
// ParamOp
//===----------------------------------------------------------------------===//

LogicalResult ParamOp::verify() {
  if (getName().empty())
    return emitOpError("expects a non-empty parameter name");
  return success();
}

//===----------------------------------------------------------------------===//
// Convolution
//===----------------------------------------------------------------------===//

/// Checks `algorithm` against what the convolution is: Winograd needs
/// winogradFits' attributes and f32, what the CPU backend's Winograd kernels
/// compute right.
template <typename ConvOp>
static LogicalResult verifyConvAlgorithm(ConvOp op, ArrayRef<int64_t> filter,
                                         Type elementType) {
  StringRef algorithm = op.getAlgorithm();
  if (algorithm == "direct")
    return success();
  if (algorithm != "winograd")
    return op.emitOpError("expects algorithm 'direct' or 'winograd', got '")
           << algorithm << "'";
  ArrayRef<int64_t> pads = op.getPads();
  if (!winogradFits(filter, op.getStrides(), pads, op.getDilations(),
                    op.getGroups()))
    return op.emitOpError("winograd needs a 3x3 filter, strides and "
                          "dilations of 1, one group and pads all 0 or all "
                          "1, got filter ")
           << formatShape(filter) << ", strides "
           << formatShape(op.getStrides()) << ", dilations "
           << formatShape(op.getDilations()) << ", groups " << op.getGroups()
           << ", pads " << formatShape(pads);
  if (!elementType.isF32())
    return op.emitOpError("winograd needs f32, got ") << elementType;
  return success();
}

template <typename ConvOp>
static FailureOr<Shape> inferConvFrom(ConvOp op, ArrayRef<int64_t> input,
                                      ArrayRef<int64_t> filter) {
  FailureOr<Shape> shape = inferConv2dShape(
      input, filter, op.getStrides(), op.getPads(), op.getDilations(),
      op.getGroups(), [&] { return op.emitOpError(); });
  if (failed(shape))
    return failure();
  if (failed(verifyConvAlgorithm(op, filter, elementTypeOf(op->getResult(0)))))
    return failure();
  return shape;
}

LogicalResult Conv2dOp::verify() {
  FailureOr<Shape> shape =
      inferConvFrom(*this, shapeOf(getInput()), shapeOf(getFilter()));
  if (failed(shape))
    return failure();
  Type elementType = elementTypeOf(getInput());
  if (failed(expectType(*this, "filter", getFilter(), shapeOf(getFilter()),
                        elementType)))
    return failure();
  if (getBias()) {
    int64_t channels = shapeOf(getFilter())[0];
    if (failed(expectType(*this, "bias", getBias(), {channels}, elementType)))
      return failure();
  }
  return expectType(*this, "result", getResult(), *shape, elementType);
}

LogicalResult Conv2dGradInputOp::verify() {
  return expectForwardResultGrad(
      *this,
      inferConvFrom(*this, shapeOf(getInputGrad()), shapeOf(getFilter())),
      getResultGrad(), elementTypeOf(getInputGrad()));
}

LogicalResult Conv2dGradFilterOp::verify() {
  return expectForwardResultGrad(
      *this,
      inferConvFrom(*this, shapeOf(getInput()), shapeOf(getFilterGrad())),
      getResultGrad(), elementTypeOf(getFilterGrad()));
}

LogicalResult Conv2dGradBiasOp::verify() {
  ArrayRef<int64_t> grad = shapeOf(getResultGrad());
  if (grad.size() != 4)
    return emitOpError("expects a rank-4 NCHW result_grad, got ")
           << formatShape(grad);
  return expectType(*this, "bias_grad", getBiasGrad(), {grad[1]},
                    elementTypeOf(getResultGrad()));
}

//===----------------------------------------------------------------------===//
// Matmul
//===----------------------------------------------------------------------===//

template <typename MatmulOp>
static FailureOr<Shape> inferMatmulFrom(MatmulOp op, ArrayRef<int64_t> lhs,
                                        ArrayRef<int64_t> rhs) {
  return inferMatmulShape(lhs, rhs, op.getTransposeLhs(), op.getTransposeRhs(),
                          [&] { return op.emitOpError(); });
}

LogicalResult MatmulOp::verify() {
  FailureOr<Shape> shape =
      inferMatmulFrom(*this, shapeOf(getLhs()), shapeOf(getRhs()));
  if (failed(shape))
    return failure();
  Type elementType = elementTypeOf(getLhs());
  if (failed(
          expectType(*this, "rhs", getRhs(), shapeOf(getRhs()), elementType)))
    return failure();
  return expectType(*this, "result", getResult(), *shape, elementType);
}

// A transpose of the last two dimensions that keeps the others in place:
// what a matmul's transpose flag does to its operand.
static bool swapsLastTwo(TransposeOp transpose) {
  ArrayRef<int64_t> perm = transpose.getPerm();
  size_t rank = perm.size();
  if (rank < 2)
    return false;
  for (size_t d = 0; d + 2 < rank; ++d)
    if (perm[d] != static_cast<int64_t>(d))
      return false;
  return perm[rank - 2] == static_cast<int64_t>(rank - 1) &&
         perm[rank - 1] == static_cast<int64_t>(rank - 2);
}

LogicalResult MatmulOp::canonicalize(MatmulOp op, PatternRewriter &rewriter) {
  auto lhs = op.getLhs().getDefiningOp<TransposeOp>();
  auto rhs = op.getRhs().getDefiningOp<TransposeOp>();
  bool foldLhs = lhs && swapsLastTwo(lhs);
  bool foldRhs = rhs && swapsLastTwo(rhs);
  if (!foldLhs && !foldRhs)
    return failure();
  rewriter.modifyOpInPlace(op, [&] {
    if (foldLhs) {
      op.getLhsMutable().assign(lhs.getInput());
      op.setTransposeLhs(!op.getTransposeLhs());
    }
    if (foldRhs) {
      op.getRhsMutable().assign(rhs.getInput());
      op.setTransposeRhs(!op.getTransposeRhs());
    }
  });
  return success();
}

LogicalResult MatmulGradLhsOp::verify() {
  return expectForwardResultGrad(
      *this, inferMatmulFrom(*this, shapeOf(getLhsGrad()), shapeOf(getRhs())),
      getResultGrad(), elementTypeOf(getLhsGrad()));
}

LogicalResult MatmulGradRhsOp::verify() {
  return expectForwardResultGrad(
      *this, inferMatmulFrom(*this, shapeOf(getLhs()), shapeOf(getRhsGrad())),
      getResultGrad(), elementTypeOf(getRhsGrad()));
}

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

// Broadcasting binary ops: the result has the broadcast shape and every
// operand the lhs's element type.
template <typename Op> static LogicalResult verifyBroadcastBinary(Op op) {
  FailureOr<Shape> shape =
      inferBroadcastShape(shapeOf(op.getLhs()), shapeOf(op.getRhs()),
                          [&] { return op.emitOpError(); });
  if (failed(shape))
    return failure();
  Type elementType = elementTypeOf(op.getLhs());
  if (failed(expectType(op, "rhs", op.getRhs(), shapeOf(op.getRhs()),
                        elementType)))
    return failure();
  return expectType(op, "result", op.getResult(), *shape, elementType);
}

LogicalResult AddOp::verify() { return verifyBroadcastBinary(*this); }
LogicalResult SubOp::verify() { return verifyBroadcastBinary(*this); }
LogicalResult MulOp::verify() { return verifyBroadcastBinary(*this); }
LogicalResult DivOp::verify() { return verifyBroadcastBinary(*this); }

// `narrow` broadcasts to `wide`: a sum_to_shape's result to its input, or a
// broadcast_to's input to its result.
static LogicalResult verifyBroadcastsTo(Operation *op, Value narrow,
                                        StringRef narrowName, Value wide,
                                        StringRef wideName) {
  ArrayRef<int64_t> from = shapeOf(narrow), to = shapeOf(wide);
  FailureOr<Shape> broadcast =
      inferBroadcastShape(from, to, [&] { return op->emitOpError(); });
  if (failed(broadcast))
    return failure();
  if (ArrayRef<int64_t>(*broadcast) != to)
    return op->emitOpError("expects the ")
           << narrowName << " shape " << formatShape(from)
           << " to broadcast to the " << wideName << " shape "
           << formatShape(to);
  if (elementTypeOf(narrow) != elementTypeOf(wide))
    return op->emitOpError("expects the same element type in and out");
  return success();
}

LogicalResult SumToShapeOp::verify() {
  return verifyBroadcastsTo(*this, getResult(), "result", getInput(), "input");
}

LogicalResult BroadcastToOp::verify() {
  return verifyBroadcastsTo(*this, getInput(), "input", getResult(), "result");
}

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
// Pooling
//===----------------------------------------------------------------------===//

template <typename PoolOp> static FailureOr<Shape> inferPoolFrom(PoolOp op) {
  return inferPool2dShape(shapeOf(op.getInput()), op.getKernelShape(),
                          op.getStrides(), op.getPads(), op.getCeilMode(),
                          [&] { return op.emitOpError(); });
}

LogicalResult MaxPool2dOp::verify() {
  FailureOr<Shape> shape = inferPoolFrom(*this);
  if (failed(shape))
    return failure();
  return expectType(*this, "result", getResult(), *shape,
                    elementTypeOf(getInput()));
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

LogicalResult AvgPool2dOp::verify() {
  FailureOr<Shape> shape = inferPoolFrom(*this);
  if (failed(shape))
    return failure();
  return expectType(*this, "result", getResult(), *shape,
                    elementTypeOf(getInput()));
}

LogicalResult AvgPool2dGradOp::verify() {
  FailureOr<Shape> shape =
      inferPool2dShape(shapeOf(getInputGrad()), getKernelShape(), getStrides(),
                       getPads(), getCeilMode(), [&] { return emitOpError(); });
  return expectForwardResultGrad(*this, shape, getResultGrad(),
                                 elementTypeOf(getInputGrad()));
}

LogicalResult GlobalAvgPoolOp::verify() {
  FailureOr<Shape> shape = inferGlobalAvgPoolShape(
      shapeOf(getInput()), [&] { return emitOpError(); });
  if (failed(shape))
    return failure();
  return expectType(*this, "result", getResult(), *shape,
                    elementTypeOf(getInput()));
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
  Type elementType = elementTypeOf(getInput());
  if (failed(expectType(*this, "result_grad", getResultGrad(),
                        shapeOf(getInput()), elementType)))
    return failure();
  return expectType(*this, "input_grad", getInputGrad(), shapeOf(getInput()),
                    elementType);
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
  Type elementType = elementTypeOf(getInput());
  if (failed(expectType(*this, "result_grad", getResultGrad(),
                        shapeOf(getInput()), elementType)))
    return failure();
  return expectType(*this, "input_grad", getInputGrad(), shapeOf(getInput()),
                    elementType);
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

//===----------------------------------------------------------------------===//
// Reshape
//===----------------------------------------------------------------------===//

bool mlir::dpc::nn::isChannelBlocked(Value tensor) {
  Operation *op = tensor.getDefiningOp();
  if (!op)
    return false;
  auto layout = op->getAttrOfType<StringAttr>(kLayoutAttrName);
  return layout && layout.getValue() == kChannelBlocked;
}

bool mlir::dpc::nn::canBeChannelBlocked(Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  return tensor && tensor.hasStaticShape() && tensor.getRank() == 4 &&
         tensor.getElementType().isF32() &&
         tensor.getDimSize(1) % kChannelBlock == 0;
}

LogicalResult RelayoutOp::verify() {
  if (!canBeChannelBlocked(getType()))
    return emitOpError("expects a 4-D f32 tensor whose channels are a "
                       "multiple of ")
           << kChannelBlock << ", got " << getType();
  return success();
}

LogicalResult ReshapeOp::verify() {
  int64_t in = getNumElements(shapeOf(getInput()));
  int64_t out = getNumElements(shapeOf(getResult()));
  if (in != out)
    return emitOpError("expects the same number of elements, got ")
           << in << " in " << formatShape(shapeOf(getInput())) << " and " << out
           << " in " << formatShape(shapeOf(getResult()));
  if (elementTypeOf(getInput()) != elementTypeOf(getResult()))
    return emitOpError("expects the same element type in and out");
  return success();
}

OpFoldResult ReshapeOp::fold(FoldAdaptor) {
  if (getInput().getType() == getResult().getType())
    return getInput();
  // reshape(reshape(x)) is one reshape of x.
  if (auto inner = getInput().getDefiningOp<ReshapeOp>()) {
    getInputMutable().assign(inner.getInput());
    return getResult();
  }
  return {};
}

LogicalResult TransposeOp::verify() {
  FailureOr<Shape> shape = inferTransposeShape(shapeOf(getInput()), getPerm(),
                                               [&] { return emitOpError(); });
  if (failed(shape))
    return failure();
  return expectType(*this, "result", getResult(), *shape,
                    elementTypeOf(getInput()));
}

//===----------------------------------------------------------------------===//
// Concatenation, slices and clipping
//===----------------------------------------------------------------------===//

LogicalResult ConcatOp::verify() {
  SmallVector<ArrayRef<int64_t>> shapes;
  for (Value input : getInputs())
    shapes.push_back(shapeOf(input));
  FailureOr<Shape> shape =
      inferConcatShape(shapes, getAxis(), [&] { return emitOpError(); });
  if (failed(shape))
    return failure();
  return expectType(*this, "result", getResult(), *shape,
                    elementTypeOf(getInputs().front()));
}

LogicalResult SliceOp::verify() {
  if (elementTypeOf(getResult()) != elementTypeOf(getInput()))
    return emitOpError("expects the input's element type");
  return verifySliceBox(shapeOf(getInput()), shapeOf(getResult()), getOffsets(),
                        getSteps(), [&] { return emitOpError(); });
}

LogicalResult SliceGradOp::verify() {
  if (elementTypeOf(getResultGrad()) != elementTypeOf(getInputGrad()))
    return emitOpError("expects the gradient's element type");
  return verifySliceBox(shapeOf(getInputGrad()), shapeOf(getResultGrad()),
                        getOffsets(), getSteps(),
                        [&] { return emitOpError(); });
}

LogicalResult PadOp::verify() {
  FailureOr<Shape> shape = inferPadShape(shapeOf(getInput()), getPads(),
                                         [&] { return emitOpError(); });
  if (failed(shape))
    return failure();
  return expectType(*this, "result", getResult(), *shape,
                    elementTypeOf(getInput()));
}

LogicalResult GatherOp::verify() {
  FailureOr<Shape> shape =
      inferGatherShape(shapeOf(getTable()), shapeOf(getIndices()),
                       [&] { return emitOpError(); });
  if (failed(shape))
    return failure();
  return expectType(*this, "result", getResult(), *shape,
                    elementTypeOf(getTable()));
}

LogicalResult GatherGradOp::verify() {
  FailureOr<Shape> shape =
      inferGatherShape(shapeOf(getTableGrad()), shapeOf(getIndices()),
                       [&] { return emitOpError(); });
  if (failed(shape))
    return failure();
  if (elementTypeOf(getTableGrad()) != elementTypeOf(getResultGrad()))
    return emitOpError("expects the gradient's element type");
  if (ArrayRef<int64_t>(*shape) != shapeOf(getResultGrad()))
    return emitOpError("expects result_grad of shape ")
           << formatShape(*shape) << " (the indices' shape, then a table "
           << "row's), got " << formatShape(shapeOf(getResultGrad()));
  return success();
}

LogicalResult DropoutOp::verify() {
  float ratio = getRatio().convertToFloat();
  if (!(ratio >= 0.0f && ratio < 1.0f))
    return emitOpError("expects a ratio in [0, 1), got ") << ratio;
  return success();
}

LogicalResult ClipOp::verify() {
  if (!(getMin().convertToFloat() <= getMax().convertToFloat()))
    return emitOpError("expects min <= max, got ")
           << getMin().convertToFloat() << " and " << getMax().convertToFloat();
  return success();
}

//===----------------------------------------------------------------------===//
// Masks
//===----------------------------------------------------------------------===//

// A boolean result of the operands' broadcast shape, operands of one type.
template <typename Op> static LogicalResult verifyBooleanBinary(Op op) {
  FailureOr<Shape> shape =
      inferBroadcastShape(shapeOf(op.getLhs()), shapeOf(op.getRhs()),
                          [&] { return op.emitOpError(); });
  if (failed(shape))
    return failure();
  if (failed(expectType(op, "rhs", op.getRhs(), shapeOf(op.getRhs()),
                        elementTypeOf(op.getLhs()))))
    return failure();
  return expectType(op, "result", op.getResult(), *shape,
                    IntegerType::get(op.getContext(), 1));
}

LogicalResult CompareOp::verify() {
  StringRef p = getPredicate();
  if (p != "eq" && p != "lt" && p != "gt" && p != "le" && p != "ge")
    return emitOpError("expects predicate eq, lt, gt, le or ge, got '")
           << p << "'";
  if (p != "eq" && elementTypeOf(getLhs()).isInteger(1))
    return emitOpError("orders only numbers, not booleans");
  return verifyBooleanBinary(*this);
}

LogicalResult LogicalOp::verify() {
  StringRef k = getKind();
  if (k != "and" && k != "or" && k != "xor")
    return emitOpError("expects kind and, or or xor, got '") << k << "'";
  return verifyBooleanBinary(*this);
}

LogicalResult CastOp::verify() {
  auto supported = [](Type t) {
    return t.isF32() || t.isInteger(64) || t.isInteger(1);
  };
  if (!supported(elementTypeOf(getInput())) ||
      !supported(elementTypeOf(getResult())))
    return emitOpError("casts only between f32, i64 and i1, got ")
           << elementTypeOf(getInput()) << " to " << elementTypeOf(getResult());
  return success();
}

LogicalResult WhereOp::verify() {
  auto fail = [&] { return emitOpError(); };
  FailureOr<Shape> shape =
      inferBroadcastShape(shapeOf(getCondition()), shapeOf(getLhs()), fail);
  if (succeeded(shape))
    shape = inferBroadcastShape(*shape, shapeOf(getRhs()), fail);
  if (failed(shape))
    return failure();
  Type elementType = elementTypeOf(getLhs());
  if (failed(
          expectType(*this, "rhs", getRhs(), shapeOf(getRhs()), elementType)))
    return failure();
  return expectType(*this, "result", getResult(), *shape, elementType);
}

LogicalResult WhereGradOp::verify() {
  FailureOr<Shape> shape =
      inferBroadcastShape(shapeOf(getCondition()), shapeOf(getResultGrad()),
                          [&] { return emitOpError(); });
  if (failed(shape))
    return failure();
  if (ArrayRef<int64_t>(*shape) != shapeOf(getResultGrad()))
    return emitOpError("expects the condition to broadcast to the gradient's "
                       "shape ")
           << formatShape(shapeOf(getResultGrad()));
  return expectType(*this, "branch_grad", getBranchGrad(),
                    shapeOf(getResultGrad()), elementTypeOf(getResultGrad()));
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
// Optimizer
//===----------------------------------------------------------------------===//

LogicalResult SgdUpdateOp::verify() {
  if (!getParam().getDefiningOp<ParamOp>())
    return emitOpError("expects the param operand to come from nn.param");
  if (!(getLr().convertToFloat() > 0.0f))
    return emitOpError("expects a positive learning rate");
  float momentum = getMomentum().convertToFloat();
  if (!(momentum >= 0.0f && momentum < 1.0f))
    return emitOpError("expects momentum in [0, 1), got ") << momentum;
  if (!(getWeightDecay().convertToFloat() >= 0.0f))
    return emitOpError("expects a non-negative weight_decay");
  return success();
}

int64_t SgdUpdateOp::getNumStateTensors() { return 1; }

LogicalResult AdamUpdateOp::verify() {
  if (!getParam().getDefiningOp<ParamOp>())
    return emitOpError("expects the param operand to come from nn.param");
  if (!(getLr().convertToFloat() > 0.0f))
    return emitOpError("expects a positive learning rate");
  for (auto [name, beta] :
       {std::pair{"beta1", getBeta1()}, std::pair{"beta2", getBeta2()}}) {
    float value = beta.convertToFloat();
    if (!(value >= 0.0f && value < 1.0f))
      return emitOpError("expects ") << name << " in [0, 1), got " << value;
  }
  if (!(getEps().convertToFloat() > 0.0f))
    return emitOpError("expects a positive eps");
  if (!(getWeightDecay().convertToFloat() >= 0.0f))
    return emitOpError("expects a non-negative weight_decay");
  return success();
}

int64_t AdamUpdateOp::getNumStateTensors() { return 2; }

#define GET_OP_CLASSES
#include "dialects/nn/IR/NNOps.cpp.inc"

//===----------------------------------------------------------------------===//
// Recurrent
//===----------------------------------------------------------------------===//

LogicalResult LstmOp::verify() {
  auto emit = [&] { return emitOpError(); };
  std::optional<ArrayRef<int64_t>> bias;
  if (getBias())
    bias = shapeOf(getBias());
  FailureOr<Shape> shape =
      inferLstmShape(shapeOf(getInput()), shapeOf(getWeight()),
                     shapeOf(getRecurrence()), bias ? &*bias : nullptr,
                     shapeOf(getInitialH()), shapeOf(getInitialC()), emit);
  if (failed(shape))
    return failure();
  return expectType(*this, "states", getStates(), *shape,
                    elementTypeOf(getInput()));
}

LogicalResult LstmGradOp::verify() {
  FailureOr<Shape> shape =
      inferLstmGradShape(shapeOf(getStates()), shapeOf(getRecurrence()),
                         shapeOf(getInitialC()), [&] { return emitOpError(); });
  if (failed(shape))
    return failure();
  Type elementType = elementTypeOf(getStates());
  if (failed(expectType(*this, "states_grad (the states' shape)",
                        getStatesGrad(), shapeOf(getStates()), elementType)))
    return failure();
  return expectType(*this, "result", getResult(), *shape, elementType);
}
