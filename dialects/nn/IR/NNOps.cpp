//===- NNOps.cpp - nn dialect operations ----------------------------------===//
//
// The op classes and what their family files share. Verifiers: every op
// checks that its result type is the one its operands and attributes imply,
// through the shared rules of ShapeInference.h. Gradient rules build
// separate ops for input and weight gradients; an operand that does not
// need a gradient gets none built.
//
//===----------------------------------------------------------------------===//

#include "dialects/nn/IR/NNOpsCommon.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"

using namespace mlir;
using namespace mlir::dpc::nn;

Type mlir::dpc::nn::elementTypeOf(Value value) {
  return cast<RankedTensorType>(value.getType()).getElementType();
}

double mlir::dpc::nn::elementsOf(Value value) {
  return getNumElements(shapeOf(value));
}

LogicalResult mlir::dpc::nn::expectType(Operation *op, StringRef what,
                                        Value value, ArrayRef<int64_t> expected,
                                        Type elementType) {
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

LogicalResult mlir::dpc::nn::expectForwardResultGrad(Operation *op,
                                                     FailureOr<Shape> forward,
                                                     Value resultGrad,
                                                     Type elementType) {
  if (failed(forward))
    return failure();
  return expectType(op, "result_grad (the forward result's shape)", resultGrad,
                    *forward, elementType);
}

FailureOr<RankedTensorType> mlir::dpc::nn::inferredType(FailureOr<Shape> shape,
                                                        Type elementType) {
  if (failed(shape))
    return failure();
  return RankedTensorType::get(*shape, elementType);
}

LogicalResult mlir::dpc::nn::verifyInferredResult(Operation *op) {
  auto infer = cast<InferResultOpInterface>(op);
  FailureOr<RankedTensorType> type = infer.inferResultType();
  if (failed(type))
    return failure();
  return expectType(op, infer.getInferredResultName(), op->getResult(0),
                    type->getShape(), type->getElementType());
}

void mlir::dpc::nn::resetGrads(Operation *op, SmallVectorImpl<Value> &grads) {
  grads.assign(op->getNumOperands(), Value());
}

#include "dialects/nn/IR/NNInterfaces.cpp.inc"

#define GET_OP_CLASSES
#include "dialects/nn/IR/NNOps.cpp.inc"
