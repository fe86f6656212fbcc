//===- AnnotateCosts.cpp - Analytic per-op costs --------------------------===//
//
// Attaches `nn.cost` to every nn op with a cost rule, from the work counts of
// CostModel and the roofline rates given as pass options. The planner reads
// forward and gradient times from it; ops without a rule are left alone and
// cost nothing to the planner.
//
//===----------------------------------------------------------------------===//

#include "passes/CostModel.h"
#include "passes/Passes.h"

#include "dialects/nn/IR/NNOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"

namespace mlir::dpc {
#define GEN_PASS_DEF_ANNOTATECOSTSPASS
#include "passes/Passes.h.inc"
} // namespace mlir::dpc

using namespace mlir;
using namespace mlir::dpc;

namespace {

struct AnnotateCostsPass
    : public mlir::dpc::impl::AnnotateCostsPassBase<AnnotateCostsPass> {
  using AnnotateCostsPassBase::AnnotateCostsPassBase;

  void runOnOperation() override {
    if (!(peakGflops > 0) || !(memoryGBps > 0)) {
      getOperation().emitError(
          "expects positive peak-gflops and memory-gbps pass options");
      return signalPassFailure();
    }
    TargetRates rates{peakGflops * 1e9, memoryGBps * 1e9};
    Builder b(&getContext());
    getOperation().walk([&](Operation *op) {
      std::optional<OpWork> work = estimateWork(op);
      if (!work)
        return;
      NamedAttribute fields[] = {
          b.getNamedAttr("time_ms", b.getF64FloatAttr(rates.milliseconds(
                                        work->flops, work->bytes))),
          b.getNamedAttr("grad_time_ms",
                         b.getF64FloatAttr(rates.milliseconds(
                             work->gradFlops, work->gradBytes))),
          b.getNamedAttr("flops", b.getI64IntegerAttr(work->flops)),
          b.getNamedAttr("bytes", b.getI64IntegerAttr(work->bytes)),
          b.getNamedAttr("activation_bytes",
                         b.getI64IntegerAttr(work->activationBytes)),
          b.getNamedAttr("parameter_bytes",
                         b.getI64IntegerAttr(work->parameterBytes)),
      };
      op->setAttr("nn.cost", b.getDictionaryAttr(fields));
    });
  }
};

} // namespace
