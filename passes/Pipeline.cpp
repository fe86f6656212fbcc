//===- Pipeline.cpp - dpc compile's pass pipeline -------------------------===//
//
// DESIGN.md's pipeline as built: each pass with the options it takes from
// PipelineOptions, and the passes a build leaves out (autodiff for
// inference, select-conv-algorithm for direct convolutions, recompute
// unless asked for, apply-profile without a profile, fuse-elementwise
// unless asked for).
//
//===----------------------------------------------------------------------===//

#include "passes/Pipeline.h"

#include "passes/Passes.h"

#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

#include <algorithm>

using namespace mlir;
using namespace mlir::dpc;

SmallVector<PipelinePass>
mlir::dpc::buildPipelinePasses(const PipelineOptions &o) {
  SmallVector<PipelinePass> passes;
  auto add = [&](std::unique_ptr<Pass> pass) {
    StringRef name = pass->getArgument();
    name.consume_front("dpc-");
    passes.push_back({name.str(), std::move(pass)});
  };

  // Folds, for example, a weight's transpose into its matmul.
  add(createCanonicalizerPass());
  // Before the costs, which price a convolution by its algorithm, and
  // autodiff, which gives the gradients their convolution's.
  if (o.convAlgorithm != "direct") {
    SelectConvAlgorithmPassOptions convolutions;
    convolutions.algorithm = o.convAlgorithm;
    add(createSelectConvAlgorithmPass(convolutions));
  }
  add(createAnnotateCostsPass());

  PartitionStagesPassOptions partition;
  // With a cluster, stages is optional: without it the planner picks.
  partition.stages = o.devices > 0        ? 0
                     : !o.cluster.empty() ? int64_t(o.stages)
                                          : std::max<int64_t>(o.stages, 1);
  partition.devices = o.devices;
  partition.cluster = o.cluster;
  partition.replicas = o.replicas;
  partition.schedule = o.schedule;
  partition.microbatches = o.microbatches;
  partition.virtualStages = o.virtualStages;
  partition.bandwidth = o.bandwidth;
  // The planner prices every stage without recomputation, so with it the
  // cuts are planned for time alone and the verifier holds the ranks, their
  // stashes shrunk by recomputation, to the memory limit.
  partition.memoryLimit = o.recompute == "none" ? double(o.memoryLimit) : 0;
  partition.planOutput = o.planOutput;
  partition.graphOutput = o.graphOutput;
  // A given partition (--seq-buckets' other buckets) prices nothing; the
  // profile still reaches apply-profile.
  partition.profile = o.fixedStages.empty() ? o.profile.getValue() : "";
  partition.optimizer = o.optimizer;
  partition.shardOptimizer = o.shardOptimizer;
  partition.fixedStages = o.fixedStages;
  add(createPartitionStagesPass(partition));

  // An inference build has nothing to differentiate.
  if (!o.inference) {
    AutodiffPassOptions autodiff;
    autodiff.loss = o.loss;
    autodiff.classAxis = o.classAxis;
    autodiff.hasIgnoreIndex = o.hasIgnoreIndex;
    autodiff.ignoreIndex = o.ignoreIndex;
    // PipeDream updates after every microbatch, so each microbatch's loss is
    // its own mean; the synchronous kinds sum M microbatches into one update.
    autodiff.microbatches = o.schedule == "pipedream" ? 1 : o.microbatches;
    autodiff.optimizer = o.optimizer;
    autodiff.lr = o.lr;
    autodiff.momentum = o.momentum;
    autodiff.beta1 = o.beta1;
    autodiff.beta2 = o.beta2;
    autodiff.eps = o.eps;
    autodiff.weightDecay = o.weightDecay;
    autodiff.noDecay = o.noDecay;
    autodiff.labelSmoothing = o.labelSmoothing;
    add(createAutodiffPass(autodiff));
  }
  add(createInsertSendRecvPass());
  if (o.recompute != "none") {
    RecomputePassOptions recompute;
    recompute.all = o.recompute == "all";
    recompute.stages = o.recomputeStages;
    add(createRecomputePass(recompute));
  }
  add(createInsertStashPass());
  // Again, for the gradient and optimizer ops autodiff added.
  add(createAnnotateCostsPass());
  add(createOutlineStagesPass());
  // Measured times price the schedule too, not only the partition.
  if (!o.profile.empty()) {
    ApplyProfilePassOptions measured;
    measured.profile = o.profile;
    measured.batch = o.profileBatch;
    measured.length = o.profileLength;
    add(createApplyProfilePass(measured));
  }

  BuildSchedulePassOptions schedule;
  schedule.schedule = o.schedule;
  schedule.microbatches = o.microbatches;
  schedule.verticalSync = o.verticalSync;
  schedule.reduce = o.reduce;
  schedule.shardOptimizer = o.shardOptimizer;
  schedule.memoryLimit = o.memoryLimit;
  schedule.cores = o.cores;
  schedule.scheduleOutput = o.scheduleOutput;
  schedule.traceOutput = o.traceOutput;
  add(createBuildSchedulePass(schedule));
  VerifySchedulePassOptions verify;
  verify.scheduleFile = o.scheduleOutput;
  // A probe that measures the peaks (--recompute auto's) holds no rank to
  // a limit.
  verify.memoryLimit = o.checkMemory ? double(o.memoryLimit) : -1;
  verify.recompute = o.recompute != "none";
  add(createVerifySchedulePass(verify));
  if (o.fusion)
    add(createFuseElementwisePass());
  if (o.blockedLayouts)
    add(createPropagateLayoutsPass());
  PlanMemoryPassOptions memory;
  memory.scheduleFile = o.scheduleOutput;
  memory.memoryLimit = o.checkMemory ? double(o.memoryLimit) : -1;
  memory.recompute = o.recompute != "none";
  add(createPlanMemoryPass(memory));
  return passes;
}

void mlir::dpc::buildPipeline(OpPassManager &pm,
                              const PipelineOptions &options) {
  for (PipelinePass &pass : buildPipelinePasses(options))
    pm.addPass(std::move(pass.pass));
}

void mlir::dpc::registerPipeline() {
  PassPipelineRegistration<PipelineOptions>(
      "dpc-pipeline",
      "dpc compile's passes from the imported model to plan-memory",
      buildPipeline);
}
