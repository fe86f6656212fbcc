//===- NNTensor.cpp - nn views, layouts and data movement -----------------===//
//
// Verifiers and gradient rules of the ops of NNTensor.td.
//
//===----------------------------------------------------------------------===//

#include "dialects/nn/IR/NNOpsCommon.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/TypeSwitch.h"

#include <algorithm>

using namespace mlir;
using namespace mlir::dpc::nn;

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

FailureOr<RankedTensorType> TransposeOp::inferResultType() {
  FailureOr<Shape> shape = inferTransposeShape(shapeOf(getInput()), getPerm(),
                                               [&] { return emitOpError(); });
  return inferredType(shape, elementTypeOf(getInput()));
}

//===----------------------------------------------------------------------===//
// Concatenation, slices and clipping
//===----------------------------------------------------------------------===//

FailureOr<RankedTensorType> ConcatOp::inferResultType() {
  SmallVector<ArrayRef<int64_t>> shapes;
  Type element = elementTypeOf(getInputs().front());
  for (Value input : getInputs()) {
    if (elementTypeOf(input) != element)
      return emitOpError("expects inputs of one element type, got ")
             << element << " and " << elementTypeOf(input);
    shapes.push_back(shapeOf(input));
  }
  FailureOr<Shape> shape =
      inferConcatShape(shapes, getAxis(), [&] { return emitOpError(); });
  return inferredType(shape, elementTypeOf(getInputs().front()));
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

FailureOr<RankedTensorType> PadOp::inferResultType() {
  FailureOr<Shape> shape = inferPadShape(shapeOf(getInput()), getPads(),
                                         [&] { return emitOpError(); });
  return inferredType(shape, elementTypeOf(getInput()));
}

FailureOr<RankedTensorType> GatherOp::inferResultType() {
  FailureOr<Shape> shape =
      inferGatherShape(shapeOf(getTable()), shapeOf(getIndices()),
                       [&] { return emitOpError(); });
  return inferredType(shape, elementTypeOf(getTable()));
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

void TransposeOp::buildGradients(OpBuilder &b, ValueRange resultGrads,
                                 ArrayRef<bool> needed,
                                 SmallVectorImpl<Value> &grads) {
  ArrayRef<int64_t> perm = getPerm();
  SmallVector<int64_t> inverse(perm.size());
  for (auto [i, p] : llvm::enumerate(perm))
    inverse[p] = int64_t(i);
  buildInputGradient<TransposeOp>(*this, b, resultGrads, needed, grads,
                                  inverse);
}

void ConcatOp::buildGradients(OpBuilder &b, ValueRange resultGrads,
                              ArrayRef<bool> needed,
                              SmallVectorImpl<Value> &grads) {
  resetGrads(*this, grads);
  int64_t rank = cast<RankedTensorType>(getType()).getRank();
  SmallVector<int64_t> offsets(rank, 0), steps(rank, 1);
  for (auto [i, input] : llvm::enumerate(getInputs())) {
    if (needed[i])
      grads[i] = b.create<SliceOp>(getLoc(), input.getType(), resultGrads[0],
                                   offsets, steps);
    offsets[getAxis()] +=
        cast<RankedTensorType>(input.getType()).getDimSize(getAxis());
  }
}

// The gradient is the slice of the result's gradient where the input lies.
void PadOp::buildGradients(OpBuilder &b, ValueRange resultGrads,
                           ArrayRef<bool> needed,
                           SmallVectorImpl<Value> &grads) {
  int64_t rank = cast<RankedTensorType>(getType()).getRank();
  SmallVector<int64_t> steps(rank, 1);
  buildInputGradient<SliceOp>(*this, b, resultGrads, needed, grads,
                              getPads().take_front(rank), steps);
}

//===----------------------------------------------------------------------===//
// Costs
//===----------------------------------------------------------------------===//

// Per output element, one read (nearest) or a weighted sum of the 2^k
// neighbours of k spatial dimensions (linear), 2 flops each.
static double resizeFlops(StringRef mode, Value output) {
  int64_t spatial = int64_t(shapeOf(output).size()) - 2;
  double reads = mode == "linear" ? double(int64_t(1) << spatial) : 1.0;
  return 2 * reads * elementsOf(output);
}

CostRule mlir::dpc::nn::estimateTensorWork(Operation *op, OpWork &work) {
  CostRule rule = CostRule::Counted;
  llvm::TypeSwitch<Operation *>(op)
      .Case<ConcatOp, SliceOp, PadOp>([&](Operation *) {
        // A copy per result element; the gradient is the adjoint copy (for
        // a slice, also zeroing the rest of the input). Integer ids have
        // none.
        work.flops = elementsOf(op->getResult(0));
        if (isa<FloatType>(elementTypeOf(op->getResult(0)))) {
          work.gradFlops = work.flops;
          work.gradBytes = work.bytes;
        }
      })
      .Case([&](GatherOp gather) {
        // A row copy per index; the gradient clears the table and adds the
        // rows back.
        work.flops = elementsOf(gather.getResult());
        work.gradFlops = work.flops + elementsOf(gather.getTable());
        work.gradBytes = work.bytes + getSizeInBytes(gather.getTable());
      })
      .Case([&](GatherGradOp grad) {
        work.flops =
            elementsOf(grad.getResultGrad()) + elementsOf(grad.getTableGrad());
      })
      .Case([&](SliceGradOp) { work.flops = elementsOf(op->getResult(0)); })
      .Case([&](TransposeOp) {
        // One pass; the gradient is the inverse permutation's.
        work.flops = std::max(elementsOf(op->getOperand(0)),
                              elementsOf(op->getResult(0)));
        if (isa<FloatType>(elementTypeOf(op->getResult(0)))) {
          work.gradFlops = work.flops;
          work.gradBytes = work.bytes;
        }
      })
      .Case([&](ReshapeOp) {
        // A view: no kernel runs, forward or backward.
        work.bytes = 0;
        work.callMs = 0;
      })
      .Case([&](ResizeOp resize) {
        work.flops = resizeFlops(resize.getMode(), resize.getResult());
        // The gradient spreads each output back over the same neighbours.
        work.gradFlops = work.flops;
        work.gradBytes = work.bytes;
      })
      .Case([&](ResizeGradOp grad) {
        work.flops = resizeFlops(grad.getMode(), grad.getResultGrad());
      })
      // propagate-layouts inserts relayouts after the schedule is priced.
      .Case([&](RelayoutOp) { rule = CostRule::NoWork; })
      .Default([&](Operation *) { rule = CostRule::NotInFamily; });
  return rule;
}

//===----------------------------------------------------------------------===//
// Resize
//===----------------------------------------------------------------------===//

/// nn.resize and nn.resize_grad: known modes, and `input` resized to
/// `result` (named `what`) by `scales` (the result's own sizes where a
/// scale is 0).
static LogicalResult verifyResize(Operation *op, Value input, Value result,
                                  StringRef what, ArrayRef<double> scales,
                                  StringRef mode, StringRef coordinates,
                                  StringRef nearestMode) {
  auto emit = [&] { return op->emitOpError(); };
  if (failed(resizeCodes(mode, coordinates, nearestMode, emit)))
    return failure();
  ArrayRef<int64_t> out = shapeOf(result);
  FailureOr<Shape> shape =
      inferResizeShape(shapeOf(input), scales,
                       out.drop_front(std::min<size_t>(2, out.size())), emit);
  if (failed(shape))
    return failure();
  return expectType(op, what, result, *shape, elementTypeOf(input));
}

LogicalResult ResizeOp::verify() {
  return verifyResize(*this, getInput(), getResult(), "result", getScales(),
                      getMode(), getCoordinates(), getNearestMode());
}

LogicalResult ResizeGradOp::verify() {
  if (elementTypeOf(getInputGrad()) != elementTypeOf(getResultGrad()))
    return emitOpError("expects the gradient's element type");
  return verifyResize(*this, getInputGrad(), getResultGrad(), "result_grad",
                      getScales(), getMode(), getCoordinates(),
                      getNearestMode());
}

void ResizeOp::buildGradients(OpBuilder &b, ValueRange resultGrads,
                              ArrayRef<bool> needed,
                              SmallVectorImpl<Value> &grads) {
  resetGrads(*this, grads);
  if (needed[0])
    grads[0] = b.create<ResizeGradOp>(getLoc(), getInput().getType(),
                                      resultGrads[0], getScales(), getMode(),
                                      getCoordinates(), getNearestMode());
}
