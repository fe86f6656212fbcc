//===- ExecutorImpl.h - The executor's state, the ABI's context -*- C++ -*-===//
//
// Executor::Impl is the dpc_context the segments receive. It holds the
// executor's units (ParamStore, Transfers, StashStore, Scratch, OpProfile)
// and what a step needs to run the rank's program: the schedule, the
// shapes, the data, the running segment. Executor.cpp runs the program and
// evaluation; AbiEntryPoints.cpp defines the C ABI functions, which check
// their arguments against the manifest and the running segment and call the
// units. Private to lib/runtime (and the unit tests of the ABI).
//
//===----------------------------------------------------------------------===//

#ifndef DPC_LIB_RUNTIME_EXECUTORIMPL_H
#define DPC_LIB_RUNTIME_EXECUTORIMPL_H

#include "AbiError.h"
#include "Buffers.h"
#include "OpProfile.h"
#include "ParamStore.h"
#include "PartialReduce.h"
#include "Shapes.h"
#include "Transfers.h"

#include "dpc/runtime/Executor.h"
#include "dpc/runtime/Loader.h"

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

// The context handed to generated code is the executor's state.
struct dpc_context {};

namespace dpc::runtime {

/// The segment the generated code is in, for the ABI's checks and messages.
enum class Phase {
  Idle,
  Forward,
  Backward,
  BackwardInput,
  BackwardWeight,
  Optimizer
};

/// "Forward", "OptimizerStep", "outside any segment".
const char *phaseName(Phase p);

struct Executor::Impl : dpc_context {
  RankManifest manifest;
  /// The running step's schedule: schedule.json's (`fixedSched`), or the
  /// one planned for the step.
  schedule::Schedule sched;
  schedule::Schedule fixedSched;
  Communicator &comm;
  /// This process's rank in the job (the stage's rank, or one of its
  /// replicas' ranks).
  int rank;
  /// The ranks of this stage when it has replicas: the gradient all-reduce
  /// and the step's losses go over it.
  std::unique_ptr<Communicator> replicaComm;
  /// After connect(), the device's communicator when it has one (it takes
  /// device pointers, so nothing is staged), with its replica group for the
  /// gradient sum.
  std::unique_ptr<Communicator> deviceComm, replicaDeviceComm;
  /// Whether the verifier proved the schedule free of deadlock under
  /// rendezvous transfers, which an order-matched communicator needs.
  bool rendezvousProven = false;
  /// Why connect() did not take the device's first offer, for the log.
  std::string transportNote;
  SegmentFunctions segments;
  std::function<void(const std::string &)> fatalHandler;

  // Every buffer the generated code sees comes from `device`; `host` is the
  // staging memory for transfers and data when the device is not
  // host-accessible.
  std::unique_ptr<Device> ownedDevice;
  Device &device;
  std::unique_ptr<Device> host;
  /// Device memory in use (MemoryStats::peakBytes).
  MemoryMeter meter;
  BufferPool pool{device, &meter}, hostPool{*host};
  Scratch scratch{device, &meter};
  std::vector<uint8_t> upStaging, downStaging, labelStaging;
  /// This rank's share of a sharded optimizer (--shard-optimizer on a
  /// replicated stage): its replica and the stage's replicas, else 0 and 1.
  std::pair<int, int> optimizerShare() const {
    if (!sched.shardOptimizer || manifest.inference)
      return {0, 1};
    return {sched.replicaOf(rank), sched.replicasOf(sched.stageOf(rank))};
  }
  ParamStore params{manifest, device, pool, optimizerShare().first,
                    optimizerShare().second};
  Transfers transfers{device, pool, hostPool, comm};
  StashStore stashes{device, pool};
  OpProfile profile{manifest.profile};
  /// One entry per manifest bucket, or one for a fixed-shape build;
  /// evaluation and unplanned steps run in `topShapes`.
  std::vector<Shapes> shapes;
  size_t topShapes = 0;

  // Per-step state. A planned step (runStep with a StepPlan) gives each
  // microbatch its bucket and samples.
  bool planned = false;
  std::vector<int> mbBucket;
  std::vector<std::vector<int64_t>> mbSamples;
  struct Loaded {
    std::vector<Buffer> inputs; // one a manifest input, on the first stage
    Buffer labels;
  };
  std::map<std::pair<int, int>, Loaded> loaded; // mb, chunk
  std::vector<std::optional<double>> losses;

  // What the schedule promised, measured: microbatches whose forward ran and
  // whose backward has not finished, stash bytes, weight versions.
  std::map<std::pair<int, int>, bool> inFlight; // mb, chunk
  MemoryStats memory;
  /// This rank's peaks as the verifier computed them at start-up.
  schedule::RankStats promised;

  // Data.
  const Dataset *trainData = nullptr;
  std::unique_ptr<Sampler> trainSampler;
  /// Reads the training inputs ahead on threads of its own (setLoader):
  /// the microbatches of a step this rank loads inputs for, in order (all
  /// M, or a replica's share), microbatch k of step t being the loader's
  /// seq t * loaderMbs.size() + k.
  std::unique_ptr<InputLoader> loader;
  std::vector<int> loaderMbs;
  const Dataset *currentData = nullptr;
  Sampler *currentSampler = nullptr;
  int64_t currentStep = 0;
  uint64_t seed = 0; // the run's, for dropout's masks
  // A loss that ignores a label (manifest "ignore_index") is scaled by 1 /
  // the labels it counts: per microbatch of the step while training (the
  // step's total for synchronous schedules), the loaded microbatch's while
  // evaluating.
  std::vector<float> lossScales;
  float evalLossScale = 0;

  // The running segment.
  Phase phase = Phase::Idle;
  int currentMb = -1;
  int currentChunk = 0;
  bool evaluating = false;
  // Evaluation keeps every reported output (predictions).
  bool keepingOutputs = false;
  EvalResult eval;

  bool tracing = false;
  double traceOrigin = 0;
  std::vector<schedule::TimelineEvent> events;
  // The current (or last) training step's compute and wait (StepMonitor.h).
  StepTimes stepTimes;
  double forwardDelayMs = 0;
  double clipNorm = 0, gradNorm = 0;
  double stepStartMs = 0;
  /// --reduce preduce: the rounds, the last one replica 0 ran, where this
  /// rank goes on, and the step that ends the run.
  std::unique_ptr<PartialReduce> partialReduce;
  ReduceRound round;
  int64_t next = 0, endStep = 0;
  /// Training steps run so far: the first one's op times (oneDNN's
  /// primitive creation, cold caches) are left out once a second one runs.
  int64_t trainingStepsRun = 0;

  /// Without a device, everything lives in host memory. Checks nothing
  /// against the schedule (the Executor's constructor does).
  Impl(RankManifest m, schedule::Schedule s, Communicator &c,
       SegmentFunctions f, Device *d);

  //===--- Errors inside ABI calls ----------------------------------------===//

  /// Reports `message` of ABI function `function` with the running segment
  /// to the fatal handler, or throws it.
  [[noreturn]] void fatal(const std::string &function,
                          const std::string &message);
  /// Runs `body` for ABI function `function`: an AbiError it throws goes to
  /// fatal().
  template <typename Body>
  auto guarded(const char *function, Body body) -> decltype(body()) {
    try {
      return body();
    } catch (const AbiError &e) {
      fatal(function, e.what());
    }
  }
  /// Throws AbiError outside a segment.
  void requireSegment() const {
    if (phase == Phase::Idle)
      throw AbiError("called outside a segment function");
  }

  //===--- Shapes ---------------------------------------------------------===//

  /// The index into `shapes` (and the manifest's buckets) of microbatch mb
  /// of the running step, or of evaluation.
  size_t shapeIndex(int mb) const {
    if (!planned || evaluating || mb < 0)
      return topShapes;
    return size_t(mbBucket.at(size_t(mb)));
  }
  const Shapes &shapesOf(int mb) const { return shapes[shapeIndex(mb)]; }
  /// " 8x32" for a planned microbatch of a bucketed build, for span names.
  std::string shapeSuffix(int mb) const;

  //===--- Running instructions (Executor.cpp) ----------------------------===//

  int lastStage() const { return manifest.numVirtualStages() - 1; }
  /// Whether the chunk's stage reads inputs or labels.
  bool loadsData(int chunk) const;
  Boundary boundaryOf(const schedule::Instruction &i) const {
    return runtime::boundaryOf(i, manifest.virtualStage(i.chunk));
  }
  void trace(schedule::EventKind kind, std::string name, double start, int mb,
             int chunk = 0);
  void callSegment(Phase p, SegmentFn fn, int mb, int chunk);
  /// The backward of the microbatch's chunk is over: what it kept can go.
  void releaseMicrobatch(int mb, int chunk);
  void load(int mb, int chunk, int64_t step, int microbatch);
  void gatherLabels(const std::vector<int64_t> &indices, const Shapes &shape,
                    int64_t *out) const;
  int64_t countKept(const int64_t *labels, int64_t n) const;
  void countStepLabels(int64_t step);
  void sendStart(const schedule::Instruction &i, const std::string &at);
  void sendFinish(const schedule::Instruction &i, const std::string &at);
  void recvStart(const schedule::Instruction &i, const std::string &at);
  void recvFinish(const schedule::Instruction &i, const std::string &at);
  void run(int64_t step, size_t index, const schedule::Instruction &i);
  void allReduceGradients();
  /// A sharded optimizer's OptimizerStep: the replicas' updated shares to
  /// every replica.
  void gatherShardedWeights();
  /// --clip-grad-norm (TrainingRecipe.cpp): the job-wide norm into
  /// `gradNorm`, and the gradients scaled down to `clipNorm`.
  void clipGradients();
  /// --reduce preduce's AllReduce and OptimizerStep.
  void partialReduceGradients(int64_t step);
  void partialReduceWeights(int64_t step);
  void gatherLosses();
  double trainStep(int64_t step);
  /// dpc_report_output during evaluation: keeps the output (predictions)
  /// and scores it against the labels. Throws AbiError.
  void scoreOutput(const float *output);
};

} // namespace dpc::runtime

#endif // DPC_LIB_RUNTIME_EXECUTORIMPL_H
