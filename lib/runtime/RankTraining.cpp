//===- RankTraining.cpp - A training build's run --------------------------===//
//
// What a rank of a training build does once its executor stands (RankMain.cpp
// builds it), as the named phases of one TrainingRun:
//
// - loadData: the first stage reads the inputs and the last the labels, both
//   the same samples from the same spec and sampler (every rank in a
//   variable-length build, which plans each step from the samples' lengths);
//   the middle stages learn the dataset sizes from the first;
// - loadParameters: the compiler's initial weights, or every stage's
//   checkpoint merged by tensor name to resume (on any stage split);
// - prepare: the metrics writer, the first lines, the trace's origin, a
//   partial reduce's start, the slowdown monitor, --keep-best's record and
//   --adapt's trigger;
// - each step: trainStep runs it (planned or not) and gathers every rank's
//   times, recordStep writes its metrics record, reportStep prints its
//   progress, slowdowns and --adapt's decisions, and afterStep stops for a
//   re-partition or checkpoints (--checkpoint-every's files written by
//   CheckpointWriter while the next steps run) and evaluates;
// - finish: the last checkpoint, the end-of-training reports and
//   evaluation, the trace and op times.
//
//===----------------------------------------------------------------------===//

#include "CheckpointWriter.h"
#include "Evaluation.h"
#include "RankRun.h"

#include "dpc/runtime/Adapt.h"
#include "dpc/runtime/Error.h"
#include "dpc/runtime/Heartbeat.h"
#include "dpc/runtime/Interference.h"
#include "dpc/runtime/Loader.h"
#include "dpc/runtime/LrSchedule.h"
#include "dpc/runtime/Safetensors.h"
#include "dpc/runtime/StepPlanner.h"
#include "dpc/support/WriteFile.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sys/stat.h>
#include <thread>
#include <unistd.h>

namespace dpc::runtime::rank {

namespace {

/// One training step's outcome on this rank.
struct StepResult {
  double loss = 0;
  /// Every rank's compute and wait (on the reporting rank).
  std::vector<StepTimes> times;
  /// The step's plan, in a variable-length build.
  std::optional<StepPlanSummary> planned;
  /// Seconds since training started, at the step's end.
  double endS = 0;
};

class TrainingRun {
public:
  TrainingRun(const Options &opts, Communicator &comm, Executor &exec,
              const dpc::schedule::Schedule &schedule, std::string dir)
      : opts(opts), comm(comm), exec(exec), schedule(schedule),
        dir(std::move(dir)), m(exec.manifest()),
        microbatches(schedule.microbatches),
        samplesPerStep(microbatches * m.microbatchSize), rank(comm.rank()),
        firstReplica(schedule.replicaOf(rank) == 0),
        reports(m.isLastStage() && firstReplica),
        reporter(schedule.firstRankOf(schedule.numStages() - 1)),
        partial(schedule.reduce == dpc::schedule::ReduceMode::PartialReduce) {}

  int run();

private:
  void loadData();
  void loadParameters();
  void prepare();
  StepResult trainStep(int64_t step);
  void recordStep(int64_t step, const StepResult &result);
  void reportStep(int64_t step, const StepResult &result);
  void reportResumedLayout(int64_t step, const StepResult &result);
  std::optional<AdaptDecision> decideAdapt(int64_t step,
                                           const StepResult &result);
  /// False when the ranks stop after `step` for a re-partition.
  bool afterStep(int64_t step);
  void finish();
  /// Copies the stage's state after `stepsDone` steps into `into`; with
  /// `inBackground` (--checkpoint-every's) the file is written while the
  /// rank trains on.
  void saveCheckpointIn(const std::string &into, int64_t stepsDone,
                        bool inBackground = false);
  void evaluateAfter(int64_t stepsDone);

  const Options &opts;
  Communicator &comm;
  Executor &exec;
  const dpc::schedule::Schedule &schedule;
  const std::string dir;
  const RankManifest &m;
  const int64_t microbatches, samplesPerStep;
  const int rank;
  /// A replicated stage's ranks hold the same weights after every step: the
  /// first replica speaks for the stage (progress, metrics, checkpoints).
  const bool firstReplica, reports;
  /// Where every rank's compute and wait per step are gathered and the
  /// progress is printed.
  const int reporter;
  /// --reduce preduce: replica 0 runs every step's round; another replica
  /// may skip steps (exec.nextStep()) and sends its times with its gradient.
  const bool partial;

  std::optional<Dataset> train, test;
  /// Training and evaluation samples, as the first stage read them.
  std::vector<int64_t> sizes;
  int64_t firstStep = 0, totalSteps = 0, evalMicrobatches = 0;
  std::optional<StepPlanner> planner;
  std::optional<MetricsWriter> metrics;
  PartialReduceTally tally;
  double startMs = 0;
  std::vector<double> stepEnds; // seconds since startMs
  std::optional<ProgressMeter> meter;
  double lastPrint = -1;
  std::optional<SlowdownMonitor> monitor;
  std::optional<BestLoss> best;
  CheckpointWriter writer;
  std::optional<AdaptTrigger> trigger;
  // The step after which --adapt's trigger decided, and after which the
  // ranks stopped: once the launcher has the new layout ready (its file
  // exists), at the end of the step that sees it.
  int64_t decidedAfter = -1, stoppedAfter = -1;
  std::string readyPath;
  // A job that continues a re-partition reports its downtime: from the old
  // layout's stop to this layout's first step.
  std::optional<std::pair<int64_t, double>> resumed;
  double downtimeS = 0;
  // --interfere's process: the rank's cores get busy, the rank does not
  // change. It ends after its time or with the training.
  Interferer interferer;
};

void TrainingRun::loadData() {
  if (opts.isGiven("microbatching") && m.buckets.empty())
    throw UsageError{"--microbatching needs a variable-length build (dpc "
                     "compile --seq-buckets)"};
  ModelDataShape model = shareModelShape(comm, m);
  bool readsData = m.isFirstStage() || m.labelsShape.has_value();
  bool plansSteps = !m.buckets.empty();
  DataSpec trainSpec = parseDataSpec(opts.data);
  // Only the first stage gathers inputs (a planning middle stage reads the
  // lengths, which synthetic data does not have).
  bool readsInputs = m.isFirstStage() || plansSteps;
  if (readsData || plansSteps)
    train = loadDataset(trainSpec, Split::Train, model, uint64_t(opts.seed),
                        readsInputs);
  if (readsData && (opts.eval || opts.evalEvery > 0)) {
    DataSpec evalSpec =
        opts.evalData.empty() ? trainSpec : parseDataSpec(opts.evalData);
    test = loadDataset(evalSpec, Split::Test, model, uint64_t(opts.seed),
                       readsInputs);
  }
  // The middle stages learn the dataset sizes from the first stage; the last
  // stage checks that it read the same data.
  sizes = {train ? train->size() : 0, test ? test->size() : 0};
  std::vector<int64_t> mine = sizes;
  broadcastInts(comm, 0, sizes);
  if ((readsData || plansSteps) && mine[0] != sizes[0])
    throw Error("this stage read " + std::to_string(mine[0]) +
                " training samples but the first stage read " +
                std::to_string(sizes[0]) + " (give every rank the same data)");
  if (readsData && mine != sizes)
    throw Error("this stage read " + std::to_string(mine[0]) +
                " training and " + std::to_string(mine[1]) +
                " evaluation samples but the "
                "first stage read " +
                std::to_string(sizes[0]) + " and " + std::to_string(sizes[1]) +
                " (give every rank the same data)");
  int64_t stepsPerEpoch = sizes[0] / samplesPerStep;
  if (stepsPerEpoch == 0)
    throw Error(trainSpec.text + ": " + std::to_string(sizes[0]) +
                " samples do not fill one minibatch of " +
                std::to_string(samplesPerStep));
  totalSteps = opts.steps > 0 ? opts.steps : opts.epochs * stepsPerEpoch;
  evalMicrobatches = sizes[1] / m.microbatchSize;
  // Variable-length data in a bucketed build: each step is planned (the
  // same plan on every rank: the executor's sampler, the same lengths, the
  // same planner), so every rank's executor gets the training data.
  // Fixed-length data runs every microbatch in the top bucket.
  if (plansSteps && train->variableLength())
    planner.emplace(m, schedule, *parseMicrobatchingMode(opts.microbatching),
                    compiledMemoryLimit(dir));
  exec.setTrainData(readsData || planner ? &*train : nullptr, opts.shuffle,
                    uint64_t(opts.seed));
  // Decoded inputs (image folders) are read ahead on loader threads: a
  // step's worth of microbatches, at least two.
  int threads = opts.loaderThreads > 0
                    ? int(opts.loaderThreads)
                    : defaultLoaderThreads(computeThreadsOfProcess());
  int depth = int(std::max<int64_t>(microbatches, 2));
  if (m.isFirstStage() && exec.setLoader(threads, depth) && firstReplica)
    printLine("loader: " + std::to_string(threads) + " thread" +
              (threads == 1 ? "" : "s") + " decode " + trainSpec.text +
              " ahead of stage 0, up to " + std::to_string(depth) +
              " microbatches");
}

void TrainingRun::loadParameters() {
  // A checkpoint directory that cannot be written fails now, not at the end
  // of training.
  if (!opts.checkpointDir.empty())
    checkWritableDirectory(opts.checkpointDir, rank);
  if (!opts.resume) {
    if (!m.params.empty()) {
      std::string path = resolve(dir, m.weights);
      exec.loadParams(readSafetensors(path), path, /*optimizerState=*/false);
    }
    return;
  }
  // Every stage's file, merged by tensor name: a run may resume on another
  // stage split, stage count or replica layout than the one that wrote the
  // checkpoint. Metadata and messages are stage0's file's.
  std::string first = checkpointPath(opts.checkpointDir, 0);
  if (!fileExists(first) &&
      !fileExists(previousCheckpointPath(opts.checkpointDir, 0)))
    throw Error("--resume: no checkpoint " + first);
  std::string olderStep;
  TensorFile file =
      readCheckpoint(opts.checkpointDir, /*optimizerState=*/true, &olderStep);
  if (reports && !olderStep.empty())
    std::cerr << olderStep + "\n" << std::flush;
  exec.loadParams(file, first, /*optimizerState=*/true);
  firstStep = Executor::checkpointStep(file, first);
  std::vector<int64_t> step = {firstStep};
  broadcastInts(comm, 0, step);
  if (step[0] != firstStep)
    throw Error(first + ": read as step " + std::to_string(firstStep) +
                " here but as step " + std::to_string(step[0]) +
                " by rank 0 (was it rewritten meanwhile?)");
}

void TrainingRun::prepare() {
  if (reports && (!opts.metrics.empty() || !opts.tensorboard.empty()))
    metrics.emplace(opts.metrics, opts.resume, opts.tensorboard);
  std::string layout = dpc::schedule::kindName(schedule.kind);
  if (schedule.hasReplicas())
    layout = std::to_string(schedule.ranks) + " ranks, " + layout;
  if (schedule.shardOptimizer)
    layout += ", optimizer state sharded over replicas";
  if (reports)
    printLine("training " + std::to_string(totalSteps - firstStep) +
              " steps of " + std::to_string(microbatches) + " x " +
              std::to_string(m.microbatchSize) + " samples on " +
              std::to_string(m.stages) + " stages (" + layout + ")");
  if (reports && planner)
    printLine(lengthHistogram(*train) + "; microbatching " +
              opts.microbatching + " over " + std::to_string(m.buckets.size()) +
              " buckets");
  if (!opts.trace.empty())
    exec.enableTrace(traceOrigin(comm));
  // --adapt's end-of-step broadcast would count steps a replica skips.
  if (partial && opts.adapt)
    throw Error("--adapt cannot re-partition a build compiled with --reduce "
                "preduce");
  if (partial)
    exec.startPartialReduce(opts.reduceGraceMs, firstStep, totalSteps);
  startMs = Executor::nowMs();
  meter.emplace(totalSteps, samplesPerStep, 0.0);
  std::vector<std::vector<int64_t>> predicted = gatherInts(
      comm, reporter, {int64_t(std::llround(exec.predictedComputeMs() * 1e3))});
  if (reports) {
    std::vector<double> ms;
    for (const std::vector<int64_t> &v : predicted)
      ms.push_back(double(v[0]) / 1e3);
    monitor.emplace(std::move(ms), opts.slowThreshold);
  }
  if (reports && opts.keepBest)
    best.emplace(opts.checkpointDir + "/best", opts.resume);
  // --adapt: the last stage decides from the monitor's slowdowns and every
  // rank learns it at the end of the step, so that all stop together.
  if (reports && opts.adapt)
    trigger.emplace(opts.adaptThreshold, opts.adaptWindow, opts.adaptInterval,
                    firstStep);
  if (opts.adapt)
    readyPath = adaptReadyPath(opts.adaptRequest);
  if (!opts.adaptResumed.empty()) {
    long long n = 0;
    double stoppedAt = 0;
    char tail = 0;
    if (std::sscanf(opts.adaptResumed.c_str(), "%lld:%lf%c", &n, &stoppedAt,
                    &tail) != 2)
      throw UsageError{"--adapt-resumed expects N:SECONDS, not '" +
                       opts.adaptResumed + "'"};
    resumed.emplace(n, stoppedAt);
  }
}

StepResult TrainingRun::trainStep(int64_t step) {
  if (resumed && step == firstStep)
    downtimeS = epochSeconds() - resumed->second;
  if (rank == opts.delay.rank)
    exec.setForwardDelay(step + 1 >= opts.delay.fromStep ? opts.delay.ms : 0);
  if (rank == opts.interference.rank &&
      step + 1 == opts.interference.fromStep) {
    interferer.start(opts.interference.seconds);
    char line[160];
    std::snprintf(line, sizeof line,
                  "interference: a CPU-bound process runs on rank %d's "
                  "cores (%s) for %g s from step %lld",
                  rank, Interferer::cores().c_str(), opts.interference.seconds,
                  (long long)(step + 1));
    printLine(line);
  }
  StepResult result;
  if (planner) {
    std::vector<int64_t> samples, lengths;
    for (int64_t mb = 0; mb < microbatches; ++mb)
      for (int64_t i : exec.trainSampler()->microbatchIndices(step, mb)) {
        samples.push_back(i);
        lengths.push_back(train->sequenceLength(i));
      }
    setActivity("plans the microbatches of step " + std::to_string(step + 1));
    result.planned.emplace();
    StepPlan plan = planner->plan(samples, lengths, *result.planned);
    result.loss = exec.runStep(step, plan);
  } else {
    result.loss = exec.runStep(step);
  }
  if (!partial) {
    result.times = gatherStepTimes(comm, reporter, exec.stepTimes());
  } else if (firstReplica) {
    // Replica 0's own, with the round's wait; the others' as they sent them.
    result.times = exec.lastRound().times;
    result.times[0] = exec.stepTimes();
    tally.add(exec.lastRound());
  }
  // The last stage stops the job on a NaN or infinite loss (diverged
  // training, corrupt weights): nothing later can be trusted.
  if (reports && !std::isfinite(result.loss) && !opts.allowNonfiniteLoss)
    throw Error("step " + std::to_string(step + 1) + ": the loss is " +
                (std::isnan(result.loss) ? "NaN" : "infinite") +
                "; stopping (--allow-nonfinite-loss trains on)");
  result.endS = (Executor::nowMs() - startMs) / 1000;
  stepEnds.push_back(result.endS);
  return result;
}

/// Rounded to microseconds, as the metrics keep milliseconds.
static double toMicros(double ms) { return std::round(ms * 1e3) / 1e3; }

void TrainingRun::recordStep(int64_t step, const StepResult &result) {
  nlohmann::ordered_json compute = nlohmann::ordered_json::array(),
                         wait = nlohmann::ordered_json::array(),
                         load = nlohmann::ordered_json::array();
  for (const StepTimes &t : result.times) {
    compute.push_back(toMicros(t.computeMs));
    wait.push_back(toMicros(t.waitMs));
    load.push_back(toMicros(t.loadMs));
  }
  nlohmann::ordered_json record = {{"step", step + 1},
                                   {"loss", result.loss},
                                   {"samples", (step + 1) * samplesPerStep},
                                   {"time_s", result.endS},
                                   {"compute_ms", std::move(compute)},
                                   {"wait_ms", std::move(wait)},
                                   {"load_wait_ms", std::move(load)}};
  if (std::optional<double> lr = exec.learningRate())
    record["lr"] = *lr;
  if (opts.clipGradNorm > 0)
    record["grad_norm"] = exec.gradNorm();
  if (const std::optional<StepPlanSummary> &planned = result.planned) {
    nlohmann::ordered_json shapes = nlohmann::ordered_json::array();
    for (const StepPlanSummary::Microbatch &mb : planned->microbatches)
      shapes.push_back({mb.batch, mb.length, mb.samples, mb.tokens});
    record["tokens"] = planned->tokens;
    record["padded_tokens"] = planned->paddedTokens;
    record["microbatches"] = std::move(shapes);
    record["predicted_ms"] = toMicros(planned->predictedMs);
    record["plan_ms"] = toMicros(planned->planMs);
    record["step_ms"] = toMicros(exec.stepTimes().stepMs);
  }
  if (partial)
    record["reduced_steps"] = exec.lastRound().steps;
  metrics->write(std::move(record));
}

// The first step of a job that continues a re-partition: how long the
// layouts' switch took.
void TrainingRun::reportResumedLayout(int64_t step, const StepResult &result) {
  if (!resumed || step != firstStep)
    return;
  char line[256];
  std::snprintf(line, sizeof line,
                "adapt: re-partition %lld: the new layout's first step "
                "started %.2f s after the old one stopped at step %lld "
                "(checkpoint, launch, load) and took "
                "%.1f ms",
                (long long)resumed->first, downtimeS, (long long)firstStep,
                result.endS * 1000);
  printLine(line);
  if (metrics)
    metrics->write({{"adapt", resumed->first},
                    {"after_step", firstStep},
                    {"downtime_s", std::round(downtimeS * 1e3) / 1e3},
                    {"first_step_ms", toMicros(result.endS * 1000)}});
}

// --adapt on the last stage: the trigger's decision after this step, or the
// stop once the launcher has the new layout ready.
std::optional<AdaptDecision>
TrainingRun::decideAdapt(int64_t step, const StepResult &result) {
  std::optional<AdaptDecision> decision;
  std::vector<double> slowdowns;
  if (trigger && step + 1 < totalSteps) {
    if (monitor->isCalibrated())
      for (size_t r = 0; r < result.times.size(); ++r)
        slowdowns.push_back(monitor->slowdown(int(r)));
    decision = trigger->add(step + 1, slowdowns);
  }
  if (decision) {
    decidedAfter = step + 1;
    writeAdaptRequest(opts.adaptRequest, *decision, slowdowns, decidedAfter,
                      schedule.stageOf(decision->rank));
  } else if (decidedAfter > 0 && stoppedAfter < 0 && step + 1 < totalSteps &&
             ::access(readyPath.c_str(), F_OK) == 0) {
    stoppedAfter = step + 1;
    writeAdaptStop(adaptStopPath(opts.adaptRequest), stoppedAfter);
  }
  return decision;
}

/// A line when a rank's compute waited for its inputs over a tenth of the
/// step and at least a millisecond (the loader threads, or a synchronous
/// read, are the bottleneck). It is a warning about timing, so it goes to
/// stderr: the progress on stdout stays the same from run to run.
static std::string loadWaitLine(int64_t step, const StepResult &result) {
  int worst = -1;
  for (size_t r = 0; r < result.times.size(); ++r)
    if (worst < 0 || result.times[r].loadMs > result.times[worst].loadMs)
      worst = int(r);
  if (worst < 0)
    return "";
  const StepTimes &t = result.times[size_t(worst)];
  if (t.stepMs <= 0 || t.loadMs < 0.1 * t.stepMs || t.loadMs < 1.0)
    return "";
  char line[200];
  std::snprintf(line, sizeof line,
                "  step %lld: rank %d waited %.1f ms for data (%.0f%% of its "
                "step): the loader is the bottleneck (--loader-threads)",
                (long long)(step + 1), worst, t.loadMs,
                100 * t.loadMs / t.stepMs);
  return line;
}

void TrainingRun::reportStep(int64_t step, const StepResult &result) {
  if (metrics)
    recordStep(step, result);
  std::vector<double> compute;
  for (const StepTimes &t : result.times)
    compute.push_back(t.computeMs);
  if (partial)
    compute = tally.lastCompute;
  // The first step pays for warm-up; the monitor starts after it.
  if (step != firstStep)
    for (const SlowdownEvent &e : monitor->add(step + 1, compute))
      printLine(
          formatSlowdown(e, schedule.stageOf(e.rank), opts.slowThreshold));
  reportResumedLayout(step, result);
  std::optional<AdaptDecision> decision = decideAdapt(step, result);
  Progress progress = meter->update(step + 1, result.loss, result.endS);
  // Every step of a short run; about one line a second of a long one.
  bool last = step + 1 == totalSteps;
  if (totalSteps - firstStep <= 100 || step == firstStep || last ||
      result.endS - lastPrint >= 1.0) {
    printLine(formatProgress(progress));
    if (std::string line = loadWaitLine(step, result); !line.empty())
      std::cerr << line + "\n" << std::flush;
    if (result.planned)
      printLine("  step " + std::to_string(step + 1) + ": " +
                result.planned->describe());
    lastPrint = result.endS;
  }
  if (decision) {
    char line[256];
    std::snprintf(line, sizeof line,
                  "adapt: stage %d (rank %d) has computed over %gx its "
                  "share since step %lld (%.1fx now); training on while "
                  "the new layout compiles",
                  schedule.stageOf(decision->rank), decision->rank,
                  opts.adaptThreshold, (long long)decision->sinceStep,
                  decision->slowdown);
    printLine(line);
  }
  if (stoppedAfter == step + 1) {
    char line[160];
    std::snprintf(line, sizeof line,
                  "adapt: the new layout is ready; stopping after step "
                  "%lld to re-partition (decided after step %lld)",
                  (long long)stoppedAfter, (long long)decidedAfter);
    printLine(line);
  }
}

void TrainingRun::saveCheckpointIn(const std::string &into, int64_t stepsDone,
                                   bool inBackground) {
  // The previous write ends first, on every rank: its failure surfaces
  // here, no more than one copy of the state waits to be written, and no
  // stage's newest checkpoint is more than one ahead of another's, so that
  // the newest or the previous files of all stages share a step
  // (readCheckpoint) whenever the job dies.
  setActivity("writes a checkpoint after step " + std::to_string(stepsDone));
  writer.waitForWrite();
  if (inBackground)
    comm.barrier();
  // A sharded optimizer's replicas each hold a share of the state: all of
  // them gather it, the first writes it.
  if (!firstReplica) {
    if (exec.shardsOptimizer())
      exec.checkpoint(stepsDone);
    return;
  }
  ::mkdir(opts.checkpointDir.c_str(), 0777); // may exist already
  ::mkdir(into.c_str(), 0777);
  TensorFile file = exec.checkpoint(stepsDone);
  if (inBackground)
    writer.writeInBackground(checkpointPath(into, m.stage), std::move(file));
  else
    writeCheckpointFile(checkpointPath(into, m.stage), file);
}

// --eval-every: every rank evaluates together; with --keep-best the last
// stage says whether the loss is the lowest yet, and every stage then
// checkpoints into CHECKPOINT_DIR/best.
void TrainingRun::evaluateAfter(int64_t stepsDone) {
  setActivity("evaluates after step " + std::to_string(stepsDone));
  EvalReport report = evaluateAndReport(
      exec, test ? &*test : nullptr, evalMicrobatches, microbatches, reports,
      metrics ? &*metrics : nullptr, stepsDone, printLine);
  if (!opts.keepBest)
    return;
  std::vector<int64_t> better = {best && best->improves(report.loss)};
  broadcastInts(comm, reporter, better);
  if (!better[0])
    return;
  const std::string bestDir = opts.checkpointDir + "/best";
  saveCheckpointIn(bestDir, stepsDone);
  comm.barrier();
  if (best) {
    best->record(stepsDone, report.loss);
    printLine("kept in " + bestDir + ": the lowest validation loss yet");
  }
}

namespace {

/// --stop-on-signal: set when SIGUSR1 came (dpc run --elastic has a layout
/// for more devices ready).
volatile std::sig_atomic_t stopSignalSeen = 0;

extern "C" void onStopSignal(int) { stopSignalSeen = 1; }

/// Waits until SIGUSR1 has come, at most `seconds`.
void holdForStopSignal(double seconds) {
  setActivity("waits for SIGUSR1 (--test-hold-after)");
  auto until =
      std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (!stopSignalSeen && std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
}

} // namespace

bool TrainingRun::afterStep(int64_t step) {
  // --stop-on-signal: a signal seen by any rank stops every rank after
  // this step, with a checkpoint the next layout resumes from.
  if (opts.stopOnSignal) {
    // --test-hold-after R:S: every rank acts on the signal only after step
    // S + 1, so that the ranks stop there whenever it came.
    std::optional<TestExit> hold;
    if (opts.isGiven("test-hold-after"))
      hold = parseTestExit(opts.testHoldAfter);
    bool heeded = !hold || step + 1 > hold->afterStep;
    float seen = stopSignalSeen && heeded ? 1.0f : 0.0f;
    comm.allreduceSum(&seen, 1);
    if (seen > 0 && step + 1 < totalSteps) {
      stoppedAfter = step + 1;
      saveCheckpointIn(opts.checkpointDir, stoppedAfter);
      if (reports)
        printLine("elastic: stopping after step " +
                  std::to_string(stoppedAfter) +
                  " to re-plan onto more devices");
      return false;
    }
  }
  if (opts.adapt) {
    std::vector<int64_t> stop = {stoppedAfter};
    broadcastInts(comm, reporter, stop);
    if (stop[0] > 0) {
      stoppedAfter = stop[0];
      saveCheckpointIn(opts.checkpointDir, stoppedAfter);
      return false;
    }
  }
  if (!opts.checkpointDir.empty() && opts.checkpointEvery > 0 &&
      (step + 1) % opts.checkpointEvery == 0 && step + 1 < totalSteps)
    saveCheckpointIn(opts.checkpointDir, step + 1, /*inBackground=*/true);
  if (opts.isGiven("test-exit-after")) {
    std::optional<TestExit> exit = parseTestExit(opts.testExitAfter);
    if (exit && exit->rank == rank && exit->afterStep == step + 1)
      ::raise(SIGKILL);
  }
  if (opts.isGiven("test-hold-after")) {
    std::optional<TestExit> hold = parseTestExit(opts.testHoldAfter);
    if (hold && hold->rank == rank && hold->afterStep == step + 1)
      holdForStopSignal(120);
  }
  if (opts.evalEvery > 0 && (step + 1) % opts.evalEvery == 0 &&
      evalMicrobatches > 0)
    evaluateAfter(step + 1);
  return true;
}

void TrainingRun::finish() {
  // The last periodic checkpoint is complete before the job can end.
  writer.waitForWrite();
  if (!opts.checkpointDir.empty() && stoppedAfter < 0)
    saveCheckpointIn(opts.checkpointDir, totalSteps);
  if (partial)
    reportPartialReduce(comm, exec, tally, samplesPerStep, reports, metrics);
  if (reports && !opts.summary.empty())
    writeSummary(opts.summary, stepEnds, firstStep, schedule, samplesPerStep);
  if (totalSteps > firstStep)
    reportMemory(comm, exec, reports, metrics,
                 compiledPlan(dir).plannedPeakBytes);
  // A job stopped for a re-partition evaluates in its continuation.
  if (opts.eval && evalMicrobatches > 0 && stoppedAfter < 0) {
    setActivity("evaluates the test data");
    evaluateAndReport(exec, test ? &*test : nullptr, evalMicrobatches,
                      microbatches, reports, metrics ? &*metrics : nullptr,
                      std::nullopt, printLine);
  }
  if (!opts.trace.empty())
    writeTrace(exec, opts.trace, rank, comm.size());
  if (!opts.opTimes.empty()) {
    std::string file = dpc::support::perRankPath(opts.opTimes, rank);
    std::ofstream out(file);
    out << exec.profileJson();
    if (!out)
      throw Error(file + ": cannot write the op times");
  }
}

int TrainingRun::run() {
  if (opts.stopOnSignal) {
    if (partial)
      throw Error("--stop-on-signal (dpc run --elastic) cannot stop a build "
                  "compiled with --reduce preduce at a step boundary");
    struct sigaction action = {};
    action.sa_handler = onStopSignal;
    action.sa_flags = SA_RESTART;
    ::sigaction(SIGUSR1, &action, nullptr);
  }
  // The option's check parsed it already.
  LrSchedule lrSchedule = LrSchedule::parse(opts.lrSchedule);
  exec.setTrainingRecipe(lrSchedule, opts.clipGradNorm);
  loadData();
  loadParameters();
  prepare();
  for (int64_t step = firstStep; step < totalSteps; ++step) {
    StepResult result = trainStep(step);
    if (reports)
      reportStep(step, result);
    if (!afterStep(step))
      break;
    if (partial)
      step = exec.nextStep() - 1;
  }
  finish();
  // Nobody leaves while a peer may still wait for a message from it.
  setActivity("has finished and waits for the other ranks");
  comm.barrier();
  return 0;
}

} // namespace

int train(const Options &opts, Communicator &comm, Executor &exec,
          const dpc::schedule::Schedule &schedule, const std::string &dir) {
  return TrainingRun(opts, comm, exec, schedule, dir).run();
}

} // namespace dpc::runtime::rank
