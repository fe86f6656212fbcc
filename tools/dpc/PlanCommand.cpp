//===- PlanCommand.cpp - dpc plan -----------------------------------------===//
//
// `dpc plan --profile graph.txt --devices 16 -o plan.json`: plans a PipeDream
// graph.txt or a dpc profile.json and writes plan.json. Every failure the
// user can fix (bad options, a malformed profile, a cyclic graph, a memory
// limit no plan meets) exits 2 and leaves no output file behind: lib/planner
// throws those as dpc::InputError, which dpc's main prints.
//
//===----------------------------------------------------------------------===//

#include "Commands.h"

#include "dpc/planner/PlanJson.h"
#include "dpc/planner/Planner.h"
#include "dpc/planner/Profile.h"
#include "dpc/schedule/ScheduleOptions.h"
#include "dpc/support/CommandLine.h"
#include "dpc/support/WriteFile.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <sstream>

namespace dpc::tools {

namespace {

using namespace dpc::planner;

/// Splits "a,b,c" (or "4x4" with sep 'x').
std::vector<std::string> split(const std::string &text, char sep) {
  std::vector<std::string> parts;
  std::stringstream in(text);
  std::string part;
  while (std::getline(in, part, sep))
    parts.push_back(part);
  if (!text.empty() && text.back() == sep)
    parts.push_back("");
  return parts;
}

std::string parseLevels(const std::string &text, std::vector<int> &levels) {
  levels.clear();
  for (const std::string &part : split(text, 'x')) {
    int64_t v = 0;
    if (!cli::parseInteger(part, v) || v < 1 || v > 4096)
      return "expects a device count such as 16 or 4x4, got '" + text + "'";
    levels.push_back(static_cast<int>(v));
  }
  long total = 1;
  for (int v : levels)
    if ((total *= v) > 4096)
      return "expects at most 4096 devices, got '" + text + "'";
  return "";
}

std::string parseBandwidths(const std::string &text,
                            std::vector<double> &bandwidths) {
  bandwidths.clear();
  for (const std::string &part : split(text, ',')) {
    double v;
    if (!cli::parseByteCount(part, v) || !(v > 0))
      return "expects bytes per second such as 1e9 or 25e9,1e9, got '" + text +
             "'";
    bandwidths.push_back(v);
  }
  return "";
}

/// The path of the first number in `value` that is not finite ("" when all
/// are): JSON has no infinity or NaN, and nlohmann writes them as null, so a
/// plan with one would be nonsense that parses.
std::string firstNonFinite(const nlohmann::ordered_json &value,
                           const std::string &path) {
  if (value.is_number_float())
    return std::isfinite(value.get<double>()) ? "" : path;
  if (value.is_object()) {
    for (auto it = value.begin(); it != value.end(); ++it)
      if (std::string found = firstNonFinite(
              it.value(), path.empty() ? it.key() : path + "." + it.key());
          !found.empty())
        return found;
  } else if (value.is_array()) {
    for (size_t i = 0; i < value.size(); ++i)
      if (std::string found =
              firstNonFinite(value[i], path + "[" + std::to_string(i) + "]");
          !found.empty())
        return found;
  }
  return "";
}

/// What the command line of dpc plan says, as given.
struct PlanArgs {
  std::string profilePath, clusterPath, output,
      devicesText = "1", bandwidthText = "1e9", scheduleText = "pipedream",
      objectiveText, optimizerText = "sgd";
  bool straight = false, quiet = false, shardOptimizer = false;
  int64_t stages = 0, microbatches = 0;
  double memoryLimit = 0;
  std::vector<int> levels = {1};
  std::vector<double> bandwidths = {1e9};
};

void addPlanOptions(cli::ArgParser &parser, PlanArgs &a) {
  parser.addOption("profile", &a.profilePath, "FILE",
                   "PipeDream graph.txt or dpc profile.json (required)");
  parser.addOption(
      "devices",
      [&a](const std::string &v) {
        a.devicesText = v;
        return parseLevels(v, a.levels);
      },
      "N[xM...]", "devices, or nested groups innermost first (4x4)");
  parser.addOption(
      "bandwidth",
      [&a](const std::string &v) {
        a.bandwidthText = v;
        return parseBandwidths(v, a.bandwidths);
      },
      "B[,B2...]", "bytes/s, one per topology level, innermost first (1e9)");
  parser.addOption("cluster", &a.clusterPath, "FILE",
                   "devices of their own speed and memory, and their links "
                   "(JSON, docs/PLANNER.md), instead of --devices");
  parser.addFlag("straight", &a.straight, "no replicas: one device per stage");
  parser.addOption("stages", &a.stages, "N", "exactly N stages");
  parser.addByteCountOption("memory-limit", &a.memoryLimit,
                            "memory per device");
  schedule::addScheduleOption(
      parser, &a.scheduleText,
      {schedule::KindUse::Plan, {}, "default pipedream"});
  parser.addOption("microbatches", &a.microbatches, "M",
                   "microbatches per step (1 for pipedream, 8 otherwise)");
  parser.addOption("objective", &a.objectiveText, "KIND",
                   "bottleneck or step (default: step for gpipe and 1f1b)");
  parser.addOption("optimizer", &a.optimizerText, "NAME",
                   "sgd (one state per parameter, default), adam or adamw "
                   "(two)");
  parser.addFlag("shard-optimizer", &a.shardOptimizer,
                 "a replicated stage's R replicas each keep 1/R of its "
                 "optimizer state (ZeRO stage 1), as dpc compile "
                 "--shard-optimizer builds it");
  parser.addOption("o", &a.output, "FILE",
                   "write plan.json here (default: stdout)");
  parser.addFlag("quiet", &a.quiet, "no summary on stdout when -o is given");
}

/// The planner's options from the command line, or what is wrong with it
/// (a --cluster file that is not valid throws dpc::InputError).
std::string toPlannerOptions(PlanArgs &a, const cli::ArgParser &parser,
                             PlannerOptions &opts) {
  if (a.profilePath.empty())
    return "missing --profile FILE";
  if (!a.clusterPath.empty()) {
    for (const char *flat : {"devices", "bandwidth"})
      if (parser.given(flat))
        return std::string("--cluster gives the devices and their "
                           "bandwidths; drop --") +
               flat;
    Cluster cluster = loadCluster(a.clusterPath);
    a.levels = cluster.topology.levelSizes;
    a.bandwidths = cluster.topology.bandwidths;
    opts.devices = std::move(cluster.devices);
  }
  if (a.bandwidths.size() == 1 && a.levels.size() > 1)
    a.bandwidths.assign(a.levels.size(), a.bandwidths[0]);
  if (a.bandwidths.size() != a.levels.size())
    return "--bandwidth gives " + std::to_string(a.bandwidths.size()) +
           " levels but --devices " + a.devicesText + " has " +
           std::to_string(a.levels.size());
  opts.cost.topology.levelSizes = a.levels;
  opts.cost.topology.bandwidths = a.bandwidths;
  // The option takes only the kinds the planner prices.
  parseScheduleKind(a.scheduleText, opts.cost.schedule);
  bool synchronous = opts.cost.schedule != ScheduleKind::PipeDream;
  if (a.microbatches < 0 ||
      (parser.given("microbatches") && a.microbatches < 1))
    return "--microbatches must be at least 1";
  opts.cost.microbatches = a.microbatches > 0 ? static_cast<int>(a.microbatches)
                                              : (synchronous ? 8 : 1);
  if (!parseOptimizerStateFactor(a.optimizerText,
                                 opts.cost.optimizerStateFactor))
    return "unknown optimizer '" + a.optimizerText +
           "' (expected sgd, adam or adamw)";
  if (a.objectiveText.empty())
    opts.objective = synchronous ? Objective::Step : Objective::Bottleneck;
  else if (a.objectiveText == "bottleneck")
    opts.objective = Objective::Bottleneck;
  else if (a.objectiveText == "step")
    opts.objective = Objective::Step;
  else
    return "unknown objective '" + a.objectiveText +
           "' (expected bottleneck or step)";
  if (parser.given("stages") && (a.stages < 1 || a.stages > 4096))
    return "--stages must be between 1 and 4096";
  opts.stages = static_cast<int>(a.stages);
  if (a.shardOptimizer && a.straight)
    return "--shard-optimizer splits a replicated stage's optimizer state; "
           "--straight plans no replicas";
  opts.cost.shardOptimizer = a.shardOptimizer;
  opts.straight = a.straight;
  opts.memoryLimitBytes = a.memoryLimit;
  return "";
}

/// The summary on stdout after plan.json is written: the plan's figures,
/// then a line a stage.
void printPlanSummary(const PlanResult &result, const PlannerOptions &opts,
                      double planMs) {
  const Evaluation &e = result.evaluation;
  std::printf("dpc plan: %zu stages on %d of %d devices, bottleneck %.6f s, "
              "step %.6f s (%s, %d microbatches), planned in %.2f ms\n",
              result.plan.stages.size(), e.usedDevices,
              opts.cost.topology.devices(), e.bottleneckSeconds, e.stepSeconds,
              scheduleName(opts.cost.schedule), opts.cost.microbatches, planMs);
  for (size_t s = 0; s < result.plan.stages.size(); ++s) {
    const StagePlan &st = result.plan.stages[s];
    const StageCost &c = e.stages[s];
    std::string on;
    for (int r = st.firstRank;
         !result.rankDevices.empty() && r < st.firstRank + st.replicas; ++r)
      on +=
          (on.empty() ? " (" : ", ") + opts.devices[result.rankDevices[r]].name;
    std::printf("  stage %zu: %zu nodes x%d replicas on ranks %d-%d%s%s, "
                "compute %.3f ms, transfer %.3f ms, memory %.3g bytes\n",
                s, st.nodes.size(), st.replicas, st.firstRank,
                st.firstRank + st.replicas - 1, on.c_str(),
                on.empty() ? "" : ")", c.computeSeconds * 1e3,
                std::max(c.recvSeconds, c.sendSeconds) * 1e3, c.memoryBytes);
  }
}

} // namespace

int runPlanCommand(const Args &args) {
  PlanArgs a;
  cli::ArgParser parser(
      "dpc plan",
      "partition a model or a PipeDream profile into pipeline stages",
      "dpc plan --profile FILE (--devices N[xM...] | --cluster FILE) "
      "[-o plan.json] [options]");
  addPlanOptions(parser, a);
  if (std::optional<int> exit = parser.parseOrExit(args))
    return *exit;
  auto usage = [](const std::string &message) {
    std::cerr << "dpc plan: " << message << "\n";
    return cli::kUsageError;
  };
  PlannerOptions opts;
  if (std::string problem = toPlannerOptions(a, parser, opts); !problem.empty())
    return usage(problem);

  Graph graph = loadProfile(a.profilePath);
  auto start = std::chrono::steady_clock::now();
  PlanResult result = planPipeline(graph, opts);
  double planMs = std::chrono::duration<double, std::milli>(
                      std::chrono::steady_clock::now() - start)
                      .count();

  nlohmann::ordered_json doc = planToJson(graph, result, opts);
  doc["profile"] = a.profilePath;
  if (!a.clusterPath.empty())
    doc["cluster"]["file"] = a.clusterPath;
  if (std::string where = firstNonFinite(doc, ""); !where.empty())
    return usage("the plan's " + where +
                 " is not a finite number: the costs of " + a.profilePath +
                 (a.clusterPath.empty() ? " and --bandwidth " + a.bandwidthText
                                        : " and " + a.clusterPath) +
                 " overflow the cost model");
  std::string text = doc.dump(2) + "\n";
  if (a.output.empty() || a.output == "-") {
    std::cout << text;
    return 0;
  }
  support::writeAtomically(a.output, text);
  if (!a.quiet)
    printPlanSummary(result, opts, planMs);
  return 0;
}

} // namespace dpc::tools
