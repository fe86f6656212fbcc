//===- LauncherMonitor.cpp - Following a running job ----------------------===//
//
// Output passes through live. mpirun runs with --tag-output so that every
// line says which rank wrote it; OutputFollower strips the tags before
// printing and keeps, for the failure summary, which rank failed first and
// the last error each rank printed, and findFailedRank reads mpirun's own
// account of the failure. The Watchdog reads the ranks' heartbeats, names a
// rank that stops answering and ends the job when one stays silent for the
// timeout; runAndFollow runs mpirun with both.
//
//===----------------------------------------------------------------------===//

#include "LauncherInternal.h"

#include "dpc/runtime/Heartbeat.h"

#include <cerrno>
#include <csignal>
#include <cstring>
#include <iostream>
#include <poll.h>
#include <regex>
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
    handleLine(pending.substr(0, newline));
    pending.erase(0, newline + 1);
  }
}

void OutputFollower::finish() {
  if (!pendingOut.empty())
    handleLine(pendingOut);
  if (!pendingErr.empty())
    handleLine(pendingErr);
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

void OutputFollower::handleLine(const std::string &line) {
  static const std::regex tag(R"(^\[\d+,(\d+)\]<(stdout|stderr)>:(.*)$)");
  std::smatch match;
  if (!std::regex_match(line, match, tag)) {
    // mpirun's own messages: kept for the failure summary and shown only
    // when they say something the summary does not.
    launcher += line + "\n";
    return;
  }
  int rank = std::stoi(match[1].str());
  std::string text = match[3].str();
  if (match[2] == "stdout") {
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

pid_t childPid = -1;

void forwardSignal(int signal) {
  if (childPid > 0)
    ::kill(childPid, signal);
}

} // namespace

namespace launcher_detail {

int runAndFollow(const std::vector<std::string> &argv, OutputFollower &out,
                 Watchdog &watchdog) {
  int outPipe[2], errPipe[2];
  if (::pipe(outPipe) != 0 || ::pipe(errPipe) != 0)
    return -1;
  std::vector<char *> cargv;
  for (const std::string &a : argv)
    cargv.push_back(const_cast<char *>(a.c_str()));
  cargv.push_back(nullptr);

  pid_t pid = ::fork();
  if (pid < 0)
    return -1;
  if (pid == 0) {
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
    } else if (endedAt &&
               Watchdog::Clock::now() - *endedAt > std::chrono::seconds(10)) {
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

} // namespace launcher_detail

} // namespace dpc::runtime
