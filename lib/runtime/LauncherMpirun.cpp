//===- LauncherMpirun.cpp - Launching the ranks under mpirun --------------===//
//
// The mpirun command line and appfile, and the run under it. The launcher
// adds what a user would otherwise have to know about mpirun: the
// environment that lets it run as root, --oversubscribe when there are more
// ranks than cores, cores bound per rank when the ranks' threads fit the
// machine, and program paths that work from any directory. mpirun itself
// ends the job when one rank exits non-zero, aborts or dies, so nothing is
// left hanging; runMpirun then names the rank that failed first and its last
// error.
//
//===----------------------------------------------------------------------===//

#include "LauncherInternal.h"

#include "dpc/support/CommandLine.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <map>
#include <sstream>
#include <sys/wait.h>
#include <unistd.h>

namespace dpc::runtime {

std::string mpirunAppfile(const LaunchJob &job) {
  std::ostringstream appfile;
  int ranks = 0;
  for (size_t l = 0; l < job.lines.size(); ++l) {
    const AppLine &line = job.lines[l];
    if (!job.placement.empty()) {
      // HOST:SLOTS, each host of the line's ranks once: Open MPI fills the
      // slots in order as placeRanks did, counting what earlier lines took
      // (a bare HOST would mean one slot).
      std::string list;
      for (int r = ranks; r < ranks + line.ranks; ++r) {
        if (r > ranks && job.placement[r] == job.placement[r - 1])
          continue;
        for (const HostSlots &h : job.hosts)
          if (h.host == job.placement[r])
            list += (list.empty() ? "" : ",") + h.host + ":" +
                    std::to_string(h.slots);
      }
      appfile << "--host " << list << " ";
    }
    ranks += line.ranks;
    // A line's own -x overrides mpirun's for its ranks (Open MPI 4.1).
    if (l < job.lineThreads.size())
      appfile << "-x OMP_NUM_THREADS=" << job.lineThreads[l] << " ";
    if (!job.workDir.empty())
      appfile << "--wdir " << job.workDir << " ";
    for (const std::string &o : line.mpirunOptions)
      appfile << o << " ";
    appfile << resolveProgram(job.runDir.empty() ? job.outDir : job.runDir,
                              line.program);
    for (const std::string &a : line.programArgs)
      appfile << " " << a;
    for (const std::string &a : job.rankArgs)
      appfile << " " << a;
    appfile << "\n";
  }
  return appfile.str();
}

bool threadsFitCores(const std::string &hostfile, int ranks, long cores,
                     long threads) {
  return hostfile.empty() && cores > 0 && threads > 0 &&
         ranks * threads <= cores;
}

long threadsPerRank(int ranks, long cores) {
  if (const char *user = std::getenv("OMP_NUM_THREADS"))
    return std::atol(user);
  return std::max<long>(1, cores > 0 ? cores / ranks : 1);
}

namespace {

/// The ranks placed on each host.
std::map<std::string, int> ranksPerHost(const LaunchJob &job) {
  std::map<std::string, int> count;
  for (const std::string &host : job.placement)
    ++count[host];
  return count;
}

int slotsOf(const LaunchJob &job, const std::string &host) {
  for (const HostSlots &h : job.hosts)
    if (h.host == host)
      return h.slots;
  return 1;
}

} // namespace

std::vector<long> hostThreads(const LaunchJob &job, long userThreads) {
  std::map<std::string, int> placed = ranksPerHost(job);
  std::vector<long> threads;
  int first = 0;
  for (const AppLine &line : job.lines) {
    long least = 0;
    for (int r = first; r < first + line.ranks && r < int(job.placement.size());
         ++r) {
      const std::string &host = job.placement[r];
      long share = std::max(1, slotsOf(job, host) / placed[host]);
      least = least == 0 ? share : std::min(least, share);
    }
    threads.push_back(userThreads > 0 ? userThreads : std::max(1L, least));
    first += line.ranks;
  }
  return threads;
}

long boundThreads(const LaunchJob &job) {
  if (job.lineThreads.empty())
    return 0;
  long common = job.lineThreads.front();
  for (long t : job.lineThreads)
    if (t != common)
      return 0;
  for (const auto &[host, ranks] : ranksPerHost(job))
    if (ranks * common > slotsOf(job, host))
      return 0;
  return common;
}

int sharedCores(const std::string &hostfile, int ranks, long cores,
                long threads) {
  if (!hostfile.empty() || threadsFitCores(hostfile, ranks, cores, threads))
    return 0;
  return int(std::max(1L, cores / std::max(1L, threads)));
}

std::vector<std::string> mpirunCommand(const std::string &mpirun,
                                       const std::string &hostfile, int ranks,
                                       long cores, long threads) {
  std::vector<std::string> argv = {mpirun, "--tag-output"};
  if (!hostfile.empty()) {
    argv.push_back("--hostfile");
    argv.push_back(hostfile);
  }
  // Open MPI counts slots by cores and refuses to start more ranks than
  // that unless told.
  if (cores > 0 && ranks > cores)
    argv.push_back("--oversubscribe");
  argv.push_back("-x");
  argv.push_back("OMP_NUM_THREADS");
  if (threadsFitCores(hostfile, ranks, cores, threads)) {
    // The ranks' threads fit the machine: each rank gets cores of its own,
    // as many as its threads, so no rank's threads run on another's cores.
    argv.push_back("--map-by");
    argv.push_back("slot:PE=" + std::to_string(threads));
    argv.push_back("--bind-to");
    argv.push_back("core");
  } else if (hostfile.empty()) {
    // More threads than cores: nothing is bound (the kernel shares the
    // cores, as the simulator's --cores assumes), and OpenMP threads with
    // nothing to do sleep instead of spinning on a core another rank needs.
    argv.push_back("-x");
    argv.push_back("OMP_WAIT_POLICY");
    argv.push_back("--bind-to");
    argv.push_back("none");
  } else if (std::getenv("OMPI_MCA_hwloc_base_binding_policy")) {
    // The user (or scripts/cluster) chose Open MPI's binding.
  } else if (threads > 0) {
    // Hosts of a host file whose ranks' threads fit their slots: each rank
    // on cores of its own on its host, as many as its threads.
    argv.push_back("--map-by");
    argv.push_back("slot:PE=" + std::to_string(threads));
    argv.push_back("--bind-to");
    argv.push_back("core");
  } else {
    // Thread counts that differ between lines, or more than the slots:
    // nothing is bound (Open MPI would bind each rank to one core).
    argv.push_back("--bind-to");
    argv.push_back("none");
  }
  argv.push_back("--app");
  return argv;
}

namespace {

/// Drops a leading "rank N: " and "error: " from a rank's message, since the
/// summary says both already.
std::string trimMessage(std::string text, int rank) {
  std::string prefix = "rank " + std::to_string(rank) + ": ";
  if (text.rfind(prefix, 0) == 0)
    text.erase(0, prefix.size());
  if (text.rfind("error: ", 0) == 0)
    text.erase(0, 7);
  return text;
}

} // namespace

namespace launcher_detail {

int runMpirun(const LaunchOptions &options, const RankOptions &rankOptions,
              std::vector<std::string> argv, const LaunchJob &job,
              const std::string &summaryPath, const std::string &planPath,
              int shared, const StdoutHook &onStdout) {
  // The rewritten appfile: absolute programs, forwarded options.
  char tempPath[] = "/tmp/dpc-run-appfile-XXXXXX";
  int fd = ::mkstemp(tempPath);
  if (fd < 0)
    throw Error(std::string("cannot create a temporary appfile: ") +
                std::strerror(errno));
  std::string text = mpirunAppfile(job);
  bool written = ::write(fd, text.data(), text.size()) == ssize_t(text.size());
  ::close(fd);
  if (!written) {
    ::unlink(tempPath);
    throw Error(std::string(tempPath) + ": write failed");
  }
  argv.push_back(tempPath);

  if (::geteuid() == 0) {
    // mpirun refuses to run as root (containers, CI) without both.
    ::setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 1);
    ::setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 1);
  }

  const int ranks = job.ranks();
  const std::string &trace = rankOptions.trace;
  OutputFollower follower;
  // A rank silent for 5 s is named (sooner with a shorter --timeout); one
  // silent for the timeout ends the job. Ranks that are not dpc's (no
  // plan.json) write no heartbeat and are not watched.
  double timeoutSeconds = rankOptions.timeoutSeconds > 0
                              ? rankOptions.timeoutSeconds
                              : kDefaultTimeoutSeconds;
  Watchdog watchdog(ranks, std::min(5.0, timeoutSeconds), timeoutSeconds);
  follower.onHeartbeat = [&](int rank, const std::string &activity) {
    watchdog.heartbeat(rank, activity);
  };
  follower.onStdout = onStdout;
  if (!summaryPath.empty())
    ::unlink(summaryPath.c_str());
  int status = runAndFollow(argv, follower, watchdog);
  int startErrno = errno;
  ::unlink(tempPath);
  std::string collected = job.afterRun ? job.afterRun() : "";
  if (status != -1 && WIFEXITED(status) && WEXITSTATUS(status) == 0) {
    std::string error = collected;
    if (!trace.empty() && error.empty())
      error = mergeTraces(trace, ranks);
    if (!summaryPath.empty()) {
      if (error.empty())
        error = recordStepTime(summaryPath, planPath, shared);
      ::unlink(summaryPath.c_str());
    }
    if (!error.empty())
      throw Error(error);
    return 0;
  }
  if (!collected.empty())
    std::cerr << kCommand << ": " << collected << "\n";
  // A failed run leaves no trace and no step times.
  if (!trace.empty())
    removeTraceParts(trace, ranks);
  if (!summaryPath.empty())
    ::unlink(summaryPath.c_str());
  if (status == -1)
    throw Error(std::string("cannot start mpirun: ") +
                std::strerror(startErrno));

  // A rank that stopped answering is the cause, whatever mpirun says of the
  // ranks it then killed or that gave up waiting for it.
  // With a host file, the silent rank's host too: a host whose network
  // went down silences all of its ranks.
  auto onHost = [&](int rank) {
    if (rank >= int(job.placement.size()))
      return std::string();
    const std::string &host = job.placement[rank];
    std::string others;
    bool all = true;
    for (int r = 0; r < int(job.placement.size()); ++r)
      if (job.placement[r] == host && r != rank) {
        others += (others.empty() ? "" : ", ") + std::to_string(r);
        all = all && watchdog.isSilent(r);
      }
    std::string text = " on host " + host;
    if (!others.empty() && all)
      text += " (its other ranks, " + others +
              ", are silent too: the host or its network is down)";
    return text;
  };
  std::string stalled;
  if (watchdog.timedOut() >= 0)
    stalled = "rank " + std::to_string(watchdog.timedOut()) +
              onHost(watchdog.timedOut()) + " has not answered for " +
              Watchdog::seconds(watchdog.silentSeconds()) + " (--timeout " +
              Watchdog::seconds(timeoutSeconds) + "); the job was ended";
  else if (watchdog.silentRank() >= 0)
    stalled = "rank " + std::to_string(watchdog.silentRank()) +
              onHost(watchdog.silentRank()) + " had stopped answering";

  std::string how = WIFEXITED(status)
                        ? "exit code " + std::to_string(WEXITSTATUS(status))
                        : "signal " + std::to_string(WTERMSIG(status));
  std::optional<RankFailure> failure =
      findFailedRank(follower.launcherOutput());
  // mpirun does not always get to print which process failed first (under
  // load it may exit right after killing the others); the first rank that
  // reported an error is then the best guess.
  if (!failure && follower.firstRankWithError() >= 0)
    failure = RankFailure{follower.firstRankWithError(),
                          "failed (mpirun " + how + ")"};
  if ((!failure && stalled.empty()) || options.verbose)
    std::cerr << follower.launcherOutput();
  if (watchdog.timedOut() >= 0)
    throw Error(stalled);
  if (!failure)
    throw Error(stalled.empty() ? "mpirun failed (" + how + ")"
                                : stalled + " (mpirun " + how + ")");
  std::string message =
      trimMessage(follower.lastMessage(failure->rank), failure->rank);
  std::string what = (stalled.empty() ? "" : stalled + ": ") + "rank " +
                     std::to_string(failure->rank) + " " + failure->how +
                     (message.empty() ? "" : ": " + message);
  // A rank refusing its input (a bad option value, an unusable checkpoint
  // directory) aborts with the usage code, and so does the job.
  if (WIFEXITED(status) && WEXITSTATUS(status) == cli::kUsageError)
    throw InputError(what);
  throw Error(what);
}

} // namespace launcher_detail

} // namespace dpc::runtime
