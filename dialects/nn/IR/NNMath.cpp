//===- NNMath.cpp - nn elementwise ops and masks --------------------------===//
//
// Verifiers and gradient rules of the ops of NNMath.td.
//
//===----------------------------------------------------------------------===//

#include "dialects/nn/IR/NNOpsCommon.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/TypeSwitch.h"

#include <algorithm>

using namespace mlir;
using namespace mlir::dpc::nn;

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

// Broadcasting binary ops and comparisons: the result has the operands'
// broadcast shape (and `elementType`), the rhs the lhs's element type.
template <typename Op>
static FailureOr<RankedTensorType> inferBroadcastBinary(Op op,
                                                        Type elementType) {
  return inferredType(inferBroadcastShape(shapeOf(op.getLhs()),
                                          shapeOf(op.getRhs()),
                                          [&] { return op.emitOpError(); }),
                      elementType);
}

FailureOr<RankedTensorType> AddOp::inferResultType() {
  return inferBroadcastBinary(*this, elementTypeOf(getLhs()));
}
FailureOr<RankedTensorType> SubOp::inferResultType() {
  return inferBroadcastBinary(*this, elementTypeOf(getLhs()));
}
FailureOr<RankedTensorType> MulOp::inferResultType() {
  return inferBroadcastBinary(*this, elementTypeOf(getLhs()));
}
FailureOr<RankedTensorType> DivOp::inferResultType() {
  return inferBroadcastBinary(*this, elementTypeOf(getLhs()));
}

LogicalResult AddOp::verify() { return expectRhsLikeLhs(*this); }
LogicalResult SubOp::verify() { return expectRhsLikeLhs(*this); }
LogicalResult MulOp::verify() { return expectRhsLikeLhs(*this); }
LogicalResult DivOp::verify() { return expectRhsLikeLhs(*this); }

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

LogicalResult CumSumOp::verify() {
  int64_t rank = cast<RankedTensorType>(getInput().getType()).getRank();
  int64_t axis = getAxisAttr().getInt();
  if (axis < 0 || axis >= rank)
    return emitOpError("expects an axis in [0, ") << rank << "), got " << axis;
  return success();
}

void CumSumOp::buildGradients(OpBuilder &b, ValueRange resultGrads,
                              ArrayRef<bool> needed,
                              SmallVectorImpl<Value> &grads) {
  resetGrads(*this, grads);
  if (!needed[0])
    return;
  grads[0] = b.create<CumSumOp>(
      getLoc(), resultGrads[0].getType(), resultGrads[0], getAxisAttr(),
      getExclusiveAttr(), getReverse() ? UnitAttr() : b.getUnitAttr());
}

//===----------------------------------------------------------------------===//
// Masks
//===----------------------------------------------------------------------===//

// A boolean result of the operands' broadcast shape, operands of one type.
FailureOr<RankedTensorType> CompareOp::inferResultType() {
  return inferBroadcastBinary(*this, IntegerType::get(getContext(), 1));
}
FailureOr<RankedTensorType> LogicalOp::inferResultType() {
  return inferBroadcastBinary(*this, IntegerType::get(getContext(), 1));
}

LogicalResult CompareOp::verify() {
  StringRef p = getPredicate();
  if (p != "eq" && p != "lt" && p != "gt" && p != "le" && p != "ge")
    return emitOpError("expects predicate eq, lt, gt, le or ge, got '")
           << p << "'";
  if (p != "eq" && elementTypeOf(getLhs()).isInteger(1))
    return emitOpError("orders only numbers, not booleans");
  return expectRhsLikeLhs(*this);
}

LogicalResult LogicalOp::verify() {
  StringRef k = getKind();
  if (k != "and" && k != "or" && k != "xor")
    return emitOpError("expects kind and, or or xor, got '") << k << "'";
  return expectRhsLikeLhs(*this);
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

FailureOr<RankedTensorType> WhereOp::inferResultType() {
  auto fail = [&] { return emitOpError(); };
  FailureOr<Shape> shape =
      inferBroadcastShape(shapeOf(getCondition()), shapeOf(getLhs()), fail);
  if (succeeded(shape))
    shape = inferBroadcastShape(*shape, shapeOf(getRhs()), fail);
  return inferredType(shape, elementTypeOf(getLhs()));
}

LogicalResult WhereOp::verify() { return expectRhsLikeLhs(*this); }

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

// `grad`, of a broadcasting op's result shape, summed back to the shape of
// the operand it is the gradient of.
static Value sumToOperand(OpBuilder &b, Location loc, Value grad,
                          Value operand) {
  if (operand.getType() == grad.getType())
    return grad;
  return b.create<SumToShapeOp>(loc, operand.getType(), grad);
}

static Value negate(OpBuilder &b, Location loc, Value value) {
  return b.create<NegOp>(loc, value);
}

void AddOp::buildGradients(OpBuilder &b, ValueRange resultGrads,
                           ArrayRef<bool> needed,
                           SmallVectorImpl<Value> &grads) {
  resetGrads(*this, grads);
  Value dy = resultGrads[0];
  for (unsigned i = 0; i < 2; ++i)
    if (needed[i])
      grads[i] = sumToOperand(b, getLoc(), dy, getOperand(i));
}

void SubOp::buildGradients(OpBuilder &b, ValueRange resultGrads,
                           ArrayRef<bool> needed,
                           SmallVectorImpl<Value> &grads) {
  resetGrads(*this, grads);
  Value dy = resultGrads[0];
  if (needed[0])
    grads[0] = sumToOperand(b, getLoc(), dy, getLhs());
  // Negated after the sum, on the smaller tensor.
  if (needed[1])
    grads[1] = negate(b, getLoc(), sumToOperand(b, getLoc(), dy, getRhs()));
}

void MulOp::buildGradients(OpBuilder &b, ValueRange resultGrads,
                           ArrayRef<bool> needed,
                           SmallVectorImpl<Value> &grads) {
  resetGrads(*this, grads);
  Value dy = resultGrads[0];
  Location loc = getLoc();
  for (unsigned i = 0; i < 2; ++i) {
    if (!needed[i])
      continue;
    Value other = getOperand(1 - i);
    Value product = b.create<MulOp>(loc, dy.getType(), dy, other);
    grads[i] = sumToOperand(b, loc, product, getOperand(i));
  }
}

void DivOp::buildGradients(OpBuilder &b, ValueRange resultGrads,
                           ArrayRef<bool> needed,
                           SmallVectorImpl<Value> &grads) {
  resetGrads(*this, grads);
  Value dy = resultGrads[0];
  Location loc = getLoc();
  if (needed[0]) {
    Value quotient = b.create<DivOp>(loc, dy.getType(), dy, getRhs());
    grads[0] = sumToOperand(b, loc, quotient, getLhs());
  }
  // d(l / r)/dr = -(l / r) / r: from the result, which backward keeps.
  if (needed[1]) {
    Value scaled = b.create<MulOp>(loc, dy.getType(), dy, getResult());
    Value quotient = b.create<DivOp>(loc, dy.getType(), scaled, getRhs());
    grads[1] = negate(b, loc, sumToOperand(b, loc, quotient, getRhs()));
  }
}

// Every row of UnaryFunctions.def has its nn op, of the mnemonic CODE names.
#define DPC_UNARY_FUNCTION(CODE, NAME, ...)                                    \
  static_assert(NAME##Op::kUnaryFunction == DPC_UNARY_##CODE,                  \
                "nn." #NAME " names another row of UnaryFunctions.def");
#include "dpc/runtime/UnaryFunctions.def"

Value mlir::dpc::nn::unaryGradientSaved(UnaryFunctionOpInterface op) {
  const ::dpc::runtime::UnaryFunctionInfo *info =
      ::dpc::runtime::lookupUnaryFunction(op.getUnaryFunction());
  assert(info && info->saved != ::dpc::runtime::UnarySaved::None &&
         "a function with a gradient op of its own");
  return info->saved == ::dpc::runtime::UnarySaved::Input ? op->getOperand(0)
                                                          : op->getResult(0);
}

SmallVector<NamedAttribute>
mlir::dpc::nn::unaryParameters(UnaryFunctionOpInterface op) {
  const ::dpc::runtime::UnaryFunctionInfo *info =
      ::dpc::runtime::lookupUnaryFunction(op.getUnaryFunction());
  SmallVector<NamedAttribute> params;
  for (const char *name : info->params)
    if (*name)
      params.push_back(NamedAttribute(StringAttr::get(op->getContext(), name),
                                      op->getAttr(name)));
  return params;
}

std::array<float, 2>
mlir::dpc::nn::unaryParameterValues(UnaryFunctionOpInterface op) {
  const ::dpc::runtime::UnaryFunctionInfo *info =
      ::dpc::runtime::lookupUnaryFunction(op.getUnaryFunction());
  std::array<float, 2> values = {0.0f, 0.0f};
  for (int i = 0; i < 2; ++i)
    if (*info->params[i])
      values[i] = op->getAttrOfType<FloatAttr>(info->params[i])
                      .getValue()
                      .convertToFloat();
  return values;
}

void CastOp::buildGradients(OpBuilder &b, ValueRange resultGrads,
                            ArrayRef<bool> needed,
                            SmallVectorImpl<Value> &grads) {
  resetGrads(*this, grads);
  // Only a cast between floats carries a gradient; from an integer or a
  // boolean (a mask made additive) there is nothing to differentiate.
  auto from = cast<RankedTensorType>(getInput().getType());
  if (needed[0] && isa<FloatType>(from.getElementType()))
    grads[0] = from == resultGrads[0].getType()
                   ? resultGrads[0]
                   : b.create<CastOp>(getLoc(), from, resultGrads[0]);
}

void WhereOp::buildGradients(OpBuilder &b, ValueRange resultGrads,
                             ArrayRef<bool> needed,
                             SmallVectorImpl<Value> &grads) {
  resetGrads(*this, grads);
  Value dy = resultGrads[0];
  for (unsigned i = 1; i < 3; ++i) {
    if (!needed[i])
      continue;
    Value masked = b.create<WhereGradOp>(getLoc(), dy.getType(), dy,
                                         getCondition(), b.getBoolAttr(i == 1));
    grads[i] = sumToOperand(b, getLoc(), masked, getOperand(i));
  }
}

//===----------------------------------------------------------------------===//
// Costs
//===----------------------------------------------------------------------===//

// Flops per element from the function's row of UnaryFunctions.def. A
// gradient that reads a saved tensor moves three tensors where the forward
// moves two.
static void estimateUnary(UnaryFunctionOpInterface unary, OpWork &work) {
  const ::dpc::runtime::UnaryFunctionInfo *info =
      ::dpc::runtime::lookupUnaryFunction(unary.getUnaryFunction());
  double elements = elementsOf(unary->getResult(0));
  if (unary.isUnaryGradient()) {
    work.flops = info->gradFlops * elements;
    return;
  }
  work.flops = info->flops * elements;
  work.gradFlops = info->gradFlops * elements;
  bool saves = info->saved != ::dpc::runtime::UnarySaved::None;
  work.gradBytes = work.bytes * (saves ? 3 : 2) / 2;
}

CostRule mlir::dpc::nn::estimateMathWork(Operation *op, OpWork &work) {
  CostRule rule = CostRule::Counted;
  double elements = op->getNumResults() ? elementsOf(op->getResult(0)) : 0;
  llvm::TypeSwitch<Operation *>(op)
      .Case<AddOp, SubOp, ReluOp, ClipOp, CumSumOp>([&](Operation *) {
        // A flop (or a compare) per element; the gradient is the adjoint
        // pass.
        work.flops = elements;
        work.gradFlops = work.flops;
        work.gradBytes = work.bytes;
      })
      .Case<MulOp, DivOp>([&](Operation *) {
        // Backward: a product (and, for div, a quotient) per operand.
        work.flops = elements;
        work.gradFlops = 3 * work.flops;
        work.gradBytes = 2 * work.bytes;
      })
      .Case([&](UnaryFunctionOpInterface unary) { estimateUnary(unary, work); })
      .Case([&](DropoutOp) {
        // Philox's ten rounds per four elements, and a multiply.
        work.flops = 8 * elements;
        work.gradFlops = work.flops;
        work.gradBytes = work.bytes;
      })
      .Case([&](DropoutGradOp) { work.flops = 8 * elements; })
      .Case<CompareOp, LogicalOp, NotOp, CastOp, WhereGradOp, ClipGradOp,
            ReluGradOp>([&](Operation *) { work.flops = elements; })
      .Case([&](WhereOp) {
        // A select per element; the gradient masks dy once per branch.
        work.flops = elements;
        work.gradFlops = 2 * work.flops;
        work.gradBytes = 2 * work.bytes;
      })
      .Case<SumToShapeOp, BroadcastToOp>([&](Operation *) {
        // One pass over the larger tensor; the gradient is the adjoint
        // pass (a broadcast for a sum, and the other way round).
        work.flops = std::max(elementsOf(op->getOperand(0)), elements);
        work.gradFlops = work.flops;
        work.gradBytes = work.bytes;
      })
      // A fused region is costed as the ops it was made of, before
      // fuse-elementwise made it.
      .Case<FusedOp, YieldOp>([&](Operation *) { rule = CostRule::NoWork; })
      .Default([&](Operation *) { rule = CostRule::NotInFamily; });
  return rule;
}
