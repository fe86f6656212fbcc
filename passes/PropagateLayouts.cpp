//===- PropagateLayouts.cpp - Channel-blocked activations on the CPU ------===//
//
// oneDNN's convolutions compute on channel-blocked activations (nChw16c:
// N, C/16, H, W, 16), and a convolution handed plain NCHW buffers reorders
// its inputs into that layout and its output back, every call. This pass
// keeps activations blocked from the convolution that writes them, through
// the batch normalizations and elementwise ops that follow, to the
// convolutions that read them, so those reorders happen only where a value
// meets an op that needs it plain (a pooling, a reshape, a send), as an
// explicit nn.relayout.
//
// Per segment function, in program order, each op is one of
//   - a producer, whose result is blocked: a convolution or its input
//     gradient, when the result's channels are a multiple of 16;
//   - a follower: batch normalization and its input gradient, and the
//     elementwise ops the fused loop computes with every operand of the
//     result's shape (nn.fused included); its result is blocked when one of
//     its activation operands is, and its plain activation operands are then
//     converted, so that all of them share a layout;
//   - a reader that takes either layout per operand: the convolutions and
//     their filter gradient, batch normalization's statistics and scale and
//     bias gradients (whose activation operands share a layout like a
//     follower's), a convolution's bias gradient, pipe.stash;
//   - a pipe.restore, whose result has the layout its key was stashed in
//     (functions are visited forward segments first, so the stash is seen
//     before the restore);
//   - anything else, which gets plain operands.
// A value converted for one op is converted once: later ops of the function
// read the same nn.relayout.
//
// The decision (planLayouts) works on plain indices; the pass reads each
// segment into them and writes the answer back as `nn.layout` attributes
// and nn.relayout ops. Runs after fuse-elementwise (whose regions are
// followers) and before plan-memory (which places the relayouts' buffers).
// CPU targets only: the CUDA kernels take plain activations.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "dialects/nn/IR/NNOps.h"
#include "dialects/pipe/IR/PipeOps.h"
#include "passes/lowering/Fused.h"
#include "passes/lowering/RuntimeLowering.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

#include <map>
#include <string>
#include <vector>

namespace mlir::dpc {
#define GEN_PASS_DEF_PROPAGATELAYOUTSPASS
#include "passes/Passes.h.inc"
} // namespace mlir::dpc

using namespace mlir;
using namespace mlir::dpc;

namespace {

enum class Role { Producer, Follower, Reader, Restore, Plain };

// An op of a segment, by its position in the segment.
struct Node {
  Role role = Role::Plain;
  // Whether its (one) result can be blocked at all.
  bool blockable = false;
  // For each operand: the position of the op that defines it in the segment
  // (-1 for none), and whether it is an activation the op reads blocked or
  // plain like its others (a follower's or a shared reader's).
  std::vector<int64_t> producers;
  std::vector<bool> shared;
  // Readers: whether each operand may stay blocked on its own.
  std::vector<bool> either;
  // Restores: their stash's blocked-ness, filled by the pass.
  bool restoredBlocked = false;
};

// What planLayouts decides: which results are blocked, and for each op the
// operands it needs converted and to which layout.
struct LayoutPlan {
  std::vector<bool> blocked;
  // (op, operand index, to blocked) for every conversion.
  struct Conversion {
    int64_t op, operand;
    bool toBlocked;
  };
  std::vector<Conversion> conversions;
};

LayoutPlan planLayouts(const std::vector<Node> &nodes) {
  LayoutPlan plan;
  plan.blocked.assign(nodes.size(), false);
  auto operandBlocked = [&](const Node &node, size_t i) {
    int64_t producer = node.producers[i];
    return producer >= 0 && plan.blocked[size_t(producer)];
  };
  for (size_t index = 0; index < nodes.size(); ++index) {
    const Node &node = nodes[index];
    bool anyShared = false;
    for (size_t i = 0; i < node.producers.size(); ++i)
      anyShared |= node.shared[i] && operandBlocked(node, i);
    switch (node.role) {
    case Role::Producer:
      plan.blocked[index] = node.blockable;
      break;
    case Role::Follower:
      plan.blocked[index] = node.blockable && anyShared;
      break;
    case Role::Restore:
      plan.blocked[index] = node.restoredBlocked;
      break;
    case Role::Reader:
    case Role::Plain:
      break;
    }
    // A follower's shared operands take its result's layout, a reader's
    // the layout one of them has.
    bool sharedLayout =
        node.role == Role::Follower ? bool(plan.blocked[index]) : anyShared;
    for (size_t i = 0; i < node.producers.size(); ++i) {
      bool blocked = operandBlocked(node, i);
      bool want = blocked;
      if (node.shared[i])
        want = sharedLayout;
      else if (!node.either[i])
        want = false;
      if (want != blocked)
        plan.conversions.push_back({int64_t(index), int64_t(i), want});
    }
  }
  return plan;
}

// Whether `op` is an elementwise op the fused loop computes (or a region of
// them) with every operand of its result's shape: the same loop then
// computes it on any layout its operands share.
bool isSameShapeElementwise(Operation *op) {
  if (op->getNumResults() != 1)
    return false;
  if (!isa<nn::FusedOp>(op) && !lowering::isFusible(op))
    return false;
  Type type = op->getResult(0).getType();
  return llvm::all_of(op->getOperandTypes(),
                      [&](Type operand) { return operand == type; });
}

// The node of `op`: its role and which operands share a layout.
Node classify(Operation *op) {
  Node node;
  size_t operands = op->getNumOperands();
  node.shared.assign(operands, false);
  node.either.assign(operands, false);
  node.blockable = op->getNumResults() == 1 &&
                   nn::canBeChannelBlocked(op->getResult(0).getType());
  auto share = [&](std::initializer_list<Value> values) {
    for (OpOperand &operand : op->getOpOperands())
      if (llvm::is_contained(values, operand.get()))
        node.shared[operand.getOperandNumber()] = true;
  };
  if (isa<nn::Conv2dOp, nn::Conv2dGradInputOp>(op)) {
    node.role = Role::Producer;
    node.either.assign(operands, true);
  } else if (auto norm = dyn_cast<nn::BatchNormOp>(op)) {
    node.role = Role::Follower;
    share({norm.getInput()});
  } else if (auto grad = dyn_cast<nn::BatchNormGradInputOp>(op)) {
    node.role = Role::Follower;
    share({grad.getResultGrad(), grad.getInput()});
  } else if (isSameShapeElementwise(op)) {
    node.role = Role::Follower;
    node.shared.assign(operands, true);
  } else if (isa<nn::Conv2dGradFilterOp, nn::Conv2dGradBiasOp,
                 nn::BatchNormStatsOp, nn::BatchNormGradBiasOp, pipe::StashOp>(
                 op)) {
    node.role = Role::Reader;
    node.either.assign(operands, true);
  } else if (auto grad = dyn_cast<nn::BatchNormGradScaleOp>(op)) {
    node.role = Role::Reader;
    share({grad.getResultGrad(), grad.getInput()});
  } else if (isa<pipe::RestoreOp>(op)) {
    node.role = Role::Restore;
  }
  return node;
}

// The segment functions of `module`, forward segments first, so that every
// stash is planned before its restore.
std::vector<func::FuncOp> segmentsInOrder(ModuleOp module) {
  std::vector<func::FuncOp> funcs;
  for (StringRef segment : lowering::kSegments)
    for (auto func : module.getOps<func::FuncOp>()) {
      auto name =
          func->getAttrOfType<StringAttr>(pipe::PipeDialect::kSegmentAttrName);
      if (name && name.getValue() == segment && !func.isExternal())
        funcs.push_back(func);
    }
  return funcs;
}

// The stage of a segment function, which scopes its stash keys.
int64_t stageOf(func::FuncOp func) {
  auto stage =
      func->getAttrOfType<IntegerAttr>(pipe::PipeDialect::kStageAttrName);
  return stage ? stage.getInt() : 0;
}

using StashLayouts = std::map<std::pair<int64_t, std::string>, bool>;

void propagateSegment(func::FuncOp func, StashLayouts &stashed) {
  auto [ops, position] = indexSegment(func);
  int64_t stage = stageOf(func);
  std::vector<Node> nodes;
  nodes.reserve(ops.size());
  for (Operation *op : ops) {
    Node node = classify(op);
    for (Value operand : op->getOperands()) {
      Operation *producer = operand.getDefiningOp();
      auto it = producer ? position.find(producer) : position.end();
      node.producers.push_back(it == position.end() ? -1 : it->second);
    }
    if (auto restore = dyn_cast<pipe::RestoreOp>(op)) {
      auto it = stashed.find({stage, restore.getKey().str()});
      node.restoredBlocked = it != stashed.end() && it->second;
    }
    nodes.push_back(std::move(node));
  }
  LayoutPlan plan = planLayouts(nodes);

  MLIRContext *ctx = func.getContext();
  auto blockedAttr = StringAttr::get(ctx, nn::kChannelBlocked);
  for (auto [index, op] : llvm::enumerate(ops))
    if (plan.blocked[index])
      op->setAttr(nn::kLayoutAttrName, blockedAttr);
  // One relayout per value and direction, before its first reader.
  DenseMap<std::pair<Value, unsigned>, Value> converted;
  for (const LayoutPlan::Conversion &c : plan.conversions) {
    Operation *op = ops[size_t(c.op)];
    Value value = op->getOperand(unsigned(c.operand));
    Value &copy = converted[{value, unsigned(c.toBlocked)}];
    if (!copy) {
      OpBuilder b(op);
      auto relayout = b.create<nn::RelayoutOp>(op->getLoc(), value);
      if (c.toBlocked)
        relayout->setAttr(nn::kLayoutAttrName, blockedAttr);
      // The op that needs it first owns its time in a profile.
      for (StringRef name :
           {StringRef("nn.node"), StringRef(pipe::PipeDialect::kStageAttrName)})
        if (Attribute attr = op->getAttr(name))
          relayout->setAttr(name, attr);
      copy = relayout.getResult();
    }
    op->setOperand(unsigned(c.operand), copy);
  }
  for (Operation *op : ops)
    if (auto stash = dyn_cast<pipe::StashOp>(op))
      stashed[{stage, stash.getKey().str()}] =
          nn::isChannelBlocked(stash.getValue());
}

struct PropagateLayoutsPass
    : public mlir::dpc::impl::PropagateLayoutsPassBase<PropagateLayoutsPass> {
  using PropagateLayoutsPassBase::PropagateLayoutsPassBase;

  void runOnOperation() override {
    StashLayouts stashed;
    for (func::FuncOp func : segmentsInOrder(getOperation()))
      propagateSegment(func, stashed);
  }
};

} // namespace
