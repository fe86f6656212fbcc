//===- FuseElementwise.cpp - Chains of elementwise ops into nn.fused ------===//
//
// Within each segment function, groups elementwise ops that the generated
// loop computes (lowering::isFusible) into nn.fused regions of one result.
// A group grows from its last op (the root) backwards through the ops that
// produce its operands, as long as such an op has the root's shape and
// every use of its result is in the group: a value read anywhere else (by
// another kernel, a pipe.stash for the backward pass, a pipe.send, the
// segment's return) is the result of a group of its own and stays a buffer.
// Groups never cross segment functions, and transfers and stashes are ops of
// no group, so they bound groups too. A lone op stays a runtime call.
//
// The grouping (planGroups) works on plain indices; the pass reads a
// segment into them and rewrites each group of two or more ops as one
// nn.fused op at the root's place.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "dialects/nn/IR/NNOps.h"
#include "dialects/pipe/IR/PipeOps.h"
#include "passes/lowering/Fused.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/SetVector.h"

#include <vector>

namespace mlir::dpc {
#define GEN_PASS_DEF_FUSEELEMENTWISEPASS
#include "passes/Passes.h.inc"
} // namespace mlir::dpc

using namespace mlir;
using namespace mlir::dpc;

namespace {

// An op of a segment, by its position in the segment.
struct Node {
  bool fusible = false;
  // Ops of the segment that read its results; -1 for a use the grouping
  // cannot see into (the segment's terminator is an op like any other).
  std::vector<int64_t> users;
  // Producers of its operands within the segment.
  std::vector<int64_t> producers;
  // Its result's shape, compared for equality only.
  std::vector<int64_t> shape;
};

// Groups of ops to fuse, each listed root first: from the last op
// backwards, a fusible op not yet grouped roots a group, which takes in a
// producer of its ops when the producer is fusible, of the root's shape and
// read only by the group.
std::vector<std::vector<int64_t>> planGroups(const std::vector<Node> &nodes) {
  std::vector<int64_t> groupOf(nodes.size(), -1);
  std::vector<std::vector<int64_t>> groups;
  for (int64_t root = int64_t(nodes.size()) - 1; root >= 0; --root) {
    if (!nodes[root].fusible || groupOf[root] >= 0)
      continue;
    int64_t id = groups.size();
    groups.push_back({root});
    groupOf[root] = id;
    std::vector<int64_t> worklist = {root};
    while (!worklist.empty()) {
      int64_t op = worklist.back();
      worklist.pop_back();
      for (int64_t producer : nodes[op].producers) {
        const Node &node = nodes[producer];
        if (!node.fusible || groupOf[producer] >= 0 ||
            node.shape != nodes[root].shape)
          continue;
        if (!llvm::all_of(node.users, [&](int64_t user) {
              return user >= 0 && groupOf[user] == id;
            }))
          continue;
        groupOf[producer] = id;
        groups[id].push_back(producer);
        worklist.push_back(producer);
      }
    }
  }
  return groups;
}

// Replaces `ops` (root first) by one nn.fused op at the root.
void fuse(ArrayRef<Operation *> ops) {
  Operation *root = ops.front();
  SmallVector<Operation *> ordered(ops.begin(), ops.end());
  llvm::sort(ordered,
             [](Operation *a, Operation *b) { return a->isBeforeInBlock(b); });
  llvm::SmallPtrSet<Operation *, 8> inGroup(ops.begin(), ops.end());
  llvm::SetVector<Value> inputs;
  for (Operation *op : ordered)
    for (Value operand : op->getOperands())
      if (!inGroup.contains(operand.getDefiningOp()))
        inputs.insert(operand);

  OpBuilder b(root);
  auto fused = b.create<nn::FusedOp>(
      root->getLoc(), root->getResult(0).getType(), inputs.getArrayRef());
  for (StringRef name : {"nn.node", "pipe.stage"})
    if (Attribute attr = root->getAttr(name))
      fused->setAttr(name, attr);
  Block *body = b.createBlock(&fused.getBody());
  IRMapping mapping;
  for (Value input : inputs)
    mapping.map(input, body->addArgument(input.getType(), input.getLoc()));
  for (Operation *op : ordered)
    b.clone(*op, mapping);
  b.create<nn::YieldOp>(root->getLoc(), mapping.lookup(root->getResult(0)));
  root->getResult(0).replaceAllUsesWith(fused.getResult());
  for (Operation *op : llvm::reverse(ordered))
    op->erase();
}

void fuseSegment(func::FuncOp func) {
  auto [ops, position] = indexSegment(func);
  std::vector<Node> nodes(ops.size());
  for (auto [index, op] : llvm::enumerate(ops)) {
    Node &node = nodes[index];
    node.fusible = lowering::isFusible(op);
    for (Value operand : op->getOperands())
      if (Operation *producer = operand.getDefiningOp();
          producer && position.count(producer))
        node.producers.push_back(position[producer]);
    for (Value result : op->getResults())
      for (Operation *user : result.getUsers())
        node.users.push_back(position.count(user) ? position[user] : -1);
    if (op->getNumResults() == 1)
      if (auto type = dyn_cast<RankedTensorType>(op->getResult(0).getType()))
        node.shape.assign(type.getShape().begin(), type.getShape().end());
  }
  for (const std::vector<int64_t> &group : planGroups(nodes)) {
    if (group.size() < 2)
      continue;
    SmallVector<Operation *> members;
    for (int64_t index : group)
      members.push_back(ops[index]);
    fuse(members);
  }
}

struct FuseElementwisePass
    : public mlir::dpc::impl::FuseElementwisePassBase<FuseElementwisePass> {
  using FuseElementwisePassBase::FuseElementwisePassBase;

  void runOnOperation() override {
    for (auto func : getOperation().getOps<func::FuncOp>())
      if (func->hasAttr(pipe::PipeDialect::kSegmentAttrName) &&
          !func.isExternal())
        fuseSegment(func);
  }
};

} // namespace
