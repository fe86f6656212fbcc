//===- NNOptimizer.cpp - nn parameters and optimizers ---------------------===//
//
// Verifiers and gradient rules of the ops of NNOptimizer.td.
//
//===----------------------------------------------------------------------===//

#include "dialects/nn/IR/NNOpsCommon.h"

#include "mlir/IR/Builders.h"

using namespace mlir;
using namespace mlir::dpc::nn;

//===----------------------------------------------------------------------===//
// ParamOp
//===----------------------------------------------------------------------===//

LogicalResult ParamOp::verify() {
  if (getName().empty())
    return emitOpError("expects a non-empty parameter name");
  return success();
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
