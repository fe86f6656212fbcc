//===- LauncherInternal.h - Shared pieces of dpc run's launcher -*- C++ -*-===//
//
// Private to lib/runtime. `dpc run`'s launcher (dpc/runtime/Launcher.h) lives
// in files by concern: Launcher.cpp (the entry points and the small helpers
// every part uses), LauncherPlacement.cpp (the appfile, host files, rank
// placement and the program checks), LauncherMonitor.cpp (following the
// output and the watchdog), LauncherMpirun.cpp, LauncherSrun.cpp,
// LauncherReport.cpp (the merged trace and the measured step time) and
// LauncherAdapt.cpp (--adapt's re-partitions). This header declares what
// more than one of them uses. Nothing outside lib/runtime includes it.
//
//===----------------------------------------------------------------------===//

#ifndef DPC_LIB_RUNTIME_LAUNCHERINTERNAL_H
#define DPC_LIB_RUNTIME_LAUNCHERINTERNAL_H

#include "dpc/runtime/Launcher.h"
#include "dpc/support/Error.h"

#include <functional>
#include <string>
#include <vector>

namespace dpc::runtime::launcher_detail {

constexpr const char *kCommand = "dpc run";
/// The ranks' own wait timeout when --timeout is not given
/// (runtime::Communicator).
constexpr double kDefaultTimeoutSeconds = 600;

/// The launcher's parts throw dpc::Error (dpc run exits 1) or, for what
/// the user gave it, dpc::InputError (exit 2); launch() prints the message
/// as "dpc run: MESSAGE".

bool isDirectory(const std::string &path);
bool isRegularFile(const std::string &path);
std::string absolutePath(const std::string &path);
/// This program (dpc), which `dpc run --adapt` runs as `dpc compile`.
std::string executablePath();
/// Finds `name` on PATH the way execvp would; "" when it is not there.
std::string findProgram(const std::string &name);
std::vector<std::string> splitWords(const std::string &line);
std::string joinCommand(const std::vector<std::string> &argv);

/// Runs `argv` (srun, or dpc compile) from `directory` ("": here) with its
/// output passed through and waits for it; returns its wait status, or -1
/// when it could not be started.
int runProgram(const std::vector<std::string> &argv,
               const std::string &directory);

/// Called with every line the ranks write to stdout.
using StdoutHook = std::function<void(int, const std::string &)>;

//===----------------------------------------------------------------------===//
// Placement (LauncherPlacement.cpp)
//===----------------------------------------------------------------------===//

/// Every program of the appfile that is a path must be an executable file
/// and a program (programProblem); throws an Error naming the first that is
/// not. `outDir` is as the user gave it.
void checkPrograms(const LaunchJob &job, const std::string &outDir,
                   const std::string &appfilePath);

//===----------------------------------------------------------------------===//
// Following the job (LauncherMonitor.cpp)
//===----------------------------------------------------------------------===//

/// Runs `argv`, following its stdout and stderr; returns its wait status.
/// When the watchdog says so, ends mpirun (which takes the ranks down,
/// stopped ones included) or srun and, should that not do within
/// `graceSeconds`, kills it.
int runAndFollow(const std::vector<std::string> &argv, OutputFollower &out,
                 Watchdog &watchdog, int graceSeconds);

/// Runs the launch command `argv` (options.launcher's: mpirun or srun)
/// with the watchdog, brings back what a staged job wrote (job.afterRun)
/// and reports how the job ended: after a success the merged trace and the
/// measured step time; after a failure it throws, naming the rank that
/// failed first or stopped answering and its host. `shared` (0: none) are
/// the cores the ranks share, for the step-time prediction.
int followJob(const LaunchOptions &options, const RankOptions &rankOptions,
              const std::vector<std::string> &argv, const LaunchJob &job,
              const std::string &summaryPath, const std::string &planPath,
              int shared, const StdoutHook &onStdout);

//===----------------------------------------------------------------------===//
// After the run (LauncherReport.cpp)
//===----------------------------------------------------------------------===//

/// Removes the ranks' trace parts (FILE.rankK).
void removeTraceParts(const std::string &trace, int ranks);

/// Merges the ranks' traces (FILE.rankK) into one Chrome trace FILE, one
/// track per rank; the ranks took their time origins together. The parts are
/// removed either way; throws an Error saying why it could not merge them.
void mergeTraces(const std::string &trace, int ranks);

/// Reads the step times the last stage wrote to `summaryPath`, prints the
/// measured step time beside plan.json's prediction and records both in
/// plan.json as "measured". The first step pays for warm-up (first touches
/// of memory, kernel setup), so the median leaves it out when there are
/// others. plan.json's prediction holds when the build predicted the ranks
/// on the cores they share here (`cores`, 0: a core each; schedule.json's
/// "cores"); otherwise the build's schedule is simulated on these, and
/// ranks that share them are also reported with a core each. Throws an Error
/// saying why it could not (plan.json's readers may throw an InputError).
void recordStepTime(const std::string &summaryPath, const std::string &planPath,
                    int cores);

//===----------------------------------------------------------------------===//
// The launch commands
//===----------------------------------------------------------------------===//

struct Staging;

/// `--launcher srun`: writes OUT/.dpc-srun.conf (and OUT/.dpc-srun.hosts),
/// prints the command and the files, then (not with --np-check) stages the
/// job when `staging` is given and runs it where srun exists, as runMpirun
/// does under mpirun.
int runSrun(const LaunchOptions &options, const RankOptions &rankOptions,
            LaunchJob &job, const std::string &summaryPath,
            const std::string &planPath, const Staging *staging,
            const StdoutHook &onStdout);

/// Runs the job under mpirun and reports how it ended; `shared` (0:
/// none) are the cores its ranks share, for the step-time prediction.
int runMpirun(const LaunchOptions &options, const RankOptions &rankOptions,
              std::vector<std::string> argv, const LaunchJob &job,
              const std::string &summaryPath, const std::string &planPath,
              int shared, const StdoutHook &onStdout);

/// A job ended by the loss of one rank: its process killed by a signal
/// (kill -9, the OOM killer, a machine gone) or silent past --timeout (its
/// host unreachable). What --elastic re-plans around; a rank that failed
/// with an error of its own is a plain Error.
class RankLostError : public Error {
public:
  RankLostError(const std::string &message, int rank)
      : Error(message), rank(rank) {}
  int rank;
};

/// Launches the build in `outDir` once and waits for it (launch() without
/// --adapt, or one layout with it).
int launchOnce(const LaunchOptions &options, const std::string &givenOutDir,
               const RankOptions &rankOptions, const StdoutHook &onStdout);

/// `dpc run --adapt` (docs/RUNTIME.md, "Re-partitioning"): launches the
/// build; whenever its last stage asks for a re-partition, plans again on a
/// cluster of the measured speeds and compiles into ADAPT_DIR/N while the
/// ranks train on, tells them when it is ready, and once they have stopped
/// launches that build resuming from their checkpoint, until a job ends on
/// its own.
int launchAdaptive(const LaunchOptions &options, const RankOptions &given);

/// Sends `signal` to the launch command running now (mpirun forwards
/// SIGUSR1 to the ranks); nothing when none runs.
void signalRunningJob(int signal);

/// `dpc run --elastic` (docs/RUNTIME.md, "Elastic training"): launches the
/// build; when a rank is lost (RankLostError), plans and compiles the model
/// again for the devices left into ELASTIC_DIR/N and launches that build
/// resuming from the newest checkpoint every stage holds, while at least
/// --min-devices are left.
int launchElastic(const LaunchOptions &options, const RankOptions &given);

//===----------------------------------------------------------------------===//
// Hosts without a shared file system: --stage (LauncherStaging.cpp)
//===----------------------------------------------------------------------===//

/// What `dpc run --stage DIR` copies to every host and brings back.
struct Staging {
  /// DIR: the same absolute path on every host.
  std::string dir;
  /// The command that runs a shell command on a host: AGENT HOST COMMAND.
  std::string agent;
  /// The hosts of the placement, each once.
  std::vector<std::string> hosts;
  /// Local files or directories copied to `to` on every host: `names`
  /// (relative to `from`) as tar packs them.
  struct Input {
    std::string from;
    std::vector<std::string> names;
    std::string to;
  };
  std::vector<Input> inputs;
  /// What the ranks write under `staged` on their hosts, brought back to
  /// `local` (a file's directory, or the directory itself).
  struct Output {
    std::string staged;
    std::string local;
    bool isDirectory = false;
  };
  std::vector<Output> outputs;

  /// AGENT HOST 'COMMAND', for /bin/sh.
  std::string remote(const std::string &host, const std::string &command) const;
  /// A data spec with each of its paths staged under DIR/data.
  std::string stageData(const std::string &spec, const std::string &name);
  /// The staged path of an output (DIR/results/NAME/...), recorded to be
  /// brought back to `path`; "" stays "".
  std::string stageOutput(const std::string &path, const char *name,
                          bool isDirectory);
};

/// Checks --stage and rewrites the paths of `rankOptions` into DIR.
Staging planStaging(const LaunchOptions &options, const LaunchJob &job,
                    RankOptions &rankOptions);
/// Copies OUT (without its IR) and the inputs to DIR on every host.
void stageToHosts(const Staging &staging, const std::string &outDir);
/// Brings the outputs back and removes DIR from every host, then throws an
/// Error saying what failed first, if anything did.
void collectFromHosts(const Staging &staging);

} // namespace dpc::runtime::launcher_detail

#endif // DPC_LIB_RUNTIME_LAUNCHERINTERNAL_H
