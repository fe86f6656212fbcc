//===- RankOptions.h - The options of every rank executable -----*- C++ -*-===//
//
// The per-rank options (--data, --steps, --trace, ...) are declared once, in
// one table (lib/runtime/RankOptions.cpp): name, value type, help, default,
// and whether `dpc run` takes the option and forwards it to every rank. The
// rank executable parses its command line with that table, `dpc run` parses
// the forwarded ones with the same table and writes them back as arguments
// (rankOptionArgs), and both print their help from it. A new rank option is
// one row in the table and one field in RankOptions.
//
// Plain C++ over cli::ArgParser: no MPI, no MLIR.
//
//===----------------------------------------------------------------------===//

#ifndef DPC_RUNTIME_RANKOPTIONS_H
#define DPC_RUNTIME_RANKOPTIONS_H

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <variant>
#include <vector>

namespace dpc::cli {
class ArgParser;
} // namespace dpc::cli

namespace dpc::runtime {

/// The values of the rank options. A default-constructed RankOptions holds
/// every option's default (the table's), and `given` says which options the
/// command line named.
struct RankOptions {
  RankOptions();

  std::string data, evalData;
  int64_t steps = 0, epochs = 0, seed = 0;
  /// --loader-threads: threads decoding an image folder's inputs on the
  /// first stage (0: half the rank's compute threads, at least 1).
  int64_t loaderThreads = 0;
  std::string metrics, trace, opTimes, predictions, checkpointDir;
  int64_t checkpointEvery = 0;
  /// The training recipe: LrSchedule.h's text, and the global gradient
  /// norm to clip to (0: no clipping).
  std::string lrSchedule;
  double clipGradNorm = 0;
  /// --tensorboard: the directory of the event file (last stage).
  std::string tensorboard;
  /// --eval-every N: evaluate the --eval-data every N steps; --keep-best:
  /// checkpoint the lowest validation loss's weights into DIR/best.
  int64_t evalEvery = 0;
  bool keepBest = false;
  std::string transport;
  double slowThreshold = 0;
  /// --reduce preduce: replica 0's grace period for late gradients.
  double reduceGraceMs = 0;
  /// RANK:FROM_STEP:MS; parseForwardDelay reads it.
  std::string testForwardDelay;
  /// RANK:FROM_STEP:SECONDS; parseInterference reads it.
  std::string interfere;
  /// RANK:STEP; parseTestExit reads it.
  std::string testExitAfter;
  /// dpc run --elastic: on SIGUSR1 (which mpirun forwards) every rank stops
  /// after the same step with a checkpoint, for a re-plan onto more devices.
  bool stopOnSignal = false;
  /// RANK:STEP: for tests, rank RANK waits after step STEP until SIGUSR1
  /// comes (at most 120 s), and every rank heeds it only after step
  /// STEP + 1; parseTestExit reads it.
  std::string testHoldAfter;
  /// dpc run --adapt: re-partition when a stage stays slow
  /// (docs/RUNTIME.md, "Re-partitioning").
  bool adapt = false;
  double adaptThreshold = 0;
  int64_t adaptWindow = 0, adaptInterval = 0;
  /// Variable-length builds: how each step's samples become microbatches.
  std::string microbatching;
  /// 0: the communicator's own (DPC_COMM_TIMEOUT, else 600 s).
  double timeoutSeconds = 0;
  bool shuffle = false, resume = false, eval = false;
  bool allowNonfiniteLoss = false;
  std::string summary;
  bool heartbeat = false;
  /// Set by dpc run --adapt: where the last stage writes why and where the
  /// ranks stopped for a re-partition, and in a relaunched job "N:SECONDS",
  /// the re-partition's number and when the old layout stopped (seconds
  /// since the epoch), for its downtime.
  std::string adaptRequest, adaptResumed;

  /// The names of the options given on the command line.
  std::set<std::string> given;
  bool isGiven(const std::string &name) const { return given.count(name); }
};

/// One row of the table.
struct RankOptionInfo {
  using Field = std::variant<std::string RankOptions::*, int64_t RankOptions::*,
                             double RankOptions::*, bool RankOptions::*>;
  const char *name;
  /// What the value is called in the help; nullptr for a flag.
  const char *metavar;
  const char *help;
  /// The value when not given, as it would be typed; nullptr: the field's
  /// zero ("" for text).
  const char *defaultValue;
  Field field;
  /// Flags only: --no-NAME turns it off.
  bool negatable = false;
  /// `dpc run` takes the option and passes it on to every rank; the others
  /// are the rank's alone or set by `dpc run` itself (--summary).
  bool forwarded = true;
  /// An inference build refuses it: it applies to training only.
  bool training = false;
  /// A check of the parsed value: "" or what is wrong (the whole message).
  std::string (*check)(const RankOptions &) = nullptr;
};

/// Every rank option, in the order rankOptionArgs writes them.
const std::vector<RankOptionInfo> &rankOptionTable();

enum class RankOptionSet {
  /// Every option: the rank executable's command line.
  All,
  /// The options `dpc run` forwards.
  Forwarded,
};

/// Declares the options of `set` on `parser`, parsing into `options`.
void addRankOptions(cli::ArgParser &parser, RankOptions &options,
                    RankOptionSet set);

/// After `parser` parsed a command line: records which of the options of
/// `set` were given and checks the values, alone and together. Returns ""
/// or the first problem, a message without a command prefix.
std::string finishRankOptions(const cli::ArgParser &parser,
                              RankOptions &options, RankOptionSet set);

/// The given options of `set` as arguments, in table order, so that parsing
/// them gives `options` back: "--name value", "--flag" or "--no-flag".
std::vector<std::string> rankOptionArgs(const RankOptions &options,
                                        RankOptionSet set);

/// The first given option that applies to training only, or "".
std::string givenTrainingOption(const RankOptions &options);

/// --test-forward-delay: rank RANK sleeps MS ms before each Forward from
/// step FROM_STEP (counted from 1) on.
struct ForwardDelay {
  int rank = -1;
  int64_t fromStep = 0;
  double ms = 0;
};
std::optional<ForwardDelay> parseForwardDelay(const std::string &text);

/// --test-exit-after: rank RANK kills itself (SIGKILL) after step STEP
/// (counted from 1), as a rank whose process or host is lost.
struct TestExit {
  int rank = -1;
  int64_t afterStep = 0;
};
std::optional<TestExit> parseTestExit(const std::string &text);

/// --interfere: rank RANK starts a CPU-bound process on its cores at the
/// start of step FROM_STEP (counted from 1) that runs for SECONDS.
struct Interference {
  int rank = -1;
  int64_t fromStep = 0;
  double seconds = 0;
};
std::optional<Interference> parseInterference(const std::string &text);

} // namespace dpc::runtime

#endif // DPC_RUNTIME_RANKOPTIONS_H
