//===- NNOpsCommon.h - What the nn op families share ------------*- C++ -*-===//
//
// Private to dialects/nn/IR: the checks and gradient plumbing that the
// family files (NNConv.cpp, NNMath.cpp, ...) share.
//
//===----------------------------------------------------------------------===//

#ifndef DPC_DIALECTS_NN_IR_NNOPSCOMMON_H
#define DPC_DIALECTS_NN_IR_NNOPSCOMMON_H

#include "dialects/nn/IR/NNOps.h"
#include "dialects/nn/IR/ShapeInference.h"

namespace mlir::dpc::nn {

/// The element type of the ranked tensor `value`.
Type elementTypeOf(Value value);

/// Checks that `value` has shape `expected` and element type `elementType`;
/// emits "expects <what> of ..." on `op` where not.
LogicalResult expectType(Operation *op, StringRef what, Value value,
                         ArrayRef<int64_t> expected, Type elementType);

/// A gradient op's result_grad has the forward op's result shape, which the
/// forward shape rule gives from the operands the gradient op carries.
LogicalResult expectForwardResultGrad(Operation *op, FailureOr<Shape> forward,
                                      Value resultGrad, Type elementType);

/// Gradients start as nulls, one per operand of `op`; rules fill in the
/// needed ones.
void resetGrads(Operation *op, SmallVectorImpl<Value> &grads);

} // namespace mlir::dpc::nn

#endif // DPC_DIALECTS_NN_IR_NNOPSCOMMON_H
