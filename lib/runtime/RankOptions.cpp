//===- RankOptions.cpp - The options of every rank executable -------------===//
//
// The table of rank options. The rank executable (RankMain.cpp) registers
// all of them, `dpc run` (tools/dpc/RunCommand.cpp) the forwarded ones, and
// the launcher writes those back as arguments (rankOptionArgs). The order of
// the rows is the order of the arguments every rank gets.
//
//===----------------------------------------------------------------------===//

#include "dpc/runtime/RankOptions.h"

#include "dpc/runtime/DataKinds.h"
#include "dpc/runtime/LrSchedule.h"

#include "dpc/support/CommandLine.h"
#include "dpc/support/Error.h"

#include <charconv>
#include <cstdint>
#include <cstdio>

namespace dpc::runtime {

namespace {

std::string positive(int64_t value, const char *name) {
  return value > 0 ? ""
                   : std::string("option '--") + name +
                         "' expects a positive integer";
}

/// The data and how long to train on it.
std::vector<RankOptionInfo> dataRows() {
  using O = RankOptions;
  // The kinds' specs come from their table (DataKinds.h), so that a new
  // kind is listed without an edit here.
  static const std::string dataHelp =
      "training data (inference builds: the samples to predict): " +
      dataKindsHelp();
  return {
      {"data", "SPEC", dataHelp.c_str(),
       "fashion-mnist:/usr/share/datasets/fashion-mnist", &O::data},
      {"eval-data", "SPEC",
       "data evaluated after training (default: the test split of --data)",
       nullptr, &O::evalData, /*negatable=*/false, /*forwarded=*/true,
       /*training=*/true},
      {"steps", "N", "train N minibatches in all", nullptr, &O::steps,
       /*negatable=*/false, /*forwarded=*/true, /*training=*/true,
       [](const O &o) { return positive(o.steps, "steps"); }},
      {"epochs", "N", "train N epochs (default 1 when --steps is not given)",
       nullptr, &O::epochs, /*negatable=*/false, /*forwarded=*/true,
       /*training=*/true,
       [](const O &o) { return positive(o.epochs, "epochs"); }},
      {"seed", "N", "seed of shuffling and synthetic data", "0", &O::seed},
      {"loader-threads", "N",
       "threads decoding an image folder's inputs ahead of the first stage "
       "(default: half the rank's compute threads, at least 1)",
       nullptr, &O::loaderThreads, /*negatable=*/false, /*forwarded=*/true,
       /*training=*/true,
       [](const O &o) { return positive(o.loaderThreads, "loader-threads"); }},
  };
}

/// What the run writes about itself: metrics, traces, op times,
/// predictions.
std::vector<RankOptionInfo> reportRows() {
  using O = RankOptions;
  return {
      {"metrics", "FILE",
       "write JSON-lines metrics, a line a step (last stage)", nullptr,
       &O::metrics, /*negatable=*/false, /*forwarded=*/true, /*training=*/true},
      {"trace", "FILE",
       "write a Chrome trace, one track per rank: each rank writes FILE with "
       ".rankK inserted, all on one clock, and 'dpc run' merges them into "
       "FILE",
       nullptr, &O::trace},
      {"op-times", "FILE",
       "timing builds (dpc profile): write each op's measured time per rank, "
       "FILE with .rankK inserted",
       nullptr, &O::opTimes},
      {"predictions", "FILE",
       "inference builds: write the model's outputs for every sample of "
       "--data as float32 .npy (last stage)",
       nullptr, &O::predictions},
  };
}

/// Checkpoints, evaluation during training and TensorBoard scalars.
std::vector<RankOptionInfo> checkpointRows() {
  using O = RankOptions;
  return {
      {"checkpoint-dir", "DIR",
       "write per-stage checkpoints (safetensors) here at the end "
       "(inference builds: read the trained weights from here)",
       nullptr, &O::checkpointDir},
      {"checkpoint-every", "N", "also checkpoint every N steps", nullptr,
       &O::checkpointEvery, /*negatable=*/false, /*forwarded=*/true,
       /*training=*/true,
       [](const O &o) {
         return positive(o.checkpointEvery, "checkpoint-every");
       }},
      {"eval-every", "N",
       "also evaluate the --eval-data every N steps: loss, accuracy for "
       "classifiers, perplexity for token models (metrics eval_step)",
       nullptr, &O::evalEvery, /*negatable=*/false, /*forwarded=*/true,
       /*training=*/true,
       [](const O &o) { return positive(o.evalEvery, "eval-every"); }},
      {"keep-best", nullptr,
       "with --eval-every and --checkpoint-dir: checkpoint the weights of the "
       "lowest validation loss into CHECKPOINT_DIR/best",
       nullptr, &O::keepBest, /*negatable=*/false, /*forwarded=*/true,
       /*training=*/true},
      {"tensorboard", "DIR",
       "also write every step's metrics as TensorBoard scalars to an event "
       "file in DIR (last stage)",
       nullptr, &O::tensorboard, /*negatable=*/false, /*forwarded=*/true,
       /*training=*/true},
  };
}

/// The training recipe beyond what the build fixes.
std::vector<RankOptionInfo> recipeRows() {
  using O = RankOptions;
  return {
      {"lr-schedule", "SPEC",
       "learning rate by optimizer update, of the compiled --lr: phases "
       "KIND[:KEY=VALUE,...] joined by '+', each KIND constant, linear, "
       "warmup, cosine, step, exponential or onecycle as "
       "torch.optim.lr_scheduler (e.g. warmup:steps=100+cosine:steps=900,"
       "min=1e-5; docs/TRAINING.md)",
       nullptr, &O::lrSchedule, /*negatable=*/false, /*forwarded=*/true,
       /*training=*/true,
       [](const O &o) {
         try {
           LrSchedule::parse(o.lrSchedule);
         } catch (const InputError &e) {
           return std::string(e.what());
         }
         return std::string();
       }},
      {"clip-grad-norm", "X",
       "scale the gradients so that their norm over all parameters of all "
       "stages is at most X before each update, as "
       "torch.nn.utils.clip_grad_norm_ (synchronous schedules)",
       nullptr, &O::clipGradNorm, /*negatable=*/false, /*forwarded=*/true,
       /*training=*/true,
       [](const O &o) {
         return o.clipGradNorm > 0 ? std::string()
                                   : "--clip-grad-norm expects a positive "
                                     "norm";
       }},
  };
}

/// How ranks exchange data, the step monitor and its test hooks.
std::vector<RankOptionInfo> transportRows() {
  using O = RankOptions;
  return {
      {"transport", "T",
       "CUDA builds: how device memory moves between ranks: auto (NCCL, or "
       "host staging where ranks share a GPU), nccl, host-staging, or mpi "
       "(the executor copies each message through host memory)",
       "auto", &O::transport},
      {"slow-threshold", "X",
       "report a stage whose compute per step (median of the last 16 steps) "
       "is more than X times its share in the plan",
       "1.5", &O::slowThreshold, /*negatable=*/false, /*forwarded=*/true,
       /*training=*/false,
       [](const O &o) -> std::string {
         if (o.slowThreshold > 1 && o.slowThreshold <= 1e6)
           return "";
         return "--slow-threshold expects a ratio above 1";
       }},
      {"reduce-grace", "MS",
       "builds compiled with --reduce preduce: how long replica 0's round "
       "waits for a replica's gradient before the replica joins a later "
       "round (docs/RUNTIME.md)",
       "1", &O::reduceGraceMs, /*negatable=*/false, /*forwarded=*/true,
       /*training=*/true,
       [](const O &o) -> std::string {
         if (o.reduceGraceMs >= 0 && o.reduceGraceMs <= 1e7)
           return "";
         return "--reduce-grace expects milliseconds, at least 0";
       }},
      {"test-forward-delay", "RANK:FROM_STEP:MS",
       "for tests of the step monitor: rank RANK sleeps MS ms before each "
       "Forward from step FROM_STEP (counted from 1) on",
       nullptr, &O::testForwardDelay, /*negatable=*/false, /*forwarded=*/true,
       /*training=*/false,
       [](const O &o) -> std::string {
         if (parseForwardDelay(o.testForwardDelay))
           return "";
         return "--test-forward-delay expects RANK:FROM_STEP:MS, not '" +
                o.testForwardDelay + "'";
       }},
      {"test-exit-after", "RANK:STEP",
       "for tests of --elastic: rank RANK kills itself (SIGKILL) after step "
       "STEP (counted from 1), as a rank whose process or host is lost",
       nullptr, &O::testExitAfter, /*negatable=*/false, /*forwarded=*/true,
       /*training=*/true,
       [](const O &o) -> std::string {
         if (parseTestExit(o.testExitAfter))
           return "";
         return "--test-exit-after expects RANK:STEP, not '" + o.testExitAfter +
                "'";
       }},
      {"test-hold-after", "RANK:STEP",
       "for tests of --elastic: rank RANK waits after step STEP (counted "
       "from 1) until SIGUSR1 comes, at most 120 s, and every rank heeds "
       "the signal only after step STEP + 1",
       nullptr, &O::testHoldAfter, /*negatable=*/false, /*forwarded=*/true,
       /*training=*/true,
       [](const O &o) -> std::string {
         if (parseTestExit(o.testHoldAfter))
           return "";
         return "--test-hold-after expects RANK:STEP, not '" + o.testHoldAfter +
                "'";
       }},
      {"stop-on-signal", nullptr,
       "on SIGUSR1 every rank stops after the same step with a checkpoint "
       "(dpc run --elastic sets it, to re-plan onto more devices)",
       nullptr, &O::stopOnSignal, /*negatable=*/false, /*forwarded=*/true,
       /*training=*/true},
      {"interfere", "RANK:FROM_STEP:SECONDS",
       "make rank RANK's cores busy as a co-located job does: from step "
       "FROM_STEP (counted from 1) a separate CPU-bound process runs on them "
       "for SECONDS",
       nullptr, &O::interfere, /*negatable=*/false, /*forwarded=*/true,
       /*training=*/true,
       [](const O &o) -> std::string {
         if (parseInterference(o.interfere))
           return "";
         return "--interfere expects RANK:FROM_STEP:SECONDS, not '" +
                o.interfere + "'";
       }},
  };
}

/// Re-partitioning when a stage stays slower than planned.
std::vector<RankOptionInfo> adaptRows() {
  using O = RankOptions;
  return {
      {"adapt", nullptr,
       "re-partition when a stage stays slower than planned: stop at a step "
       "boundary with a checkpoint, plan again with the measured slowdowns, "
       "recompile and resume (dpc run; docs/RUNTIME.md)",
       nullptr, &O::adapt, /*negatable=*/false, /*forwarded=*/true,
       /*training=*/true},
      {"adapt-threshold", "X",
       "--adapt: re-partition when a stage computes more than X times its "
       "share in the plan",
       "1.5", &O::adaptThreshold, /*negatable=*/false, /*forwarded=*/true,
       /*training=*/true,
       [](const O &o) -> std::string {
         if (o.adaptThreshold > 1 && o.adaptThreshold <= 1e6)
           return "";
         return "--adapt-threshold expects a ratio above 1";
       }},
      {"adapt-window", "N",
       "--adapt: only once the stage has been past the threshold for N steps "
       "in a row (each step's figure the median of the monitor's last 16)",
       "20", &O::adaptWindow, /*negatable=*/false, /*forwarded=*/true,
       /*training=*/true,
       [](const O &o) { return positive(o.adaptWindow, "adapt-window"); }},
      {"adapt-interval", "N",
       "--adapt: at least N steps after the start of the layout (the launch "
       "or the last re-partition)",
       "100", &O::adaptInterval, /*negatable=*/false, /*forwarded=*/true,
       /*training=*/true,
       [](const O &o) { return positive(o.adaptInterval, "adapt-interval"); }},
  };
}

/// How the steps run: microbatching, timeouts, shuffling, resuming,
/// the final evaluation, non-finite losses.
std::vector<RankOptionInfo> runRows() {
  using O = RankOptions;
  return {
      {"microbatching", "MODE",
       "variable-length builds (dpc compile --seq-buckets): dp (sorted by "
       "length, grouped by dynamic programming), padded (every microbatch "
       "padded to the step's longest sequence) or sorted (sorted, cut into "
       "equal microbatches)",
       "dp", &O::microbatching},
      {"timeout", "SECONDS",
       "give up a wait for another rank after this long (default 600, or "
       "DPC_COMM_TIMEOUT); 'dpc run' ends the job when a rank has not "
       "answered for this long",
       nullptr, &O::timeoutSeconds, /*negatable=*/false, /*forwarded=*/true,
       /*training=*/false,
       [](const O &o) -> std::string {
         if (o.timeoutSeconds >= 0.001 && o.timeoutSeconds <= 1e7)
           return "";
         return "option '--timeout' expects seconds from 0.001 to 1e7";
       }},
      {"shuffle", nullptr,
       "shuffle the training set every epoch (--no-shuffle: file order)",
       "true", &O::shuffle, /*negatable=*/true},
      {"resume", nullptr, "continue from the checkpoints in --checkpoint-dir",
       nullptr, &O::resume, /*negatable=*/false, /*forwarded=*/true,
       /*training=*/true},
      {"eval", nullptr, "measure test accuracy after training", "true",
       &O::eval, /*negatable=*/true},
      {"allow-nonfinite-loss", nullptr,
       "keep training when the loss becomes NaN or infinite (default: stop "
       "with an error)",
       nullptr, &O::allowNonfiniteLoss},
  };
}

/// Set by `dpc run` itself, not forwarded from its command line.
std::vector<RankOptionInfo> dpcRunRows() {
  using O = RankOptions;
  return {
      {"summary", "FILE",
       "for 'dpc run': write the measured step times as JSON (last stage)",
       nullptr, &O::summary, /*negatable=*/false, /*forwarded=*/false},
      {"heartbeat", nullptr,
       "for 'dpc run': write a heartbeat line to stderr every second (its "
       "watchdog)",
       nullptr, &O::heartbeat, /*negatable=*/false, /*forwarded=*/false},
      {"adapt-request", "FILE",
       "for 'dpc run --adapt': where the last stage writes the re-partition "
       "it stops for",
       nullptr, &O::adaptRequest, /*negatable=*/false, /*forwarded=*/false},
      {"adapt-resumed", "N:SECONDS",
       "for 'dpc run --adapt': this job continues re-partition N, whose old "
       "layout stopped at SECONDS since the epoch",
       nullptr, &O::adaptResumed, /*negatable=*/false, /*forwarded=*/false},
  };
}

std::vector<RankOptionInfo> makeTable() {
  std::vector<RankOptionInfo> rows;
  for (auto group : {dataRows, reportRows, checkpointRows, recipeRows,
                     transportRows, adaptRows, runRows, dpcRunRows}) {
    std::vector<RankOptionInfo> part = group();
    rows.insert(rows.end(), part.begin(), part.end());
  }
  return rows;
}

bool inSet(const RankOptionInfo &row, RankOptionSet set) {
  return set == RankOptionSet::All || row.forwarded;
}

/// The help of `row` with its default, if any, appended.
std::string helpOf(const RankOptionInfo &row) {
  if (!row.defaultValue)
    return row.help;
  if (row.metavar)
    return std::string(row.help) + " (default " + row.defaultValue + ")";
  return std::string(row.help) +
         (std::string(row.defaultValue) == "true" ? " (default)" : "");
}

/// Shortest text that parses back to `value` exactly.
std::string formatDecimal(double value) {
  char text[64];
  std::to_chars_result end = std::to_chars(text, text + sizeof(text), value);
  return std::string(text, end.ptr);
}

} // namespace

const std::vector<RankOptionInfo> &rankOptionTable() {
  static const std::vector<RankOptionInfo> table = makeTable();
  return table;
}

RankOptions::RankOptions() {
  for (const RankOptionInfo &row : rankOptionTable()) {
    if (!row.defaultValue)
      continue;
    std::string text = row.defaultValue;
    std::visit(
        [&](auto field) {
          auto &value = this->*field;
          using T = std::decay_t<decltype(value)>;
          if constexpr (std::is_same_v<T, std::string>)
            value = text;
          else if constexpr (std::is_same_v<T, int64_t>)
            cli::parseInteger(text, value);
          else if constexpr (std::is_same_v<T, double>)
            cli::parseDecimal(text, value);
          else
            value = text == "true";
        },
        row.field);
  }
}

void addRankOptions(cli::ArgParser &parser, RankOptions &options,
                    RankOptionSet set) {
  for (const RankOptionInfo &row : rankOptionTable()) {
    if (!inSet(row, set))
      continue;
    std::string help = helpOf(row);
    std::visit(
        [&](auto field) {
          auto *value = &(options.*field);
          if constexpr (std::is_same_v<decltype(value), bool *>)
            parser.addFlag(row.name, value, help, row.negatable);
          else
            parser.addOption(row.name, value, row.metavar, help);
        },
        row.field);
  }
}

std::string finishRankOptions(const cli::ArgParser &parser,
                              RankOptions &options, RankOptionSet set) {
  for (const RankOptionInfo &row : rankOptionTable())
    if (inSet(row, set) && parser.given(row.name))
      options.given.insert(row.name);
  if (options.isGiven("steps") && options.isGiven("epochs"))
    return "give --steps or --epochs, not both";
  for (const RankOptionInfo &row : rankOptionTable())
    if (row.check && options.isGiven(row.name))
      if (std::string problem = row.check(options); !problem.empty())
        return problem;
  if (options.resume && options.checkpointDir.empty())
    return "--resume needs --checkpoint-dir";
  if (options.keepBest &&
      (options.evalEvery <= 0 || options.checkpointDir.empty()))
    return "--keep-best needs --eval-every and --checkpoint-dir";
  if (!options.adapt)
    for (const char *name :
         {"adapt-threshold", "adapt-window", "adapt-interval"})
      if (options.isGiven(name))
        return std::string("--") + name + " applies to --adapt";
  return "";
}

std::vector<std::string> rankOptionArgs(const RankOptions &options,
                                        RankOptionSet set) {
  std::vector<std::string> args;
  for (const RankOptionInfo &row : rankOptionTable()) {
    if (!inSet(row, set) || !options.isGiven(row.name))
      continue;
    std::string flag = std::string("--") + row.name;
    std::visit(
        [&](auto field) {
          const auto &value = options.*field;
          using T = std::decay_t<decltype(value)>;
          if constexpr (std::is_same_v<T, bool>) {
            if (value)
              args.push_back(flag);
            else if (row.negatable)
              args.push_back(std::string("--no-") + row.name);
            return;
          } else {
            args.push_back(flag);
            if constexpr (std::is_same_v<T, std::string>)
              args.push_back(value);
            else if constexpr (std::is_same_v<T, int64_t>)
              args.push_back(std::to_string(value));
            else
              args.push_back(formatDecimal(value));
          }
        },
        row.field);
  }
  return args;
}

std::string givenTrainingOption(const RankOptions &options) {
  for (const RankOptionInfo &row : rankOptionTable())
    if (row.training && options.isGiven(row.name))
      return row.name;
  return "";
}

namespace {

// "RANK:FROM_STEP:VALUE" with a rank, a step counted from 1 and a value in
// [low, 1e6].
bool parseRankStepValue(const std::string &text, int &rank, int64_t &from,
                        double &value, double low) {
  long long r = 0, f = 0;
  double v = 0;
  char end = 0;
  if (std::sscanf(text.c_str(), "%lld:%lld:%lf%c", &r, &f, &v, &end) != 3 ||
      r < 0 || r > INT32_MAX || f < 1 || !(v >= low && v <= 1e6))
    return false;
  rank = int(r);
  from = f;
  value = v;
  return true;
}

} // namespace

std::optional<ForwardDelay> parseForwardDelay(const std::string &text) {
  ForwardDelay delay;
  if (!parseRankStepValue(text, delay.rank, delay.fromStep, delay.ms, 0))
    return std::nullopt;
  return delay;
}

std::optional<TestExit> parseTestExit(const std::string &text) {
  TestExit exit;
  long long step = 0;
  char end = 0;
  if (std::sscanf(text.c_str(), "%d:%lld%c", &exit.rank, &step, &end) != 2 ||
      exit.rank < 0 || step < 1)
    return std::nullopt;
  exit.afterStep = step;
  return exit;
}

std::optional<Interference> parseInterference(const std::string &text) {
  Interference interference;
  if (!parseRankStepValue(text, interference.rank, interference.fromStep,
                          interference.seconds, 1e-3))
    return std::nullopt;
  return interference;
}

} // namespace dpc::runtime
