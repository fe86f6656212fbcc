//===- NNOptimizer.cpp - nn parameters and optimizers ---------------------===//
//
// Verifiers and gradient rules of the ops of NNOptimizer.td.
//
//===----------------------------------------------------------------------===//

#include "dialects/nn/IR/NNOpsCommon.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/TypeSwitch.h"

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

//===----------------------------------------------------------------------===//
// Costs
//===----------------------------------------------------------------------===//

CostRule mlir::dpc::nn::estimateOptimizerWork(Operation *op, OpWork &work) {
  CostRule rule = CostRule::Counted;
  llvm::TypeSwitch<Operation *>(op)
      // Parameter reads do no work and stay on their stage.
      .Case([&](ParamOp) { rule = CostRule::NoWork; })
      .Case([&](SgdUpdateOp update) {
        // Weight decay, momentum and the step: a few flops per element,
        // reading param, grad and the momentum buffer, writing two.
        work.flops = 4 * elementsOf(update.getParam());
        work.bytes = 5 * getSizeInBytes(update.getParam());
      })
      .Case([&](AdamUpdateOp update) {
        // Both moments, the bias corrections, a square root and a division
        // per element; param, grad and two moments read, three written.
        work.flops = 12 * elementsOf(update.getParam());
        work.bytes = 7 * getSizeInBytes(update.getParam());
      })
      .Default([&](Operation *) { rule = CostRule::NotInFamily; });
  return rule;
}
