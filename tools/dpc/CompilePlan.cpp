//===- CompilePlan.cpp - plan.json, compile.json, --recompute auto --------===//
//
// What the planning and scheduling passes leave for the output beyond their
// own files: plan.json completed with the schedule built, its simulated step
// and the planned peaks; compile.json, the options `dpc run --adapt`
// compiles with again; and for --recompute auto, the stages whose ranks
// would exceed --memory-limit, from a probe of the pipeline up to
// plan-memory.
//
//===----------------------------------------------------------------------===//

#include "CompilePhases.h"

#include "dialects/pipe/IR/PipeDialect.h"
#include "passes/StageInfo.h"

#include "dpc/schedule/Schedule.h"
#include "dpc/schedule/Verifier.h"
#include "dpc/support/Error.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/ScopeExit.h"

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

namespace {

/// Each rank's peak (plan-memory's, arenas counted), the schedule and the
/// ranks' limits (`limit`, or their devices' memory), from the pipeline run
/// on a copy of `module` up to plan-memory; nullopt when a phase fails (it
/// has said why).
struct Probe {
  std::vector<int64_t> peaks;
  dpc::schedule::Schedule streams;
  dpc::schedule::VerifyOptions limits;
};

std::optional<Probe> probePeaks(mlir::ModuleOp module, double limit,
                                const std::string &schedulePath,
                                const PhaseRunner &runPhases) {
  mlir::OwningOpRef<mlir::ModuleOp> probe = module.clone();
  bool planned = false;
  runPhases(*probe, [&](llvm::StringRef phase) {
    planned |= phase == "plan-memory";
    return !planned;
  });
  if (!planned)
    return std::nullopt;
  auto peaks =
      (*probe)->getAttrOfType<mlir::DenseI64ArrayAttr>("pipe.peak_memory");
  Probe result;
  std::string error;
  try {
    result.streams = dpc::schedule::readScheduleFile(schedulePath);
  } catch (const dpc::Error &e) {
    error = e.what();
  }
  if (error.empty() && (!peaks || int(peaks.size()) != result.streams.ranks))
    error = "plan-memory gave no peak for each rank";
  if (!error.empty()) {
    std::cerr << "dpc compile: --recompute auto: " << error << "\n";
    return std::nullopt;
  }
  result.peaks.assign(peaks.asArrayRef().begin(), peaks.asArrayRef().end());
  result.limits = mlir::dpc::memoryLimitsOf(*probe, limit);
  return result;
}

} // namespace

std::optional<std::vector<int64_t>>
stagesOverLimit(mlir::ModuleOp module, double limit,
                mlir::dpc::PipelineOptions &pipeline,
                const PhaseRunner &runPhases) {
  // Probes measure: no rank is held to a limit while they run.
  pipeline.checkMemory = false;
  std::string kind = pipeline.recompute;
  std::vector<int64_t> given(pipeline.recomputeStages.begin(),
                             pipeline.recomputeStages.end());
  auto restore = llvm::make_scope_exit([&] {
    pipeline.checkMemory = true;
    pipeline.recompute = kind;
    pipeline.recomputeStages = given;
  });
  pipeline.recompute = "auto";
  pipeline.recomputeStages.clear();
  std::optional<Probe> plain =
      probePeaks(module, limit, pipeline.scheduleOutput, runPhases);
  if (!plain)
    return std::nullopt;
  std::vector<int> over;
  for (auto [rank, peak] : llvm::enumerate(plain->peaks)) {
    double own = plain->limits.memoryLimitOf(int(rank));
    if (own > 0 && double(peak) > own)
      over.push_back(int(rank));
  }
  if (over.empty())
    return std::vector<int64_t>{};
  pipeline.recompute = "all";
  std::optional<Probe> recomputed =
      probePeaks(module, limit, pipeline.scheduleOutput, runPhases);
  if (!recomputed)
    return std::nullopt;
  std::vector<int64_t> stages;
  for (int rank : over)
    if (recomputed->peaks[size_t(rank)] < plain->peaks[size_t(rank)])
      for (int chunk = 0; chunk < plain->streams.chunks; ++chunk)
        stages.push_back(plain->streams.virtualStage(rank, chunk));
  llvm::sort(stages);
  stages.erase(std::unique(stages.begin(), stages.end()), stages.end());
  return stages;
}

} // namespace dpc::tools::detail
