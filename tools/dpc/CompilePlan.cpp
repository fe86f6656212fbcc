//===- CompilePlan.cpp - plan.json, compile.json, --recompute auto --------===//
//
// What the planning and scheduling passes leave for the output beyond their
// own files: plan.json completed with the schedule built, its simulated step
// and the planned peaks; compile.json, the options `dpc run --adapt`
// compiles with again; and for --recompute auto, the stages whose ranks
// would exceed --memory-limit, from a probe of the pipeline up to
// build-schedule and the schedule verifier.
//
//===----------------------------------------------------------------------===//

#include "CompilePhases.h"

#include "dialects/pipe/IR/PipeDialect.h"

#include "dpc/schedule/Schedule.h"
#include "dpc/schedule/Verifier.h"

#include "llvm/ADT/STLExtras.h"

#include <algorithm>
#include <fstream>
#include <iostream>

namespace dpc::tools::detail {

/// OUT/compile.json: what `dpc run --adapt` needs to compile the model again
/// for another layout (docs/RUNTIME.md, "Re-partitioning"): the model, the
/// directory its relative paths were given from, and the other options.
nlohmann::ordered_json compileRecord(const CompileOptions &options) {
  std::error_code error;
  fs::path model = fs::absolute(options.model, error);
  return {{"format", "dpc-compile"},
          {"version", 1},
          {"model", error ? options.model : model.string()},
          {"directory", fs::current_path(error).string()},
          {"options", options.recordedOptions}};
}

// Adds what the later phases know beside the planner's figures in
// plan.json: whether the build is forward-only, the schedule kind built,
// the schedule simulation's step time and bubbles (per-op costs through the
// real instruction streams) and plan-memory's peak per rank.
bool completePlan(mlir::ModuleOp module, const fs::path &planPath,
                  const fs::path &schedulePath, bool inference) {
  auto step = module->getAttrOfType<mlir::FloatAttr>("pipe.predicted_step_ms");
  auto bubble = module->getAttrOfType<mlir::FloatAttr>("pipe.predicted_bubble");
  auto peaks =
      module->getAttrOfType<mlir::DenseI64ArrayAttr>("pipe.peak_memory");
  bool simulated = step && bubble && peaks;
  if (!simulated && !inference)
    return true;
  std::ifstream in(planPath);
  nlohmann::ordered_json plan =
      nlohmann::ordered_json::parse(in, nullptr, false);
  if (plan.is_discarded()) {
    std::cerr << "dpc compile: cannot read back " << planPath.string() << "\n";
    return false;
  }
  if (inference)
    plan["inference"] = true;
  // The kind build-schedule built (--schedule auto's choice; the planner
  // plans zb-h1, zb-2p and interleaved as 1f1b).
  std::ifstream streams(schedulePath);
  nlohmann::json built = nlohmann::json::parse(streams, nullptr, false);
  if (!built.is_discarded() && built.contains("kind") &&
      plan.contains("schedule"))
    plan["schedule"]["kind"] = built["kind"];
  if (simulated) {
    plan["predicted"]["simulated_step_ms"] = step.getValueAsDouble();
    plan["predicted"]["simulated_bubble_fraction"] = bubble.getValueAsDouble();
    // The cores the simulation shared among the ranks (--cores).
    if (!built.is_discarded() && built.contains("cores"))
      plan["predicted"]["cores"] = built["cores"];
    // Peaks are per rank; a replicated stage's ranks hold the same.
    auto &stages = plan["stages"];
    for (size_t i = 0; i < stages.size(); ++i) {
      size_t rank = i;
      if (stages[i].contains("ranks") && !stages[i]["ranks"].empty())
        rank = stages[i]["ranks"][0].get<size_t>();
      if (rank < peaks.size())
        stages[i]["planned_peak_bytes"] = peaks[rank];
    }
    plan["predicted"]["planned_peak_bytes"] =
        *std::max_element(peaks.asArrayRef().begin(), peaks.asArrayRef().end());
  }
  if (auto recomputed = module->getAttrOfType<mlir::DenseI64ArrayAttr>(
          mlir::dpc::pipe::PipeDialect::kRecomputeAttrName))
    for (int64_t stage : recomputed.asArrayRef())
      if (stage < int64_t(plan["stages"].size()))
        plan["stages"][stage]["recompute"] = true;
  return writeText(planPath, plan.dump(2) + "\n");
}

/// `--recompute auto`: the stages to recompute are those of every rank
/// whose peak without recomputation exceeds `limit`, the peak the verifier
/// holds against --memory-limit (parameters with their gradients and
/// optimizer state, stash slots of the microbatches in flight, transfer
/// buffers). Found by running the phases up to build-schedule on a copy of
/// `module` with no stage recomputed (`runPhases` writes the schedule to
/// `schedulePath`). All chunks of such a rank are recomputed. Nothing when
/// a phase fails (it has said why).
std::optional<std::vector<int64_t>> stagesOverLimit(
    mlir::ModuleOp module, double limit, const std::string &schedulePath,
    const std::function<bool(mlir::ModuleOp,
                             const std::function<bool(llvm::StringRef)> &)>
        &runPhases) {
  mlir::OwningOpRef<mlir::ModuleOp> probe = module.clone();
  bool scheduled = false;
  runPhases(*probe, [&](llvm::StringRef phase) {
    scheduled |= phase == "build-schedule";
    return !scheduled;
  });
  if (!scheduled)
    return std::nullopt;
  dpc::schedule::Schedule streams;
  if (std::string error =
          dpc::schedule::readScheduleFile(schedulePath, streams);
      !error.empty()) {
    std::cerr << "dpc compile: --recompute auto: " << error << "\n";
    return std::nullopt;
  }
  dpc::schedule::VerifyResult verified = dpc::schedule::verifySchedule(streams);
  std::vector<int64_t> stages;
  for (auto [rank, stats] : llvm::enumerate(verified.ranks))
    if (double(stats.peakMemoryBytes) > limit)
      for (int chunk = 0; chunk < streams.chunks; ++chunk)
        stages.push_back(streams.virtualStage(rank, chunk));
  llvm::sort(stages);
  stages.erase(std::unique(stages.begin(), stages.end()), stages.end());
  return stages;
}

} // namespace dpc::tools::detail
