//===- NNOpsCommon.h - What the nn op families share ------------*- C++ -*-===//
//
// Private to dialects/nn/IR: the checks and gradient plumbing that the
// family files (NNConv.cpp, NNMath.cpp, ...) share.
//
//===----------------------------------------------------------------------===//

#ifndef DPC_DIALECTS_NN_IR_NNOPSCOMMON_H
#define DPC_DIALECTS_NN_IR_NNOPSCOMMON_H

#include "dialects/nn/IR/NNOps.h"
#include "dialects/nn/IR/OpWork.h"
#include "dialects/nn/IR/ShapeInference.h"

#include "mlir/IR/Builders.h"

namespace mlir::dpc::nn {

/// The element type of the ranked tensor `value`.
Type elementTypeOf(Value value);

/// The number of elements of the ranked tensor `value`, for cost rules.
double elementsOf(Value value);

/// Checks that `value` has shape `expected` and element type `elementType`;
/// emits "expects <what> of ..." on `op` where not.
LogicalResult expectType(Operation *op, StringRef what, Value value,
                         ArrayRef<int64_t> expected, Type elementType);

/// A gradient op's result_grad has the forward op's result shape, which the
/// forward shape rule gives from the operands the gradient op carries.
LogicalResult expectForwardResultGrad(Operation *op, FailureOr<Shape> forward,
                                      Value resultGrad, Type elementType);

/// `shape` of `elementType`, or the failure of the shape rule that gave
/// `shape`: what an InferResultOpInterface op's inferResultType returns.
FailureOr<RankedTensorType> inferredType(FailureOr<Shape> shape,
                                         Type elementType);

/// Checks that `op`'s rhs has its lhs's element type.
template <typename Op> LogicalResult expectRhsLikeLhs(Op op) {
  return expectType(op, "rhs", op.getRhs(), shapeOf(op.getRhs()),
                    elementTypeOf(op.getLhs()));
}

/// Gradients start as nulls, one per operand of `op`; rules fill in the
/// needed ones.
void resetGrads(Operation *op, SmallVectorImpl<Value> &grads);

/// The gradient rule of an op whose first operand is the only one with a
/// gradient (NN_InputGradient in NNBase.td): when it is needed, a `GradOp` of
/// the operand's type from the result's gradient and `args`.
template <typename GradOp, typename... Args>
void buildInputGradient(Operation *op, OpBuilder &b, ValueRange resultGrads,
                        ArrayRef<bool> needed, SmallVectorImpl<Value> &grads,
                        Args &&...args) {
  resetGrads(op, grads);
  if (needed[0])
    grads[0] = b.create<GradOp>(op->getLoc(), op->getOperand(0).getType(),
                                resultGrads[0], std::forward<Args>(args)...);
}

} // namespace mlir::dpc::nn

#endif // DPC_DIALECTS_NN_IR_NNOPSCOMMON_H
