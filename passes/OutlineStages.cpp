//===- OutlineStages.cpp - Per-stage segment functions --------------------===//
//
// Clones the ops of each (stage, segment) of @main into a function of its
// own. Within one function every value must be computed there, re-read
// there (parameters, restores, data) or come from a transfer; anything else
// means an earlier pass missed a stash or a transfer, which is reported. In
// an inference module (`pipe.inference`) every op is forward work and every
// result of @main an output; the other segments stay empty.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "dialects/nn/IR/NNOps.h"
#include "dialects/pipe/IR/PipeOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/StringSet.h"

namespace mlir::dpc {
#define GEN_PASS_DEF_OUTLINESTAGESPASS
#include "passes/Passes.h.inc"
} // namespace mlir::dpc

using namespace mlir;
using namespace mlir::dpc;

namespace {

// Ops that only read state or per-microbatch data the runtime holds until
// the microbatch's backward is over (parameters, stashes, received
// transfers): cloned into every segment that uses their value instead of
// crossing segments.
bool isRereadable(Operation *op) {
  return isa<nn::ParamOp, pipe::RestoreOp, pipe::RecvOp>(op);
}

class Outliner {
public:
  Outliner(ModuleOp module, func::FuncOp main)
      : module(module), main(main), builder(module.getContext()),
        inference(module->hasAttr(pipe::PipeDialect::kInferenceAttrName)) {}

  LogicalResult run();

private:
  LogicalResult classify();
  func::FuncOp createSegment(int64_t stage, StringRef segment);
  // Clones `ops` (in order) into `func`, materialising reads and arguments.
  LogicalResult cloneInto(func::FuncOp func, ArrayRef<Operation *> ops,
                          IRMapping &map);
  FailureOr<Value> lookupOrReread(Value value, IRMapping &map, Operation *user);
  LogicalResult outlineStage(int64_t stage);

  ModuleOp module;
  func::FuncOp main;
  OpBuilder builder;
  // A forward-only module: @main returns outputs only, no loss first.
  bool inference;
  int64_t numStages = 1;
  SmallVector<Operation *> forward, backward;
  SmallVector<nn::OptimizerUpdateOpInterface> updates;
  llvm::StringSet<> stashKeys;
};

LogicalResult Outliner::classify() {
  Block &body = main.getBody().front();
  SmallVector<Operation *> losses = nn::getLosses(body);
  if (inference && !losses.empty())
    return main.emitError("an inference module ('")
           << pipe::PipeDialect::kInferenceAttrName << "') has no loss, got "
           << losses.front()->getName();
  unsigned results = main.getFunctionType().getNumResults();
  if (inference && results != 1)
    return main.emitError("an inference module reports one output, but @main "
                          "returns ")
           << results << " results";
  if (!inference && losses.size() != 1)
    return main.emitError("expects one loss (nn.softmax_cross_entropy or "
                          "nn.mse_loss) marking the end of the forward pass, "
                          "got ")
           << losses.size();
  bool inForward = true;
  for (Operation &op : body.without_terminator()) {
    std::optional<int64_t> stage = pipe::getStage(&op);
    if (!stage)
      return op.emitError("has no pipe.stage; run --dpc-partition-stages "
                          "first");
    numStages = std::max(numStages, *stage + 1);
    if (auto update = dyn_cast<nn::OptimizerUpdateOpInterface>(op))
      updates.push_back(update);
    else if (inForward)
      forward.push_back(&op);
    else
      backward.push_back(&op);
    if (auto stash = dyn_cast<pipe::StashOp>(op))
      stashKeys.insert(stash.getKey());
    if (!inference && &op == losses.front())
      inForward = false;
  }
  if (auto attr = module->getAttrOfType<IntegerAttr>(
          pipe::PipeDialect::kNumStagesAttrName))
    numStages = std::max(numStages, attr.getInt());
  return success();
}

func::FuncOp Outliner::createSegment(int64_t stage, StringRef segment) {
  builder.setInsertionPoint(main);
  std::string name = "stage" + std::to_string(stage) + "_" + segment.str();
  auto func = builder.create<func::FuncOp>(main.getLoc(), name,
                                           builder.getFunctionType({}, {}));
  pipe::setStage(func, stage);
  func->setAttr(pipe::PipeDialect::kSegmentAttrName,
                builder.getStringAttr(segment));
  Block *entry = func.addEntryBlock();
  builder.setInsertionPointToEnd(entry);
  builder.create<func::ReturnOp>(main.getLoc());
  return func;
}

FailureOr<Value> Outliner::lookupOrReread(Value value, IRMapping &map,
                                          Operation *user) {
  if (Value mapped = map.lookupOrNull(value))
    return mapped;
  OpBuilder::InsertionGuard guard(builder);
  // Reads go to the top of the segment, in first-use order.
  Block *entry = builder.getInsertionBlock();
  if (auto arg = dyn_cast<BlockArgument>(value)) {
    builder.setInsertionPoint(entry, entry->begin());
    Value read;
    if (pipe::isLabels(arg)) {
      read = builder.create<pipe::LabelsOp>(arg.getLoc(), arg.getType());
    } else {
      int64_t index = 0;
      for (BlockArgument other :
           main.getArguments().take_front(arg.getArgNumber()))
        index += !pipe::isLabels(other);
      read = builder.create<pipe::InputOp>(arg.getLoc(), arg.getType(), index);
    }
    map.map(value, read);
    return read;
  }
  Operation *def = value.getDefiningOp();
  if (isRereadable(def)) {
    builder.setInsertionPoint(entry, entry->begin());
    Operation *clone = builder.clone(*def);
    map.map(def->getResults(), clone->getResults());
    return map.lookup(value);
  }
  return user->emitError("uses a value computed in another segment (")
         << def->getName() << " on stage " << pipe::getStage(def).value_or(-1)
         << ") with no stash or transfer; insert-stash and insert-send-recv "
            "must run first";
}

LogicalResult Outliner::cloneInto(func::FuncOp func, ArrayRef<Operation *> ops,
                                  IRMapping &map) {
  builder.setInsertionPoint(func.getBody().front().getTerminator());
  for (Operation *op : ops) {
    for (Value operand : op->getOperands())
      if (failed(lookupOrReread(operand, map, op)))
        return failure();
    if (isRereadable(op) && op->getResult(0).use_empty())
      continue;
    builder.clone(*op, map);
  }
  return success();
}

LogicalResult Outliner::outlineStage(int64_t stage) {
  auto onStage = [&](ArrayRef<Operation *> ops) {
    SmallVector<Operation *> selected;
    for (Operation *op : ops)
      if (pipe::getStage(op) == stage && !isRereadable(op))
        selected.push_back(op);
    return selected;
  };
  SmallVector<Operation *> fwd = onStage(forward), bwd = onStage(backward);
  SmallVector<nn::OptimizerUpdateOpInterface> stageUpdates;
  for (nn::OptimizerUpdateOpInterface update : updates)
    if (pipe::getStage(update) == stage)
      stageUpdates.push_back(update);

  // Forward, reporting @main's results computed here.
  func::FuncOp fwdFunc = createSegment(stage, "forward");
  IRMapping fwdMap;
  if (failed(cloneInto(fwdFunc, fwd, fwdMap)))
    return failure();
  auto ret = cast<func::ReturnOp>(main.getBody().front().getTerminator());
  builder.setInsertionPoint(fwdFunc.getBody().front().getTerminator());
  for (auto [i, result] : llvm::enumerate(ret.getOperands())) {
    Value mapped = fwdMap.lookupOrNull(result);
    // A model that returns its input (an ONNX Identity) reads it to report
    // it; only a one-stage pipeline has input and output on one stage.
    if (!mapped && isa<BlockArgument>(result) && numStages == 1) {
      FailureOr<Value> read = lookupOrReread(result, fwdMap, ret);
      if (failed(read))
        return failure();
      mapped = *read;
    }
    if (!mapped)
      continue;
    if (i == 0 && !inference)
      builder.create<pipe::ReportLossOp>(ret.getLoc(), mapped);
    else
      builder.create<pipe::ReportOutputOp>(ret.getLoc(), mapped);
  }

  // The backward-input half: everything the stage's outgoing gradients
  // depend on.
  llvm::DenseSet<Operation *> inputHalf;
  for (Operation *op : llvm::reverse(bwd)) {
    bool needed = isa<pipe::SendOp>(op) ||
                  llvm::any_of(op->getUsers(), [&](Operation *user) {
                    return inputHalf.contains(user);
                  });
    if (needed)
      inputHalf.insert(op);
  }

  auto addAccumulates = [&](func::FuncOp func, IRMapping &map) {
    builder.setInsertionPoint(func.getBody().front().getTerminator());
    for (nn::OptimizerUpdateOpInterface update : stageUpdates) {
      Value grad = map.lookupOrNull(update.getGrad());
      if (!grad)
        continue;
      FailureOr<Value> param = lookupOrReread(update.getParam(), map, update);
      builder.setInsertionPoint(func.getBody().front().getTerminator());
      builder.create<pipe::AccumulateGradOp>(update.getLoc(), *param, grad);
    }
  };

  // The whole backward.
  func::FuncOp bwdFunc = createSegment(stage, "backward");
  IRMapping bwdMap;
  if (failed(cloneInto(bwdFunc, bwd, bwdMap)))
    return failure();
  addAccumulates(bwdFunc, bwdMap);

  // The two halves, with the values crossing from input to weight half
  // stashed between them.
  SmallVector<Operation *> inputOps, weightOps;
  for (Operation *op : bwd)
    (inputHalf.contains(op) ? inputOps : weightOps).push_back(op);
  func::FuncOp biFunc = createSegment(stage, "backward_input");
  IRMapping biMap;
  if (failed(cloneInto(biFunc, inputOps, biMap)))
    return failure();
  func::FuncOp bwFunc = createSegment(stage, "backward_weight");
  IRMapping bwMap;
  // Stashes `value` at the end of the input half and restores it at the top
  // of the weight half.
  auto carryToWeightHalf = [&](Value value) {
    std::string key = "bw:" + std::to_string(stashKeys.size());
    stashKeys.insert(key);
    OpBuilder::InsertionGuard guard(builder);
    builder.setInsertionPoint(biFunc.getBody().front().getTerminator());
    auto stash =
        builder.create<pipe::StashOp>(value.getLoc(), biMap.lookup(value), key);
    pipe::setStage(stash, stage);
    Block &bwEntry = bwFunc.getBody().front();
    builder.setInsertionPoint(&bwEntry, bwEntry.begin());
    auto restore =
        builder.create<pipe::RestoreOp>(value.getLoc(), value.getType(), key);
    pipe::setStage(restore, stage);
    bwMap.map(value, restore.getResult());
  };
  for (Operation *op : weightOps) {
    for (Value operand : op->getOperands()) {
      Operation *def = operand.getDefiningOp();
      if (def && inputHalf.contains(def) && !bwMap.contains(operand))
        carryToWeightHalf(operand);
    }
  }
  if (failed(cloneInto(bwFunc, weightOps, bwMap)))
    return failure();
  // The weight half accumulates the gradients the input half computed too
  // (a bias gradient can be on the critical path of nothing and still come
  // from an op of the input half).
  for (nn::OptimizerUpdateOpInterface update : stageUpdates) {
    Value grad = update.getGrad();
    if (!bwMap.contains(grad) && biMap.contains(grad))
      carryToWeightHalf(grad);
  }
  addAccumulates(bwFunc, bwMap);

  // The optimizer: one update per parameter from its accumulated gradient.
  func::FuncOp optFunc = createSegment(stage, "optimizer");
  IRMapping optMap;
  for (nn::OptimizerUpdateOpInterface update : stageUpdates) {
    builder.setInsertionPoint(optFunc.getBody().front().getTerminator());
    FailureOr<Value> param = lookupOrReread(update.getParam(), optMap, update);
    builder.setInsertionPoint(optFunc.getBody().front().getTerminator());
    auto grad = builder.create<pipe::AccumulatedGradOp>(
        update.getLoc(), param->getType(), *param);
    auto clone = cast<nn::OptimizerUpdateOpInterface>(builder.clone(*update));
    clone.setParamAndGrad(*param, grad);
    clone->removeAttr(pipe::PipeDialect::kStageAttrName);
  }
  return success();
}

LogicalResult Outliner::run() {
  if (failed(classify()))
    return failure();
  for (int64_t stage = 0; stage < numStages; ++stage)
    if (failed(outlineStage(stage)))
      return failure();
  main.erase();
  // Stage attributes on ops inside a stage's function say nothing new.
  module.walk([](Operation *op) {
    if (!isa<func::FuncOp>(op))
      op->removeAttr(pipe::PipeDialect::kStageAttrName);
  });
  return success();
}

struct OutlineStagesPass
    : public mlir::dpc::impl::OutlineStagesPassBase<OutlineStagesPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    FailureOr<func::FuncOp> mainOr = getMainFunc(module);
    if (failed(mainOr))
      return signalPassFailure();
    func::FuncOp main = *mainOr;
    if (failed(Outliner(module, main).run()))
      signalPassFailure();
  }
};

} // namespace
