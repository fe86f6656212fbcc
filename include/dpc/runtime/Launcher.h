//===- Launcher.h - Launching the ranks of a compiled pipeline --*- C++ -*-===//
//
// What `dpc run OUT` does once its command line is parsed: read OUT/appfile
// (the `mpirun --app` format, a line per rank or replicated stage), check the
// rank executables, place the ranks on the hosts of a host file, forward the
// rank options to every rank, and run the job under mpirun (or print and
// run the srun command). Under either it follows the output live, stripping
// the rank tags, watches the ranks' heartbeats (runtime/Heartbeat.h) and,
// when the job fails, names the rank that failed first and its last error.
// After a successful run it merges the ranks' traces and records the
// measured step time in OUT/plan.json.
//
// The pieces are declared here for the unit tests
// (test/unittests/runtime/LauncherTest.cpp). Plain C++ and POSIX: no MPI
// (mpirun is a program it runs), no MLIR.
//
//===----------------------------------------------------------------------===//

#ifndef DPC_RUNTIME_LAUNCHER_H
#define DPC_RUNTIME_LAUNCHER_H

#include "dpc/runtime/RankOptions.h"

#include <chrono>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace dpc::runtime {

/// What `dpc run` is asked besides the rank options.
struct LaunchOptions {
  /// The output directory of `dpc compile`, with its appfile.
  std::string outDir;
  /// mpirun or srun.
  std::string launcher = "mpirun";
  /// The mpirun to run; "": mpirun on PATH.
  std::string mpirun;
  /// An Open MPI host file; "": none.
  std::string hostfile;
  /// Check and print the launch without running it.
  bool npCheck = false;
  /// Also print mpirun's own messages when a rank fails.
  bool verbose = false;
  /// No shared file system: stage what the ranks read to this directory on
  /// every host of the host file and bring back what they write; "": the
  /// hosts see the launching host's paths.
  std::string stageDir;
  /// How --stage reaches a host: AGENT HOST COMMAND; "": Open MPI's
  /// OMPI_MCA_plm_rsh_agent, else ssh.
  std::string agent;
  /// --elastic: a job that loses a rank is planned again for the devices
  /// left and resumed from its checkpoints (docs/RUNTIME.md, "Elastic
  /// training"), while at least `minDevices` are left.
  bool elastic = false;
  int64_t minDevices = 1;
};

/// Launches the job and waits for it. Problems are one line on stderr,
/// "dpc run: MESSAGE"; returns the exit code: 0, 1 for a failed job, or
/// cli::kUsageError for bad input (a bad host file, a rank refusing its
/// options).
int launch(const LaunchOptions &options, const RankOptions &rankOptions);

//===----------------------------------------------------------------------===//
// The appfile, host files and placement
//===----------------------------------------------------------------------===//

/// One line of an mpirun appfile: mpirun options, then the program and its
/// arguments.
struct AppLine {
  int lineNumber = 0;
  std::vector<std::string> mpirunOptions;
  std::string program;
  std::vector<std::string> programArgs;
  int ranks = 1; // -np / -n
};

/// Parses an appfile; throws an Error naming the file and line.
std::vector<AppLine> parseAppfile(const std::string &path);

struct HostSlots {
  std::string host;
  int slots = 1;
};

/// Reads an Open MPI host file: `HOST [slots=N] [max_slots=N]` a line, `#`
/// comments, blank lines. A host named twice adds its slots. Throws an
/// InputError naming the file and line.
std::vector<HostSlots> parseHostfile(const std::string &path);

/// The host of every rank: ranks in order (the appfile's, which is stage
/// order) fill each host's slots before the next host's. Fewer than `ranks`
/// hosts when the slots run out.
std::vector<std::string> placeRanks(const std::vector<HostSlots> &hosts,
                                    int ranks);

/// A program of the appfile resolved against `outDir` (absolute), where
/// `dpc compile` put the executables; a bare name not there is left to PATH.
std::string resolveProgram(const std::string &outDir,
                           const std::string &program);

/// What is wrong with `path` as a program to launch, or "": it must be an
/// ELF image whose program and section tables lie inside the file, or a "#!"
/// script.
std::string programProblem(const std::string &path);

//===----------------------------------------------------------------------===//
// The launch commands
//===----------------------------------------------------------------------===//

/// A job ready to launch.
struct LaunchJob {
  /// The output directory, absolute.
  std::string outDir;
  std::vector<AppLine> lines;
  std::vector<HostSlots> hosts;
  /// The host of every rank (placeRanks), or empty without a host file.
  std::vector<std::string> placement;
  /// What every rank gets after its appfile line's own arguments.
  std::vector<std::string> rankArgs;
  /// Where the programs are run from on the hosts, when not outDir
  /// (--stage).
  std::string runDir;
  /// The ranks' working directory on their hosts (every appfile line's
  /// --wdir), when not mpirun's own choice.
  std::string workDir;
  /// OMP_NUM_THREADS of each line's ranks on the hosts of a host file
  /// (hostThreads), exported per line; empty without a host file.
  std::vector<long> lineThreads;
  /// Called when mpirun has ended, before the results are read (--stage
  /// brings them back); throws an Error saying what failed.
  std::function<void()> afterRun;

  int ranks() const;
};

/// The appfile mpirun runs: with a host file, each line's hosts as
/// `--host HOST:SLOTS,...` and its `-x OMP_NUM_THREADS=N` (lineThreads);
/// then the line's options, the resolved program, its arguments and
/// `rankArgs`.
std::string mpirunAppfile(const LaunchJob &job);

/// Whether ranks of `threads` threads each fit this machine's `cores`, each
/// rank on cores of its own; never for the hosts of a host file.
bool threadsFitCores(const std::string &hostfile, int ranks, long cores,
                     long threads);

/// The kernel threads `dpc run` gives each of `ranks` ranks on this
/// machine's `cores`: the user's OMP_NUM_THREADS, or the cores shared out
/// among the ranks.
long threadsPerRank(int ranks, long cores);

/// The kernel threads of each appfile line's ranks on the hosts of a host
/// file (job.hosts, job.placement): `userThreads` when the user set
/// OMP_NUM_THREADS (> 0), else each host's slots shared out among the ranks
/// placed on it, at least 1. A line whose ranks lie on hosts of different
/// shares gets the smallest, so that no host runs more threads than slots.
std::vector<long> hostThreads(const LaunchJob &job, long userThreads);

/// The thread count every rank of a host file job binds to cores of its
/// own (mpirunCommand's `threads`): the lines' common count when each
/// host's ranks times their threads fit its slots, else 0 (nothing bound).
long boundThreads(const LaunchJob &job);

/// The cores ranks of `threads` threads share when their threads do not fit
/// this machine's `cores` (one rank's threads count as one), or 0 when each
/// has cores of its own or they run on the hosts of a host file: what the
/// simulator's SimulateOptions::cores takes.
int sharedCores(const std::string &hostfile, int ranks, long cores,
                long threads);

/// mpirun's command line up to `--app` (the appfile follows): tagged output,
/// the host file, --oversubscribe past `cores` ranks, OMP_NUM_THREADS
/// exported. On one machine each rank is bound to `threads` cores of its own
/// when the ranks' threads fit its `cores`; when they do not, nothing is
/// bound and OMP_WAIT_POLICY is exported (the launcher makes it passive). On
/// the hosts of a host file, `threads` is boundThreads: each rank is bound
/// to that many cores of its host, or nothing is bound when it is 0 or the
/// environment sets Open MPI's binding (OMPI_MCA_hwloc_base_binding_policy,
/// as scripts/cluster does for hosts that share this machine's cores).
std::vector<std::string> mpirunCommand(const std::string &mpirun,
                                       const std::string &hostfile, int ranks,
                                       long cores, long threads);

/// `--launcher srun`: one srun of every rank through --multi-prog, and
/// with a host file the placement through SLURM_HOSTFILE.
struct SrunCommand {
  std::vector<std::string> argv;
  /// --multi-prog's file: "RANK PROGRAM ARGS" a line.
  std::string confPath, conf;
  /// SLURM_HOSTFILE's, a host a rank; empty without a host file.
  std::string hostsPath, hosts;
};
SrunCommand srunCommand(const LaunchJob &job);

//===----------------------------------------------------------------------===//
// Following the job
//===----------------------------------------------------------------------===//

/// Splits mpirun's tagged output ("[1,3]<stderr>:text"), or srun's
/// labelled one ("3: text" on srun's stdout or stderr), back into per-rank
/// streams, printing every line as it arrives.
class OutputFollower {
public:
  /// Reads srun's labels instead of mpirun's tags.
  bool srunLabels = false;

  void feed(bool fromStderr, const char *data, size_t size);
  void finish();

  /// The last error-looking line a rank wrote to stderr, else its last
  /// stderr line.
  std::string lastMessage(int rank) const;
  /// mpirun's (srun's) own output (not from a rank): its failure reports.
  const std::string &launcherOutput() const { return launcher; }
  /// The first rank that printed an error-looking line, or -1.
  int firstRankWithError() const { return firstErrorRank; }

  /// Called with (rank, activity) for every heartbeat line a rank writes;
  /// those lines are not printed.
  std::function<void(int, const std::string &)> onHeartbeat;
  /// Called with (rank, line) for every line a rank writes to stdout, after
  /// printing it.
  std::function<void(int, const std::string &)> onStdout;

private:
  void handleLine(const std::string &line, bool fromStderr);
  void handleRankLine(int rank, bool fromStderr, const std::string &text);

  std::string pendingOut, pendingErr, launcher;
  std::map<int, std::string> lastStderr, lastError;
  int firstErrorRank = -1;
};

/// What mpirun (or srun: "srun: error: HOST: task 3: Exited with exit code
/// 1") says about the first rank that failed.
struct RankFailure {
  int rank = -1;
  std::string how; // "exited with code 3", "was killed by signal 9 (Killed)"
};
std::optional<RankFailure> findFailedRank(const std::string &launcherOutput);

/// Follows the ranks' heartbeats. A rank whose heartbeat stops for
/// `stallSeconds` is named, with what the others are doing; one silent for
/// `timeoutSeconds` ends the job.
class Watchdog {
public:
  using Clock = std::chrono::steady_clock;

  Watchdog(int ranks, double stallSeconds, double timeoutSeconds);

  void heartbeat(int rank, const std::string &activity);
  /// Checks the heartbeats; returns true once when the job must end.
  bool check();
  /// A rank whose heartbeat has stopped, or -1.
  int silentRank() const;
  /// Whether `rank` has been named silent.
  bool isSilent(int rank) const;
  int timedOut() const { return timedOutRank; }
  double silentSeconds() const { return silentFor; }

  static std::string seconds(double s);

private:
  struct Beat {
    bool seen = false, reported = false, done = false;
    Clock::time_point last;
    std::string activity;
  };
  std::string others(int silent) const;

  int ranks;
  double stallSeconds, timeoutSeconds;
  std::vector<Beat> beats;
  bool anyBeat = false;
  Clock::time_point firstBeat;
  int timedOutRank = -1;
  double silentFor = 0;
};

} // namespace dpc::runtime

#endif // DPC_RUNTIME_LAUNCHER_H
