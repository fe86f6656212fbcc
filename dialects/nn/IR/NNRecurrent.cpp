//===- NNRecurrent.cpp - nn recurrent layers ------------------------------===//
//
// Verifiers and gradient rules of the ops of NNRecurrent.td.
//
//===----------------------------------------------------------------------===//

#include "dialects/nn/IR/NNOpsCommon.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::dpc::nn;

//===----------------------------------------------------------------------===//
// Recurrent
//===----------------------------------------------------------------------===//

StringRef LstmOp::getInferredResultName() { return "states"; }

FailureOr<RankedTensorType> LstmOp::inferResultType() {
  auto emit = [&] { return emitOpError(); };
  FailureOr<Shape> shape =
      inferLstmShape(shapeOf(getInput()), shapeOf(getWeight()),
                     shapeOf(getRecurrence()), shapeOfOptional(getBias()),
                     shapeOf(getInitialH()), shapeOf(getInitialC()), emit);
  return inferredType(shape, elementTypeOf(getInput()));
}

FailureOr<RankedTensorType> LstmGradOp::inferResultType() {
  return inferredType(
      inferLstmGradShape(shapeOf(getStates()), shapeOf(getRecurrence()),
                         shapeOf(getInitialC()), [&] { return emitOpError(); }),
      elementTypeOf(getStates()));
}

// The gradient of a recurrent layer's states has their type.
template <typename GradOp> static LogicalResult verifyStatesGrad(GradOp op) {
  return expectType(op, "states_grad (the states' shape)", op.getStatesGrad(),
                    shapeOf(op.getStates()), elementTypeOf(op.getStates()));
}

LogicalResult LstmGradOp::verify() { return verifyStatesGrad(*this); }

namespace {
/// Creates the ops of a recurrent layer's gradient rule, all at one
/// location and of the layer's element type.
struct RecurrentGradBuilder {
  OpBuilder &b;
  Location loc;
  Type elementType;

  RankedTensorType type(ArrayRef<int64_t> shape) const {
    return RankedTensorType::get(shape, elementType);
  }
  Value slice(Value value, ArrayRef<int64_t> offsets,
              ArrayRef<int64_t> shape) const {
    SmallVector<int64_t> ones(shape.size(), 1);
    return b.create<SliceOp>(loc, type(shape), value, offsets, ones);
  }
  Value reshape(Value value, ArrayRef<int64_t> shape) const {
    return b.create<ReshapeOp>(loc, type(shape), value);
  }
  Value matmul(Value lhs, Value rhs, ArrayRef<int64_t> shape,
               bool transposeLhs) const {
    return b.create<MatmulOp>(loc, type(shape), lhs, rhs,
                              b.getBoolAttr(transposeLhs),
                              b.getBoolAttr(false));
  }
  Value concat(ValueRange parts, ArrayRef<int64_t> shape) const {
    return b.create<ConcatOp>(loc, type(shape), parts, b.getI64IntegerAttr(0));
  }
  /// The sum of the rows of `value` (rows x `width`), as a `width` vector.
  Value sumRows(Value value, int64_t width) const {
    return reshape(b.create<SumToShapeOp>(loc, type({1, width}), value),
                   {width});
  }
};
} // namespace

// h[t-1] for every step t (h[t+1] in a reverse layer): the initial state,
// then the outputs but the last one run, as a T x B x H tensor.
static Value previousStates(OpBuilder &b, Location loc, Value states,
                            Value initialH, bool reverse) {
  auto statesType = cast<RankedTensorType>(states.getType());
  int64_t steps = statesType.getDimSize(0), batch = statesType.getDimSize(1);
  int64_t h = cast<RankedTensorType>(initialH.getType()).getDimSize(1);
  auto type = [&](ArrayRef<int64_t> shape) {
    return RankedTensorType::get(shape, statesType.getElementType());
  };
  Value initial = b.create<ReshapeOp>(loc, type({1, batch, h}), initialH);
  if (steps == 1)
    return initial;
  Value outputs = b.create<SliceOp>(loc, type({steps - 1, batch, h}), states,
                                    ArrayRef<int64_t>{reverse ? 1 : 0, 0, 0},
                                    ArrayRef<int64_t>{1, 1, 1});
  SmallVector<Value, 2> parts = {initial, outputs};
  if (reverse)
    std::swap(parts[0], parts[1]);
  return b.create<ConcatOp>(loc, type({steps, batch, h}), parts,
                            b.getI64IntegerAttr(0));
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
  RecurrentGradBuilder g{b, loc, elementTypeOf(getInput())};

  unsigned biasIndex = 3, initialHIndex = getBias() ? 4 : 3;
  unsigned initialCIndex = initialHIndex + 1;
  Value sequence = b.create<LstmGradOp>(
      loc, g.type({steps, batch, 5 * h}), resultGrads[0], getStates(),
      getRecurrence(), getInitialC(), getReverse());
  Value gates = g.slice(sequence, {0, 0, 0}, {steps, batch, 4 * h});
  // The step that reads the initial states.
  int64_t first = getReverse() ? steps - 1 : 0;
  if (needed[0])
    grads[0] = g.matmul(gates, getWeight(), {steps, batch, inputSize}, false);
  if (needed[initialHIndex])
    grads[initialHIndex] =
        g.matmul(g.reshape(g.slice(gates, {first, 0, 0}, {1, batch, 4 * h}),
                           {batch, 4 * h}),
                 getRecurrence(), {batch, h}, false);
  if (needed[initialCIndex]) {
    Value cellGrad = g.slice(sequence, {first, 0, 4 * h}, {1, batch, h});
    Value forget = g.slice(getStates(), {first, 0, 4 * h}, {1, batch, h});
    grads[initialCIndex] =
        g.reshape(b.create<MulOp>(loc, g.type({1, batch, h}), cellGrad, forget),
                  {batch, h});
  }

  Value rows = g.reshape(gates, {steps * batch, 4 * h});
  if (needed[1])
    grads[1] = g.matmul(rows, g.reshape(getInput(), {steps * batch, inputSize}),
                        {4 * h, inputSize}, true);
  if (needed[2]) {
    Value previous =
        previousStates(b, loc, getStates(), getInitialH(), getReverse());
    grads[2] = g.matmul(rows, g.reshape(previous, {steps * batch, h}),
                        {4 * h, h}, true);
  }
  if (getBias() && needed[biasIndex]) {
    // Both halves of the bias are added to the same pre-activations.
    Value sum = g.sumRows(rows, 4 * h);
    grads[biasIndex] = g.concat({sum, sum}, {8 * h});
  }
}

StringRef GruOp::getInferredResultName() { return "states"; }

FailureOr<RankedTensorType> GruOp::inferResultType() {
  FailureOr<Shape> shape =
      inferGruShape(shapeOf(getInput()), shapeOf(getWeight()),
                    shapeOf(getRecurrence()), shapeOfOptional(getBias()),
                    shapeOf(getInitialH()), [&] { return emitOpError(); });
  return inferredType(shape, elementTypeOf(getInput()));
}

FailureOr<RankedTensorType> GruGradOp::inferResultType() {
  return inferredType(
      inferGruGradShape(shapeOf(getStates()), shapeOf(getRecurrence()),
                        shapeOf(getInitialH()), [&] { return emitOpError(); }),
      elementTypeOf(getStates()));
}

LogicalResult GruGradOp::verify() { return verifyStatesGrad(*this); }

// nn.gru_grad runs the recurrence backwards once into [dz, dr, dxn, dq,
// dh[t-1]] per step; the input's and the initial state's gradients are a
// GEMM and a slice of it, the weights' GEMMs and sums stay off the path to
// the previous stage.
void GruOp::buildGradients(OpBuilder &b, ValueRange resultGrads,
                           ArrayRef<bool> needed,
                           SmallVectorImpl<Value> &grads) {
  resetGrads(*this, grads);
  Location loc = getLoc();
  ArrayRef<int64_t> x = shapeOf(getInput());
  int64_t steps = x[0], batch = x[1], inputSize = x[2], rows = steps * batch;
  int64_t h = cast<RankedTensorType>(getInitialH().getType()).getDimSize(1);
  RecurrentGradBuilder g{b, loc, elementTypeOf(getInput())};
  // A T x B x width part of the backward's result as rows x width.
  auto part = [&](Value value, int64_t offset, int64_t width) {
    return g.reshape(g.slice(value, {0, 0, offset}, {steps, batch, width}),
                     {rows, width});
  };

  unsigned biasIndex = 3, initialHIndex = getBias() ? 4 : 3;
  Value sequence = b.create<GruGradOp>(
      loc, g.type({steps, batch, 5 * h}), resultGrads[0], getStates(),
      getRecurrence(), getInitialH(), getLinearBeforeReset(), getReverse());
  Value inputPart = g.slice(sequence, {0, 0, 0}, {steps, batch, 3 * h});
  if (needed[0])
    grads[0] =
        g.matmul(inputPart, getWeight(), {steps, batch, inputSize}, false);
  if (needed[initialHIndex]) {
    int64_t first = getReverse() ? steps - 1 : 0;
    grads[initialHIndex] = g.reshape(
        g.slice(sequence, {first, 0, 4 * h}, {1, batch, h}), {batch, h});
  }

  Value gates = g.reshape(inputPart, {rows, 3 * h});
  Value zr = part(sequence, 0, 2 * h), dq = part(sequence, 3 * h, h);
  if (needed[1])
    grads[1] = g.matmul(gates, g.reshape(getInput(), {rows, inputSize}),
                        {3 * h, inputSize}, true);
  if (needed[2]) {
    Value previous = g.reshape(
        previousStates(b, loc, getStates(), getInitialH(), getReverse()),
        {rows, h});
    // Rh multiplies h[t-1] or, without linear_before_reset, r * h[t-1].
    Value reset =
        getLinearBeforeReset() ? previous : part(getStates(), 4 * h, h);
    grads[2] = g.concat({g.matmul(zr, previous, {2 * h, h}, true),
                         g.matmul(dq, reset, {h, h}, true)},
                        {3 * h, h});
  }
  if (getBias() && needed[biasIndex]) {
    grads[biasIndex] = g.concat(
        {g.sumRows(gates, 3 * h), g.sumRows(zr, 2 * h), g.sumRows(dq, h)},
        {6 * h});
  }
}

//===----------------------------------------------------------------------===//
// Costs
//===----------------------------------------------------------------------===//

// A recurrent layer of `gates` gates (the LSTM's 4, the GRU's 3) over `x`
// (T x B x I): the input projection and the recurrence, T x B x gates*H x
// (I + H) multiply-adds, and `gateFlops` per hidden unit and step for the
// gates. Backward: the recurrence again in its grad op (as
// estimateRecurrentGrad, with `gradGateFlops`), then the input's and the
// weights' GEMMs of the forward's sizes and the bias sums.
static void estimateRecurrentLayer(ArrayRef<int64_t> x, Value initialH,
                                   double gates, double gateFlops,
                                   double gradGateFlops, OpWork &work) {
  double h = double(cast<RankedTensorType>(initialH.getType()).getDimSize(1));
  double cells = double(x[0]) * double(x[1]) * h;
  double macs = cells * gates * (double(x[2]) + h);
  work.flops = 2 * macs + gateFlops * cells;
  work.gradFlops = 4 * macs + 2 * cells * gates * h + gradGateFlops * cells;
  work.gradBytes = 3 * work.bytes;
  work.callMs = kOneDnnCallMs;
}

// The backward recurrence of a layer of `gates` gates, whose `states` are
// T x B x `width`*H: dh[t-1] = z_grad[t] R per step, and `gradGateFlops`
// per hidden unit and step for the gate derivatives.
static void estimateRecurrentGrad(ArrayRef<int64_t> states, int64_t width,
                                  double gates, double gradGateFlops,
                                  OpWork &work) {
  double h = double(states[2] / width);
  double cells = double(states[0]) * double(states[1]) * h;
  work.flops = 2 * cells * gates * h + gradGateFlops * cells;
  work.callMs = kOneDnnCallMs;
}

CostRule mlir::dpc::nn::estimateRecurrentWork(Operation *op, OpWork &work) {
  CostRule rule = CostRule::Counted;
  llvm::TypeSwitch<Operation *>(op)
      .Case([&](LstmOp lstm) {
        estimateRecurrentLayer(shapeOf(lstm.getInput()), lstm.getInitialH(),
                               /*gates=*/4, /*gateFlops=*/30,
                               /*gradGateFlops=*/40, work);
      })
      .Case([&](LstmGradOp grad) {
        estimateRecurrentGrad(shapeOf(grad.getStates()), /*width=*/6,
                              /*gates=*/4, /*gradGateFlops=*/40, work);
      })
      .Case([&](GruOp gru) {
        estimateRecurrentLayer(shapeOf(gru.getInput()), gru.getInitialH(),
                               /*gates=*/3, /*gateFlops=*/20,
                               /*gradGateFlops=*/30, work);
      })
      .Case([&](GruGradOp grad) {
        estimateRecurrentGrad(shapeOf(grad.getStates()), /*width=*/5,
                              /*gates=*/3, /*gradGateFlops=*/30, work);
      })
      .Default([&](Operation *) { rule = CostRule::NotInFamily; });
  return rule;
}
