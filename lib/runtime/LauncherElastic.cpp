//===- LauncherElastic.cpp - dpc run --elastic: training on after a loss --===//
//
// `dpc run --elastic` (docs/RUNTIME.md, "Elastic training") runs a build
// through launchOnce. When the job ends because a rank was lost (its
// process killed, or silent past --timeout: RankLostError), the model is
// planned and compiled again for the devices left, as `dpc compile`
// recorded it but with `--devices N`, and that build is launched resuming
// from the newest checkpoint every stage holds (--checkpoint-every, whose
// files survive a job killed while writing them: Safetensors.h). With a
// synchronous schedule and the same data order the steps after the
// checkpoint are trained again with the same samples, so the losses are
// those of an uninterrupted run. Each recovery is a line on stdout and,
// with --metrics, a record: the rank lost, the last step seen, the step
// resumed from, the steps redone and the seconds from the loss to the
// relaunch.
//
//===----------------------------------------------------------------------===//

#include "LauncherInternal.h"

#include "dpc/planner/PlanJson.h"
#include "dpc/runtime/Adapt.h"
#include "dpc/runtime/Safetensors.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <regex>
#include <sys/stat.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

namespace dpc::runtime {

using namespace launcher_detail;

namespace {

/// Every 10 steps when the user gave no --checkpoint-every.
constexpr int64_t kDefaultCheckpointEvery = 10;

/// SIGUSR1 to dpc run: a lost device is back.
std::atomic<bool> deviceBack{false};

extern "C" void onDeviceBack(int) { deviceBack = true; }

/// The recorded `dpc compile` options less those that fix the device
/// count or layout, which a re-plan for fewer devices chooses anew.
std::vector<std::string> keptCompileOptions(const CompileRecord &record) {
  static const char *const kDropped[] = {"--devices", "--stages", "--replicas"};
  std::vector<std::string> kept;
  const std::vector<std::string> &recorded = record.options;
  for (size_t i = 0; i < recorded.size(); ++i) {
    const std::string &a = recorded[i];
    std::string name = a.substr(0, a.find('='));
    if (name == "--cluster")
      throw Error("--elastic re-plans builds of --stages or --devices on "
                  "one host, not of --cluster (yet)");
    bool dropped = false;
    for (const char *d : kDropped)
      dropped = dropped || name == d;
    if (!dropped) {
      kept.push_back(a);
      continue;
    }
    if (name.size() == a.size())
      ++i; // its value follows
  }
  return kept;
}

void printElasticLine(const std::string &line) {
  std::cout << line + "\n" << std::flush;
}

/// One `dpc run --elastic`: what it keeps from one layout to the next.
class ElasticLaunch {
public:
  ElasticLaunch(const LaunchOptions &options, const RankOptions &given)
      : options(options), given(given) {}

  void setUp();
  /// Launches a layout a round until a job ends without losing a rank.
  int run();

private:
  /// Plans and compiles the model for `count` devices into
  /// ELASTIC_DIR/layout.
  std::string recompile(int layout, int64_t count) const;
  /// Runs the build in outDir; the compiled build for one more device
  /// when the ranks stopped to take it in (SIGUSR1 to dpc run), "" when
  /// the job ended on its own.
  std::string runLayout(int64_t &lastStep, int64_t &stoppedAfter);
  /// Makes the build in `dir` the next one, resuming, without the test
  /// option `testOption`.
  void resumeIn(const std::string &dir, const char *testOption);
  /// The step of the checkpoint the next layout resumes from; 0 for none.
  int64_t checkpointStep() const;
  void recordRecovery(int round, int lostRank, int64_t lastStep,
                      int64_t resumedFrom, double recoveryS) const;
  void recordGrowth(int64_t resumedFrom) const;
  /// Plans, compiles and prepares the next layout after `lost`.
  void recover(int recovery, const RankLostError &lost, int64_t lastStep);

  const LaunchOptions &options;
  const RankOptions &given;
  CompileRecord record;
  std::vector<std::string> kept;
  std::string elasticDir, outDir, dpcPath;
  RankOptions current;
  int64_t devices = 0, originalDevices = 0;
  /// Builds compiled so far (ELASTIC_DIR/1, 2, ...).
  int layouts = 0;
};

void ElasticLaunch::setUp() {
  if (options.launcher != "mpirun")
    throw Error("--elastic relaunches the ranks itself, under mpirun; drop "
                "--launcher " +
                options.launcher);
  if (!options.hostfile.empty())
    throw InputError("--elastic re-plans on one host yet: drop --hostfile");
  outDir = options.outDir;
  while (outDir.size() > 1 && outDir.back() == '/')
    outDir.pop_back();
  const std::string originalOut = absolutePath(outDir);
  try {
    record = readCompileRecord(originalOut + "/compile.json");
  } catch (const Error &e) {
    throw Error(std::string(e.what()) +
                " (--elastic compiles the model again as 'dpc compile' "
                "recorded it; compile again)");
  }
  kept = keptCompileOptions(record);
  std::string text;
  planner::PlanSummary plan =
      planner::loadPlanSummary(outDir + "/plan.json", text);
  devices = plan.devices.value_or(0);
  if (devices <= 0)
    throw Error(outDir + "/plan.json: no device count to re-plan from");
  // Beside OUT, not in it: OUT stays the output 'dpc compile' wrote.
  elasticDir = originalOut + ".elastic";
  ::mkdir(elasticDir.c_str(), 0777);
  if (!isDirectory(elasticDir))
    throw Error(elasticDir + ": cannot create it: " + std::strerror(errno));

  current = given;
  if (current.checkpointDir.empty()) {
    current.checkpointDir = elasticDir + "/checkpoint";
    current.given.insert("checkpoint-dir");
  }
  if (!current.isGiven("checkpoint-every")) {
    current.checkpointEvery = kDefaultCheckpointEvery;
    current.given.insert("checkpoint-every");
  }
  // SIGUSR1 to dpc run (a device back) is passed on to the ranks once the
  // layout for it is compiled; they stop after one step, all the same.
  current.stopOnSignal = true;
  current.given.insert("stop-on-signal");
  originalDevices = devices;
  dpcPath = executablePath();
}

std::string ElasticLaunch::recompile(int layout, int64_t count) const {
  std::string dir = elasticDir + "/" + std::to_string(layout);
  std::vector<std::string> argv = {dpcPath, "compile", record.model};
  argv.insert(argv.end(), kept.begin(), kept.end());
  argv.insert(argv.end(), {"--devices", std::to_string(count), "-o", dir});
  int compiled = runProgram(argv, record.directory);
  if (compiled == -1 || !WIFEXITED(compiled) || WEXITSTATUS(compiled) != 0)
    throw Error("elastic: '" + joinCommand(argv) + "' failed");
  return dir;
}

int64_t ElasticLaunch::checkpointStep() const {
  const std::string &dir = current.checkpointDir;
  if (!isRegularFile(checkpointPath(dir, 0)) &&
      !isRegularFile(previousCheckpointPath(dir, 0)))
    return 0;
  return readCheckpointStep(dir);
}

void ElasticLaunch::recordRecovery(int round, int lostRank, int64_t lastStep,
                                   int64_t resumedFrom,
                                   double recoveryS) const {
  if (given.metrics.empty())
    return;
  nlohmann::json line = {
      {"elastic", round},
      {"lost_rank", lostRank},
      {"last_step", lastStep},
      {"resumed_from_step", resumedFrom},
      {"steps_redone", std::max<int64_t>(0, lastStep - resumedFrom)},
      {"devices", devices},
      {"recovery_s", std::round(recoveryS * 1e3) / 1e3}};
  std::ofstream out(given.metrics, std::ios::app);
  out << line.dump() << "\n";
  if (!out)
    throw Error(given.metrics + ": cannot write the recovery's record");
}

void ElasticLaunch::recordGrowth(int64_t resumedFrom) const {
  if (given.metrics.empty())
    return;
  nlohmann::json line = {{"elastic_grow", layouts},
                         {"resumed_from_step", resumedFrom},
                         {"devices", devices}};
  std::ofstream out(given.metrics, std::ios::app);
  out << line.dump() << "\n";
  if (!out)
    throw Error(given.metrics + ": cannot write the growth's record");
}

void ElasticLaunch::resumeIn(const std::string &dir, const char *testOption) {
  outDir = dir;
  current.resume = true;
  current.given.insert("resume");
  // The test option that made the last layout lose or take in a device is
  // not given to the next.
  current.given.erase(testOption);
}

std::string ElasticLaunch::runLayout(int64_t &lastStep, int64_t &stoppedAfter) {
  static const std::regex stepLine(R"(^step (\d+)/)");
  static const std::regex stopLine(R"(^elastic: stopping after step (\d+))");
  std::atomic<int64_t> stepSeen{0};
  StdoutHook onStdout = [&](int, const std::string &line) {
    std::smatch m;
    if (std::regex_search(line, m, stepLine))
      stepSeen = std::stoll(m[1].str());
    else if (std::regex_search(line, m, stopLine))
      stoppedAfter = std::stoll(m[1].str());
  };
  // A device back (SIGUSR1 to dpc run) is taken in once the ranks train
  // (their handlers are set): the build for one more is compiled while
  // they train on, and then they are told.
  std::string grown;
  std::atomic<bool> running{true};
  std::thread watcher([&] {
    while (running) {
      if (deviceBack && stepSeen >= 1 && grown.empty()) {
        deviceBack = false;
        if (devices >= originalDevices) {
          printElasticLine("elastic: SIGUSR1, but no device is missing");
          continue;
        }
        try {
          grown = recompile(++layouts, devices + 1);
          signalRunningJob(SIGUSR1);
        } catch (const Error &e) {
          printElasticLine(std::string(e.what()) + "; training on");
        }
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  });
  struct Join {
    std::atomic<bool> &running;
    std::thread &watcher;
    ~Join() {
      running = false;
      watcher.join();
    }
  } join{running, watcher};
  try {
    launchOnce(options, outDir, current, onStdout);
  } catch (...) {
    lastStep = stepSeen;
    throw;
  }
  lastStep = stepSeen;
  return stoppedAfter > 0 ? grown : "";
}

int ElasticLaunch::run() {
  struct sigaction action = {}, previous = {};
  action.sa_handler = onDeviceBack;
  action.sa_flags = SA_RESTART;
  ::sigaction(SIGUSR1, &action, &previous);
  struct Restore {
    struct sigaction &previous;
    ~Restore() { ::sigaction(SIGUSR1, &previous, nullptr); }
  } restore{previous};
  for (int recovery = 1;;) {
    int64_t lastStep = 0, stoppedAfter = 0;
    try {
      std::string grown = runLayout(lastStep, stoppedAfter);
      if (grown.empty())
        return 0;
      ++devices;
      resumeIn(grown, "test-hold-after");
      recordGrowth(stoppedAfter);
      printElasticLine("elastic: took in a device: " + grown + " resumes " +
                       "from step " + std::to_string(stoppedAfter) + " on " +
                       std::to_string(devices) + " devices");
    } catch (const RankLostError &lost) {
      recover(recovery++, lost, lastStep);
    }
  }
}

void ElasticLaunch::recover(int recovery, const RankLostError &lost,
                            int64_t lastStep) {
  auto started = Watchdog::Clock::now();
  --devices;
  printElasticLine("elastic: " + std::string(lost.what()) + "; " +
                   std::to_string(devices) + " device" +
                   (devices == 1 ? "" : "s") + " left");
  if (devices < options.minDevices)
    throw Error("elastic: fewer devices left (" + std::to_string(devices) +
                ") than --min-devices " + std::to_string(options.minDevices));
  int64_t from = checkpointStep();
  resumeIn(recompile(++layouts, devices), "test-exit-after");
  current.resume = from > 0;
  if (!current.resume)
    current.given.erase("resume");
  double recoveryS =
      std::chrono::duration<double>(Watchdog::Clock::now() - started).count();
  recordRecovery(recovery, lost.rank, lastStep, from, recoveryS);
  char text[256];
  std::snprintf(text, sizeof text,
                "elastic: recovery %d: planned and compiled %s for %lld "
                "device%s in %.2f s; resuming from step %lld (steps %lld to "
                "%lld trained again)",
                recovery, outDir.c_str(), (long long)devices,
                devices == 1 ? "" : "s", recoveryS, (long long)from,
                (long long)from + 1, (long long)lastStep);
  printElasticLine(text);
}

} // namespace

namespace launcher_detail {

int launchElastic(const LaunchOptions &options, const RankOptions &given) {
  ElasticLaunch elastic(options, given);
  elastic.setUp();
  return elastic.run();
}

} // namespace launcher_detail

} // namespace dpc::runtime
