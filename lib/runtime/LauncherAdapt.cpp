//===- LauncherAdapt.cpp - dpc run --adapt: re-partitioning runs ----------===//
//
// `dpc run --adapt` (docs/RUNTIME.md, "Re-partitioning") runs a build under
// mpirun through launchOnce, a layout at a time. When the last stage asks
// for a re-partition, the next layout is planned on a cluster of the
// measured speeds and compiled on a thread of its own while the ranks train
// on; once they have stopped, that layout is launched resuming from their
// checkpoint. The rounds' state lives in AdaptiveLaunch, whose phases are
// setUp (the compile record, ADAPT_DIR and the first plan), run (a launch a
// layout), prepareNext (planning and compiling the next layout) and
// resumeOptions (the rank options that carry a run into the next layout).
// Adapt.cpp holds the pieces that need no process: the request and stop
// files, the re-plan options and the cluster of measured speeds.
//
//===----------------------------------------------------------------------===//

#include "LauncherInternal.h"

#include "dpc/planner/PlanJson.h"
#include "dpc/runtime/Adapt.h"
#include "dpc/support/WriteFile.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <sys/stat.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

namespace dpc::runtime {

using namespace launcher_detail;

namespace {

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

/// One `dpc run --adapt`: what it keeps from one layout to the next.
class AdaptiveLaunch {
public:
  AdaptiveLaunch(const LaunchOptions &options, const RankOptions &given)
      : options(options), given(given) {}

  /// Reads what the rounds need; 0, or the exit status of a failure.
  int setUp();
  /// Launches a layout a round until a job ends on its own.
  int run();

private:
  /// Plans and compiles the layout after this round's into `next`, once
  /// the last stage has asked; creating readyPath tells the ranks to stop.
  /// Throws an Error saying why it could not.
  void prepareNext(int round, NextLayout &next) const;
  /// The rank options that resume the run, stopped as `stop` says, in the
  /// layout of `newDevices` (each rank's device).
  void resumeOptions(int round, const AdaptStop &stop,
                     const std::vector<int> &newDevices);

  const LaunchOptions &options;
  const RankOptions &given;
  CompileRecord record;
  /// The options of `dpc compile` that a re-plan keeps, and its bandwidth.
  ReplanOptions recompile;
  std::string adaptDir, requestPath, readyPath, stopPath, dpcPath;
  /// The build of this round and its plan.
  std::string outDir, planPath;
  RankOptions current;
  std::optional<Interference> interference;
  std::optional<Watchdog::Clock::time_point> interferenceStarted;
  std::vector<double> speeds;
  std::vector<int> rankDevices;
};

int AdaptiveLaunch::setUp() {
  if (options.launcher != "mpirun")
    throw Error("--adapt relaunches the ranks itself, under mpirun; drop "
                "--launcher " +
                options.launcher);
  outDir = options.outDir;
  while (outDir.size() > 1 && outDir.back() == '/')
    outDir.pop_back();
  const std::string originalOut = absolutePath(outDir);
  try {
    record = readCompileRecord(originalOut + "/compile.json");
  } catch (const Error &e) {
    throw Error(std::string(e.what()) +
                " (--adapt compiles the model again as 'dpc compile' "
                "recorded it; compile again)");
  }
  recompile = replanOptions(record.options);
  // Beside OUT, not in it: OUT stays the output 'dpc compile' wrote.
  adaptDir = originalOut + ".adapt";
  ::mkdir(adaptDir.c_str(), 0777);
  if (!isDirectory(adaptDir))
    throw Error(adaptDir + ": cannot create it: " + std::strerror(errno));
  requestPath = adaptDir + "/request.json";
  readyPath = adaptReadyPath(requestPath);
  stopPath = adaptStopPath(requestPath);

  current = given;
  current.adaptRequest = requestPath;
  current.given.insert("adapt-request");
  if (current.checkpointDir.empty()) {
    current.checkpointDir = adaptDir + "/checkpoint";
    current.given.insert("checkpoint-dir");
  }
  // The test options name a device by the first launch's rank; they follow
  // it into every layout. --interfere's process runs for its seconds from
  // when it started, across relaunches.
  if (given.isGiven("interfere"))
    interference = parseInterference(given.interfere);

  planPath = outDir + "/plan.json";
  std::string text;
  planner::PlanSummary plan = planner::loadPlanSummary(planPath, text);
  int devices = int(plan.devices.value_or(0));
  if (devices <= 0)
    throw Error(planPath + ": no device count to re-plan for");
  speeds.assign(size_t(devices), 1.0);
  rankDevices.resize(static_cast<size_t>(devices));
  for (int d = 0; d < devices; ++d)
    rankDevices[size_t(d)] = d;
  dpcPath = executablePath();
  return 0;
}

void AdaptiveLaunch::prepareNext(int round, NextLayout &next) const {
  auto started = Watchdog::Clock::now();
  AdaptRequest request = readAdaptRequest(requestPath);
  next.speeds = slowedSpeeds(speeds, rankDevices, request.slowdowns);
  next.dir = adaptDir + "/" + std::to_string(round);
  next.planPath = next.dir + "/plan.json";
  std::string clusterPath =
      adaptDir + "/cluster-" + std::to_string(round) + ".json";
  support::writeAtomically(clusterPath,
                           adaptClusterJson(next.speeds, recompile.bandwidth));
  printAdaptLine("adapt: re-partition " + std::to_string(round) +
                 " (asked after step " + std::to_string(request.decidedAfter) +
                 "): planning again on devices of speeds " +
                 formatSpeeds(next.speeds) + " (" + clusterPath + ")");
  std::vector<std::string> argv = {dpcPath, "compile", record.model};
  argv.insert(argv.end(), recompile.kept.begin(), recompile.kept.end());
  argv.insert(argv.end(), {"--cluster", clusterPath, "-o", next.dir});
  int compiled = runProgram(argv, record.directory);
  if (compiled == -1 || !WIFEXITED(compiled) || WEXITSTATUS(compiled) != 0)
    throw Error("'" + joinCommand(argv) + "' failed");
  next.rankDevices = readRankDevices(next.planPath);
  double compileS =
      std::chrono::duration<double>(Watchdog::Clock::now() - started).count();
  char line[256];
  std::snprintf(line, sizeof line,
                "adapt: compiled %s in %.2f s while training went on: "
                "nodes per stage %s -> %s",
                next.dir.c_str(), compileS, stageNodeCounts(planPath).c_str(),
                stageNodeCounts(next.planPath).c_str());
  printAdaptLine(line);
  support::writeAtomically(readyPath, next.dir + "\n");
}

int AdaptiveLaunch::run() {
  for (int round = 1;; ++round) {
    for (const std::string &path : {requestPath, readyPath, stopPath})
      ::unlink(path.c_str());
    // Plans and compiles the next layout on a thread of its own once the
    // last stage has asked (its line follows the request file), while the
    // ranks train on; creating `readyPath` tells them to stop.
    NextLayout next;
    std::thread replan;
    bool asked = false;
    StdoutHook onStdout = [&](int, const std::string &line) {
      if (!interferenceStarted &&
          line.rfind("interference: a CPU-bound process", 0) == 0)
        interferenceStarted = Watchdog::Clock::now();
      if (!asked && line.rfind("adapt: stage ", 0) == 0) {
        asked = true;
        replan = std::thread([&] {
          try {
            prepareNext(round, next);
          } catch (const Error &e) {
            next.problem = e.what();
          }
        });
      }
    };
    int status = 0;
    try {
      status = launchOnce(options, outDir, current, onStdout);
    } catch (...) {
      // A failed launch ends the re-plan before its error leaves.
      if (replan.joinable())
        replan.join();
      throw;
    }
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
    AdaptStop stop = readAdaptStop(stopPath);
    if (!asked || !next.problem.empty())
      throw Error("re-partition " + std::to_string(round) + ": " +
                  (asked ? next.problem : "stopped without a request"));
    speeds = next.speeds;
    std::string roundDir = next.dir;
    std::string newPlan = next.planPath;
    std::vector<int> newDevices = next.rankDevices;
    resumeOptions(round, stop, newDevices);
    outDir = roundDir;
    planPath = newPlan;
    rankDevices = newDevices;
  }
}

void AdaptiveLaunch::resumeOptions(int round, const AdaptStop &stop,
                                   const std::vector<int> &newDevices) {
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
}

} // namespace

namespace launcher_detail {

int launchAdaptive(const LaunchOptions &options, const RankOptions &given) {
  AdaptiveLaunch adaptive(options, given);
  if (int status = adaptive.setUp())
    return status;
  return adaptive.run();
}

} // namespace launcher_detail

} // namespace dpc::runtime
