//===- Pipeline.h - dpc compile's pass pipeline -----------------*- C++ -*-===//
//
// The passes `dpc compile` runs from the imported model to plan-memory, in
// order, with their options: one list that both the registered pipeline
// (`dpc-opt --dpc-pipeline='stages=2 ...'`) and dpc compile build their pass
// managers from, so that the two cannot drift apart. dpc compile runs the
// list one pass at a time to keep each pass's IR (out/mlir/NN-<name>.mlir);
// lowering each rank (lower-to-runtime) follows per stage and is not part of
// it.
//
//===----------------------------------------------------------------------===//

#ifndef DPC_PASSES_PIPELINE_H
#define DPC_PASSES_PIPELINE_H

#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassOptions.h"
#include "llvm/ADT/SmallVector.h"

#include <memory>
#include <string>

namespace mlir::dpc {

/// The options of `--dpc-pipeline`, named and defaulted as dpc compile's.
struct PipelineOptions : public PassPipelineOptions<PipelineOptions> {
  // How convolutions run (select-conv-algorithm, before the costs).
  Option<std::string> convAlgorithm{
      *this, "conv-algorithm",
      llvm::cl::desc("auto, winograd or direct (direct: the pass is left "
                     "out)"),
      llvm::cl::init("direct")};

  // Partitioning (partition-stages).
  Option<int64_t> stages{
      *this, "stages",
      llvm::cl::desc("Pipeline stages (at least 1 unless devices or cluster "
                     "let the planner pick)"),
      llvm::cl::init(0)};
  Option<int64_t> devices{
      *this, "devices",
      llvm::cl::desc("Devices the planner picks stages and replicas for"),
      llvm::cl::init(0)};
  Option<std::string> cluster{*this, "cluster",
                              llvm::cl::desc("Cluster description to plan on")};
  ListOption<int64_t> replicas{*this, "replicas",
                               llvm::cl::desc("Ranks of each stage")};
  ListOption<int64_t> fixedStages{
      *this, "fixed-stages",
      llvm::cl::desc("The stage of every forward op, instead of a plan")};
  Option<double> bandwidth{*this, "bandwidth",
                           llvm::cl::desc("Bytes/s between devices"),
                           llvm::cl::init(1e9)};
  Option<double> memoryLimit{
      *this, "memory-limit",
      llvm::cl::desc("Bytes per device the plan and the schedule must fit"),
      llvm::cl::init(0)};
  Option<std::string> profile{
      *this, "profile", llvm::cl::desc("Measured op costs from dpc profile")};
  Option<int64_t> profileBatch{
      *this, "profile-batch",
      llvm::cl::desc("apply-profile: the batch of this shape bucket")};
  Option<int64_t> profileLength{
      *this, "profile-length",
      llvm::cl::desc("apply-profile: the sequence length of this bucket")};
  Option<std::string> planOutput{*this, "plan-output",
                                 llvm::cl::desc("Write plan.json here")};
  Option<std::string> graphOutput{
      *this, "graph-output", llvm::cl::desc("Write the planner's graph here")};

  // The step (autodiff, recompute).
  Option<bool> inference{
      *this, "inference",
      llvm::cl::desc("Forward only: no autodiff (the module must carry "
                     "pipe.inference, as dpc compile --inference sets)"),
      llvm::cl::init(false)};
  Option<std::string> loss{*this, "loss", llvm::cl::desc("Loss kind"),
                           llvm::cl::init("softmax-cross-entropy")};
  Option<int64_t> classAxis{
      *this, "class-axis",
      llvm::cl::desc("The logits' class dimension (-1: the last)"),
      llvm::cl::init(-1)};
  Option<bool> hasIgnoreIndex{
      *this, "has-ignore-index",
      llvm::cl::desc("Leave out the positions labelled ignore-index"),
      llvm::cl::init(false)};
  Option<int64_t> ignoreIndex{*this, "ignore-index",
                              llvm::cl::desc("The label left out"),
                              llvm::cl::init(-100)};
  Option<std::string> optimizer{*this, "optimizer",
                                llvm::cl::desc("sgd, adam or adamw"),
                                llvm::cl::init("sgd")};
  Option<double> lr{*this, "lr", llvm::cl::desc("Learning rate"),
                    llvm::cl::init(0.01)};
  Option<double> momentum{*this, "momentum", llvm::cl::desc("SGD momentum"),
                          llvm::cl::init(0.0)};
  Option<double> beta1{*this, "beta1", llvm::cl::desc("Adam's beta1"),
                       llvm::cl::init(0.9)};
  Option<double> beta2{*this, "beta2", llvm::cl::desc("Adam's beta2"),
                       llvm::cl::init(0.999)};
  Option<double> eps{*this, "eps", llvm::cl::desc("Adam's epsilon"),
                     llvm::cl::init(1e-8)};
  Option<double> weightDecay{*this, "weight-decay",
                             llvm::cl::desc("Weight decay"),
                             llvm::cl::init(0.0)};
  Option<double> labelSmoothing{
      *this, "label-smoothing",
      llvm::cl::desc("softmax-cross-entropy's label smoothing"),
      llvm::cl::init(0.0)};
  Option<std::string> noDecay{
      *this, "no-decay",
      llvm::cl::desc("Glob patterns of parameters without weight decay"),
      llvm::cl::init("")};
  Option<std::string> recompute{
      *this, "recompute",
      llvm::cl::desc("none, all, or auto (the stages of recompute-stages)"),
      llvm::cl::init("none")};
  ListOption<int64_t> recomputeStages{
      *this, "recompute-stages",
      llvm::cl::desc("recompute=auto: the stages over the memory limit")};
  Option<bool> checkMemory{
      *this, "check-memory",
      llvm::cl::desc("Hold the ranks to memory-limit and their devices' "
                     "memory in verify-schedule and plan-memory (off: a "
                     "probe that only measures the peaks)"),
      llvm::cl::init(true)};

  // The schedule (build-schedule, verify-schedule, plan-memory).
  Option<std::string> schedule{*this, "schedule",
                               llvm::cl::desc("Pipeline schedule kind"),
                               llvm::cl::init("1f1b")};
  Option<int64_t> microbatches{*this, "microbatches",
                               llvm::cl::desc("Microbatches per minibatch"),
                               llvm::cl::init(4)};
  Option<int64_t> virtualStages{
      *this, "virtual-stages",
      llvm::cl::desc("Model chunks per rank (interleaved)"), llvm::cl::init(1)};
  Option<std::string> reduce{
      *this, "reduce",
      llvm::cl::desc("How replicas reduce: allreduce or preduce"),
      llvm::cl::init("allreduce")};
  Option<bool> shardOptimizer{
      *this, "shard-optimizer",
      llvm::cl::desc("Replicas split a replicated stage's optimizer state "
                     "(ZeRO stage 1)"),
      llvm::cl::init(false)};
  Option<bool> verticalSync{
      *this, "vertical-sync",
      llvm::cl::desc("PipeDream: stage 0's weight version everywhere"),
      llvm::cl::init(false)};
  Option<int64_t> cores{
      *this, "cores",
      llvm::cl::desc("Cores the ranks share on one machine (0: a core per "
                     "rank)"),
      llvm::cl::init(0)};
  Option<std::string> scheduleOutput{
      *this, "schedule-output",
      llvm::cl::desc("schedule.json, which build-schedule writes and the "
                     "passes after it read")};
  Option<std::string> traceOutput{
      *this, "trace-output",
      llvm::cl::desc("Write the simulated timeline here")};
  Option<bool> fusion{
      *this, "fusion",
      llvm::cl::desc("Fuse chains of elementwise ops (fuse-elementwise)"),
      llvm::cl::init(false)};
  Option<bool> blockedLayouts{
      *this, "blocked-layouts",
      llvm::cl::desc("Keep activations channel-blocked between convolutions "
                     "(propagate-layouts; CPU)"),
      llvm::cl::init(false)};
};

/// One pass of the pipeline and its name: its argument less "dpc-", as
/// dpc compile names the IR it keeps after it.
struct PipelinePass {
  std::string name;
  std::unique_ptr<Pass> pass;
};

/// The pipeline's passes for `options`, in order.
SmallVector<PipelinePass> buildPipelinePasses(const PipelineOptions &options);

/// Adds the pipeline's passes to `pm`.
void buildPipeline(OpPassManager &pm, const PipelineOptions &options);

/// Registers `--dpc-pipeline`.
void registerPipeline();

} // namespace mlir::dpc

#endif // DPC_PASSES_PIPELINE_H
