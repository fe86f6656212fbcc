//===- LauncherMonitor.cpp - Following a running job ----------------------===//
//
// Output passes through live. mpirun runs with --tag-output (srun with
// --label) so that every line says which rank wrote it; OutputFollower
// strips the tags before
// printing and keeps, for the failure summary, which rank failed first and
// the last error each rank printed, and findFailedRank reads mpirun's own
// account of the failure. The Watchdog reads the ranks' heartbeats, names a
// rank that stops answering and ends the job when one stays silent for the
// timeout; runAndFollow runs mpirun (srun) with both, and followJob, the
// run of either, reports how the job ended.
//
//===----------------------------------------------------------------------===//

#include "LauncherInternal.h"

#include "dpc/runtime/Heartbeat.h"
#include "dpc/support/CommandLine.h"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <iostream>
#include <poll.h>
#include <regex>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

namespace dpc::runtime {

//===----------------------------------------------------------------------===//
// Following the job
//===----------------------------------------------------------------------===//

void OutputFollower::feed(bool fromStderr, const char *data, size_t size) {
  std::string &pending = fromStderr ? pendingErr : pendingOut;
  pending.append(data, size);
  size_t newline;
  while ((newline = pending.find('\n')) != std::string::npos) {
    handleLine(pending.substr(0, newline), fromStderr);
    pending.erase(0, newline + 1);
  }
}

void OutputFollower::finish() {
  if (!pendingOut.empty())
    handleLine(pendingOut, false);
  if (!pendingErr.empty())
    handleLine(pendingErr, true);
  pendingOut.clear();
  pendingErr.clear();
}

std::string OutputFollower::lastMessage(int rank) const {
  auto it = lastError.find(rank);
  if (it != lastError.end())
    return it->second;
  it = lastStderr.find(rank);
  return it == lastStderr.end() ? "" : it->second;
}

void OutputFollower::handleLine(const std::string &line, bool fromStderr) {
  static const std::regex tag(R"(^\[\d+,(\d+)\]<(stdout|stderr)>:(.*)$)");
  // srun pads the label to the width of the largest rank.
  static const std::regex label(R"(^ *(\d+): (.*)$)");
  std::smatch match;
  if (srunLabels && std::regex_match(line, match, label))
    return handleRankLine(std::stoi(match[1].str()), fromStderr,
                          match[2].str());
  if (!srunLabels && std::regex_match(line, match, tag))
    return handleRankLine(std::stoi(match[1].str()), match[2] == "stderr",
                          match[3].str());
  // mpirun's (srun's) own messages: kept for the failure summary and shown
  // only when they say something the summary does not.
  launcher += line + "\n";
}

void OutputFollower::handleRankLine(int rank, bool fromStderr,
                                    const std::string &text) {
  if (!fromStderr) {
    std::cout << text << "\n" << std::flush;
    if (onStdout)
      onStdout(rank, text);
    return;
  }
  if (text.rfind(kHeartbeatPrefix, 0) == 0) {
    if (onHeartbeat)
      onHeartbeat(rank, text.substr(std::strlen(kHeartbeatPrefix)));
    return;
  }
  std::cerr << text << "\n" << std::flush;
  if (!text.empty())
    lastStderr[rank] = text;
  if (text.find("error") != std::string::npos) {
    lastError[rank] = text;
    if (firstErrorRank < 0)
      firstErrorRank = rank;
  }
}

std::optional<RankFailure> findFailedRank(const std::string &launcher) {
  std::smatch m;
  static const std::regex abortRe(
      R"(MPI_ABORT was invoked on rank (\d+) in communicator \S+\s+with errorcode (-?\d+))");
  if (std::regex_search(launcher, m, abortRe))
    return RankFailure{std::stoi(m[1].str()),
                       "aborted with error code " + m[2].str()};
  static const std::regex exitRe(
      R"(Process name: \[\[\d+,\d+\],(\d+)\]\s+Exit code:\s+(-?\d+))");
  if (std::regex_search(launcher, m, exitRe))
    return RankFailure{std::stoi(m[1].str()), "exited with code " + m[2].str()};
  static const std::regex signalRe(
      R"(process rank (\d+) with PID \d+ on node \S+ exited on signal (\d+)( \(([^)]*)\))?)");
  if (std::regex_search(launcher, m, signalRe))
    return RankFailure{std::stoi(m[1].str()),
                       "was killed by signal " + m[2].str() +
                           (m[4].matched ? " (" + m[4].str() + ")" : "")};
  // srun, the first of its reports: "srun: error: h1: task 3: Exited with
  // exit code 1", "...: tasks 0-1: Killed".
  static const std::regex srunRe(
      R"(srun: error: \S+: tasks? (\d+)[^:]*: (Exited with exit code (-?\d+)|.*))");
  if (std::regex_search(launcher, m, srunRe))
    return RankFailure{std::stoi(m[1].str()),
                       m[3].matched ? "exited with code " + m[3].str()
                                    : "was ended (srun: " + m[2].str() + ")"};
  return std::nullopt;
}

Watchdog::Watchdog(int ranks, double stallSeconds, double timeoutSeconds)
    : ranks(ranks), stallSeconds(stallSeconds), timeoutSeconds(timeoutSeconds),
      beats(size_t(ranks)) {}

void Watchdog::heartbeat(int rank, const std::string &activity) {
  if (rank < 0 || rank >= ranks)
    return;
  Beat &b = beats[size_t(rank)];
  b.seen = true;
  b.last = Clock::now();
  b.activity = activity;
  if (activity == "done")
    b.done = true;
  if (!anyBeat) {
    anyBeat = true;
    firstBeat = b.last;
  }
  // Once the job is being ended, a stopped rank that mpirun continues only
  // to terminate it has not recovered.
  if (b.reported && timedOutRank < 0) {
    b.reported = false;
    std::cout << "watchdog: rank " << rank << " answers again\n" << std::flush;
  }
}

bool Watchdog::check() {
  if (!anyBeat || timedOutRank >= 0)
    return false;
  Clock::time_point now = Clock::now();
  for (int r = 0; r < ranks; ++r) {
    Beat &b = beats[size_t(r)];
    if (b.done)
      continue;
    double silent =
        std::chrono::duration<double>(now - (b.seen ? b.last : firstBeat))
            .count();
    if (silent >= stallSeconds && !b.reported) {
      b.reported = true;
      std::cout << "watchdog: rank " << r << " has not answered for "
                << seconds(silent) << others(r) << "\n"
                << std::flush;
    }
    if (silent >= timeoutSeconds) {
      timedOutRank = r;
      silentFor = silent;
      return true;
    }
  }
  return false;
}

int Watchdog::silentRank() const {
  for (int r = 0; r < ranks; ++r)
    if (beats[size_t(r)].reported)
      return r;
  return -1;
}

bool Watchdog::isSilent(int rank) const {
  return rank >= 0 && rank < ranks && beats[size_t(rank)].reported;
}

std::string Watchdog::seconds(double s) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.0f s", s);
  return text;
}

/// "; rank 0 waits to receive from rank 1 (step 3, act mb 2); ..."
std::string Watchdog::others(int silent) const {
  std::string text;
  for (int r = 0; r < ranks; ++r) {
    const Beat &b = beats[size_t(r)];
    if (r != silent && b.seen && !b.reported)
      text += "; rank " + std::to_string(r) + " " + b.activity;
  }
  return text;
}

namespace {

/// The running launch command (mpirun, srun), for the signal handlers and
/// signalRunningJob's threads.
std::atomic<pid_t> childPid{-1};

void forwardSignal(int signal) {
  pid_t pid = childPid.load();
  if (pid > 0)
    ::kill(pid, signal);
}

} // namespace

namespace launcher_detail {

void signalRunningJob(int signal) { forwardSignal(signal); }

int runAndFollow(const std::vector<std::string> &argv, OutputFollower &out,
                 Watchdog &watchdog, int graceSeconds) {
  int outPipe[2], errPipe[2];
  if (::pipe(outPipe) != 0 || ::pipe(errPipe) != 0)
    return -1;
  std::vector<char *> cargv;
  for (const std::string &a : argv)
    cargv.push_back(const_cast<char *>(a.c_str()));
  cargv.push_back(nullptr);

  pid_t parent = ::getpid();
  pid_t pid = ::fork();
  if (pid < 0)
    return -1;
  if (pid == 0) {
    // dpc run killed (kill -9, its terminal gone) must not leave the job
    // running: mpirun (srun) gets a TERM when dpc run dies and takes the
    // ranks down on every host. A parent gone before the request is seen
    // by getppid.
    ::prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (::getppid() != parent)
      ::_exit(1);
    ::dup2(outPipe[1], STDOUT_FILENO);
    ::dup2(errPipe[1], STDERR_FILENO);
    ::close(outPipe[0]);
    ::close(outPipe[1]);
    ::close(errPipe[0]);
    ::close(errPipe[1]);
    ::execv(cargv[0], cargv.data());
    std::fprintf(stderr, "cannot run %s: %s\n", cargv[0], std::strerror(errno));
    ::_exit(127);
  }
  childPid = pid;
  ::close(outPipe[1]);
  ::close(errPipe[1]);
  // Ctrl-C reaches mpirun directly (same process group) and it takes the
  // ranks down; dpc run waits for that instead of dying first. A TERM sent
  // to dpc run alone is passed on.
  struct sigaction ignore = {}, forward = {}, oldInt = {}, oldTerm = {};
  ignore.sa_handler = SIG_IGN;
  forward.sa_handler = forwardSignal;
  ::sigaction(SIGINT, &ignore, &oldInt);
  ::sigaction(SIGTERM, &forward, &oldTerm);

  pollfd fds[2] = {{outPipe[0], POLLIN, 0}, {errPipe[0], POLLIN, 0}};
  int open = 2;
  char buffer[8192];
  std::optional<Watchdog::Clock::time_point> endedAt;
  while (open > 0) {
    int ready = ::poll(fds, 2, 250);
    if (!endedAt && watchdog.check()) {
      endedAt = Watchdog::Clock::now();
      ::kill(pid, SIGTERM);
    } else if (endedAt && Watchdog::Clock::now() - *endedAt >
                              std::chrono::seconds(graceSeconds)) {
      ::kill(pid, SIGKILL);
      endedAt = Watchdog::Clock::now();
    }
    if (ready == 0)
      continue;
    if (ready < 0) {
      if (errno == EINTR)
        continue;
      break;
    }
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR)))
        continue;
      ssize_t n = ::read(fds[i].fd, buffer, sizeof(buffer));
      if (n > 0) {
        out.feed(i == 1, buffer, size_t(n));
      } else if (n == 0 || errno != EINTR) {
        ::close(fds[i].fd);
        fds[i].fd = -1;
        --open;
      }
    }
  }
  out.finish();
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  childPid = -1;
  ::sigaction(SIGINT, &oldInt, nullptr);
  ::sigaction(SIGTERM, &oldTerm, nullptr);
  return status;
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

/// " on host HOST" for a rank of a host file job, saying when the host's
/// other ranks are silent too: a host whose network went down silences all
/// of its ranks.
std::string onHost(const LaunchJob &job, const Watchdog &watchdog, int rank) {
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
}

/// Throws what ended a failed job (wait status `status`), named as well as
/// the watchdog, the launch command's report and the ranks' output allow.
[[noreturn]] void reportFailure(const LaunchOptions &options,
                                const LaunchJob &job, int status,
                                const OutputFollower &follower,
                                const Watchdog &watchdog,
                                double timeoutSeconds) {
  const std::string &name = options.launcher;
  // A rank that stopped answering is the cause, whatever the launch
  // command says of the ranks it then killed or that gave up waiting for
  // it. With a host file, the silent rank's host too.
  std::string stalled;
  if (watchdog.timedOut() >= 0)
    stalled = "rank " + std::to_string(watchdog.timedOut()) +
              onHost(job, watchdog, watchdog.timedOut()) +
              " has not answered for " +
              Watchdog::seconds(watchdog.silentSeconds()) + " (--timeout " +
              Watchdog::seconds(timeoutSeconds) + "); the job was ended";
  else if (watchdog.silentRank() >= 0)
    stalled = "rank " + std::to_string(watchdog.silentRank()) +
              onHost(job, watchdog, watchdog.silentRank()) +
              " had stopped answering";

  std::string how = WIFEXITED(status)
                        ? "exit code " + std::to_string(WEXITSTATUS(status))
                        : "signal " + std::to_string(WTERMSIG(status));
  std::optional<RankFailure> failure =
      findFailedRank(follower.launcherOutput());
  // The launch command does not always get to print which process failed
  // first (under load mpirun may exit right after killing the others); the
  // first rank that reported an error is then the best guess.
  if (!failure && follower.firstRankWithError() >= 0)
    failure = RankFailure{follower.firstRankWithError(),
                          "failed (" + name + " " + how + ")"};
  if ((!failure && stalled.empty()) || options.verbose)
    std::cerr << follower.launcherOutput();
  if (watchdog.timedOut() >= 0)
    throw RankLostError(stalled, watchdog.timedOut());
  if (!failure && watchdog.silentRank() >= 0)
    throw RankLostError(stalled + " (" + name + " " + how + ")",
                        watchdog.silentRank());
  if (!failure)
    throw Error(name + " failed (" + how + ")");
  std::string message =
      trimMessage(follower.lastMessage(failure->rank), failure->rank);
  std::string what = (stalled.empty() ? "" : stalled + ": ") + "rank " +
                     std::to_string(failure->rank) + " " + failure->how +
                     (message.empty() ? "" : ": " + message);
  // A rank refusing its input (a bad option value, an unusable checkpoint
  // directory) aborts with the usage code, and so does the job.
  if (WIFEXITED(status) && WEXITSTATUS(status) == cli::kUsageError)
    throw InputError(what);
  if (!stalled.empty() || failure->how.rfind("was killed by signal", 0) == 0)
    throw RankLostError(what, watchdog.silentRank() >= 0 ? watchdog.silentRank()
                                                         : failure->rank);
  throw Error(what);
}

} // namespace

int followJob(const LaunchOptions &options, const RankOptions &rankOptions,
              const std::vector<std::string> &argv, const LaunchJob &job,
              const std::string &summaryPath, const std::string &planPath,
              int shared, const StdoutHook &onStdout) {
  const int ranks = job.ranks();
  const std::string &trace = rankOptions.trace;
  OutputFollower follower;
  follower.srunLabels = options.launcher == "srun";
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
  // srun, told to end a step, waits KillWait (30 s by default) for the
  // ranks of a host it cannot reach; they are not waited for (the staged
  // job's hosts are cleared through the agent after the run). mpirun ends
  // its ranks, a host's silent ones included, within its own bounds.
  int graceSeconds = options.launcher == "srun" ? 2 : 10;
  int status = runAndFollow(argv, follower, watchdog, graceSeconds);
  int startErrno = errno;
  // What fails after the run is thrown after a success (as an Error: exit
  // 1, whatever plan.json's readers threw) and only printed after a failure.
  std::string collected;
  try {
    if (job.afterRun)
      job.afterRun();
  } catch (const Error &e) {
    collected = e.what();
  }
  if (status != -1 && WIFEXITED(status) && WEXITSTATUS(status) == 0) {
    std::string error = collected;
    try {
      if (!trace.empty() && error.empty())
        mergeTraces(trace, ranks);
      if (!summaryPath.empty() && error.empty())
        recordStepTime(summaryPath, planPath, shared);
    } catch (const Error &e) {
      error = e.what();
    }
    if (!summaryPath.empty())
      ::unlink(summaryPath.c_str());
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
    throw Error("cannot start " + options.launcher + ": " +
                std::strerror(startErrno));
  reportFailure(options, job, status, follower, watchdog, timeoutSeconds);
}

} // namespace launcher_detail

} // namespace dpc::runtime
