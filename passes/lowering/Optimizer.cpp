//===- Optimizer.cpp - Gradient accumulation and optimizer steps ----------===//
//
// Gradients accumulate per microbatch into the runtime's buffer of each
// parameter; the optimizer segment's updates then call the runtime's SGD or
// Adam step, which keeps the optimizer's state beside the parameter. AdamW
// calls the Adam step too: the manifest's optimizer ("adamw") tells the
// runtime to decouple the weight decay.
//
//===----------------------------------------------------------------------===//

#include "passes/lowering/RuntimeLowering.h"

#include "dialects/nn/IR/NNOps.h"
#include "dialects/pipe/IR/PipeOps.h"

using namespace mlir;
using namespace mlir::dpc;
using namespace mlir::dpc::lowering;

namespace {

// The optimizer step of parameter `id` (an i64 value).
void lowerUpdate(nn::SgdUpdateOp update, I64 id, RuntimeLowering &rt) {
  rt.call<abi::dpc_sgd_step>(
      {rt.context, id, rt.f32(update.getLr().convertToFloat()),
       rt.f32(update.getMomentum().convertToFloat()),
       rt.f32(update.getWeightDecay().convertToFloat())});
}

void lowerUpdate(nn::AdamUpdateOp update, I64 id, RuntimeLowering &rt) {
  rt.call<abi::dpc_adam_step>(
      {rt.context, id, rt.f32(update.getLr().convertToFloat()),
       rt.f32(update.getBeta1().convertToFloat()),
       rt.f32(update.getBeta2().convertToFloat()),
       rt.f32(update.getEps().convertToFloat()),
       rt.f32(update.getWeightDecay().convertToFloat())});
}

} // namespace

Operation *lowering::accumulatedByKernel(Operation *op) {
  if (!isa<nn::Conv2dGradFilterOp>(op) || !op->getResult(0).hasOneUse())
    return nullptr;
  Operation *user = *op->getResult(0).getUsers().begin();
  auto acc = dyn_cast<pipe::AccumulateGradOp>(user);
  if (!acc || acc->getBlock() != op->getBlock() ||
      !acc.getParam().getDefiningOp<nn::ParamOp>())
    return nullptr;
  return acc;
}

void lowering::populateOptimizerLowerings(RuntimeLoweringTable &table) {
  table.add<pipe::AccumulateGradOp>(
      [](pipe::AccumulateGradOp acc, RuntimeLowering &rt) {
        // Its gradient's kernel has added it already.
        if (Operation *grad = acc.getGrad().getDefiningOp();
            grad && accumulatedByKernel(grad) == acc)
          return;
        auto read = acc.getParam().getDefiningOp<nn::ParamOp>();
        int64_t id = rt.manifest.paramId(read);
        rt.call<abi::dpc_grad_accumulate>(
            {rt.context, rt.i64(id), rt.ptrOf(acc.getGrad())});
      });
  table.add<pipe::AccumulatedGradOp>(
      [](pipe::AccumulatedGradOp acc, RuntimeLowering &rt) {
        // The runtime applies the accumulator itself; no buffer is passed.
        rt.define(acc, rt.nullPtr());
      });
  table.add<nn::SgdUpdateOp, nn::AdamUpdateOp>(
      [](auto update, RuntimeLowering &rt) -> LogicalResult {
        auto read = update.getParam().template getDefiningOp<nn::ParamOp>();
        if (!update.getGrad().template getDefiningOp<pipe::AccumulatedGradOp>())
          return update.emitOpError(
              "expects its gradient from pipe.accumulated_grad (run "
              "--dpc-outline-stages first)");
        runtime::Optimizer kind = runtime::Optimizer::Sgd;
        if (auto adam = dyn_cast<nn::AdamUpdateOp>(*update))
          kind = adam.getDecoupled() ? runtime::Optimizer::AdamW
                                     : runtime::Optimizer::Adam;
        if (rt.manifest.optimizer && *rt.manifest.optimizer != kind)
          return update.emitOpError("mixes optimizers on one stage: ")
                 << runtime::optimizerName(*rt.manifest.optimizer) << " and "
                 << runtime::optimizerName(kind);
        rt.manifest.optimizer = kind;
        int64_t id = rt.manifest.paramId(read);
        lowerUpdate(update, rt.i64(id), rt);
        return success();
      });
}
