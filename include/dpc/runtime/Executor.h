//===- Executor.h - Interpreting a rank's instruction stream ----*- C++ -*-===//
//
// The executor runs one rank of a pipeline: per training step it walks the
// rank's program from schedule.json, loads microbatches, calls the generated
// segment functions, moves activations and gradients with non-blocking
// transfers and keeps what the segments stash. The segment functions reach it
// through the C ABI (Abi.h) with a dpc_context pointer, which is the
// executor's state.
//
// Every integer the generated code passes (parameter ids, transfer tags,
// stash keys) is checked against the manifest, and every buffer against the
// schedule's order, so a compiler bug is reported as an error naming the
// instruction and microbatch. Those errors arise inside calls from generated
// code, which has no unwind tables, so they go to a fatal handler instead of
// being thrown through it (the rank main aborts the job there).
//
//===----------------------------------------------------------------------===//

#ifndef DPC_RUNTIME_EXECUTOR_H
#define DPC_RUNTIME_EXECUTOR_H

#include "dpc/runtime/Abi.h"
#include "dpc/runtime/Communicator.h"
#include "dpc/runtime/Data.h"
#include "dpc/runtime/Device.h"
#include "dpc/runtime/Manifest.h"
#include "dpc/runtime/Safetensors.h"
#include "dpc/runtime/Sampler.h"
#include "dpc/runtime/StepMonitor.h"
#include "dpc/schedule/Schedule.h"
#include "dpc/schedule/Timeline.h"
#include "dpc/schedule/Verifier.h"

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace dpc::runtime {

class LrSchedule;

using SegmentFn = void (*)(dpc_context *);

/// The generated object's entry points.
struct SegmentFunctions {
  SegmentFn forward = nullptr;
  SegmentFn backward = nullptr;
  SegmentFn backwardInput = nullptr;
  SegmentFn backwardWeight = nullptr;
  SegmentFn optimizer = nullptr;
};

/// Message tags below this are the schedule's (unique per step); the executor
/// uses the ones above for evaluation and start-up messages.
constexpr int kFirstControlTag = schedule::kScheduleTagLimit;

struct EvalResult {
  int64_t correct = 0;
  int64_t samples = 0;
  /// Sum of the losses reported during evaluation (each scaled as in
  /// training, by 1 / (M * B)).
  double reportedLoss = 0;
  /// With float targets (--loss mse), on the last stage: the sum of the
  /// squared errors over `targets` elements; their mean is MSELoss's.
  double squaredError = 0;
  int64_t targets = 0;
  /// With keepOutputs, on the last stage: every microbatch's output, one
  /// after the other.
  std::vector<float> outputs;
};

/// How many rows of `scores` (rows x classes) have their first maximum, as
/// torch.argmax picks it, at the row's label.
int64_t countArgmaxHits(const float *scores, int64_t rows, int64_t classes,
                        const int64_t *labels);

/// Peaks measured over the steps run so far, to hold against what the
/// schedule's verifier promised for the rank (schedule::RankStats).
struct MemoryStats {
  /// Most microbatches between their Forward and the end of their backward
  /// (the verifier's peak number of live stashes).
  int peakStashes = 0;
  /// Most weight versions held at once, the live weights of every chunk
  /// included.
  int peakWeightVersions = 1;
  /// Most bytes in stash slots at once.
  int64_t peakStashBytes = 0;
  /// Most bytes of device memory in use at once: parameters with their
  /// gradients and optimizer state, stash slots, transfer and data buffers,
  /// and the running segment's scratch (what plan.json's
  /// planned_peak_bytes predicts).
  int64_t peakBytes = 0;
};

/// One microbatch of a step planned at run time (variable-length builds):
/// the manifest bucket it runs in and its samples, at most the bucket's
/// batch (the rest of the bucket's rows are padding).
struct PlannedMicrobatch {
  int bucket = 0;
  std::vector<int64_t> samples;
};

/// A training step whose microbatches and schedule were built for it: the
/// schedule's microbatch mb is `microbatches[mb]`. The schedule must have
/// the rank layout and kind of the one the executor was built with.
struct StepPlan {
  schedule::Schedule schedule;
  std::vector<PlannedMicrobatch> microbatches;
};

/// One round of a partial reduce (--reduce preduce, docs/RUNTIME.md), as
/// replica 0 ran it: per replica, the step whose gradient it applied (-1:
/// none; a step before `step` is a stale gradient) and that step's compute
/// and wait.
struct ReduceRound {
  int64_t step = 0;
  std::vector<int64_t> steps;
  std::vector<StepTimes> times;
  /// How many gradients the round took.
  int members() const;
};

class Executor {
public:
  /// Checks the schedule against the manifest: one stage per rank, the
  /// segments the program uses exist, every transfer the program makes has
  /// manifest entries and the other way round. Throws Error.
  ///
  /// Every buffer the segments see (parameters, gradients, data, transfers,
  /// stashes, dpc_alloc) is allocated from `device`, which must outlive the
  /// executor; transfers are staged through host memory when the device is
  /// not host-accessible. Without one the executor keeps everything in host
  /// memory (createHostDevice).
  Executor(RankManifest manifest, schedule::Schedule schedule,
           Communicator &comm, SegmentFunctions segments);
  Executor(RankManifest manifest, schedule::Schedule schedule,
           Communicator &comm, SegmentFunctions segments, Device &device);
  ~Executor();
  Executor(const Executor &) = delete;
  Executor &operator=(const Executor &) = delete;

  const RankManifest &manifest() const;
  /// For objects built for `dpc profile`: each profiled op's node, phase,
  /// number of calls and total milliseconds, as JSON.
  std::string profileJson() const;
  const schedule::Schedule &schedule() const;

  /// Called with the message of an error detected inside a C ABI call or
  /// by the device (Device::setErrorHandler); must not return. The default
  /// throws Error, which is right only when the caller of the ABI function
  /// can unwind (C++ test segments).
  void setFatalHandler(std::function<void(const std::string &)> handler);

  /// Collective over the job: asks the device for a communicator that moves
  /// its memory (Device::connect) and sends the schedule's transfers and the
  /// replicas' gradient sums through it from now on. Auto takes what the
  /// device offers, except that an order-matched communicator (NCCL) needs a
  /// schedule the verifier proved free of deadlock under rendezvous
  /// transfers; for any other, Auto asks for HostStaging instead and an
  /// explicit Nccl is an error. Without a call (or with Mpi, or on a device
  /// that has no communicator) transfers use the constructor's communicator,
  /// staged through host memory when the device is not host-accessible.
  void connect(Transport transport);
  /// For the run log: "mpi", "mpi, staged through host memory by the
  /// executor", "nccl", "host-staging (...)", with why connect() fell back.
  std::string transportDescription() const;

  /// Copies every manifest parameter from `file` (by name; F32, same shape).
  /// With `optimizerState`, also the optimizer state and update count that
  /// checkpoint() saved, refusing a checkpoint of another optimizer;
  /// otherwise the state starts at zero. `fileName` names the file in
  /// errors.
  void loadParams(const TensorFile &file, const std::string &fileName,
                  bool optimizerState);
  /// Parameters by name, optimizer state as "STATE.NAME" (STATE from
  /// optimizerStateNames), and the optimizer and its update count as
  /// metadata. With shardsOptimizer(), a collective over the stage's
  /// replicas: each of them calls it, and each gets the whole state.
  TensorFile checkpoint(int64_t stepsDone) const;
  /// Whether this rank keeps a share of its stage's optimizer state
  /// (schedule.json's "shard_optimizer" on a replicated stage).
  bool shardsOptimizer() const;
  /// The number of completed steps a checkpoint says it was written after.
  static int64_t checkpointStep(const TensorFile &file,
                                const std::string &fileName);
  std::vector<float> param(int64_t id) const;

  /// Training data of the first and last stage (others pass nullptr); the
  /// Dataset must outlive the executor. Every rank passes the run's seed,
  /// which also keys dropout's masks (dpc_random_key).
  void setTrainData(const Dataset *data, bool shuffle, uint64_t seed);
  /// The sampler setTrainData made (which samples each step trains on), or
  /// nullptr without training data.
  Sampler *trainSampler();
  /// The first stage of training data that decodes (image folders): reads
  /// the inputs of the next `depth` microbatches ahead on `threads` loader
  /// threads (Loader.h). Call after setTrainData; returns whether a loader
  /// was started (not on other stages or data).
  bool setLoader(int threads, int depth);

  /// Runs the program of this rank for global step `step`. Returns the step's
  /// loss on the last stage, 0 elsewhere: the sum of the reported microbatch
  /// losses (each scaled by 1 / (M B), so their sum is the minibatch mean),
  /// or for pipedream, whose every update trains on one microbatch and
  /// whose losses are scaled by 1 / B, their mean.
  ///
  /// PipeDream programs run with weight versions: each Forward and Backward
  /// reads the version its instruction names (the live weights, or a copy
  /// StashWeights made and RestoreWeights selected), and every
  /// OptimizerStep updates the live weights.
  double runStep(int64_t step);
  /// The same for a step planned at run time. The step's samples are the
  /// plan's, not the sampler's; with a loss that ignores a label, the scale
  /// is 1 / the labels the plan's samples keep.
  double runStep(int64_t step, const StepPlan &plan);

  /// Forward-only pass over `microbatches` microbatches of `data` (first and
  /// last stage; others pass nullptr): activations flow stage to stage, stash
  /// calls do nothing, and the last stage counts argmax hits of the reported
  /// output against the labels. With `keepOutputs` (predictions) the last
  /// stage also keeps every output, and a dataset that does not fill the
  /// last microbatch has it padded with its last sample.
  EvalResult evaluate(const Dataset *data, int64_t microbatches,
                      bool keepOutputs = false);

  /// The last training step's compute (the segments' Forward, Backward,
  /// BackwardInput, BackwardWeight) and wait (SendFinish, RecvFinish,
  /// AllReduce) times, and the whole step's.
  const StepTimes &stepTimes() const;
  /// What the schedule's stage costs predict for this rank's compute in
  /// the last step (the sum over its program; a planned step's microbatches
  /// cost their buckets' stage costs), 0 when the costs are all 0.
  double predictedComputeMs() const;
  /// For tests of the step monitor: sleep `ms` before every Forward of a
  /// training step, inside its compute time, as a slowed device would.
  void setForwardDelay(double ms);

  /// The training recipe of the rank options (TrainingRecipe.cpp): each
  /// update's learning rate by `schedule`, and the gradients clipped to a
  /// norm of `clipGradNorm` over the whole job before each update (0: not
  /// clipped). Throws InputError when the schedule cannot clip.
  void setTrainingRecipe(const LrSchedule &schedule, double clipGradNorm);
  /// The learning rate of the last update (none before any, or on a rank
  /// without parameters), and the gradients' norm before the last clip.
  std::optional<double> learningRate() const;
  double gradNorm() const;

  /// A schedule compiled with --reduce preduce: the stage's replicas
  /// reduce in rounds led by replica 0 (docs/RUNTIME.md) over the steps
  /// [firstStep, endStep); a round waits `graceMs` for gradients that are
  /// not due. Call before the first step; without it such a schedule's
  /// AllReduce is an error.
  void startPartialReduce(double graceMs, int64_t firstStep, int64_t endStep);
  /// The step this rank trains next: the one after the last, or for a
  /// replica that fell behind in a partial reduce, the one after the round
  /// its gradient went into.
  int64_t nextStep() const;
  /// Replica 0 of a partial reduce: the last round.
  const ReduceRound &lastRound() const;

  const MemoryStats &memoryStats() const;
  /// What the schedule's verifier promised for this rank (computed once, when
  /// the constructor verified the schedule).
  const schedule::RankStats &promisedMemory() const;

  /// Measured spans of every instruction from now on, in milliseconds since
  /// `originMs` on the steady clock (see nowMs).
  void enableTrace(double originMs);
  const std::vector<schedule::TimelineEvent> &traceEvents() const;
  static double nowMs();

  struct Impl;

private:
  Executor(RankManifest manifest, schedule::Schedule schedule,
           Communicator &comm, SegmentFunctions segments, Device *device);
  std::unique_ptr<Impl> impl;
};

/// Sends `values` from rank `root` to every other rank (same length
/// everywhere); used at start-up so that ranks learn what only the first or
/// last stage knows (input shape, class count, dataset sizes).
void broadcastInts(Communicator &comm, int root, std::vector<int64_t> &values);

/// Collects `values` (the same length everywhere) from every rank on rank
/// `root`, indexed by rank; other ranks get an empty result.
std::vector<std::vector<int64_t>>
gatherInts(Communicator &comm, int root, const std::vector<int64_t> &values);

} // namespace dpc::runtime

#endif // DPC_RUNTIME_EXECUTOR_H
