//===- BuildSchedule.cpp - Per-rank instruction streams -------------------===//
//
// A thin adapter over lib/schedule: the outlined segments give each stage's
// forward, backward-input and backward-weight times and its byte sizes; the
// library builds and simulates the streams (verify-schedule checks them),
// which go out as schedule.json and, with emit-program, as a pipe.schedule op.
//
//===----------------------------------------------------------------------===//

#include "passes/DiagnoseErrors.h"
#include "passes/Passes.h"
#include "passes/StageInfo.h"

#include "dialects/nn/IR/NNOps.h"
#include "dialects/nn/IR/ShapeInference.h"
#include "dialects/pipe/IR/PipeOps.h"

#include "dpc/schedule/Builder.h"
#include "dpc/schedule/Choose.h"
#include "dpc/schedule/Simulator.h"
#include "dpc/schedule/Timeline.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/StringSet.h"

#include <fstream>

namespace mlir::dpc {
#define GEN_PASS_DEF_BUILDSCHEDULEPASS
#include "passes/Passes.h.inc"
} // namespace mlir::dpc

using namespace mlir;
using namespace mlir::dpc;
namespace schedule = ::dpc::schedule;

namespace {

// Milliseconds of the ops in `func` by their nn.cost.
double segmentMs(func::FuncOp func) {
  double total = 0;
  if (!func)
    return total;
  func.walk([&](Operation *op) {
    if (auto cost = op->getAttrOfType<DictionaryAttr>("nn.cost"))
      if (auto time = dyn_cast_or_null<FloatAttr>(cost.get("time_ms")))
        total += time.getValueAsDouble();
  });
  return total;
}

// Segment functions by (stage, segment).
std::map<int64_t, llvm::StringMap<func::FuncOp>>
segmentsByStage(ModuleOp module) {
  std::map<int64_t, llvm::StringMap<func::FuncOp>> stages;
  for (auto func : module.getOps<func::FuncOp>()) {
    auto segment =
        func->getAttrOfType<StringAttr>(pipe::PipeDialect::kSegmentAttrName);
    std::optional<int64_t> stage = pipe::getStage(func);
    if (segment && stage)
      stages[*stage][segment.getValue()] = func;
  }
  return stages;
}

/// --shard-optimizer: a replica of a stage with R > 1 replicas keeps its
/// share of the optimizer state, the most any replica owns (the runtime's
/// OptimizerShards: ceil(elements / R) of the flat parameters).
void shardOptimizerState(std::vector<schedule::StageInfo> &infos,
                         llvm::ArrayRef<int> replicas) {
  for (auto [stage, info] : llvm::enumerate(infos)) {
    int64_t r = stage < replicas.size() ? replicas[stage] : 1;
    if (r < 2 || info.weightBytes == 0)
      continue;
    int64_t stateTensors =
        (info.paramBytes - 2 * info.weightBytes) / info.weightBytes;
    int64_t elements = info.weightBytes / int64_t(sizeof(float));
    int64_t share = (elements + r - 1) / r;
    info.paramBytes =
        2 * info.weightBytes + stateTensors * share * int64_t(sizeof(float));
  }
}

struct BuildSchedulePass
    : public mlir::dpc::impl::BuildSchedulePassBase<BuildSchedulePass> {
  using BuildSchedulePassBase::BuildSchedulePassBase;

  /// Hybrid data parallelism: the replicas partition-stages gave the
  /// stages, which --shard-optimizer needs.
  LogicalResult readReplicas(ModuleOp module, schedule::BuildOptions &options) {
    if (auto replicas = module->getAttrOfType<DenseI64ArrayAttr>(
            pipe::PipeDialect::kReplicasAttrName);
        replicas &&
        llvm::any_of(replicas.asArrayRef(), [](int64_t r) { return r > 1; })) {
      if (int64_t(replicas.size()) != options.stages)
        return module.emitError("expects ")
               << pipe::PipeDialect::kReplicasAttrName
               << " entries for each of the " << options.stages
               << " stages, got " << replicas.size();
      options.replicas.assign(replicas.asArrayRef().begin(),
                              replicas.asArrayRef().end());
    }
    if (shardOptimizer && options.replicas.empty())
      return module.emitError(
          "--shard-optimizer splits a replicated stage's optimizer state, but "
          "the plan gives no stage more than one rank (give --replicas, or "
          "more --devices)");
    return success();
  }

  void runOnOperation() override {
    ModuleOp module = getOperation();
    schedule::BuildOptions options;
    // auto: the kind is chosen below, once the stages' costs are known.
    bool chooseKind = schedule == "auto";
    if (!chooseKind && !schedule::parseKind(schedule, options.kind)) {
      module.emitError("unknown schedule '") << schedule << "'";
      return signalPassFailure();
    }
    if (microbatches < 1) {
      module.emitError("expects microbatches >= 1");
      return signalPassFailure();
    }
    options.microbatches = microbatches;
    options.verticalSync = verticalSync;
    if (!schedule::parseReduce(reduce, options.reduce)) {
      module.emitError("unknown reduce '")
          << reduce << "' (allreduce or preduce)";
      return signalPassFailure();
    }

    std::map<int64_t, llvm::StringMap<func::FuncOp>> stages =
        segmentsByStage(module);
    if (stages.empty()) {
      module.emitError("expects segment functions (run --dpc-outline-stages "
                       "first)");
      return signalPassFailure();
    }
    // Virtual stage c * ranks + r is chunk c of rank r; stageInfo is
    // indexed by virtual stage, which is the IR's stage number.
    int64_t chunks = pipe::getNumChunks(module);
    if (int64_t(stages.size()) % chunks != 0 ||
        stages.rbegin()->first + 1 != int64_t(stages.size())) {
      module.emitError("expects stages 0..N-1 with N a multiple of the ")
          << chunks << " chunks per rank, got " << stages.size() << " stages";
      return signalPassFailure();
    }
    options.stages = stages.size() / chunks;
    options.virtualStages = chunks;
    if (failed(readReplicas(module, options)))
      return signalPassFailure();
    // The stages' costs and sizes for a kind: what each rank holds.
    auto stageInfo = [&](schedule::ScheduleKind kind) {
      std::vector<schedule::StageInfo> infos =
          collectStageInfo(module, schedule::splitsBackward(kind));
      if (shardOptimizer)
        shardOptimizerState(infos, options.replicas);
      return infos;
    };
    if (cores < 0) {
      module.emitError("expects cores >= 0, got ") << cores;
      return signalPassFailure();
    }
    // The machine the step is predicted on: apply-profile's measured
    // message latency, charged to every transfer, and the cores the ranks
    // share, where a rank waiting for a message wakes after the measured
    // wake-up latency.
    schedule::SimulateOptions machine;
    machine.cores = int(cores);
    if (auto measured = module->getAttrOfType<FloatAttr>(
            pipe::PipeDialect::kMessageLatencyAttrName))
      machine.latency = measured.getValueAsDouble();
    if (auto measured = module->getAttrOfType<FloatAttr>(
            pipe::PipeDialect::kWakeLatencyAttrName))
      machine.wakeLatency = measured.getValueAsDouble();
    if (chooseKind) {
      // Of the kinds auto chooses among, the one with the shortest
      // simulated step that fits the memory limits.
      std::vector<schedule::BuildOptions> candidates;
      for (schedule::ScheduleKind kind : schedule::autoScheduleKinds()) {
        candidates.push_back(options);
        candidates.back().kind = kind;
        candidates.back().stageInfo = stageInfo(kind);
      }
      // The ranks' peaks count each segment's arena as it stands before
      // fusion (plan-memory's final check counts the fused one).
      schedule::VerifyOptions memory = memoryLimitsOf(module, memoryLimit);
      memory.computeScratchBytes = arenaScratch(planSegmentArenas(module));
      FailureOr<size_t> chosen = diagnoseErrors(module, "", [&] {
        return schedule::chooseFastestSchedule(candidates, machine, memory);
      });
      if (failed(chosen))
        return signalPassFailure();
      options.kind = candidates[*chosen].kind;
    }
    options.stageInfo = stageInfo(options.kind);

    std::string building = "cannot build the " + schedule + " schedule: ";
    FailureOr<schedule::Schedule> made = diagnoseErrors(
        module, building, [&] { return schedule::buildSchedule(options); });
    if (failed(made))
      return signalPassFailure();
    schedule::Schedule built = std::move(*made);
    built.shardOptimizer = shardOptimizer;
    built.messageLatency = machine.latency;
    built.cores = machine.cores;
    built.wakeLatency = machine.wakeLatency;
    schedule::SimulateOptions simulateOptions = machine;
    simulateOptions.recordTimeline = !traceOutput.empty();
    // The runtime runs the steps back to back: predict a long run's step.
    simulateOptions.steps = schedule::kSteadyStateSteps;
    FailureOr<schedule::SimulateResult> simulation =
        diagnoseErrors(module, "cannot simulate the schedule: ", [&] {
          return schedule::simulateSchedule(built, simulateOptions);
        });
    if (failed(simulation))
      return signalPassFailure();
    const schedule::SimulateResult &simulated = *simulation;
    Builder b(&getContext());
    module->setAttr("pipe.predicted_step_ms",
                    b.getF64FloatAttr(simulated.steadyStepTime));
    module->setAttr("pipe.predicted_bubble",
                    b.getF64FloatAttr(simulated.bubbleFraction));

    if (!traceOutput.empty()) {
      std::ofstream trace(traceOutput);
      trace << schedule::toChromeTrace(simulated.timeline) << "\n";
      if (!trace) {
        module.emitError("cannot write '") << traceOutput << "'";
        return signalPassFailure();
      }
    }
    if (!scheduleOutput.empty()) {
      std::ofstream out(scheduleOutput);
      out << schedule::toJson(built, 1) << "\n";
      if (!out) {
        module.emitError("cannot write '") << scheduleOutput << "'";
        return signalPassFailure();
      }
    }
    if (emitProgram) {
      for (auto old :
           llvm::make_early_inc_range(module.getOps<pipe::ScheduleOp>()))
        old.erase();
      auto builder = OpBuilder::atBlockEnd(module.getBody());
      builder.create<pipe::ScheduleOp>(module.getLoc(), built);
    }
  }
};

} // namespace

schedule::VerifyOptions mlir::dpc::memoryLimitsOf(ModuleOp module,
                                                  double memoryLimit) {
  schedule::VerifyOptions options;
  if (memoryLimit < 0)
    return options;
  options.memoryLimit = memoryLimit;
  if (auto perRank = module->getAttrOfType<DenseI64ArrayAttr>(
          pipe::PipeDialect::kRankMemoryAttrName))
    for (int64_t bytes : perRank.asArrayRef())
      options.rankMemoryLimits.push_back(double(bytes));
  return options;
}

schedule::MemoryLevers mlir::dpc::memoryLeversOf(ModuleOp module,
                                                 bool recompute) {
  schedule::MemoryLevers levers{recompute, pipe::isBf16(module)};
  module.walk([&](nn::ParamOp param) {
    levers.largestParamBytes =
        std::max(levers.largestParamBytes,
                 double(nn::getSizeInBytes(param.getResult())));
  });
  return levers;
}

std::vector<schedule::StageInfo>
mlir::dpc::collectStageInfo(ModuleOp module, bool splitBackward) {
  std::vector<schedule::StageInfo> infos;
  auto speeds = module->getAttrOfType<DenseF64ArrayAttr>(
      pipe::PipeDialect::kStageSpeedsAttrName);
  for (auto &[stage, segments] : segmentsByStage(module)) {
    schedule::StageInfo info;
    // A stage on a device of another speed than the costs' (--cluster)
    // computes in its costs over that speed.
    double speed = speeds && stage < int64_t(speeds.size()) ? speeds[stage] : 1;
    info.forward = segmentMs(segments.lookup("forward")) / speed;
    info.backwardInput = segmentMs(segments.lookup("backward_input")) / speed;
    info.backwardWeight = segmentMs(segments.lookup("backward_weight")) / speed;
    llvm::StringSet<> params, stashes;
    int64_t paramBytes = 0, stateTensors = 0;
    // What the runtime loads for a microbatch: the first stage's input 0 and
    // the labels, whichever segments read them.
    int64_t inputBytes = 0, labelBytes = 0;
    for (auto &entry : segments) {
      bool stashesCount = splitBackward || entry.first() != "backward_input";
      entry.second.walk([&](Operation *op) {
        if (auto param = dyn_cast<nn::ParamOp>(op)) {
          if (params.insert(param.getName()).second)
            paramBytes += nn::getSizeInBytes(param);
        } else if (auto update = dyn_cast<nn::OptimizerUpdateOpInterface>(op)) {
          stateTensors = std::max(stateTensors, update.getNumStateTensors());
        } else if (auto stash = dyn_cast<pipe::StashOp>(op)) {
          if (stashesCount && stashes.insert(stash.getKey()).second) {
            int64_t bytes = nn::getSizeInBytes(stash.getValue());
            info.activationBytes += bytes;
            if (entry.first() == "backward_input")
              info.backwardStashBytes += bytes;
          }
        } else if (auto input = dyn_cast<pipe::InputOp>(op)) {
          if (stage == 0 && input.getIndex() == 0)
            inputBytes = nn::getSizeInBytes(input.getResult());
        } else if (auto labels = dyn_cast<pipe::LabelsOp>(op)) {
          labelBytes = nn::getSizeInBytes(labels.getResult());
        } else if (auto send = dyn_cast<pipe::SendOp>(op)) {
          if (send.getPeerAttr().getInt() > stage)
            // What travels: bf16 for f32 values in a bf16 build.
            info.outputBytes +=
                nn::getTransferBytes(send.getValue(), pipe::isBf16(module));
        }
      });
    }
    info.inputBytes = inputBytes + labelBytes;
    // Weights, their gradient accumulators and the optimizer's state
    // (which the runtime keeps for every parameter of a training stage)
    // stay resident.
    info.paramBytes = (2 + stateTensors) * paramBytes;
    info.weightBytes = paramBytes;
    infos.push_back(info);
  }
  return infos;
}
