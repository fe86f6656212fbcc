//===- RankMain.cpp - The main of every rank executable -------------------===//
//
// A rank executable is the generated object of one stage linked with this
// file (library dpc_rank_main) and the runtime. This main reads the rank
// manifest the object carries, the schedule and weights next to the
// executable, loads the data this stage reads, and runs training steps,
// evaluation and checkpoints through the Executor. Errors anywhere abort the
// whole MPI job with "rank R: error: MESSAGE", so no peer is left waiting.
//
//===----------------------------------------------------------------------===//

#include "Evaluation.h"
#include "dpc/planner/PlanJson.h"

#include "dpc/runtime/Abi.h"
#include "dpc/runtime/Adapt.h"
#include "dpc/runtime/Data.h"
#include "dpc/runtime/Device.h"
#include "dpc/runtime/Error.h"
#include "dpc/runtime/Executor.h"
#include "dpc/runtime/Heartbeat.h"
#include "dpc/runtime/Interference.h"
#include "dpc/runtime/LrSchedule.h"
#include "dpc/runtime/Manifest.h"
#include "dpc/runtime/Metrics.h"
#include "dpc/runtime/MpiCommunicator.h"
#include "dpc/runtime/RankOptions.h"
#include "dpc/runtime/Safetensors.h"
#include "dpc/runtime/StepMonitor.h"
#include "dpc/runtime/StepPlanner.h"
#include "dpc/schedule/Timeline.h"
#include "dpc/support/CommandLine.h"
#include "dpc/support/WriteFile.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <numeric>
#include <optional>
#include <string>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

using namespace dpc::runtime;
namespace cli = dpc::cli;

namespace {

/// The rank options (runtime/RankOptions.h, the one table of them) and
/// what follows from them.
struct Options : RankOptions {
  ForwardDelay delay;
  Interference interference;
};

/// Thrown for a bad command line: every rank sees the same arguments, so
/// every rank fails the same way, with the usage exit code.
struct UsageError {
  std::string message;
};

std::string executablePath() {
  std::vector<char> buffer(4096);
  ssize_t n = ::readlink("/proc/self/exe", buffer.data(), buffer.size() - 1);
  if (n <= 0)
    throw Error("cannot read /proc/self/exe to find the executable's "
                "directory");
  return std::string(buffer.data(), size_t(n));
}

std::string directoryOf(const std::string &path) {
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? "." : path.substr(0, slash);
}

std::string resolve(const std::string &dir, const std::string &path) {
  return !path.empty() && path[0] == '/' ? path : dir + "/" + path;
}

bool fileExists(const std::string &path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

// What the build's plan.json says (nothing without one).
dpc::planner::PlanSummary compiledPlan(const std::string &dir) {
  std::string path = resolve(dir, "plan.json");
  if (!fileExists(path))
    return {};
  std::string text;
  dpc::planner::Expected<dpc::planner::PlanSummary> plan =
      dpc::planner::loadPlanSummary(path, text);
  if (!plan)
    throw Error(plan.error());
  return *plan;
}

// The per-rank memory limit the build was compiled under (plan.json's
// "memory_limit_bytes"), which bounds every planned step; 0 for none.
double compiledMemoryLimit(const std::string &dir) {
  return compiledPlan(dir).memoryLimitBytes.value_or(0);
}

// Creates `dir` when missing (not its parents) and checks that this rank
// can write a file in it, so that an unusable --checkpoint-dir fails at
// start-up, naming the directory and the reason.
void checkWritableDirectory(const std::string &dir, int rank) {
  auto problem = [&](const std::string &what) {
    return UsageError{"--checkpoint-dir " + dir + ": " + what};
  };
  if (::mkdir(dir.c_str(), 0777) != 0 && errno != EEXIST)
    throw problem(std::string("cannot create it: ") + std::strerror(errno));
  struct stat info;
  if (::stat(dir.c_str(), &info) != 0 || !S_ISDIR(info.st_mode))
    throw problem("not a directory");
  std::string probe = dir + "/.dpc-write-test.rank" + std::to_string(rank);
  std::FILE *file = std::fopen(probe.c_str(), "w");
  if (!file)
    throw problem(std::string("cannot write there: ") + std::strerror(errno));
  std::fclose(file);
  std::remove(probe.c_str());
}

Options parseOptions(int argc, char **argv, bool &help) {
  Options o;
  cli::ArgParser parser(
      "rank", "one rank of a dpc pipeline (launch all ranks with 'dpc run')",
      "mpirun --app OUT/appfile [options], or: dpc run OUT [options]");
  addRankOptions(parser, o, RankOptionSet::All);
  std::vector<std::string> args(argv + 1, argv + argc);
  switch (parser.parse(args)) {
  case cli::ArgParser::Result::Help:
    help = true;
    std::printf("%s", parser.help().c_str());
    return o;
  case cli::ArgParser::Result::Error:
    throw UsageError{parser.error()};
  case cli::ArgParser::Result::Ok:
    break;
  }
  if (std::string problem = finishRankOptions(parser, o, RankOptionSet::All);
      !problem.empty())
    throw UsageError{problem};
  // The checks that need the runtime's names.
  if (!parseTransport(o.transport))
    throw UsageError{"--transport expects auto, nccl, host-staging or mpi, "
                     "not '" +
                     o.transport + "'"};
  if (!parseMicrobatchingMode(o.microbatching))
    throw UsageError{"--microbatching expects dp, padded or sorted, not '" +
                     o.microbatching + "'"};
  if (o.isGiven("test-forward-delay"))
    o.delay = *parseForwardDelay(o.testForwardDelay);
  if (o.isGiven("interfere"))
    o.interference = *parseInterference(o.interfere);
  if (o.adapt && o.adaptRequest.empty())
    throw UsageError{"--adapt needs 'dpc run', which re-plans and relaunches "
                     "the ranks"};
  if (o.adapt && o.checkpointDir.empty())
    throw UsageError{"--adapt needs --checkpoint-dir for the checkpoint it "
                     "resumes from ('dpc run' gives one)"};
  if (o.epochs == 0 && o.steps == 0)
    o.epochs = 1;
  return o;
}

int64_t product(const std::vector<int64_t> &v, size_t from = 0) {
  int64_t n = 1;
  for (size_t k = from; k < v.size(); ++k)
    n *= v[k];
  return n;
}

/// Every rank gets what only the first stage (the input's sample shape) and
/// the last stage (the class count) know, so that both data-reading stages
/// build the same dataset even from synthetic specs.
ModelDataShape shareModelShape(Communicator &comm, const RankManifest &m) {
  constexpr size_t kMaxRank = 8;
  // The first stage's input: rank, dimensions, and whether it holds ids.
  std::vector<int64_t> shape(kMaxRank + 2, 0);
  if (m.isFirstStage()) {
    const std::vector<int64_t> &in = m.inputs[0].shape;
    if (in.size() - 1 > kMaxRank)
      throw Error("the model's input has rank " + std::to_string(in.size()) +
                  "; the runtime handles up to " +
                  std::to_string(kMaxRank + 1));
    shape[0] = int64_t(in.size()) - 1;
    for (size_t k = 1; k < in.size(); ++k)
      shape[k] = in[k];
    shape[kMaxRank + 1] = m.inputs[0].integer;
  }
  broadcastInts(comm, 0, shape);
  // The last stage's classes and the shape of a sample's labels: a class
  // per row of the output, whose last dimension is the class dimension
  // when the labels have positions.
  // Then whether the loss ignores a label, and which, and whether the labels
  // are float targets (--loss mse).
  std::vector<int64_t> labels(kMaxRank + 5, 0);
  if (m.isLastStage() && m.ignoreIndex) {
    labels[kMaxRank + 2] = 1;
    labels[kMaxRank + 3] = *m.ignoreIndex;
  }
  if (m.isLastStage())
    labels[kMaxRank + 4] = m.floatLabels;
  if (m.isLastStage() && m.outputShape) {
    const std::vector<int64_t> &out = *m.outputShape;
    size_t labelRank = m.labelsShape ? m.labelsShape->size() : 1;
    labels[0] = labelRank > 1 ? out.back() : product(out, 1);
    labels[1] = int64_t(labelRank) - 1;
    for (size_t k = 1; k < labelRank && k <= kMaxRank; ++k)
      labels[k + 1] = (*m.labelsShape)[k];
  }
  broadcastInts(comm, comm.size() - 1, labels);
  ModelDataShape model;
  model.sampleShape.assign(shape.begin() + 1, shape.begin() + 1 + shape[0]);
  model.integerInputs = shape[kMaxRank + 1] != 0;
  model.numClasses = labels[0];
  model.labelShape.assign(labels.begin() + 2, labels.begin() + 2 + labels[1]);
  if (labels[kMaxRank + 2])
    model.ignoreIndex = labels[kMaxRank + 3];
  model.floatLabels = labels[kMaxRank + 4] != 0;
  return model;
}

void printLine(const std::string &line) {
  // Whole lines: mpirun forwards output line by line.
  std::fprintf(stdout, "%s\n", line.c_str());
  std::fflush(stdout);
}

void writeTrace(const Executor &exec, const std::string &path, int rank,
                int ranks) {
  dpc::schedule::Timeline timeline;
  timeline.ranks = ranks;
  timeline.events = exec.traceEvents();
  std::string file = dpc::support::perRankPath(path, rank);
  std::ofstream out(file);
  out << dpc::schedule::toChromeTrace(timeline);
  if (!out)
    throw Error(file + ": cannot write the trace");
}

/// Identifies the running kernel: ranks with the same boot id read the same
/// steady clock. 0 when unknown.
int64_t bootId() {
  std::ifstream in("/proc/sys/kernel/random/boot_id");
  std::string id;
  if (!(in >> id))
    return 0;
  return int64_t(std::hash<std::string>()(id) | 1);
}

/// Replica 0's tally of a partial reduce's rounds (--reduce preduce).
struct PartialReduceTally {
  int64_t rounds = 0;
  /// Per replica: gradients the rounds took, and how many of them late.
  std::vector<int64_t> taken, late;
  /// Replica shares of a minibatch the rounds trained on.
  int64_t shares = 0;
  /// Per replica: the compute of its last step a round took, for the step
  /// monitor, which a round without the replica would otherwise feed 0.
  std::vector<double> lastCompute;

  void add(const ReduceRound &round) {
    taken.resize(round.steps.size());
    late.resize(round.steps.size());
    lastCompute.resize(round.steps.size());
    ++rounds;
    for (size_t j = 0; j < round.steps.size(); ++j)
      if (round.steps[j] >= 0) {
        ++taken[j];
        late[j] += round.steps[j] < round.step;
        ++shares;
        lastCompute[j] = round.times[j].computeMs;
      }
  }
};

/// FNV-1a over the bytes of every parameter of the rank.
uint64_t weightsDigest(const Executor &exec) {
  uint64_t hash = 1469598103934665603ull;
  for (const ManifestParam &p : exec.manifest().params)
    for (float v : exec.param(p.id)) {
      unsigned char bytes[sizeof v];
      std::memcpy(bytes, &v, sizeof v);
      for (unsigned char b : bytes)
        hash = (hash ^ b) * 1099511628211ull;
    }
  return hash;
}

/// The end of a partial reduce: every replica must hold replica 0's
/// weights (the last round took every replica's gradient and sent them all
/// the same weights); replica 0 prints what the rounds took.
void reportPartialReduce(Communicator &comm, const Executor &exec,
                         const PartialReduceTally &tally,
                         int64_t samplesPerStep, bool reports,
                         std::optional<MetricsWriter> &metrics) {
  std::vector<std::vector<int64_t>> all =
      gatherInts(comm, 0, {int64_t(weightsDigest(exec))});
  if (comm.rank() != 0)
    return;
  for (size_t j = 1; j < all.size(); ++j)
    if (all[j][0] != all[0][0])
      throw Error("partial reduce: replica " + std::to_string(j) +
                  " ends with other weights than replica 0");
  int replicas = int(all.size());
  double trained =
      double(tally.shares) / double(replicas) * double(samplesPerStep);
  std::string line =
      "partial reduce: " + std::to_string(tally.rounds) + " rounds";
  for (int j = 1; j < replicas && j < int(tally.taken.size()); ++j)
    line += "; replica " + std::to_string(j) + "'s gradient in " +
            std::to_string(tally.taken[j]) + " (" +
            std::to_string(tally.late[j]) + " one step late)";
  char tail[160];
  std::snprintf(tail, sizeof tail,
                "; %.0f samples trained (%.1f%% of the steps' minibatches); "
                "every replica ends with replica 0's weights",
                trained,
                100.0 * double(tally.shares) /
                    double(std::max<int64_t>(1, tally.rounds * replicas)));
  printLine(line + tail);
  if (reports && metrics)
    metrics->write({{"preduce_rounds", tally.rounds},
                    {"preduce_taken", tally.taken},
                    {"preduce_late", tally.late},
                    {"trained_samples", trained}});
}

/// The steady-clock time every rank's trace counts from, so that `dpc run`
/// can lay the ranks' traces side by side. All ranks leave a barrier
/// together, to within the barrier's polling, which on a loaded machine can
/// take milliseconds; the ranks that share rank 0's kernel, and so its
/// steady clock, then take rank 0's origin exactly.
double traceOrigin(Communicator &comm) {
  comm.barrier();
  double now = Executor::nowMs();
  int64_t mine = bootId();
  std::vector<int64_t> rank0 = {mine, int64_t(now * 1e6)}; // nanoseconds
  broadcastInts(comm, 0, rank0);
  return mine != 0 && rank0[0] == mine ? double(rank0[1]) / 1e6 : now;
}

/// What `dpc run` compares with the prediction: each step's wall time on
/// the last stage, from the end of the step before (or the start of
/// training) to its own end.
void writeSummary(const std::string &path, const std::vector<double> &stepEnds,
                  int64_t firstStep, const dpc::schedule::Schedule &schedule,
                  int64_t samplesPerStep) {
  nlohmann::ordered_json summary;
  summary["schedule"] = dpc::schedule::kindName(schedule.kind);
  summary["first_step"] = firstStep + 1;
  summary["samples_per_step"] = samplesPerStep;
  std::vector<double> stepMs;
  for (size_t k = 0; k < stepEnds.size(); ++k)
    stepMs.push_back((stepEnds[k] - (k ? stepEnds[k - 1] : 0)) * 1000);
  summary["step_ms"] = stepMs;
  std::string error;
  if (!dpc::support::writeAtomically(path, summary.dump() + "\n", error))
    throw Error(error);
}

double epochSeconds() {
  return std::chrono::duration<double>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

/// What the last stage tells `dpc run --adapt` when its trigger decides
/// (docs/RUNTIME.md): after which step, for which rank, and every rank's
/// slowdown against the calibrated plan. The ranks train on while the
/// launcher compiles the new layout.
void writeAdaptRequest(const std::string &path, const AdaptDecision &decision,
                       const std::vector<double> &slowdowns,
                       int64_t decidedAfter, int stage) {
  nlohmann::ordered_json request = {{"decided_after", decidedAfter},
                                    {"rank", decision.rank},
                                    {"stage", stage},
                                    {"slowdown", decision.slowdown},
                                    {"since_step", decision.sinceStep},
                                    {"slowdowns", slowdowns}};
  std::string error;
  if (!dpc::support::writeAtomically(path, request.dump() + "\n", error))
    throw Error(error);
}

/// And when the ranks stop for it: after which step, and when (the start of
/// the downtime).
void writeAdaptStop(const std::string &path, int64_t stoppedAfter) {
  nlohmann::ordered_json stop = {{"stopped_after", stoppedAfter},
                                 {"stopped_at_s", epochSeconds()}};
  std::string error;
  if (!dpc::support::writeAtomically(path, stop.dump() + "\n", error))
    throw Error(error);
}

/// Every rank's measured peaks against what the schedule's verifier promised
/// for it, gathered on the last stage: a metrics record per rank and one
/// line. The two must agree; a difference is printed as such. The line ends
/// with each rank's peak device memory in use beside plan-memory's
/// prediction (`predictedPeaks`, per rank; empty without plan.json).
void reportMemory(Communicator &comm, const Executor &exec, bool reports,
                  std::optional<MetricsWriter> &metrics,
                  const std::vector<int64_t> &predictedPeaks) {
  const dpc::schedule::RankStats &promised = exec.promisedMemory();
  const MemoryStats &measured = exec.memoryStats();
  // Gathered where the report is printed: the last stage's first replica.
  const dpc::schedule::Schedule &sched = exec.schedule();
  std::vector<std::vector<int64_t>> all =
      gatherInts(comm, sched.firstRankOf(sched.numStages() - 1),
                 {measured.peakStashes, promised.peakStashes,
                  measured.peakWeightVersions, promised.peakWeightVersions,
                  measured.peakStashBytes, measured.peakBytes});
  if (!reports)
    return;
  std::string stashes, versions;
  bool asPromised = true;
  bool versioned =
      exec.schedule().kind == dpc::schedule::ScheduleKind::PipeDream;
  for (size_t rank = 0; rank < all.size(); ++rank) {
    const std::vector<int64_t> &v = all[rank];
    stashes += " " + std::to_string(v[0]);
    versions += " " + std::to_string(v[2]);
    asPromised &= v[0] == v[1] && v[2] == v[3];
    if (metrics)
      metrics->write(
          {{"rank", rank},
           {"peak_stashes", v[0]},
           {"promised_stashes", v[1]},
           {"peak_weight_versions", v[2]},
           {"promised_weight_versions", v[3]},
           {"peak_stash_bytes", v[4]},
           {"peak_bytes", v[5]},
           {"predicted_peak_bytes",
            rank < predictedPeaks.size() ? predictedPeaks[rank] : 0}});
  }
  // Device memory in use at its peak against plan-memory's prediction, at
  // the end of the line.
  std::string peaks = "; peak memory per rank (measured/predicted):";
  for (size_t rank = 0; rank < all.size(); ++rank) {
    char text[96];
    double measuredMiB = double(all[rank][5]) / (1 << 20);
    if (rank < predictedPeaks.size() && predictedPeaks[rank] > 0)
      std::snprintf(text, sizeof text, " %.2f/%.2f MiB (%+.1f%%)", measuredMiB,
                    double(predictedPeaks[rank]) / (1 << 20),
                    100.0 * (double(all[rank][5]) / predictedPeaks[rank] - 1));
    else
      std::snprintf(text, sizeof text, " %.2f MiB", measuredMiB);
    peaks += text;
  }
  std::string line = "peak stashed microbatches per rank:" + stashes;
  if (versioned)
    line += "; weight versions:" + versions;
  if (asPromised) {
    printLine(line + " (as the schedule promised)" + peaks);
    return;
  }
  std::string promisedText;
  for (const std::vector<int64_t> &v : all)
    promisedText += " " + std::to_string(v[1]) + "/" + std::to_string(v[3]);
  printLine(line + " (the schedule promised stashes/versions" + promisedText +
            ")" + peaks);
}

/// The outputs of an inference build for `samples` samples, as kept by
/// Executor::evaluate over `microbatches` microbatches, written as .npy: a
/// batch-major output loses the rows that padded the last microbatch.
void writePredictions(const std::string &path, const RankManifest &m,
                      const std::vector<float> &outputs, int64_t samples,
                      int64_t microbatches) {
  std::vector<int64_t> shape = *m.outputShape;
  int64_t perMicrobatch = product(shape);
  if (int64_t(outputs.size()) != perMicrobatch * microbatches)
    throw Error("predictions: expected " +
                std::to_string(perMicrobatch * microbatches) +
                " output values, the last stage kept " +
                std::to_string(outputs.size()));
  int64_t rows = shape[0] * microbatches;
  if (shape[0] == m.microbatchSize)
    rows = samples;
  else if (samples % m.microbatchSize != 0)
    throw Error("the model's output (first dimension " +
                std::to_string(shape[0]) + ") is not batch-major, so the " +
                std::to_string(samples) +
                " samples must fill whole "
                "microbatches of " +
                std::to_string(m.microbatchSize));
  shape[0] = rows;
  size_t bytes = size_t(rows * product(shape, 1)) * sizeof(float);
  writeNpyFile(path, "<f4", shape, outputs.data(), bytes);
}

/// An inference build's run: the forward pass over every sample of --data,
/// pipelined microbatch after microbatch; the last stage writes the outputs
/// and, when the data has labels and the output is a batch of class scores,
/// the accuracy.
int predict(const Options &opts, Communicator &comm, Executor &exec,
            const std::string &dir) {
  const RankManifest &m = exec.manifest();
  if (std::string training = givenTrainingOption(opts); !training.empty())
    throw UsageError{"--" + training +
                     " applies to training, and this is an inference build "
                     "(dpc compile --inference)"};
  ModelDataShape model = shareModelShape(comm, m);
  DataSpec spec = parseDataSpec(opts.data);
  // The last stage reads the data too when it has labels to score against.
  std::optional<Dataset> data;
  if (m.isFirstStage() || m.isLastStage())
    data = loadDataset(spec, Split::Test, model, uint64_t(opts.seed));
  std::vector<int64_t> sizes = {data ? data->size() : 0};
  std::vector<int64_t> mine = sizes;
  broadcastInts(comm, 0, sizes);
  if (data && mine != sizes)
    throw Error("this stage read " + std::to_string(mine[0]) +
                " samples but the first stage read " +
                std::to_string(sizes[0]) + " (give every rank the same data)");
  const int64_t samples = sizes[0];
  bool scored = m.isLastStage() && data->hasLabels() && m.outputShape &&
                m.outputShape->size() == 2 &&
                (*m.outputShape)[0] == m.microbatchSize;
  if (m.isLastStage() && opts.predictions.empty() && !scored)
    throw UsageError{"an inference run over unlabelled data has nothing to "
                     "report: give --predictions FILE.npy"};
  // The compiler's weights, or trained ones: every stage's checkpoint of a
  // training run, whatever its stage split was.
  if (!opts.checkpointDir.empty()) {
    exec.loadParams(
        readCheckpoint(opts.checkpointDir, /*optimizerState=*/false),
        opts.checkpointDir, /*optimizerState=*/false);
  } else if (!m.params.empty()) {
    std::string path = resolve(dir, m.weights);
    exec.loadParams(readSafetensors(path), path, /*optimizerState=*/false);
  }

  int64_t microbatches = (samples + m.microbatchSize - 1) / m.microbatchSize;
  if (m.isLastStage())
    printLine("predicting " + std::to_string(samples) + " samples in " +
              std::to_string(microbatches) + " microbatches of " +
              std::to_string(m.microbatchSize) + " on " +
              std::to_string(m.stages) + " stages");
  EvalResult result = exec.evaluate(data ? &*data : nullptr, microbatches,
                                    /*keepOutputs=*/true);
  if (m.isLastStage()) {
    if (!opts.predictions.empty()) {
      writePredictions(opts.predictions, m, result.outputs, samples,
                       microbatches);
      printLine("wrote " + opts.predictions);
    }
    if (scored) {
      std::vector<int64_t> indices(static_cast<size_t>(samples)),
          labels(static_cast<size_t>(samples));
      std::iota(indices.begin(), indices.end(), int64_t(0));
      data->gatherLabels(indices, labels.data());
      int64_t correct = countArgmaxHits(result.outputs.data(), samples,
                                        (*m.outputShape)[1], labels.data());
      char line[128];
      std::snprintf(line, sizeof line, "accuracy %.4f (%lld/%lld)",
                    double(correct) / double(samples), (long long)correct,
                    (long long)samples);
      printLine(line);
    }
  }
  comm.barrier();
  return 0;
}

int runRank(int argc, char **argv, Communicator &comm) {
  bool help = false;
  Options opts = parseOptions(argc, argv, help);
  if (help)
    return 0;
  // A rank waiting on a message sleeps in steps of microseconds; the
  // default 50 us timer slack would lengthen each of them fivefold.
  ::prctl(PR_SET_TIMERSLACK, 1000UL, 0, 0, 0);
  // Before the executor: the communicators it makes take this timeout.
  if (opts.timeoutSeconds > 0)
    comm.setTimeout(std::chrono::milliseconds(
        std::max<int64_t>(1, int64_t(opts.timeoutSeconds * 1000))));
  std::optional<Heartbeat> heartbeat;
  if (opts.heartbeat)
    heartbeat.emplace(std::chrono::seconds(1));

  // The target's memory (the kernel library linked in defines it); a CUDA
  // rank without a usable GPU stops here, before any data is read.
  std::unique_ptr<Device> device = createTargetDevice();

  std::string exe = executablePath();
  std::string dir = directoryOf(exe);
  RankManifest manifest = parseManifest(dpc_rank_manifest, exe);
  std::string schedulePath = resolve(dir, manifest.schedule);
  dpc::schedule::Schedule schedule;
  std::string error = dpc::schedule::readScheduleFile(schedulePath, schedule);
  if (!error.empty())
    throw Error(error); // names the file already
  manifest.schedule = schedulePath;
  // A bf16 build on a CPU without native bf16 still runs, in f32 (oneDNN
  // would emulate bf16 slower than f32 or have no kernel at all).
  if (manifest.bf16 && !dpc_bf16_native()) {
    std::fprintf(stderr,
                 "warning: rank %d: this CPU has no native bf16 (AVX512-BF16 "
                 "or AMX); --precision bf16 convolutions and matmuls compute "
                 "in fp32, transfers stay bf16\n",
                 comm.rank());
    std::fflush(stderr);
  }

  SegmentFunctions segments;
  segments.forward = dpc_segment_forward;
  segments.backward = dpc_segment_backward;
  segments.backwardInput = dpc_segment_backward_input;
  segments.backwardWeight = dpc_segment_backward_weight;
  segments.optimizer = dpc_segment_optimizer;
  Executor exec(manifest, schedule, comm, segments, *device);
  // Errors found inside ABI calls cannot unwind through generated code.
  exec.setFatalHandler(
      [&comm](const std::string &message) { comm.abort(message, 1); });
  exec.connect(*parseTransport(opts.transport));
  if (!device->hostAccessible())
    printLine("rank " + std::to_string(comm.rank()) + ": " +
              device->description() + "; transport " +
              exec.transportDescription());
  const RankManifest &m = exec.manifest();
  if (m.inference)
    return predict(opts, comm, exec, dir);
  if (!opts.predictions.empty())
    throw UsageError{"--predictions needs an inference build (dpc compile "
                     "--inference)"};
  const int64_t microbatches = schedule.microbatches;
  const int64_t samplesPerStep = microbatches * m.microbatchSize;
  LrSchedule lrSchedule;
  std::string lrProblem; // the option's check parsed it already
  LrSchedule::parse(opts.lrSchedule, lrSchedule, lrProblem);
  exec.setTrainingRecipe(lrSchedule, opts.clipGradNorm);

  if (opts.isGiven("microbatching") && m.buckets.empty())
    throw UsageError{"--microbatching needs a variable-length build (dpc "
                     "compile --seq-buckets)"};

  // Data: the first stage reads inputs, the last labels; both the same
  // samples, from the same spec and sampler. In a variable-length build
  // every rank reads the training data: each plans every step's
  // microbatches from the lengths of its samples.
  ModelDataShape model = shareModelShape(comm, m);
  bool readsData = m.isFirstStage() || m.labelsShape.has_value();
  bool plansSteps = !m.buckets.empty();
  std::optional<Dataset> train, test;
  DataSpec trainSpec = parseDataSpec(opts.data);
  // Only the first stage gathers inputs (a planning middle stage reads the
  // lengths, which synthetic data does not have).
  bool readsInputs = m.isFirstStage() || plansSteps;
  if (readsData || plansSteps)
    train = loadDataset(trainSpec, Split::Train, model, uint64_t(opts.seed),
                        readsInputs);
  if (readsData) {
    if (opts.eval || opts.evalEvery > 0) {
      DataSpec evalSpec =
          opts.evalData.empty() ? trainSpec : parseDataSpec(opts.evalData);
      test = loadDataset(evalSpec, Split::Test, model, uint64_t(opts.seed),
                         readsInputs);
    }
  }
  // The middle stages learn the dataset sizes from the first stage; the last
  // stage checks that it read the same data.
  std::vector<int64_t> sizes = {train ? train->size() : 0,
                                test ? test->size() : 0};
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
  int64_t totalSteps =
      opts.steps > 0 ? opts.steps : opts.epochs * stepsPerEpoch;
  // Variable-length data in a bucketed build: each step is planned (the
  // same plan on every rank: the executor's sampler, the same lengths, the
  // same planner), so every rank's executor gets the training data.
  // Fixed-length data runs every microbatch in the top bucket.
  std::optional<StepPlanner> planner;
  if (plansSteps && train->variableLength())
    planner.emplace(m, schedule, *parseMicrobatchingMode(opts.microbatching),
                    compiledMemoryLimit(dir));
  exec.setTrainData(readsData || planner ? &*train : nullptr, opts.shuffle,
                    uint64_t(opts.seed));

  // A checkpoint directory that cannot be written fails now, not at the end
  // of training.
  if (!opts.checkpointDir.empty())
    checkWritableDirectory(opts.checkpointDir, comm.rank());

  // Parameters: the compiler's initial weights, or a checkpoint to resume.
  int64_t firstStep = 0;
  if (opts.resume) {
    // Every stage's file, merged by tensor name: a run may resume on another
    // stage split, stage count or replica layout than the one that wrote
    // the checkpoint. Metadata and messages are stage0's file's.
    std::string first = checkpointPath(opts.checkpointDir, 0);
    if (!fileExists(first))
      throw Error("--resume: no checkpoint " + first);
    TensorFile file =
        readCheckpoint(opts.checkpointDir, /*optimizerState=*/true);
    exec.loadParams(file, first, /*optimizerState=*/true);
    firstStep = Executor::checkpointStep(file, first);
    std::vector<int64_t> step = {firstStep};
    broadcastInts(comm, 0, step);
    if (step[0] != firstStep)
      throw Error(first + ": read as step " + std::to_string(firstStep) +
                  " here but as step " + std::to_string(step[0]) +
                  " by rank 0 (was it rewritten meanwhile?)");
  } else if (!m.params.empty()) {
    std::string path = resolve(dir, m.weights);
    exec.loadParams(readSafetensors(path), path, /*optimizerState=*/false);
  }

  // A replicated stage's ranks hold the same weights after every step: the
  // first replica speaks for the stage (progress, metrics, checkpoints).
  const int rank = comm.rank();
  const bool firstReplica = schedule.replicaOf(rank) == 0;
  std::optional<MetricsWriter> metrics;
  bool reports = m.isLastStage() && firstReplica;
  if (reports && (!opts.metrics.empty() || !opts.tensorboard.empty()))
    metrics.emplace(opts.metrics, opts.resume, opts.tensorboard);
  std::string layout = dpc::schedule::kindName(schedule.kind);
  if (schedule.hasReplicas())
    layout = std::to_string(schedule.ranks) + " ranks, " + layout;
  if (reports)
    printLine("training " + std::to_string(totalSteps - firstStep) +
              " steps of " + std::to_string(microbatches) + " x " +
              std::to_string(m.microbatchSize) + " samples on " +
              std::to_string(m.stages) + " stages (" + layout + ")");
  if (reports && planner)
    printLine(lengthHistogram(*train) + "; microbatching " +
              opts.microbatching + " over " + std::to_string(m.buckets.size()) +
              " buckets");

  auto saveCheckpointIn = [&](const std::string &into, int64_t stepsDone) {
    if (!firstReplica)
      return;
    ::mkdir(opts.checkpointDir.c_str(), 0777); // may exist already
    ::mkdir(into.c_str(), 0777);
    setActivity("writes a checkpoint after step " + std::to_string(stepsDone));
    writeSafetensors(checkpointPath(into, m.stage), exec.checkpoint(stepsDone));
  };
  auto saveCheckpoint = [&](int64_t stepsDone) {
    saveCheckpointIn(opts.checkpointDir, stepsDone);
  };

  if (!opts.trace.empty())
    exec.enableTrace(traceOrigin(comm));
  // --reduce preduce: replica 0 runs every step's round; another replica
  // may skip steps (exec.nextStep()) and sends its times with its gradient.
  const bool partial =
      schedule.reduce == dpc::schedule::ReduceMode::PartialReduce;
  PartialReduceTally tally;
  // --adapt's end-of-step broadcast would count steps a replica skips.
  if (partial && opts.adapt)
    throw Error("--adapt cannot re-partition a build compiled with --reduce "
                "preduce");
  if (partial)
    exec.startPartialReduce(opts.reduceGraceMs, firstStep, totalSteps);
  double startMs = Executor::nowMs();
  std::vector<double> stepEnds; // seconds since startMs
  ProgressMeter meter(totalSteps, samplesPerStep, 0.0);
  double lastPrint = -1;
  // Every rank's compute and wait per step, gathered where the progress is
  // printed.
  const int reporter = schedule.firstRankOf(schedule.numStages() - 1);
  std::optional<SlowdownMonitor> monitor;
  {
    std::vector<std::vector<int64_t>> all =
        gatherInts(comm, reporter,
                   {int64_t(std::llround(exec.predictedComputeMs() * 1e3))});
    if (reports) {
      std::vector<double> predicted;
      for (const std::vector<int64_t> &v : all)
        predicted.push_back(double(v[0]) / 1e3);
      monitor.emplace(std::move(predicted), opts.slowThreshold);
    }
  }
  // --eval-every: every rank evaluates together; with --keep-best the last
  // stage says whether the loss is the lowest yet, and every stage then
  // checkpoints into CHECKPOINT_DIR/best.
  const int64_t evalMicrobatches = sizes[1] / m.microbatchSize;
  const std::string bestDir = opts.checkpointDir + "/best";
  std::optional<BestLoss> best;
  if (reports && opts.keepBest)
    best.emplace(bestDir, opts.resume);
  auto evaluateAfter = [&](int64_t stepsDone) {
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
    saveCheckpointIn(bestDir, stepsDone);
    comm.barrier();
    if (best) {
      best->record(stepsDone, report.loss);
      printLine("kept in " + bestDir + ": the lowest validation loss yet");
    }
  };
  // --adapt: the last stage decides from the monitor's slowdowns and every
  // rank learns it at the end of the step, so that all stop together.
  std::optional<AdaptTrigger> trigger;
  if (reports && opts.adapt)
    trigger.emplace(opts.adaptThreshold, opts.adaptWindow, opts.adaptInterval,
                    firstStep);
  // The step after which the trigger decided, and after which the ranks
  // stopped: once the launcher has the new layout ready (its file exists),
  // at the end of the step that sees it.
  int64_t decidedAfter = -1, stoppedAfter = -1;
  const std::string readyPath =
      opts.adapt ? adaptReadyPath(opts.adaptRequest) : std::string();
  // A job that continues a re-partition reports its downtime: from the old
  // layout's stop to this layout's first step.
  std::optional<std::pair<int64_t, double>> resumed;
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
  // --interfere's process: the rank's cores get busy, the rank does not
  // change. It ends after its time or with the training.
  Interferer interferer;
  for (int64_t step = firstStep; step < totalSteps; ++step) {
    double downtimeS =
        resumed && step == firstStep ? epochSeconds() - resumed->second : 0;
    if (rank == opts.delay.rank)
      exec.setForwardDelay(step + 1 >= opts.delay.fromStep ? opts.delay.ms : 0);
    if (rank == opts.interference.rank &&
        step + 1 == opts.interference.fromStep) {
      if (std::string problem = interferer.start(opts.interference.seconds);
          !problem.empty())
        throw Error(problem);
      char line[160];
      std::snprintf(line, sizeof line,
                    "interference: a CPU-bound process runs on rank %d's "
                    "cores (%s) for %g s from step %lld",
                    rank, Interferer::cores().c_str(),
                    opts.interference.seconds, (long long)(step + 1));
      printLine(line);
    }
    std::optional<StepPlanSummary> planned;
    double loss;
    if (planner) {
      std::vector<int64_t> samples, lengths;
      for (int64_t mb = 0; mb < microbatches; ++mb)
        for (int64_t i : exec.trainSampler()->microbatchIndices(step, mb)) {
          samples.push_back(i);
          lengths.push_back(train->sequenceLength(i));
        }
      setActivity("plans the microbatches of step " + std::to_string(step + 1));
      planned.emplace();
      StepPlan plan = planner->plan(samples, lengths, *planned);
      loss = exec.runStep(step, plan);
    } else {
      loss = exec.runStep(step);
    }
    std::vector<StepTimes> times;
    if (!partial)
      times = gatherStepTimes(comm, reporter, exec.stepTimes());
    else if (firstReplica) {
      // Replica 0's own, with the round's wait; the others' as they sent them.
      times = exec.lastRound().times;
      times[0] = exec.stepTimes();
      tally.add(exec.lastRound());
    }
    // The last stage stops the job on a NaN or infinite loss (diverged
    // training, corrupt weights): nothing later can be trusted.
    if (reports && !std::isfinite(loss) && !opts.allowNonfiniteLoss)
      throw Error("step " + std::to_string(step + 1) + ": the loss is " +
                  (std::isnan(loss) ? "NaN" : "infinite") +
                  "; stopping (--allow-nonfinite-loss trains on)");
    double now = (Executor::nowMs() - startMs) / 1000;
    stepEnds.push_back(now);
    if (reports) {
      if (metrics) {
        nlohmann::ordered_json compute = nlohmann::ordered_json::array(),
                               wait = nlohmann::ordered_json::array();
        for (const StepTimes &t : times) {
          compute.push_back(std::round(t.computeMs * 1e3) / 1e3);
          wait.push_back(std::round(t.waitMs * 1e3) / 1e3);
        }
        nlohmann::ordered_json record = {
            {"step", step + 1},
            {"loss", loss},
            {"samples", (step + 1) * samplesPerStep},
            {"time_s", now},
            {"compute_ms", std::move(compute)},
            {"wait_ms", std::move(wait)}};
        if (std::optional<double> lr = exec.learningRate())
          record["lr"] = *lr;
        if (opts.clipGradNorm > 0)
          record["grad_norm"] = exec.gradNorm();
        if (planned) {
          nlohmann::ordered_json shapes = nlohmann::ordered_json::array();
          for (const StepPlanSummary::Microbatch &mb : planned->microbatches)
            shapes.push_back({mb.batch, mb.length, mb.samples, mb.tokens});
          record["tokens"] = planned->tokens;
          record["padded_tokens"] = planned->paddedTokens;
          record["microbatches"] = std::move(shapes);
          record["predicted_ms"] = std::round(planned->predictedMs * 1e3) / 1e3;
          record["plan_ms"] = std::round(planned->planMs * 1e3) / 1e3;
          record["step_ms"] = std::round(exec.stepTimes().stepMs * 1e3) / 1e3;
        }
        if (partial)
          record["reduced_steps"] = exec.lastRound().steps;
        metrics->write(std::move(record));
      }
      std::vector<double> compute;
      for (const StepTimes &t : times)
        compute.push_back(t.computeMs);
      if (partial)
        compute = tally.lastCompute;
      // The first step pays for warm-up; the monitor starts after it.
      for (const SlowdownEvent &e : step == firstStep
                                        ? std::vector<SlowdownEvent>()
                                        : monitor->add(step + 1, compute))
        printLine(
            formatSlowdown(e, schedule.stageOf(e.rank), opts.slowThreshold));
      if (resumed && step == firstStep) {
        char line[256];
        std::snprintf(line, sizeof line,
                      "adapt: re-partition %lld: the new layout's first step "
                      "started %.2f s after the old one stopped at step %lld "
                      "(checkpoint, launch, load) and took "
                      "%.1f ms",
                      (long long)resumed->first, downtimeS,
                      (long long)firstStep, stepEnds.front() * 1000);
        printLine(line);
        if (metrics)
          metrics->write({{"adapt", resumed->first},
                          {"after_step", firstStep},
                          {"downtime_s", std::round(downtimeS * 1e3) / 1e3},
                          {"first_step_ms",
                           std::round(stepEnds.front() * 1000 * 1e3) / 1e3}});
      }
      std::optional<AdaptDecision> decision;
      std::vector<double> slowdowns;
      if (trigger && step + 1 < totalSteps) {
        if (monitor->isCalibrated())
          for (size_t r = 0; r < times.size(); ++r)
            slowdowns.push_back(monitor->slowdown(int(r)));
        decision = trigger->add(step + 1, slowdowns);
      }
      if (decision) {
        decidedAfter = step + 1;
        writeAdaptRequest(opts.adaptRequest, *decision, slowdowns, decidedAfter,
                          schedule.stageOf(decision->rank));
      } else if (decidedAfter > 0 && stoppedAfter < 0 &&
                 step + 1 < totalSteps &&
                 ::access(readyPath.c_str(), F_OK) == 0) {
        stoppedAfter = step + 1;
        writeAdaptStop(adaptStopPath(opts.adaptRequest), stoppedAfter);
      }
      Progress progress = meter.update(step + 1, loss, now);
      // Every step of a short run; about one line a second of a long one.
      bool last = step + 1 == totalSteps;
      if (totalSteps - firstStep <= 100 || step == firstStep || last ||
          now - lastPrint >= 1.0) {
        printLine(formatProgress(progress));
        if (planned)
          printLine("  step " + std::to_string(step + 1) + ": " +
                    planned->describe());
        lastPrint = now;
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
    if (opts.adapt) {
      std::vector<int64_t> stop = {stoppedAfter};
      broadcastInts(comm, reporter, stop);
      if (stop[0] > 0) {
        stoppedAfter = stop[0];
        saveCheckpoint(stoppedAfter);
        break;
      }
    }
    if (!opts.checkpointDir.empty() && opts.checkpointEvery > 0 &&
        (step + 1) % opts.checkpointEvery == 0 && step + 1 < totalSteps)
      saveCheckpoint(step + 1);
    if (opts.evalEvery > 0 && (step + 1) % opts.evalEvery == 0 &&
        evalMicrobatches > 0)
      evaluateAfter(step + 1);
    if (partial)
      step = exec.nextStep() - 1;
  }
  if (!opts.checkpointDir.empty() && stoppedAfter < 0)
    saveCheckpoint(totalSteps);
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
  // Nobody leaves while a peer may still wait for a message from it.
  setActivity("has finished and waits for the other ranks");
  comm.barrier();
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  MpiEnvironment mpi(&argc, &argv);
  std::unique_ptr<Communicator> world = mpi.world();
  try {
    return runRank(argc, argv, *world);
  } catch (const UsageError &e) {
    world->abort(e.message, cli::kUsageError);
  } catch (const InputError &e) {
    world->abort(e.what(), cli::kUsageError);
  } catch (const Error &e) {
    world->abort(e.what(), 1);
  } catch (const std::exception &e) {
    world->abort(std::string("internal error: ") + e.what(), 1);
  }
}
