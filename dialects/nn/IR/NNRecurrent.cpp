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
  std::optional<ArrayRef<int64_t>> bias;
  if (getBias())
    bias = shapeOf(getBias());
  FailureOr<Shape> shape =
      inferLstmShape(shapeOf(getInput()), shapeOf(getWeight()),
                     shapeOf(getRecurrence()), bias ? &*bias : nullptr,
                     shapeOf(getInitialH()), shapeOf(getInitialC()), emit);
  return inferredType(shape, elementTypeOf(getInput()));
}

FailureOr<RankedTensorType> LstmGradOp::inferResultType() {
  return inferredType(
      inferLstmGradShape(shapeOf(getStates()), shapeOf(getRecurrence()),
                         shapeOf(getInitialC()), [&] { return emitOpError(); }),
      elementTypeOf(getStates()));
}

LogicalResult LstmGradOp::verify() {
  return expectType(*this, "states_grad (the states' shape)", getStatesGrad(),
                    shapeOf(getStates()), elementTypeOf(getStates()));
}

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
  Value sequence = b.create<LstmGradOp>(
      loc, type({steps, batch, 5 * h}), resultGrads[0], getStates(),
      getRecurrence(), getInitialC(), getReverse());
  Value gates = slice(sequence, {0, 0, 0}, {steps, batch, 4 * h});
  // The step that reads the initial states.
  int64_t first = getReverse() ? steps - 1 : 0;
  if (needed[0])
    grads[0] = matmul(gates, getWeight(), {steps, batch, inputSize}, false);
  if (needed[initialHIndex])
    grads[initialHIndex] = matmul(
        reshape(slice(gates, {first, 0, 0}, {1, batch, 4 * h}), {batch, 4 * h}),
        getRecurrence(), {batch, h}, false);
  if (needed[initialCIndex]) {
    Value cellGrad = slice(sequence, {first, 0, 4 * h}, {1, batch, h});
    Value forget = slice(getStates(), {first, 0, 4 * h}, {1, batch, h});
    grads[initialCIndex] =
        reshape(b.create<MulOp>(loc, type({1, batch, h}), cellGrad, forget),
                {batch, h});
  }

  Value rows = reshape(gates, {steps * batch, 4 * h});
  if (needed[1])
    grads[1] = matmul(rows, reshape(getInput(), {steps * batch, inputSize}),
                      {4 * h, inputSize}, true);
  if (needed[2]) {
    Value previous =
        previousStates(b, loc, getStates(), getInitialH(), getReverse());
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

StringRef GruOp::getInferredResultName() { return "states"; }

FailureOr<RankedTensorType> GruOp::inferResultType() {
  std::optional<ArrayRef<int64_t>> bias;
  if (getBias())
    bias = shapeOf(getBias());
  FailureOr<Shape> shape =
      inferGruShape(shapeOf(getInput()), shapeOf(getWeight()),
                    shapeOf(getRecurrence()), bias ? &*bias : nullptr,
                    shapeOf(getInitialH()), [&] { return emitOpError(); });
  return inferredType(shape, elementTypeOf(getInput()));
}

FailureOr<RankedTensorType> GruGradOp::inferResultType() {
  return inferredType(
      inferGruGradShape(shapeOf(getStates()), shapeOf(getRecurrence()),
                        shapeOf(getInitialH()), [&] { return emitOpError(); }),
      elementTypeOf(getStates()));
}

LogicalResult GruGradOp::verify() {
  return expectType(*this, "states_grad (the states' shape)", getStatesGrad(),
                    shapeOf(getStates()), elementTypeOf(getStates()));
}

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
  auto concat = [&](ValueRange parts, ArrayRef<int64_t> shape) -> Value {
    return b.create<ConcatOp>(loc, type(shape), parts, b.getI64IntegerAttr(0));
  };
  // A T x B x width part of the backward's result as rows x width.
  auto part = [&](Value value, int64_t offset, int64_t width) {
    return reshape(slice(value, {0, 0, offset}, {steps, batch, width}),
                   {rows, width});
  };

  unsigned biasIndex = 3, initialHIndex = getBias() ? 4 : 3;
  Value sequence = b.create<GruGradOp>(
      loc, type({steps, batch, 5 * h}), resultGrads[0], getStates(),
      getRecurrence(), getInitialH(), getLinearBeforeReset(), getReverse());
  Value inputPart = slice(sequence, {0, 0, 0}, {steps, batch, 3 * h});
  if (needed[0])
    grads[0] = matmul(inputPart, getWeight(), {steps, batch, inputSize}, false);
  if (needed[initialHIndex]) {
    int64_t first = getReverse() ? steps - 1 : 0;
    grads[initialHIndex] =
        reshape(slice(sequence, {first, 0, 4 * h}, {1, batch, h}), {batch, h});
  }

  Value gates = reshape(inputPart, {rows, 3 * h});
  Value zr = part(sequence, 0, 2 * h), dq = part(sequence, 3 * h, h);
  if (needed[1])
    grads[1] = matmul(gates, reshape(getInput(), {rows, inputSize}),
                      {3 * h, inputSize}, true);
  if (needed[2]) {
    Value previous = reshape(
        previousStates(b, loc, getStates(), getInitialH(), getReverse()),
        {rows, h});
    // Rh multiplies h[t-1] or, without linear_before_reset, r * h[t-1].
    Value reset =
        getLinearBeforeReset() ? previous : part(getStates(), 4 * h, h);
    grads[2] = concat({matmul(zr, previous, {2 * h, h}, true),
                       matmul(dq, reset, {h, h}, true)},
                      {3 * h, h});
  }
  if (getBias() && needed[biasIndex]) {
    auto sum = [&](Value value, int64_t width) {
      return reshape(b.create<SumToShapeOp>(loc, type({1, width}), value),
                     {width});
    };
    grads[biasIndex] =
        concat({sum(gates, 3 * h), sum(zr, 2 * h), sum(dq, h)}, {6 * h});
  }
}

//===----------------------------------------------------------------------===//
// Costs
//===----------------------------------------------------------------------===//

CostRule mlir::dpc::nn::estimateRecurrentWork(Operation *op, OpWork &work) {
  CostRule rule = CostRule::Counted;
  llvm::TypeSwitch<Operation *>(op)
      .Case([&](LstmOp lstm) {
        // The input projection and the recurrence: T x B x 4H x (I + H)
        // multiply-adds, and ~30 flops per hidden unit and step for the
        // gates. Backward: the recurrence again in nn.lstm_grad, then the
        // input's, the weights' and the recurrence's products (three GEMMs
        // of the forward's sizes) and the bias sums.
        ArrayRef<int64_t> x = shapeOf(lstm.getInput());
        double h = double(
            cast<RankedTensorType>(lstm.getInitialH().getType()).getDimSize(1));
        double cells = double(x[0]) * double(x[1]) * h;
        double macs = cells * 4 * (double(x[2]) + h);
        work.flops = 2 * macs + 30 * cells;
        work.gradFlops = 4 * macs + 2 * cells * 4 * h + 40 * cells;
        work.gradBytes = 3 * work.bytes;
        work.callMs = kOneDnnCallMs;
      })
      .Case([&](LstmGradOp grad) {
        // dh[t-1] = z_grad[t] r per step, and the gate derivatives.
        ArrayRef<int64_t> states = shapeOf(grad.getStates());
        double h = double(states[2] / 6);
        double cells = double(states[0]) * double(states[1]) * h;
        work.flops = 2 * cells * 4 * h + 40 * cells;
        work.callMs = kOneDnnCallMs;
      })
      .Case([&](GruOp gru) {
        // As the LSTM's with three gates: T x B x 3H x (I + H)
        // multiply-adds and ~20 flops per hidden unit and step; backward
        // the recurrence again, the input's and the weights' GEMMs.
        ArrayRef<int64_t> x = shapeOf(gru.getInput());
        double h = double(
            cast<RankedTensorType>(gru.getInitialH().getType()).getDimSize(1));
        double cells = double(x[0]) * double(x[1]) * h;
        double macs = cells * 3 * (double(x[2]) + h);
        work.flops = 2 * macs + 20 * cells;
        work.gradFlops = 4 * macs + 2 * cells * 3 * h + 30 * cells;
        work.gradBytes = 3 * work.bytes;
        work.callMs = kOneDnnCallMs;
      })
      .Case([&](GruGradOp grad) {
        ArrayRef<int64_t> states = shapeOf(grad.getStates());
        double h = double(states[2] / 5);
        double cells = double(states[0]) * double(states[1]) * h;
        work.flops = 2 * cells * 3 * h + 30 * cells;
        work.callMs = kOneDnnCallMs;
      })
      .Default([&](Operation *) { rule = CostRule::NotInFamily; });
  return rule;
}
