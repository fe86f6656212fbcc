//===- Passes.h - dpc compiler passes ---------------------------*- C++ -*-===//

#ifndef DPC_PASSES_PASSES_H
#define DPC_PASSES_PASSES_H

#include "dialects/nn/IR/NNDialect.h"
#include "dialects/nn/IR/NNOps.h"
#include "dialects/pipe/IR/PipeDialect.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Pass/Pass.h"

#include <vector>

namespace mlir::dpc {

#define GEN_PASS_DECL
#include "passes/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "passes/Passes.h.inc"

/// The module's @main as every pass after import expects it: defined, with
/// one block. Otherwise emits "expects a single-block function @main" on the
/// module and fails.
inline FailureOr<func::FuncOp> getMainFunc(ModuleOp module) {
  auto main = module.lookupSymbol<func::FuncOp>("main");
  if (!main || main.isExternal() || !main.getBody().hasOneBlock())
    return module.emitError("expects a single-block function @main");
  return main;
}

/// The ops of a single-block segment function in order, and each op's
/// position among them: what the passes that plan over a segment's ops by
/// index (fuse-elementwise, propagate-layouts) read it into.
struct SegmentOps {
  std::vector<Operation *> ops;
  DenseMap<Operation *, int64_t> position;
};
inline SegmentOps indexSegment(func::FuncOp func) {
  SegmentOps segment;
  for (Operation &op : func.getBody().front()) {
    segment.position[&op] = int64_t(segment.ops.size());
    segment.ops.push_back(&op);
  }
  return segment;
}

/// The loss that ends the forward pass of a training step's @main (what
/// autodiff appended). Otherwise emits "expects one loss ..." on `main` and
/// fails.
inline FailureOr<Operation *> getForwardLoss(func::FuncOp main) {
  SmallVector<Operation *> losses = nn::getLosses(main.getBody().front());
  if (losses.size() != 1)
    return main.emitError("expects one loss (nn.softmax_cross_entropy or "
                          "nn.mse_loss) marking the end of the forward pass "
                          "(run --dpc-autodiff first), got ")
           << losses.size();
  return losses.front();
}

} // namespace mlir::dpc

#endif // DPC_PASSES_PASSES_H
