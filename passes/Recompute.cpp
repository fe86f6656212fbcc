//===- Recompute.cpp - Recompute a stage's forward in its backward --------===//
//
// Activation recomputation trades a second forward for memory: a stage that
// keeps only its inputs per microbatch in flight stashes M_in bytes instead
// of every activation its gradients read. Per chosen stage, the backward's
// reads of forward values are followed back through recomputable ops to the
// stage's inputs; those ops are cloned, in forward order, before the
// stage's first backward op, and the backward reads the clones. Stashing is
// left to insert-stash, which then finds only the inputs (and the results
// of ops that must not run twice) read across the loss.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "dialects/nn/IR/NNOps.h"
#include "dialects/pipe/IR/PipeOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/STLExtras.h"

#include <set>

namespace mlir::dpc {
#define GEN_PASS_DEF_RECOMPUTEPASS
#include "passes/Passes.h.inc"
} // namespace mlir::dpc

using namespace mlir;
using namespace mlir::dpc;

namespace {

// An op the backward may run again: nn compute without memory effects.
// Parameters are re-read, not recomputed; losses mark the end of the
// forward; nn.batch_norm_stats updates the running statistics.
bool isRecomputable(Operation *op) {
  return isa<nn::NNDialect>(op->getDialect()) && !isa<nn::ParamOp>(op) &&
         !nn::isLoss(op) && op->getNumRegions() == 0 && isMemoryEffectFree(op);
}

// Clones, before `stage`'s first op in `backward`, the forward ops of the
// stage whose results its backward ops read, directly or through other
// such ops, and rewires those reads. Returns the number of ops cloned.
void recomputeStage(int64_t stage, ArrayRef<Operation *> backward,
                    const llvm::DenseSet<Operation *> &forward) {
  auto inStage = [&](Operation *op) { return pipe::getStage(op) == stage; };
  auto recomputed = [&](Value value) {
    Operation *def = value.getDefiningOp();
    return def && forward.contains(def) && isRecomputable(def) &&
           pipe::getStage(def).value_or(stage) == stage;
  };

  llvm::DenseSet<Operation *> chosen;
  SmallVector<Value> worklist;
  Operation *first = nullptr;
  for (Operation *op : backward) {
    if (!inStage(op))
      continue;
    first = first ? first : op;
    llvm::append_range(worklist, op->getOperands());
  }
  while (!worklist.empty()) {
    Value value = worklist.pop_back_val();
    if (!recomputed(value) || !chosen.insert(value.getDefiningOp()).second)
      continue;
    llvm::append_range(worklist, value.getDefiningOp()->getOperands());
  }
  if (chosen.empty())
    return;

  // In forward order, so that every clone's operands are cloned before it.
  OpBuilder builder(first);
  IRMapping map;
  Block *body = first->getBlock();
  for (Operation &op : *body) {
    if (&op == first)
      break;
    if (!chosen.contains(&op))
      continue;
    Operation *clone = builder.clone(op, map);
    pipe::setStage(clone, stage);
    clone->setAttr(pipe::PipeDialect::kRecomputedAttrName,
                   builder.getUnitAttr());
  }
  for (Operation *op : backward) {
    if (!inStage(op))
      continue;
    for (OpOperand &use : op->getOpOperands())
      if (Value clone = map.lookupOrNull(use.get()))
        use.set(clone);
  }
}

struct RecomputePass
    : public mlir::dpc::impl::RecomputePassBase<RecomputePass> {
  using RecomputePassBase::RecomputePassBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (!all && stages.empty())
      return;
    FailureOr<func::FuncOp> mainOr = getMainFunc(module);
    if (failed(mainOr))
      return signalPassFailure();
    func::FuncOp main = *mainOr;
    // A forward-only module has no backward to recompute in.
    if (module->hasAttr(pipe::PipeDialect::kInferenceAttrName))
      return;
    auto numStages = module->getAttrOfType<IntegerAttr>(
        pipe::PipeDialect::kNumStagesAttrName);
    if (!numStages) {
      module.emitError("expects '") << pipe::PipeDialect::kNumStagesAttrName
                                    << "' (run --dpc-partition-stages first)";
      return signalPassFailure();
    }
    std::set<int64_t> chosen;
    for (int64_t s = 0; all && s < numStages.getInt(); ++s)
      chosen.insert(s);
    for (int64_t s : stages) {
      if (s < 0 || s >= numStages.getInt()) {
        module.emitError("cannot recompute stage ")
            << s << ": the module has " << numStages.getInt() << " stages";
        return signalPassFailure();
      }
      chosen.insert(s);
    }

    FailureOr<Operation *> loss = getForwardLoss(main);
    if (failed(loss))
      return signalPassFailure();
    llvm::DenseSet<Operation *> forward;
    SmallVector<Operation *> backward;
    bool inBackward = false;
    for (Operation &op : main.getBody().front().without_terminator()) {
      if (inBackward)
        backward.push_back(&op);
      else
        forward.insert(&op);
      inBackward |= &op == *loss;
    }

    for (int64_t stage : chosen)
      recomputeStage(stage, backward, forward);
    module->setAttr(pipe::PipeDialect::kRecomputeAttrName,
                    Builder(&getContext())
                        .getDenseI64ArrayAttr(SmallVector<int64_t>(
                            chosen.begin(), chosen.end())));
  }
};

} // namespace
