//===- Launcher.cpp - Launching the ranks of a compiled pipeline ----------===//
//
// `dpc run`'s launcher (include/dpc/runtime/Launcher.h). It adds what a user
// would otherwise have to know about mpirun: the environment that lets it
// run as root, --oversubscribe when there are more ranks than cores, program
// paths that work from any directory, and host placement in stage order.
//
// Output passes through live. mpirun runs with --tag-output so that every
// line says which rank wrote it; the tags are stripped before printing and
// used to report, when the job fails, which rank failed first and the last
// error that rank printed. mpirun itself ends the job when one rank exits
// non-zero, aborts or dies, so nothing is left hanging.
//
// After a successful run the launcher gathers what the ranks wrote apart:
// the per-rank traces of --trace FILE become one Chrome trace FILE (the
// ranks share a time origin), and the last stage's step times, compared
// with the step time `dpc compile` predicted, go into OUT/plan.json as
// "measured".
//
//===----------------------------------------------------------------------===//

#include "dpc/runtime/Launcher.h"

#include "dpc/planner/PlanJson.h"
#include "dpc/runtime/Adapt.h"
#include "dpc/runtime/Heartbeat.h"
#include "dpc/schedule/Simulator.h"
#include "dpc/schedule/Timeline.h"
#include "dpc/support/CommandLine.h"
#include "dpc/support/WriteFile.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <poll.h>
#include <regex>
#include <sstream>
#include <sys/stat.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

namespace dpc::runtime {

namespace {

constexpr const char *kCommand = "dpc run";
/// The ranks' own wait timeout when --timeout is not given
/// (runtime::Communicator).
constexpr double kDefaultTimeoutSeconds = 600;

int fail(const std::string &message) {
  std::cerr << kCommand << ": " << message << "\n";
  return 1;
}

bool isDirectory(const std::string &path) {
  struct stat info;
  return ::stat(path.c_str(), &info) == 0 && S_ISDIR(info.st_mode);
}

bool isRegularFile(const std::string &path) {
  struct stat info;
  return ::stat(path.c_str(), &info) == 0 && S_ISREG(info.st_mode);
}

std::string absolutePath(const std::string &path) {
  if (!path.empty() && path[0] == '/')
    return path;
  char cwd[4096];
  if (!::getcwd(cwd, sizeof(cwd)))
    return path;
  return std::string(cwd) + "/" + path;
}

/// This program (dpc), which `dpc run --adapt` runs as `dpc compile`.
std::string executablePath() {
  char path[4096];
  ssize_t n = ::readlink("/proc/self/exe", path, sizeof path - 1);
  return n > 0 ? std::string(path, size_t(n)) : "dpc";
}

/// Finds `name` on PATH the way execvp would; "" when it is not there.
std::string findProgram(const std::string &name) {
  if (name.find('/') != std::string::npos)
    return ::access(name.c_str(), X_OK) == 0 ? name : "";
  const char *path = std::getenv("PATH");
  std::stringstream dirs(path ? path : "/usr/bin:/bin");
  std::string dir;
  while (std::getline(dirs, dir, ':')) {
    std::string candidate = (dir.empty() ? "." : dir) + "/" + name;
    if (isRegularFile(candidate) && ::access(candidate.c_str(), X_OK) == 0)
      return candidate;
  }
  return "";
}

/// mpirun options that take one value and may appear on an appfile line.
bool takesOneValue(const std::string &option) {
  static const char *const kOptions[] = {
      "-np",        "--np",     "-n",        "-c",        "-x",
      "-H",         "-host",    "--host",    "-wdir",     "--wdir",
      "-wd",        "--map-by", "--bind-to", "--rank-by", "-hostfile",
      "--hostfile", "-path",    "--path",    "--prefix",  "-machinefile"};
  for (const char *o : kOptions)
    if (option == o)
      return true;
  return false;
}

bool takesTwoValues(const std::string &option) {
  return option == "-mca" || option == "--mca" || option == "-gmca" ||
         option == "--gmca";
}

std::vector<std::string> splitWords(const std::string &line) {
  std::istringstream in(line);
  std::vector<std::string> words;
  std::string word;
  while (in >> word)
    words.push_back(word);
  return words;
}

std::string joinCommand(const std::vector<std::string> &argv) {
  std::string text;
  for (const std::string &a : argv)
    text += (text.empty() ? "" : " ") + a;
  return text;
}

} // namespace

/// What is wrong with `path` as a program to launch, or "": it must be an
/// ELF image whose header's program and section tables lie inside the file,
/// or a "#!" script. A rank executable overwritten with anything else, or
/// truncated, would otherwise fail inside mpirun or crash at load, and
/// mpirun names neither the rank nor the file.
std::string programProblem(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  unsigned char head[64] = {};
  in.read(reinterpret_cast<char *>(head), sizeof(head));
  std::streamsize got = in.gcount();
  if (got >= 2 && head[0] == '#' && head[1] == '!')
    return "";
  if (got < 4 || std::memcmp(head,
                             "\x7f"
                             "ELF",
                             4) != 0)
    return "is not a program (no ELF header)";
  // ELF64, little-endian: the only kind this host runs.
  if (got < 64 || head[4] != 2 || head[5] != 1)
    return "is not a 64-bit little-endian ELF program";
  auto field = [&](int offset, int bytes) {
    uint64_t value = 0;
    for (int i = bytes - 1; i >= 0; --i)
      value = value << 8 | head[offset + i];
    return value;
  };
  uint64_t tablesEnd =
      std::max(field(0x20, 8) + field(0x38, 2) * field(0x36, 2),  // programs
               field(0x28, 8) + field(0x3C, 2) * field(0x3A, 2)); // sections
  struct stat info;
  if (::stat(path.c_str(), &info) != 0)
    return std::string("cannot be read: ") + std::strerror(errno);
  if (uint64_t(info.st_size) < tablesEnd)
    return "is truncated (its ELF header needs " + std::to_string(tablesEnd) +
           " bytes, the file has " + std::to_string(info.st_size) + ")";
  return "";
}

//===----------------------------------------------------------------------===//
// The appfile
//===----------------------------------------------------------------------===//

/// Parses OUT/appfile; on failure returns an error message naming the file
/// and line.
std::string parseAppfile(const std::string &path, std::vector<AppLine> &lines) {
  std::ifstream in(path);
  if (!in)
    return path + ": " + std::strerror(errno);
  std::string text;
  for (int number = 1; std::getline(in, text); ++number) {
    std::vector<std::string> words = splitWords(text);
    if (words.empty() || words[0][0] == '#')
      continue;
    AppLine line;
    line.lineNumber = number;
    size_t i = 0;
    for (; i < words.size() && words[i][0] == '-'; ++i) {
      const std::string &option = words[i];
      size_t values = takesTwoValues(option)  ? 2
                      : takesOneValue(option) ? 1
                                              : 0;
      if (i + values >= words.size())
        return path + ":" + std::to_string(number) + ": option '" + option +
               "' without its value";
      line.mpirunOptions.push_back(option);
      for (size_t v = 1; v <= values; ++v)
        line.mpirunOptions.push_back(words[i + v]);
      if (option == "-np" || option == "--np" || option == "-n") {
        char *end = nullptr;
        long n = std::strtol(words[i + 1].c_str(), &end, 10);
        if (*end != '\0' || n <= 0)
          return path + ":" + std::to_string(number) + ": bad rank count '" +
                 words[i + 1] + "'";
        line.ranks = int(n);
      }
      i += values;
    }
    if (i == words.size())
      return path + ":" + std::to_string(number) + ": no program to run";
    line.program = words[i];
    line.programArgs.assign(words.begin() + long(i) + 1, words.end());
    lines.push_back(std::move(line));
  }
  if (lines.empty())
    return path + ": no ranks to launch";
  return "";
}

//===----------------------------------------------------------------------===//
// Host files and rank placement
//===----------------------------------------------------------------------===//

/// Reads an Open MPI host file: `HOST [slots=N] [max_slots=N]` a line,
/// `#` comments, blank lines. A host named twice adds its slots. On failure
/// returns one line naming the file and line.
std::string parseHostfile(const std::string &path,
                          std::vector<HostSlots> &hosts) {
  std::ifstream in(path);
  if (!in)
    return path + ": " + std::strerror(errno);
  std::string text;
  for (int number = 1; std::getline(in, text); ++number) {
    std::string at = path + ":" + std::to_string(number) + ": ";
    text = text.substr(0, text.find('#'));
    std::vector<std::string> words = splitWords(text);
    if (words.empty())
      continue;
    if (words[0].find('=') != std::string::npos)
      return at + "expected a host name before '" + words[0] + "'";
    HostSlots entry{words[0], 1};
    for (size_t i = 1; i < words.size(); ++i) {
      size_t eq = words[i].find('=');
      std::string key = words[i].substr(0, eq);
      if (eq == std::string::npos ||
          (key != "slots" && key != "max_slots" && key != "max-slots"))
        return at + "expected slots=N or max_slots=N, not '" + words[i] + "'";
      std::string value = words[i].substr(eq + 1);
      char *end = nullptr;
      long n = std::strtol(value.c_str(), &end, 10);
      if (value.empty() || *end != '\0' || n <= 0 || n > 1 << 20)
        return at + key + " expects a positive integer, not '" + value + "'";
      if (key == "slots")
        entry.slots = int(n);
    }
    auto same = std::find_if(hosts.begin(), hosts.end(), [&](const auto &h) {
      return h.host == entry.host;
    });
    if (same != hosts.end())
      same->slots += entry.slots;
    else
      hosts.push_back(entry);
  }
  if (hosts.empty())
    return path + ": no hosts";
  return "";
}

/// The host of every rank: ranks in order (the appfile's, which is stage
/// order) fill each host's slots before the next host's, so neighbouring
/// stages, which exchange every microbatch, share a host where they can.
std::vector<std::string> placeRanks(const std::vector<HostSlots> &hosts,
                                    int ranks) {
  std::vector<std::string> placement;
  for (const HostSlots &h : hosts)
    for (int k = 0; k < h.slots && int(placement.size()) < ranks; ++k)
      placement.push_back(h.host);
  return placement;
}

/// Resolves a program path of the appfile against OUT/, where `dpc compile`
/// put the executables; mpirun would resolve it against the current
/// directory instead, which breaks `dpc run` from anywhere but OUT/.
std::string resolveProgram(const std::string &outDir,
                           const std::string &program) {
  if (!program.empty() && program[0] == '/')
    return program;
  std::string relative = program;
  while (relative.rfind("./", 0) == 0)
    relative.erase(0, 2);
  std::string candidate = outDir + "/" + relative;
  if (program.find('/') != std::string::npos || isRegularFile(candidate))
    return candidate;
  return program; // a bare name found on PATH, like `hostname`
}

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

pid_t childPid = -1;

void forwardSignal(int signal) {
  if (childPid > 0)
    ::kill(childPid, signal);
}

/// Runs `argv`, following its stdout and stderr; returns its wait status.
/// When the watchdog says so, ends mpirun (which takes the ranks down,
/// stopped ones included) and, should that not do, kills it.
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

//===----------------------------------------------------------------------===//
// After the run: the merged trace and the measured step time
//===----------------------------------------------------------------------===//

void removeTraceParts(const std::string &trace, int ranks) {
  for (int r = 0; r < ranks; ++r)
    ::unlink(support::perRankPath(trace, r).c_str());
}

/// Merges the ranks' traces (FILE.rankK) into one Chrome trace FILE, one
/// track per rank; the ranks took their time origins together. The parts are
/// removed either way.
std::string mergeTraces(const std::string &trace, int ranks) {
  schedule::Timeline merged;
  merged.ranks = ranks;
  std::string error;
  for (int r = 0; r < ranks && error.empty(); ++r) {
    schedule::Timeline part;
    error = schedule::readChromeTraceFile(support::perRankPath(trace, r), part);
    merged.events.insert(merged.events.end(), part.events.begin(),
                         part.events.end());
  }
  removeTraceParts(trace, ranks);
  if (!error.empty())
    return "cannot merge the ranks' traces: " + error;
  if (!support::writeAtomically(trace, schedule::toChromeTrace(merged) + "\n",
                                error))
    return error;
  return "";
}

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  size_t n = values.size();
  return n % 2 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

/// The cores a schedule's ranks share when predicted on `cores` (0: a core
/// each).
int sharing(const schedule::Schedule &s, int cores) {
  return cores > 0 && cores < s.ranks ? cores : 0;
}

/// The step `s` takes on the machine it was built for, its ranks sharing
/// `cores` instead, or nothing when it cannot be simulated.
std::optional<double> simulateOnCores(const schedule::Schedule &s, int cores) {
  schedule::SimulateOptions options = schedule::recordedMachine(s);
  options.cores = cores;
  options.recordTimeline = false;
  options.steps = schedule::kSteadyStateSteps;
  schedule::SimulateResult result;
  if (!schedule::simulateSchedule(s, options, result).empty())
    return std::nullopt;
  return result.steadyStepTime;
}

/// Reads the step times the last stage wrote to `summaryPath`, prints the
/// measured step time beside plan.json's prediction and records both in
/// plan.json as "measured". The first step pays for warm-up (first touches
/// of memory, kernel setup), so the median leaves it out when there are
/// others. plan.json's prediction holds when the build predicted the ranks
/// on the cores they share here (`cores`, 0: a core each; schedule.json's
/// "cores"); otherwise the build's schedule is simulated on these, and
/// ranks that share them are also reported with a core each.
std::string recordStepTime(const std::string &summaryPath,
                           const std::string &planPath, int cores) {
  std::ifstream in(summaryPath);
  if (!in)
    return ""; // ranks that are not dpc's write no summary
  nlohmann::json summary = nlohmann::json::parse(in, nullptr, false);
  if (summary.is_discarded() || !summary.contains("step_ms") ||
      !summary["step_ms"].is_array())
    return summaryPath + ": not the last stage's step times";
  std::vector<double> stepMs = summary["step_ms"].get<std::vector<double>>();
  if (stepMs.empty())
    return "";
  if (stepMs.size() > 1)
    stepMs.erase(stepMs.begin());
  double measured = median(stepMs);

  std::string planText;
  planner::Expected<planner::PlanSummary> plan =
      planner::loadPlanSummary(planPath, planText);
  if (!plan)
    return plan.error();
  std::optional<double> predicted = plan->simulatedStepMs;
  std::optional<double> corePerRank;
  std::string dir = planPath.substr(0, planPath.find_last_of('/') + 1);
  schedule::Schedule built;
  if (predicted &&
      schedule::readScheduleFile(dir + "schedule.json", built).empty()) {
    int assumed = sharing(built, built.cores), here = sharing(built, cores);
    std::optional<double> own =
        assumed == 0 ? predicted : simulateOnCores(built, 0);
    std::optional<double> onHere = here == assumed ? predicted
                                   : here == 0     ? own
                                               : simulateOnCores(built, here);
    if (onHere && (here == 0 || own)) {
      predicted = onHere;
      if (here > 0)
        corePerRank = own;
    }
  }

  nlohmann::ordered_json record;
  record["step_ms"] = measured;
  if (predicted && *predicted > 0) {
    record["predicted_step_ms"] = *predicted;
    record["ratio"] = measured / *predicted;
  }
  if (corePerRank) {
    record["cores"] = cores;
    record["core_per_rank_step_ms"] = *corePerRank;
  }
  record["steps"] = stepMs.size();
  int64_t samplesPerStep = summary.value("samples_per_step", int64_t(0));
  if (samplesPerStep > 0 && measured > 0)
    record["samples_per_second"] = double(samplesPerStep) * 1000.0 / measured;
  record["schedule"] = summary.value("schedule", "");
  planner::Expected<std::string> updated =
      planner::setPlanKey(planText, planPath, "measured", record);
  if (!updated)
    return updated.error();

  char line[200];
  if (record.contains("ratio") && corePerRank)
    std::snprintf(line, sizeof(line),
                  "step time: measured %.3g ms, predicted %.3g ms on %d "
                  "shared core%s (%.3gx the prediction; %.3g ms with a core "
                  "per rank)",
                  measured, *predicted, cores, cores == 1 ? "" : "s",
                  measured / *predicted, *corePerRank);
  else if (record.contains("ratio"))
    std::snprintf(line, sizeof(line),
                  "step time: measured %.3g ms, predicted %.3g ms (%.3gx the "
                  "prediction)",
                  measured, *predicted, measured / *predicted);
  else
    std::snprintf(line, sizeof(line),
                  "step time: measured %.3g ms (plan.json predicts none)",
                  measured);
  std::cout << line << "\n" << std::flush;
  std::string error;
  if (!support::writeAtomically(planPath, *updated, error))
    return error;
  return "";
}

} // namespace

//===----------------------------------------------------------------------===//
// The launch commands
//===----------------------------------------------------------------------===//

int LaunchJob::ranks() const {
  int total = 0;
  for (const AppLine &line : lines)
    total += line.ranks;
  return total;
}

std::string mpirunAppfile(const LaunchJob &job) {
  std::ostringstream appfile;
  int ranks = 0;
  for (const AppLine &line : job.lines) {
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
    for (const std::string &o : line.mpirunOptions)
      appfile << o << " ";
    appfile << resolveProgram(job.outDir, line.program);
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
  } else if (threads != 1) {
    // Hosts of a host file: Open MPI binds each rank of a small job to one
    // core, which suits one thread; a rank with more must not be bound.
    argv.push_back("--bind-to");
    argv.push_back("none");
  }
  argv.push_back("--app");
  return argv;
}

SrunCommand srunCommand(const LaunchJob &job) {
  SrunCommand srun;
  std::ostringstream conf, hosts;
  int ranks = 0;
  for (const AppLine &line : job.lines)
    for (int k = 0; k < line.ranks; ++k, ++ranks) {
      conf << ranks << " " << resolveProgram(job.outDir, line.program);
      for (const std::string &a : line.programArgs)
        conf << " " << a;
      for (const std::string &a : job.rankArgs)
        conf << " " << a;
      conf << "\n";
      if (!job.placement.empty())
        hosts << job.placement[ranks] << "\n";
    }
  srun.confPath = job.outDir + "/.dpc-srun.conf";
  srun.conf = conf.str();
  if (!job.placement.empty()) {
    srun.hostsPath = job.outDir + "/.dpc-srun.hosts";
    srun.hosts = hosts.str();
  }
  srun.argv = {"srun", "--ntasks=" + std::to_string(ranks),
               "--kill-on-bad-exit=1", "--label"};
  if (!job.placement.empty())
    srun.argv.push_back("--distribution=arbitrary");
  srun.argv.push_back("--multi-prog");
  srun.argv.push_back(srun.confPath);
  return srun;
}

namespace {

/// Runs `argv` (srun, or dpc compile) from `directory` ("": here) with its
/// output passed through and waits for it; returns its wait status, or -1
/// when it could not be started.
int runProgram(const std::vector<std::string> &argv,
               const std::string &directory) {
  std::vector<char *> cargv;
  for (const std::string &a : argv)
    cargv.push_back(const_cast<char *>(a.c_str()));
  cargv.push_back(nullptr);
  std::cout.flush();
  pid_t pid = ::fork();
  if (pid == 0) {
    if (!directory.empty() && ::chdir(directory.c_str()) != 0)
      ::_exit(127);
    ::execv(cargv[0], cargv.data());
    ::_exit(127);
  }
  int status = 0;
  if (pid < 0 || ::waitpid(pid, &status, 0) < 0)
    return -1;
  return status;
}

/// `--launcher srun`: writes OUT/.dpc-srun.conf (and OUT/.dpc-srun.hosts),
/// prints the command and the files, then runs it where srun exists.
int runSrun(const LaunchJob &job, bool npCheck) {
  SrunCommand command = srunCommand(job);
  bool placed = !command.hostsPath.empty();
  std::string error;
  if (!support::writeAtomically(command.confPath, command.conf, error) ||
      (placed &&
       !support::writeAtomically(command.hostsPath, command.hosts, error)))
    return fail(error);
  std::cout << (placed ? "SLURM_HOSTFILE=" + command.hostsPath + " " : "")
            << joinCommand(command.argv) << "\n"
            << command.confPath << ":\n"
            << command.conf;
  if (placed)
    std::cout << command.hostsPath << ":\n" << command.hosts;
  std::cout.flush();
  if (npCheck)
    return 0;
  std::string srun = findProgram("srun");
  if (srun.empty())
    return fail("srun not found on PATH (Slurm); the command above was not "
                "run");
  if (placed)
    ::setenv("SLURM_HOSTFILE", command.hostsPath.c_str(), 1);
  std::vector<std::string> argv = command.argv;
  argv[0] = srun;
  int status = runProgram(argv, "");
  if (status == -1)
    return fail(std::string("cannot run srun: ") + std::strerror(errno));
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
    return 0;
  return fail("srun failed (" +
              (WIFEXITED(status)
                   ? "exit code " + std::to_string(WEXITSTATUS(status))
                   : "signal " + std::to_string(WTERMSIG(status))) +
              ")");
}

/// Every program of the appfile that is a path must be an executable file
/// and a program (programProblem). `outDir` is as the user gave it.
std::string checkPrograms(const LaunchJob &job, const std::string &outDir,
                          const std::string &appfilePath) {
  for (const AppLine &line : job.lines) {
    std::string program = resolveProgram(job.outDir, line.program);
    if (program.find('/') == std::string::npos)
      continue;
    std::string at = appfilePath + ":" + std::to_string(line.lineNumber) + ": ";
    if (!isRegularFile(program) || ::access(program.c_str(), X_OK) != 0)
      return at + outDir + "/" + line.program +
             (isRegularFile(program) ? " is not executable" : ": no such file");
    if (std::string problem = programProblem(program); !problem.empty())
      return at + program + " " + problem + ": a corrupt rank executable";
  }
  return "";
}

/// Called with every line the ranks write to stdout.
using StdoutHook = std::function<void(int, const std::string &)>;

/// Runs the job under mpirun and reports how it ended; `shared` (0:
/// none) are the cores its ranks share, for the step-time prediction.
int runMpirun(const LaunchOptions &options, const RankOptions &rankOptions,
              std::vector<std::string> argv, const LaunchJob &job,
              const std::string &summaryPath, const std::string &planPath,
              int shared, const StdoutHook &onStdout) {
  // The rewritten appfile: absolute programs, forwarded options.
  char tempPath[] = "/tmp/dpc-run-appfile-XXXXXX";
  int fd = ::mkstemp(tempPath);
  if (fd < 0)
    return fail(std::string("cannot create a temporary appfile: ") +
                std::strerror(errno));
  std::string text = mpirunAppfile(job);
  bool written = ::write(fd, text.data(), text.size()) == ssize_t(text.size());
  ::close(fd);
  if (!written) {
    ::unlink(tempPath);
    return fail(std::string(tempPath) + ": write failed");
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
  if (status != -1 && WIFEXITED(status) && WEXITSTATUS(status) == 0) {
    std::string error;
    if (!trace.empty())
      error = mergeTraces(trace, ranks);
    if (!summaryPath.empty()) {
      if (error.empty())
        error = recordStepTime(summaryPath, planPath, shared);
      ::unlink(summaryPath.c_str());
    }
    return error.empty() ? 0 : fail(error);
  }
  // A failed run leaves no trace and no step times.
  if (!trace.empty())
    removeTraceParts(trace, ranks);
  if (!summaryPath.empty())
    ::unlink(summaryPath.c_str());
  if (status == -1)
    return fail(std::string("cannot start mpirun: ") +
                std::strerror(startErrno));

  // A rank that stopped answering is the cause, whatever mpirun says of the
  // ranks it then killed or that gave up waiting for it.
  std::string stalled;
  if (watchdog.timedOut() >= 0)
    stalled = "rank " + std::to_string(watchdog.timedOut()) +
              " has not answered for " +
              Watchdog::seconds(watchdog.silentSeconds()) + " (--timeout " +
              Watchdog::seconds(timeoutSeconds) + "); the job was ended";
  else if (watchdog.silentRank() >= 0)
    stalled = "rank " + std::to_string(watchdog.silentRank()) +
              " had stopped answering";

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
    return fail(stalled);
  if (!failure)
    return fail(stalled.empty() ? "mpirun failed (" + how + ")"
                                : stalled + " (mpirun " + how + ")");
  std::string message =
      trimMessage(follower.lastMessage(failure->rank), failure->rank);
  fail((stalled.empty() ? "" : stalled + ": ") + "rank " +
       std::to_string(failure->rank) + " " + failure->how +
       (message.empty() ? "" : ": " + message));
  // A rank refusing its input (a bad option value, an unusable checkpoint
  // directory) aborts with the usage code, and so does the job.
  bool badInput = WIFEXITED(status) && WEXITSTATUS(status) == cli::kUsageError;
  return badInput ? cli::kUsageError : 1;
}

/// Launches the build in `outDir` once and waits for it (launch() without
/// --adapt, or one layout with it).
int launchOnce(const LaunchOptions &options, const std::string &givenOutDir,
               const RankOptions &rankOptions, const StdoutHook &onStdout) {
  LaunchJob job;
  if (!options.hostfile.empty())
    if (std::string problem = parseHostfile(options.hostfile, job.hosts);
        !problem.empty()) {
      fail(problem);
      return cli::kUsageError;
    }

  // The options every rank gets, in the table's order.
  std::vector<std::string> forwarded =
      rankOptionArgs(rankOptions, RankOptionSet::Forwarded);
  for (const std::string &value : forwarded)
    if (value.empty() || value.find_first_of(" \t\n\"'") != std::string::npos)
      return fail("option value '" + value +
                  "' is empty or contains spaces or quotes, which an "
                  "mpirun appfile cannot carry");

  // The compiled output.
  std::string outDir = givenOutDir;
  while (outDir.size() > 1 && outDir.back() == '/')
    outDir.pop_back();
  if (!isDirectory(outDir))
    return fail(outDir +
                ": no such directory (the output of 'dpc compile "
                "... -o " +
                outDir + "')");
  std::string appfilePath = outDir + "/appfile";
  if (!isRegularFile(appfilePath))
    return fail(appfilePath + ": no such file; is " + outDir +
                " the output directory of 'dpc compile'?");
  if (std::string problem = parseAppfile(appfilePath, job.lines);
      !problem.empty())
    return fail(problem);
  job.outDir = absolutePath(outDir);
  const int ranks = job.ranks();

  // A directory `dpc compile` wrote has a plan.json; its ranks report their
  // step times to the launcher through this file.
  std::string planPath = outDir + "/plan.json";
  std::string summaryPath;
  if (isRegularFile(planPath))
    summaryPath = job.outDir + "/.dpc-run-summary." +
                  std::to_string(::getpid()) + ".json";
  // With a host file, every appfile line names the hosts of its ranks.
  if (!job.hosts.empty()) {
    job.placement = placeRanks(job.hosts, ranks);
    if (int(job.placement.size()) < ranks) {
      fail(options.hostfile + ": " + std::to_string(job.placement.size()) +
           " slots for the " + std::to_string(ranks) + " ranks of " +
           appfilePath);
      return cli::kUsageError;
    }
  }
  if (options.launcher == "srun") {
    job.rankArgs = forwarded;
    return runSrun(job, options.npCheck);
  }
  if (std::string problem = checkPrograms(job, outDir, appfilePath);
      !problem.empty())
    return fail(problem);
  // Under mpirun the ranks of a dpc build also write their step times and
  // a heartbeat for the watchdog.
  RankOptions withLauncher = rankOptions;
  if (!summaryPath.empty()) {
    withLauncher.summary = summaryPath;
    withLauncher.heartbeat = true;
    withLauncher.given.insert({"summary", "heartbeat"});
  }
  job.rankArgs = rankOptionArgs(withLauncher, RankOptionSet::All);

  // plan.json, when there, says how many ranks the plan was made for.
  if (isRegularFile(planPath)) {
    std::string text;
    planner::Expected<planner::PlanSummary> plan =
        planner::loadPlanSummary(planPath, text);
    if (!plan)
      return fail(plan.error());
    if (plan->devices && *plan->devices != ranks)
      return fail(appfilePath + " launches " + std::to_string(ranks) +
                  " ranks but " + planPath + " plans for " +
                  std::to_string(*plan->devices) + " devices");
  }

  std::string mpirunPath =
      findProgram(options.mpirun.empty() ? "mpirun" : options.mpirun);
  if (mpirunPath.empty())
    return fail(options.mpirun.empty()
                    ? std::string("mpirun not found on PATH (Debian package "
                                  "openmpi-bin)")
                    : options.mpirun + ": not an executable");
  long cores = ::sysconf(_SC_NPROCESSORS_ONLN);
  // Kernel threads per rank, so that ranks do not fight over cores.
  long threads = threadsPerRank(ranks, cores);
  ::setenv("OMP_NUM_THREADS", std::to_string(threads).c_str(), 0);
  // Ranks whose threads outnumber this machine's cores share them: idle
  // OpenMP threads sleep (mpirunCommand exports it), and the step is
  // predicted on the shared cores.
  int shared = sharedCores(options.hostfile, ranks, cores, threads);
  if (shared > 0)
    ::setenv("OMP_WAIT_POLICY", "passive", /*overwrite=*/0);
  std::vector<std::string> argv = mpirunCommand(
      mpirunPath,
      options.hostfile.empty() ? "" : absolutePath(options.hostfile), ranks,
      cores, threads);

  if (options.npCheck) {
    argv.push_back(appfilePath + " (with the per-rank options)");
    std::cout << outDir << ": " << ranks << " ranks on " << cores << " cores\n"
              << joinCommand(argv) << "\n"
              << mpirunAppfile(job);
    return 0;
  }
  return runMpirun(options, rankOptions, std::move(argv), job, summaryPath,
                   planPath, shared, onStdout);
}

std::string formatSpeeds(const std::vector<double> &speeds) {
  std::string text;
  char one[32];
  for (double s : speeds) {
    std::snprintf(one, sizeof one, "%s%.2f", text.empty() ? "" : ", ", s);
    text += one;
  }
  return text;
}

/// The node count of every stage of the plan at `planPath`, "4/12".
std::string stageNodeCounts(const std::string &planPath) {
  std::ifstream in(planPath);
  nlohmann::json plan = nlohmann::json::parse(in, nullptr, false);
  std::string text;
  if (plan.is_discarded() || !plan.contains("stages"))
    return "?";
  for (const nlohmann::json &stage : plan["stages"])
    text +=
        (text.empty() ? "" : "/") +
        std::to_string(stage.value("nodes", nlohmann::json::array()).size());
  return text;
}

/// Prints one whole line (a re-plan prints while the ranks' output is
/// passed through).
void printAdaptLine(const std::string &line) {
  std::cout << line + "\n" << std::flush;
}

/// A re-partition's next layout, planned and compiled while the ranks of the
/// current one train on.
struct NextLayout {
  std::string dir, planPath;
  std::vector<double> speeds;
  std::vector<int> rankDevices;
  /// Why it could not be made ("" when it was, or not asked for).
  std::string problem;
};

/// `dpc run --adapt` (docs/RUNTIME.md, "Re-partitioning"): launches the
/// build; whenever its last stage asks for a re-partition, plans again on a
/// cluster of the measured speeds and compiles into ADAPT_DIR/N while the
/// ranks train on, tells them when it is ready, and once they have stopped
/// launches that build resuming from their checkpoint, until a job ends on
/// its own.
int launchAdaptive(const LaunchOptions &options, const RankOptions &given) {
  if (options.launcher != "mpirun")
    return fail("--adapt relaunches the ranks itself, under mpirun; drop "
                "--launcher " +
                options.launcher);
  std::string outDir = options.outDir;
  while (outDir.size() > 1 && outDir.back() == '/')
    outDir.pop_back();
  const std::string originalOut = absolutePath(outDir);
  CompileRecord record;
  if (std::string problem =
          readCompileRecord(originalOut + "/compile.json", record);
      !problem.empty())
    return fail(problem + " (--adapt compiles the model again as 'dpc "
                          "compile' recorded it; compile again)");
  std::vector<std::string> kept;
  double bandwidth = 1e9;
  if (std::string problem = replanOptions(record.options, kept, bandwidth);
      !problem.empty())
    return fail(problem);
  // Beside OUT, not in it: OUT stays the output 'dpc compile' wrote.
  const std::string adaptDir = originalOut + ".adapt";
  ::mkdir(adaptDir.c_str(), 0777);
  if (!isDirectory(adaptDir))
    return fail(adaptDir + ": cannot create it: " + std::strerror(errno));
  const std::string requestPath = adaptDir + "/request.json";
  const std::string readyPath = adaptReadyPath(requestPath);
  const std::string stopPath = adaptStopPath(requestPath);

  RankOptions current = given;
  current.adaptRequest = requestPath;
  current.given.insert("adapt-request");
  if (current.checkpointDir.empty()) {
    current.checkpointDir = adaptDir + "/checkpoint";
    current.given.insert("checkpoint-dir");
  }
  // The test options name a device by the first launch's rank; they follow
  // it into every layout. --interfere's process runs for its seconds from
  // when it started, across relaunches.
  std::optional<Interference> interference;
  if (given.isGiven("interfere"))
    interference = parseInterference(given.interfere);
  std::optional<Watchdog::Clock::time_point> interferenceStarted;

  std::string planPath = outDir + "/plan.json";
  std::string text;
  planner::Expected<planner::PlanSummary> plan =
      planner::loadPlanSummary(planPath, text);
  if (!plan)
    return fail(plan.error());
  int devices = int(plan->devices.value_or(0));
  if (devices <= 0)
    return fail(planPath + ": no device count to re-plan for");
  std::vector<double> speeds(size_t(devices), 1.0);
  std::vector<int> rankDevices(static_cast<size_t>(devices));
  for (int d = 0; d < devices; ++d)
    rankDevices[size_t(d)] = d;
  const std::string dpcPath = executablePath();

  for (int round = 1;; ++round) {
    for (const std::string &path : {requestPath, readyPath, stopPath})
      ::unlink(path.c_str());
    // Plans and compiles the next layout on a thread of its own once the
    // last stage has asked (its line follows the request file), while the
    // ranks train on; creating `readyPath` tells them to stop.
    NextLayout next;
    std::thread replan;
    bool asked = false;
    auto prepareNext = [&] {
      auto started = Watchdog::Clock::now();
      AdaptRequest request;
      if (std::string problem = readAdaptRequest(requestPath, request);
          !problem.empty()) {
        next.problem = problem;
        return;
      }
      next.speeds = slowedSpeeds(speeds, rankDevices, request.slowdowns);
      next.dir = adaptDir + "/" + std::to_string(round);
      next.planPath = next.dir + "/plan.json";
      std::string clusterPath =
          adaptDir + "/cluster-" + std::to_string(round) + ".json";
      std::string error;
      if (!support::writeAtomically(
              clusterPath, adaptClusterJson(next.speeds, bandwidth), error)) {
        next.problem = error;
        return;
      }
      printAdaptLine("adapt: re-partition " + std::to_string(round) +
                     " (asked after step " +
                     std::to_string(request.decidedAfter) +
                     "): planning again on devices of speeds " +
                     formatSpeeds(next.speeds) + " (" + clusterPath + ")");
      std::vector<std::string> argv = {dpcPath, "compile", record.model};
      argv.insert(argv.end(), kept.begin(), kept.end());
      argv.insert(argv.end(), {"--cluster", clusterPath, "-o", next.dir});
      int compiled = runProgram(argv, record.directory);
      if (compiled == -1 || !WIFEXITED(compiled) ||
          WEXITSTATUS(compiled) != 0) {
        next.problem = "'" + joinCommand(argv) + "' failed";
        return;
      }
      if (std::string problem =
              readRankDevices(next.planPath, next.rankDevices);
          !problem.empty()) {
        next.problem = problem;
        return;
      }
      double compileS =
          std::chrono::duration<double>(Watchdog::Clock::now() - started)
              .count();
      char line[256];
      std::snprintf(line, sizeof line,
                    "adapt: compiled %s in %.2f s while training went on: "
                    "nodes per stage %s -> %s",
                    next.dir.c_str(), compileS,
                    stageNodeCounts(planPath).c_str(),
                    stageNodeCounts(next.planPath).c_str());
      printAdaptLine(line);
      if (!support::writeAtomically(readyPath, next.dir + "\n", error)) {
        next.problem = error;
        return;
      }
    };
    StdoutHook onStdout = [&](int, const std::string &line) {
      if (!interferenceStarted &&
          line.rfind("interference: a CPU-bound process", 0) == 0)
        interferenceStarted = Watchdog::Clock::now();
      if (!asked && line.rfind("adapt: stage ", 0) == 0) {
        asked = true;
        replan = std::thread(prepareNext);
      }
    };
    int status = launchOnce(options, outDir, current, onStdout);
    if (replan.joinable())
      replan.join();
    if (status != 0)
      return status;
    if (!isRegularFile(stopPath)) {
      // The job ended on its own; a re-plan that failed left it in its
      // layout.
      if (!next.problem.empty())
        printAdaptLine("adapt: re-partition " + std::to_string(round) +
                       " not made: " + next.problem +
                       "; the job trained on in its layout");
      return status;
    }
    AdaptStop stop;
    if (std::string problem = readAdaptStop(stopPath, stop); !problem.empty())
      return fail(problem);
    if (!asked || !next.problem.empty())
      return fail("re-partition " + std::to_string(round) + ": " +
                  (asked ? next.problem : "stopped without a request"));
    speeds = next.speeds;
    std::string roundDir = next.dir;
    std::string newPlan = next.planPath;
    std::vector<int> newDevices = next.rankDevices;

    // The new layout resumes from the checkpoint at the next step.
    current.resume = true;
    current.given.insert("resume");
    char resumed[64];
    std::snprintf(resumed, sizeof resumed, "%d:%.6f", round, stop.stoppedAtS);
    current.adaptResumed = resumed;
    current.given.insert("adapt-resumed");
    if (given.isGiven("test-forward-delay")) {
      current.testForwardDelay =
          onDevicesRank(given.testForwardDelay, newDevices);
      if (current.testForwardDelay.empty())
        current.given.erase("test-forward-delay");
    }
    if (interference) {
      double left = interference->seconds;
      int64_t from = interference->fromStep;
      if (interferenceStarted) {
        left -= std::chrono::duration<double>(Watchdog::Clock::now() -
                                              *interferenceStarted)
                    .count();
        from = stop.stoppedAfter + 1;
      }
      char value[96];
      std::snprintf(value, sizeof value, "%d:%lld:%.3f", interference->rank,
                    (long long)std::max(from, stop.stoppedAfter + 1), left);
      current.interfere = left >= 1e-3 ? onDevicesRank(value, newDevices) : "";
      if (current.interfere.empty())
        current.given.erase("interfere");
      else
        current.given.insert("interfere");
    }
    outDir = roundDir;
    planPath = newPlan;
    rankDevices = newDevices;
  }
}

} // namespace

int launch(const LaunchOptions &options, const RankOptions &rankOptions) {
  if (options.launcher != "mpirun" && options.launcher != "srun") {
    std::cerr << kCommand << ": option '--launcher' expects mpirun or srun, "
              << "not '" << options.launcher << "'\n";
    return cli::kUsageError;
  }
  if (rankOptions.adapt && !options.npCheck)
    return launchAdaptive(options, rankOptions);
  return launchOnce(options, options.outDir, rankOptions, nullptr);
}

} // namespace dpc::runtime
