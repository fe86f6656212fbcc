//===- AnnotateCosts.cpp - Analytic per-op costs --------------------------===//
//
// Attaches `nn.cost` to every nn op with a cost rule, from the work counts of
// CostModel and the roofline rates given as pass options, and names each
// such op as a model node (`nn.node`) unless it already has a name. The planner
// reads forward and gradient times from it; ops that run no kernel of their
// own (parameter reads) are left alone and cost nothing to the planner, and
// an nn op without a cost rule is an error. Each kernel call also pays the
// fixed cost this machine measured for it (`call_ms`, kOneDnnCallMs or
// kLoopCallMs), and the kernels measured far from the peak are priced as
// measured (CostModel.h). In a bf16 build the ops it computes in bf16 reach
// kBf16Speedup times the peak rate and pay for converting their operands.
//
//===----------------------------------------------------------------------===//

#include "passes/CostModel.h"
#include "passes/Passes.h"

#include "dialects/nn/IR/NNOps.h"
#include "dialects/nn/IR/ShapeInference.h"
#include "dialects/pipe/IR/PipeOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/StringSet.h"

namespace mlir::dpc {
#define GEN_PASS_DEF_ANNOTATECOSTSPASS
#include "passes/Passes.h.inc"
} // namespace mlir::dpc

using namespace mlir;
using namespace mlir::dpc;

namespace {

// The op's name as a model node: its location name (the ONNX node for
// imported models; a second op of one node gets ".1") or its op name and
// position. Costs, plans and profiles all refer to ops by it.
std::string nodeName(Operation *op, unsigned index, llvm::StringSet<> &used) {
  std::string base;
  if (auto loc = dyn_cast<NameLoc>(op->getLoc()))
    base = loc.getName().str();
  if (base.empty())
    base = op->getName().stripDialect().str() + "#" + std::to_string(index);
  std::string name = base;
  for (int copy = 1; used.contains(name); ++copy)
    name = base + "." + std::to_string(copy);
  used.insert(name);
  return name;
}

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
    // A bf16 build computes its convolutions and matmuls faster.
    bool bf16 = pipe::isBf16(getOperation());
    TargetRates bf16Rates{rates.flopsPerSecond * kBf16Speedup,
                          rates.bytesPerSecond};
    Builder b(&getContext());
    llvm::StringSet<> names;
    getOperation().walk([&](Operation *op) {
      if (auto name = op->getAttrOfType<StringAttr>("nn.node"))
        names.insert(name.getValue());
    });
    unsigned index = 0;
    WalkResult walked = getOperation().walk([&](Operation *op) {
      ++index;
      FailureOr<std::optional<OpWork>> counted = estimateWork(op);
      if (failed(counted))
        return WalkResult::interrupt();
      std::optional<OpWork> work = *counted;
      if (!work)
        return WalkResult::advance();
      if (!op->hasAttr("nn.node"))
        op->setAttr("nn.node", b.getStringAttr(nodeName(op, index, names)));
      bool inBf16 = bf16 && computesInBf16(op);
      const TargetRates &at = inBf16 ? bf16Rates : rates;
      // A bf16 kernel first converts its f32 operands: read 4 bytes and
      // write 2 an element; its gradients convert as much again each.
      double converted = 0;
      if (inBf16)
        for (Value operand : op->getOperands())
          converted += 1.5 * double(nn::getSizeInBytes(operand));
      double convertMs = 1e3 * converted / rates.bytesPerSecond;
      NamedAttribute fields[] = {
          b.getNamedAttr("time_ms",
                         b.getF64FloatAttr(estimateMs(*work, at) + convertMs)),
          b.getNamedAttr(
              "grad_time_ms",
              b.getF64FloatAttr(estimateMs(*work, at, /*gradient=*/true) +
                                (work->gradFlops > 0 ? 2 * convertMs : 0))),
          // The fixed part of time_ms, which apply-profile does not scale.
          b.getNamedAttr("call_ms", b.getF64FloatAttr(work->callMs)),
          b.getNamedAttr("flops", b.getI64IntegerAttr(work->flops)),
          b.getNamedAttr("bytes", b.getI64IntegerAttr(work->bytes)),
          b.getNamedAttr("activation_bytes",
                         b.getI64IntegerAttr(work->activationBytes)),
          b.getNamedAttr("parameter_bytes",
                         b.getI64IntegerAttr(work->parameterBytes)),
      };
      op->setAttr("nn.cost", b.getDictionaryAttr(fields));
      return WalkResult::advance();
    });
    if (walked.wasInterrupted())
      signalPassFailure();
  }
};

} // namespace
