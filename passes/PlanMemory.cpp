//===- PlanMemory.cpp - Static arena offsets per segment ------------------===//
//
// The pass adapter over SegmentArenas.cpp: each segment's buffers get their
// arena offsets, and each rank its peak with the arenas counted, held to
// the memory limits.
//
//===----------------------------------------------------------------------===//

#include "passes/DiagnoseErrors.h"
#include "passes/Passes.h"

#include "dialects/pipe/IR/PipeOps.h"
#include "passes/StageInfo.h"

#include "dpc/schedule/MemoryAdvice.h"
#include "dpc/schedule/Schedule.h"
#include "dpc/schedule/Verifier.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"

namespace mlir::dpc {
#define GEN_PASS_DEF_PLANMEMORYPASS
#include "passes/Passes.h.inc"
} // namespace mlir::dpc

using namespace mlir;
using namespace mlir::dpc;
namespace schedule = ::dpc::schedule;

namespace {

struct PlanMemoryPass
    : public mlir::dpc::impl::PlanMemoryPassBase<PlanMemoryPass> {
  using PlanMemoryPassBase::PlanMemoryPassBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    SegmentArenas arenas = planSegmentArenas(module, /*annotate=*/true);
    if (scheduleFile.empty())
      return;

    FailureOr<schedule::Schedule> read =
        diagnoseErrors(module, "cannot read the schedule: ", [&] {
          return schedule::readScheduleFile(scheduleFile);
        });
    if (failed(read))
      return signalPassFailure();
    schedule::Schedule streams = std::move(*read);
    if (streams.numVirtualStages() != int(arenas.size())) {
      module.emitError("the schedule has ")
          << streams.numVirtualStages() << " stages, the IR " << arenas.size();
      return signalPassFailure();
    }
    // Each compute instruction runs its segment in that segment's arena,
    // which the rank's peak counts while it runs; that peak is the one held
    // to the ranks' memory limits.
    schedule::VerifyOptions options = memoryLimitsOf(module, memoryLimit);
    options.computeScratchBytes = arenaScratch(std::move(arenas));
    schedule::VerifyResult verified =
        schedule::verifySchedule(streams, options);
    SmallVector<int64_t> peaks;
    for (const schedule::RankStats &stats : verified.ranks)
      peaks.push_back(stats.peakMemoryBytes);
    module->setAttr("pipe.peak_memory",
                    Builder(&getContext()).getDenseI64ArrayAttr(peaks));
    if (std::string advice = schedule::memoryAdvice(
            streams, options, verified, memoryLeversOf(module, recompute));
        !advice.empty()) {
      module.emitError("plan over its memory limit with each segment's "
                       "working memory counted: ")
          << advice;
      return signalPassFailure();
    }
  }
};

} // namespace
