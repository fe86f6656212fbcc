//===- InsertStash.cpp - Keep forward values for the backward pass --------===//
//
// Splits @main at the loss into forward and backward, then, per stage, finds
// the forward values (results and arguments) that backward ops of that
// stage read, and routes those reads through a stash/restore pair. An
// inference module (`pipe.inference`) is left as it is.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "dialects/nn/IR/NNOps.h"
#include "dialects/pipe/IR/PipeOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/StringSet.h"

namespace mlir::dpc {
#define GEN_PASS_DEF_INSERTSTASHPASS
#include "passes/Passes.h.inc"
} // namespace mlir::dpc

using namespace mlir;
using namespace mlir::dpc;

namespace {

// A readable key: the value's location name (the ONNX node) or op name,
// made unique.
std::string stashKey(Value value, llvm::StringSet<> &used) {
  std::string base;
  if (auto arg = dyn_cast<BlockArgument>(value)) {
    base = "arg" + std::to_string(arg.getArgNumber());
    if (auto loc = dyn_cast<NameLoc>(arg.getLoc()))
      base = loc.getName().str();
  } else {
    Operation *op = value.getDefiningOp();
    base = op->getName().stripDialect().str();
    if (auto loc = dyn_cast<NameLoc>(op->getLoc()))
      base = loc.getName().str();
    if (op->getNumResults() > 1)
      base += ":" + std::to_string(cast<OpResult>(value).getResultNumber());
  }
  std::string key = base;
  for (int copy = 1; used.contains(key); ++copy)
    key = base + "." + std::to_string(copy);
  used.insert(key);
  return key;
}

struct InsertStashPass
    : public mlir::dpc::impl::InsertStashPassBase<InsertStashPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    FailureOr<func::FuncOp> mainOr = getMainFunc(module);
    if (failed(mainOr))
      return signalPassFailure();
    func::FuncOp main = *mainOr;
    // A forward-only module has no backward to keep values for.
    if (module->hasAttr(pipe::PipeDialect::kInferenceAttrName))
      return;
    Block &body = main.getBody().front();
    FailureOr<Operation *> lossOr = getForwardLoss(main);
    if (failed(lossOr))
      return signalPassFailure();
    Operation *loss = *lossOr;

    llvm::DenseSet<Operation *> backward;
    for (Operation *op = loss->getNextNode(); op != body.getTerminator();
         op = op->getNextNode())
      backward.insert(op);

    // Backward reads of forward values, per (value, stage), in program order.
    llvm::MapVector<std::pair<Value, int64_t>, SmallVector<OpOperand *>> reads;
    for (Operation *op = loss->getNextNode(); op != body.getTerminator();
         op = op->getNextNode()) {
      std::optional<int64_t> stage = pipe::getStage(op);
      if (!stage) {
        op->emitError("has no pipe.stage; run --dpc-partition-stages first");
        return signalPassFailure();
      }
      for (OpOperand &use : op->getOpOperands()) {
        Value value = use.get();
        Operation *def = value.getDefiningOp();
        // Parameters are state, not per-microbatch values: not stashed.
        if (def && (backward.contains(def) || isa<nn::ParamOp>(def)))
          continue;
        reads[{value, *stage}].push_back(&use);
      }
    }

    OpBuilder builder(&getContext());
    llvm::StringSet<> usedKeys;
    for (auto &[key, uses] : reads) {
      auto [value, stage] = key;
      std::string name = stashKey(value, usedKeys);
      if (Operation *def = value.getDefiningOp())
        builder.setInsertionPointAfter(def);
      else
        builder.setInsertionPointToStart(&body);
      auto stash = builder.create<pipe::StashOp>(value.getLoc(), value, name);
      pipe::setStage(stash, stage);
      builder.setInsertionPoint(uses.front()->getOwner());
      auto restore = builder.create<pipe::RestoreOp>(value.getLoc(),
                                                     value.getType(), name);
      pipe::setStage(restore, stage);
      for (OpOperand *use : uses)
        use->set(restore.getResult());
    }
  }
};

} // namespace
