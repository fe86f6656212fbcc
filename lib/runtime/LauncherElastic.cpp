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
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <regex>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

namespace dpc::runtime {

using namespace launcher_detail;

namespace {

/// Every 10 steps when the user gave no --checkpoint-every.
constexpr int64_t kDefaultCheckpointEvery = 10;

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
  /// Plans and compiles the model for `devices` into ELASTIC_DIR/round.
  std::string recompile(int round) const;
  /// The step of the checkpoint the next layout resumes from; 0 for none.
  int64_t checkpointStep() const;
  void recordRecovery(int round, int lostRank, int64_t lastStep,
                      int64_t resumedFrom, double recoveryS) const;

  const LaunchOptions &options;
  const RankOptions &given;
  CompileRecord record;
  std::vector<std::string> kept;
  std::string elasticDir, outDir, dpcPath;
  RankOptions current;
  int64_t devices = 0;
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
  dpcPath = executablePath();
}

std::string ElasticLaunch::recompile(int round) const {
  std::string dir = elasticDir + "/" + std::to_string(round);
  std::vector<std::string> argv = {dpcPath, "compile", record.model};
  argv.insert(argv.end(), kept.begin(), kept.end());
  argv.insert(argv.end(), {"--devices", std::to_string(devices), "-o", dir});
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
  TensorFile file = readCheckpoint(dir, /*optimizerState=*/false);
  return std::stoll(file.metadata.at("step"));
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

int ElasticLaunch::run() {
  static const std::regex stepLine(R"(^step (\d+)/)");
  for (int round = 1;; ++round) {
    int64_t lastStep = 0;
    StdoutHook onStdout = [&](int, const std::string &line) {
      std::smatch m;
      if (std::regex_search(line, m, stepLine))
        lastStep = std::stoll(m[1].str());
    };
    try {
      return launchOnce(options, outDir, current, onStdout);
    } catch (const RankLostError &lost) {
      auto started = Watchdog::Clock::now();
      --devices;
      printElasticLine("elastic: " + std::string(lost.what()) + "; " +
                       std::to_string(devices) + " device" +
                       (devices == 1 ? "" : "s") + " left");
      if (devices < options.minDevices)
        throw Error("elastic: fewer devices left (" + std::to_string(devices) +
                    ") than --min-devices " +
                    std::to_string(options.minDevices));
      int64_t from = checkpointStep();
      outDir = recompile(round);
      current.resume = from > 0;
      if (current.resume)
        current.given.insert("resume");
      // The lost rank's test option is not given to the next layout.
      current.given.erase("test-exit-after");
      current.testExitAfter.clear();
      double recoveryS =
          std::chrono::duration<double>(Watchdog::Clock::now() - started)
              .count();
      recordRecovery(round, lost.rank, lastStep, from, recoveryS);
      char text[256];
      std::snprintf(text, sizeof text,
                    "elastic: recovery %d: planned and compiled %s for %lld "
                    "device%s in %.2f s; resuming from step %lld (steps "
                    "%lld to %lld trained again)",
                    round, outDir.c_str(), (long long)devices,
                    devices == 1 ? "" : "s", recoveryS, (long long)from,
                    (long long)from + 1, (long long)lastStep);
      printElasticLine(text);
    }
  }
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
