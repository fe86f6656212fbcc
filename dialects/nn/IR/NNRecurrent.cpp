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
      .Default([&](Operation *) { rule = CostRule::NotInFamily; });
  return rule;
}
