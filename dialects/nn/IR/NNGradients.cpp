//===- NNGradients.cpp - Gradient rules of nn ops -------------------------===//
//
// One GradientOpInterface implementation per differentiable op. Input and
// weight gradients are separate ops; an operand that does not need a
// gradient gets none built.
//
//===----------------------------------------------------------------------===//

#include "dialects/nn/IR/NNOps.h"
#include "dialects/nn/IR/ShapeInference.h"

#include "mlir/IR/Builders.h"

using namespace mlir;
using namespace mlir::dpc::nn;

#include "dialects/nn/IR/NNInterfaces.cpp.inc"

// Gradients start as nulls; rules fill in the needed ones.
static void resetGrads(Operation *op, SmallVectorImpl<Value> &grads) {
  grads.assign(op->getNumOperands(), Value());
}

void Conv2dOp::buildGradients(OpBuilder &b, ValueRange resultGrads,
                              ArrayRef<bool> needed,
                              SmallVectorImpl<Value> &grads) {
  resetGrads(*this, grads);
  Value dy = resultGrads[0];
  Location loc = getLoc();
  if (needed[0])
    grads[0] = b.create<Conv2dGradInputOp>(
        loc, getInput().getType(), dy, getFilter(), getStridesAttr(),
        getPadsAttr(), getDilationsAttr(), getGroupsAttr(), getAlgorithmAttr());
  if (needed[1])
    grads[1] = b.create<Conv2dGradFilterOp>(
        loc, getFilter().getType(), dy, getInput(), getStridesAttr(),
        getPadsAttr(), getDilationsAttr(), getGroupsAttr(), getAlgorithmAttr());
  if (getBias() && needed[2])
    grads[2] = b.create<Conv2dGradBiasOp>(loc, getBias().getType(), dy);
}

void MatmulOp::buildGradients(OpBuilder &b, ValueRange resultGrads,
                              ArrayRef<bool> needed,
                              SmallVectorImpl<Value> &grads) {
  resetGrads(*this, grads);
  Value dy = resultGrads[0];
  if (needed[0])
    grads[0] =
        b.create<MatmulGradLhsOp>(getLoc(), getLhs().getType(), dy, getRhs(),
                                  getTransposeLhsAttr(), getTransposeRhsAttr());
  if (needed[1])
    grads[1] =
        b.create<MatmulGradRhsOp>(getLoc(), getRhs().getType(), dy, getLhs(),
                                  getTransposeLhsAttr(), getTransposeRhsAttr());
}

// `grad`, of a broadcasting op's result shape, summed back to the shape of
// the operand it is the gradient of.
static Value sumToOperand(OpBuilder &b, Location loc, Value grad,
                          Value operand) {
  if (operand.getType() == grad.getType())
    return grad;
  return b.create<SumToShapeOp>(loc, operand.getType(), grad);
}

void SumToShapeOp::buildGradients(OpBuilder &b, ValueRange resultGrads,
                                  ArrayRef<bool> needed,
                                  SmallVectorImpl<Value> &grads) {
  resetGrads(*this, grads);
  if (needed[0])
    grads[0] = b.create<BroadcastToOp>(getLoc(), getInput().getType(),
                                       resultGrads[0], getScaleAttr());
}

void BroadcastToOp::buildGradients(OpBuilder &b, ValueRange resultGrads,
                                   ArrayRef<bool> needed,
                                   SmallVectorImpl<Value> &grads) {
  resetGrads(*this, grads);
  if (needed[0])
    grads[0] = b.create<SumToShapeOp>(getLoc(), getInput().getType(),
                                      resultGrads[0], getScaleAttr());
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

void ReluOp::buildGradients(OpBuilder &b, ValueRange resultGrads,
                            ArrayRef<bool> needed,
                            SmallVectorImpl<Value> &grads) {
  resetGrads(*this, grads);
  if (needed[0])
    grads[0] = b.create<ReluGradOp>(getLoc(), resultGrads[0], getResult());
}

void MaxPool2dOp::buildGradients(OpBuilder &b, ValueRange resultGrads,
                                 ArrayRef<bool> needed,
                                 SmallVectorImpl<Value> &grads) {
  resetGrads(*this, grads);
  if (needed[0])
    grads[0] = b.create<MaxPool2dGradOp>(getLoc(), getInput().getType(),
                                         resultGrads[0], getInput(),
                                         getKernelShapeAttr(), getStridesAttr(),
                                         getPadsAttr(), getCeilModeAttr());
}

void AvgPool2dOp::buildGradients(OpBuilder &b, ValueRange resultGrads,
                                 ArrayRef<bool> needed,
                                 SmallVectorImpl<Value> &grads) {
  resetGrads(*this, grads);
  if (needed[0])
    grads[0] = b.create<AvgPool2dGradOp>(
        getLoc(), getInput().getType(), resultGrads[0], getKernelShapeAttr(),
        getStridesAttr(), getPadsAttr(), getCeilModeAttr(),
        getCountIncludePadAttr());
}

void GlobalAvgPoolOp::buildGradients(OpBuilder &b, ValueRange resultGrads,
                                     ArrayRef<bool> needed,
                                     SmallVectorImpl<Value> &grads) {
  resetGrads(*this, grads);
  if (needed[0])
    grads[0] = b.create<GlobalAvgPoolGradOp>(getLoc(), getInput().getType(),
                                             resultGrads[0]);
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

// nn.lstm_grad runs the recurrence backwards once; every operand's gradient
// is then a GEMM or a sum over its result (z_grad, the gate
// pre-activations' gradients, and c_grad, the cells'). The input's and the
// initial states' gradients need nothing else, so the weights' three
// products stay off the path to the previous stage.
void LstmOp::buildGradients(OpBuilder &b, ValueRange resultGrads,
                            ArrayRef<bool> needed,
                            SmallVectorImpl<Value> &grads) {
  resetGrads(*this, grads);
  Location loc = getLoc();
  ArrayRef<int64_t> x = shapeOf(getInput());
  int64_t steps = x[0], batch = x[1], inputSize = x[2];
  int64_t h = cast<RankedTensorType>(getInitialH().getType()).getDimSize(1);
  Type f32 = cast<RankedTensorType>(getInput().getType()).getElementType();
  auto type = [&](ArrayRef<int64_t> shape) {
    return RankedTensorType::get(shape, f32);
  };
  auto slice = [&](Value value, ArrayRef<int64_t> offsets,
                   ArrayRef<int64_t> shape) -> Value {
    SmallVector<int64_t> ones(shape.size(), 1);
    return b.create<SliceOp>(loc, type(shape), value, offsets, ones);
  };
  auto reshape = [&](Value value, ArrayRef<int64_t> shape) -> Value {
    return b.create<ReshapeOp>(loc, type(shape), value);
  };
  auto matmul = [&](Value lhs, Value rhs, ArrayRef<int64_t> shape,
                    bool transposeLhs) -> Value {
    return b.create<MatmulOp>(loc, type(shape), lhs, rhs,
                              b.getBoolAttr(transposeLhs),
                              b.getBoolAttr(false));
  };

  unsigned biasIndex = 3, initialHIndex = getBias() ? 4 : 3;
  unsigned initialCIndex = initialHIndex + 1;
  Value sequence =
      b.create<LstmGradOp>(loc, type({steps, batch, 5 * h}), resultGrads[0],
                           getStates(), getRecurrence(), getInitialC());
  Value gates = slice(sequence, {0, 0, 0}, {steps, batch, 4 * h});
  if (needed[0])
    grads[0] = matmul(gates, getWeight(), {steps, batch, inputSize}, false);
  if (needed[initialHIndex])
    grads[initialHIndex] = matmul(
        reshape(slice(gates, {0, 0, 0}, {1, batch, 4 * h}), {batch, 4 * h}),
        getRecurrence(), {batch, h}, false);
  if (needed[initialCIndex]) {
    Value cellGrad = slice(sequence, {0, 0, 4 * h}, {1, batch, h});
    Value forget = slice(getStates(), {0, 0, 4 * h}, {1, batch, h});
    grads[initialCIndex] =
        reshape(b.create<MulOp>(loc, type({1, batch, h}), cellGrad, forget),
                {batch, h});
  }

  Value rows = reshape(gates, {steps * batch, 4 * h});
  if (needed[1])
    grads[1] = matmul(rows, reshape(getInput(), {steps * batch, inputSize}),
                      {4 * h, inputSize}, true);
  if (needed[2]) {
    // h[t-1] for every step: the initial state, then the outputs but the
    // last.
    Value previous = reshape(getInitialH(), {1, batch, h});
    if (steps > 1)
      previous =
          b.create<ConcatOp>(loc, type({steps, batch, h}),
                             ValueRange{previous, slice(getStates(), {0, 0, 0},
                                                        {steps - 1, batch, h})},
                             b.getI64IntegerAttr(0));
    grads[2] =
        matmul(rows, reshape(previous, {steps * batch, h}), {4 * h, h}, true);
  }
  if (getBias() && needed[biasIndex]) {
    // Both halves of the bias are added to the same pre-activations.
    Value sum =
        reshape(b.create<SumToShapeOp>(loc, type({1, 4 * h}), rows), {4 * h});
    grads[biasIndex] = b.create<ConcatOp>(
        loc, type({8 * h}), ValueRange{sum, sum}, b.getI64IntegerAttr(0));
  }
}

void ReshapeOp::buildGradients(OpBuilder &b, ValueRange resultGrads,
                               ArrayRef<bool> needed,
                               SmallVectorImpl<Value> &grads) {
  resetGrads(*this, grads);
  if (needed[0])
    grads[0] =
        b.create<ReshapeOp>(getLoc(), getInput().getType(), resultGrads[0]);
}

void TransposeOp::buildGradients(OpBuilder &b, ValueRange resultGrads,
                                 ArrayRef<bool> needed,
                                 SmallVectorImpl<Value> &grads) {
  resetGrads(*this, grads);
  if (!needed[0])
    return;
  ArrayRef<int64_t> perm = getPerm();
  SmallVector<int64_t> inverse(perm.size());
  for (auto [i, p] : llvm::enumerate(perm))
    inverse[p] = int64_t(i);
  grads[0] = b.create<TransposeOp>(getLoc(), getInput().getType(),
                                   resultGrads[0], inverse);
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

void SliceOp::buildGradients(OpBuilder &b, ValueRange resultGrads,
                             ArrayRef<bool> needed,
                             SmallVectorImpl<Value> &grads) {
  resetGrads(*this, grads);
  if (needed[0])
    grads[0] = b.create<SliceGradOp>(getLoc(), getInput().getType(),
                                     resultGrads[0], getOffsets(), getSteps());
}

void PadOp::buildGradients(OpBuilder &b, ValueRange resultGrads,
                           ArrayRef<bool> needed,
                           SmallVectorImpl<Value> &grads) {
  resetGrads(*this, grads);
  int64_t rank = cast<RankedTensorType>(getType()).getRank();
  SmallVector<int64_t> steps(rank, 1);
  if (needed[0])
    grads[0] = b.create<SliceOp>(getLoc(), getInput().getType(), resultGrads[0],
                                 getPads().take_front(rank), steps);
}

void GatherOp::buildGradients(OpBuilder &b, ValueRange resultGrads,
                              ArrayRef<bool> needed,
                              SmallVectorImpl<Value> &grads) {
  resetGrads(*this, grads);
  if (needed[0])
    grads[0] = b.create<GatherGradOp>(getLoc(), getTable().getType(),
                                      resultGrads[0], getIndices());
}

void DropoutOp::buildGradients(OpBuilder &b, ValueRange resultGrads,
                               ArrayRef<bool> needed,
                               SmallVectorImpl<Value> &grads) {
  resetGrads(*this, grads);
  if (needed[0])
    grads[0] =
        b.create<DropoutGradOp>(getLoc(), getInput().getType(), resultGrads[0],
                                getRatioAttr(), getMaskIdAttr());
}

void ClipOp::buildGradients(OpBuilder &b, ValueRange resultGrads,
                            ArrayRef<bool> needed,
                            SmallVectorImpl<Value> &grads) {
  resetGrads(*this, grads);
  if (needed[0])
    grads[0] =
        b.create<ClipGradOp>(getLoc(), getInput().getType(), resultGrads[0],
                             getInput(), getMinAttr(), getMaxAttr());
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

void NegOp::buildGradients(OpBuilder &b, ValueRange resultGrads,
                           ArrayRef<bool> needed,
                           SmallVectorImpl<Value> &grads) {
  resetGrads(*this, grads);
  if (needed[0])
    grads[0] = negate(b, getLoc(), resultGrads[0]);
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
