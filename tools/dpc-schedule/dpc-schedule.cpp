//===- dpc-schedule.cpp - Build, verify and simulate schedules ------------===//
//
// `dpc-schedule build` makes the instruction streams of one schedule kind,
// verifies them and writes schedule.json, a Chrome trace and an SVG picture;
// `dpc-schedule verify FILE` checks a schedule.json (hand-written ones
// included) and `dpc-schedule simulate FILE` times one; `dpc-schedule render
// TRACE` draws a predicted or measured Chrome trace as an SVG picture. No
// MLIR: the same library backs the compiler's build-schedule and
// verify-schedule passes.
//
//===----------------------------------------------------------------------===//

#include "dpc/planner/Microbatching.h"
#include "dpc/schedule/Builder.h"
#include "dpc/schedule/ScheduleOptions.h"
#include "dpc/schedule/Simulator.h"
#include "dpc/schedule/Timeline.h"
#include "dpc/schedule/Verifier.h"
#include "dpc/support/CommandLine.h"
#include "dpc/support/Error.h"
#include "dpc/support/WriteFile.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <random>
#include <sstream>

using namespace dpc::schedule;
namespace cli = dpc::cli;

// Curves.cpp.
int runCurves(const std::vector<std::string> &args);

namespace {

constexpr int kFailure = 1;

struct CostOptions {
  std::string costs; // "F,B,W" or a JSON file
  double latency = 0, bandwidth = 0, optimizer = 0, wakeLatency = 0;
  int64_t cores = 0;
};

void addCostOptions(cli::ArgParser &parser, CostOptions &opts) {
  parser.addOption("latency", &opts.latency, "MS",
                   "per-transfer latency in milliseconds (default 0; "
                   "simulate: the schedule's message_latency_ms)");
  parser.addOption("bandwidth", &opts.bandwidth, "BYTES_PER_MS",
                   "link bandwidth; 0 means transfers cost only the latency");
  parser.addOption("optimizer-ms", &opts.optimizer, "MS",
                   "cost of one optimizer step (default 0)");
  parser.addOption("cores", &opts.cores, "N",
                   "cores the ranks share (default a core per rank; "
                   "simulate: the schedule's cores); with fewer, the ranks "
                   "computing at a moment share them");
  parser.addOption("wake-latency", &opts.wakeLatency, "MS",
                   "with fewer cores than ranks, the least time from a "
                   "transfer's start until a rank waiting for it resumes "
                   "(default 0; simulate: the schedule's wake_latency_ms)");
}

/// Parses "F,B,W" (milliseconds per stage) or reads a cost file:
/// {"stages":[{"forward_ms":..,"backward_input_ms":..,...}], "latency_ms":..,
///  "bandwidth_bytes_per_ms":.., "optimizer_ms":..}, whose stages have
/// schedule.json's fields (stagesFromJson).
std::string checkCores(const CostOptions &opts) {
  if (opts.cores < 0 || opts.cores > (1 << 20))
    return "--cores must be from 0 to 1048576, got " +
           std::to_string(opts.cores);
  if (!(opts.wakeLatency >= 0) || !std::isfinite(opts.wakeLatency))
    return "--wake-latency must be milliseconds >= 0";
  return "";
}

std::string parseCosts(CostOptions &opts, std::vector<StageInfo> &stages) {
  if (std::string error = checkCores(opts); !error.empty())
    return error;
  if (opts.costs.empty())
    return "";
  double f, b, w;
  char tail;
  if (std::sscanf(opts.costs.c_str(), "%lf,%lf,%lf%c", &f, &b, &w, &tail) ==
      3) {
    if (f < 0 || b < 0 || w < 0)
      return "--costs expects non-negative F,B,W, got '" + opts.costs + "'";
    StageInfo info;
    info.forward = f;
    info.backwardInput = b;
    info.backwardWeight = w;
    stages = {info};
    return "";
  }
  std::ifstream in(opts.costs);
  if (!in)
    return "--costs expects F,B,W or a JSON cost file; cannot open '" +
           opts.costs + "'";
  std::stringstream text;
  text << in.rdbuf();
  try {
    stages = stagesFromJson(text.str());
  } catch (const dpc::Error &e) {
    return opts.costs + ": bad cost file: " + e.what();
  }
  try {
    nlohmann::json root = nlohmann::json::parse(text.str());
    opts.latency = root.value("latency_ms", opts.latency);
    opts.bandwidth = root.value("bandwidth_bytes_per_ms", opts.bandwidth);
    opts.optimizer = root.value("optimizer_ms", opts.optimizer);
  } catch (const nlohmann::json::exception &e) {
    return opts.costs + ": bad cost file: " + e.what();
  }
  return "";
}

std::string writeFile(const std::string &path, const std::string &text) {
  std::ofstream out(path);
  if (!out || !(out << text))
    return "cannot write '" + path + "'";
  return "";
}

/// Prints violations to stderr; returns whether there were none.
bool report(const std::string &command, const std::string &what,
            const VerifyResult &result) {
  for (const Violation &v : result.violations)
    std::cerr << command << ": " << what << v.format() << "\n";
  return result.ok();
}

void printSummary(const Schedule &s, const VerifyResult &vr,
                  const SimulateResult &sim) {
  std::printf("schedule %s: %d ranks, %d microbatches, %d chunk%s, %zu "
              "instructions\n",
              kindName(s.kind), s.ranks, s.microbatches, s.chunks,
              s.chunks == 1 ? "" : "s", s.numInstructions());
  std::printf("deadlock-free: blocking %s, non-blocking %s\n",
              vr.blockingDeadlockFree ? "yes" : "no",
              vr.nonBlockingDeadlockFree ? "yes" : "no");
  std::printf("step %.6g ms, bubble fraction %.4f; back to back %.6g ms a "
              "step\n",
              sim.stepTime, sim.bubbleFraction, sim.steadyStepTime);
  for (int r = 0; r < s.ranks; ++r)
    std::printf("rank %d: busy %.6g ms, peak memory %s, stashes %d, weight "
                "versions %d, optimizer steps %d\n",
                r, sim.rankBusy[r],
                dpc::cli::formatByteCount(vr.ranks[r].peakMemoryBytes).c_str(),
                vr.ranks[r].peakStashes, vr.ranks[r].peakWeightVersions,
                vr.ranks[r].optimizerSteps);
}

/// Writes the optional outputs; nothing is written unless all succeed to
/// render.
/// Times a verified schedule with the command line's latency, bandwidth
/// and optimizer cost; prints the error and returns false if it cannot.
bool simulate(const std::string &command, const Schedule &schedule,
              const CostOptions &costs, SimulateResult &sim) {
  SimulateOptions options;
  options.latency = costs.latency;
  options.bandwidth = costs.bandwidth;
  options.optimizerStep = costs.optimizer;
  options.cores = int(costs.cores);
  options.wakeLatency = costs.wakeLatency;
  options.steps = kSteadyStateSteps;
  try {
    sim = simulateSchedule(schedule, options);
  } catch (const dpc::Error &e) {
    std::cerr << command << ": " << e.what() << "\n";
    return false;
  }
  return true;
}

int writeOutputs(const std::string &command, const Schedule &s,
                 const SimulateResult &sim, const std::string &output,
                 const std::string &trace, const std::string &svg,
                 const std::string &title) {
  std::vector<std::pair<std::string, std::string>> files;
  if (!output.empty())
    files.push_back({output, toJson(s, 1) + "\n"});
  if (!trace.empty())
    files.push_back({trace, toChromeTrace(sim.timeline) + "\n"});
  if (!svg.empty()) {
    SvgOptions opts;
    opts.title =
        title.empty()
            ? std::string(kindName(s.kind)) + ", p=" + std::to_string(s.ranks) +
                  ", m=" + std::to_string(s.microbatches) +
                  (s.chunks > 1 ? ", v=" + std::to_string(s.chunks) : "")
            : title;
    files.push_back({svg, toSvg(sim.timeline, opts)});
  }
  for (const auto &[path, text] : files) {
    std::string error = writeFile(path, text);
    if (!error.empty()) {
      std::cerr << command << ": " << error << "\n";
      return kFailure;
    }
  }
  return 0;
}

std::string parseComm(const std::string &value, VerifyOptions &opts) {
  opts.checkBlocking = value == "blocking" || value == "both";
  opts.checkNonBlocking = value == "non-blocking" || value == "both";
  if (!opts.checkBlocking && !opts.checkNonBlocking)
    return "expects blocking, non-blocking or both, got '" + value + "'";
  return "";
}

// The options of the checks `build` and `verify` both run.
void addVerifyOptions(cli::ArgParser &parser, VerifyOptions &verify) {
  parser.addByteCountOption("memory-limit", &verify.memoryLimit,
                            "fail when a rank's peak memory exceeds this");
  parser.addOption(
      "comm", [&](const std::string &v) { return parseComm(v, verify); },
      "MODEL",
      "blocking, non-blocking or both (default) must be "
      "deadlock-free");
}

int runBuild(const std::vector<std::string> &args) {
  const std::string command = "dpc-schedule build";
  cli::ArgParser parser(
      command, "build, verify and simulate one pipeline schedule",
      "dpc-schedule build --stages P --microbatches M --schedule KIND "
      "[options]");
  int64_t stages = 0, microbatches = 0, virtualStages = 1;
  std::vector<int64_t> replicas;
  std::string kindText, output, trace, svg, title;
  bool verticalSync = false;
  CostOptions costs;
  VerifyOptions verify;
  parser.addOption("stages", &stages, "P", "pipeline ranks");
  parser.addOption("microbatches", &microbatches, "M",
                   "microbatches per minibatch (pipedream: the window)");
  addScheduleOption(parser, &kindText, {KindUse::Build, {}, ""});
  parser.addOption("virtual-stages", &virtualStages, "V",
                   "model chunks per rank (interleaved)");
  parser.addFlag("vertical-sync", &verticalSync,
                 "pipedream: every stage uses stage 0's weight version");
  parser.addCountListOption(
      "replicas", &replicas, "R0,R1,...",
      "ranks per stage; a replicated stage splits the microbatches over its "
      "ranks and all-reduces their gradients");
  parser.addOption("costs", &costs.costs, "F,B,W|FILE",
                   "per-stage costs in ms, or a JSON cost file with sizes");
  addCostOptions(parser, costs);
  addVerifyOptions(parser, verify);
  parser.addOption("o", &output, "FILE", "write schedule.json");
  parser.addOption("trace", &trace, "FILE", "write a Chrome trace");
  parser.addOption("svg", &svg, "FILE", "write an SVG timeline");
  parser.addOption("title", &title, "TEXT", "title of the SVG picture");
  if (std::optional<int> exit = parser.parseOrExit(args))
    return *exit;
  for (const char *required : {"stages", "microbatches", "schedule"}) {
    if (!parser.given(required)) {
      std::cerr << command << ": missing --" << required << "\n";
      return cli::kUsageError;
    }
  }

  BuildOptions options;
  // The option takes only the kinds the builder builds.
  parseKind(kindText, options.kind);
  options.stages = static_cast<int>(stages);
  options.microbatches = static_cast<int>(microbatches);
  options.virtualStages = static_cast<int>(virtualStages);
  options.verticalSync = verticalSync;
  options.replicas.assign(replicas.begin(), replicas.end());
  if (std::string error = parseCosts(costs, options.stageInfo);
      !error.empty()) {
    std::cerr << command << ": " << error << "\n";
    return cli::kUsageError;
  }

  Schedule schedule = buildSchedule(options);
  VerifyResult vr = verifySchedule(schedule, verify);
  if (!report(command, "", vr))
    return kFailure;
  SimulateResult sim;
  if (!simulate(command, schedule, costs, sim))
    return kFailure;
  if (int rc = writeOutputs(command, schedule, sim, output, trace, svg, title))
    return rc;
  printSummary(schedule, vr, sim);
  return 0;
}

int runVerify(const std::vector<std::string> &args) {
  const std::string command = "dpc-schedule verify";
  cli::ArgParser parser(command,
                        "check a schedule.json: deadlocks, stashes, updates "
                        "and memory",
                        "dpc-schedule verify FILE [options]");
  std::string path;
  VerifyOptions verify;
  parser.addPositional("file", &path, "the schedule.json to check");
  addVerifyOptions(parser, verify);
  if (std::optional<int> exit = parser.parseOrExit(args))
    return *exit;
  if (path.empty()) {
    std::cerr << command << ": missing the schedule file\n";
    return cli::kUsageError;
  }
  Schedule schedule = readScheduleFile(path);
  VerifyResult vr = verifySchedule(schedule, verify);
  if (!report(command, path + ": ", vr))
    return kFailure;
  std::printf("%s: ok (%s, %d ranks, %d microbatches; deadlock-free with "
              "blocking: %s, non-blocking: %s)\n",
              path.c_str(), kindName(schedule.kind), schedule.ranks,
              schedule.microbatches, vr.blockingDeadlockFree ? "yes" : "no",
              vr.nonBlockingDeadlockFree ? "yes" : "no");
  for (int r = 0; r < schedule.ranks; ++r)
    std::printf("rank %d: peak memory %s, stashes %d, weight versions %d\n", r,
                dpc::cli::formatByteCount(vr.ranks[r].peakMemoryBytes).c_str(),
                vr.ranks[r].peakStashes, vr.ranks[r].peakWeightVersions);
  return 0;
}

int runSimulate(const std::vector<std::string> &args) {
  const std::string command = "dpc-schedule simulate";
  cli::ArgParser parser(command,
                        "predict the timeline of a schedule.json from the "
                        "stage costs it records",
                        "dpc-schedule simulate FILE [options]");
  std::string path, trace, svg, title;
  CostOptions costs;
  parser.addPositional("file", &path, "the schedule.json to simulate");
  addCostOptions(parser, costs);
  parser.addOption("trace", &trace, "FILE", "write a Chrome trace");
  parser.addOption("svg", &svg, "FILE", "write an SVG timeline");
  parser.addOption("title", &title, "TEXT", "title of the SVG picture");
  if (std::optional<int> exit = parser.parseOrExit(args))
    return *exit;
  if (path.empty()) {
    std::cerr << command << ": missing the schedule file\n";
    return cli::kUsageError;
  }
  if (std::string error = checkCores(costs); !error.empty()) {
    std::cerr << command << ": " << error << "\n";
    return cli::kUsageError;
  }
  Schedule schedule = readScheduleFile(path);
  // Simulating an unverified stream could time nonsense; verify first.
  VerifyOptions verify;
  verify.checkBlocking = false;
  VerifyResult vr = verifySchedule(schedule, verify);
  if (!report(command, path + ": ", vr))
    return kFailure;
  // A build records the machine it predicted on: the message and wake-up
  // latencies a profile measured, the cores the ranks share.
  SimulateOptions recorded = recordedMachine(schedule);
  if (!parser.given("latency"))
    costs.latency = recorded.latency;
  if (!parser.given("cores"))
    costs.cores = recorded.cores;
  if (!parser.given("wake-latency"))
    costs.wakeLatency = recorded.wakeLatency;
  SimulateResult sim;
  if (!simulate(command, schedule, costs, sim))
    return kFailure;
  if (int rc = writeOutputs(command, schedule, sim, "", trace, svg, title))
    return rc;
  printSummary(schedule, vr, sim);
  return 0;
}

/// Splits "X,Y,..." into exactly `count` numbers, each a strict decimal as
/// the option parser reads them (no hex, inf or nan).
bool parseDecimals(const std::string &text, size_t count,
                   std::vector<double> &values) {
  values.clear();
  std::stringstream in(text);
  std::string part;
  while (std::getline(in, part, ',')) {
    double value;
    if (!cli::parseDecimal(part, value))
      return false;
    values.push_back(value);
  }
  return values.size() == count && text.back() != ',';
}

/// What `dpc-schedule microbatch`'s command line says.
struct MicrobatchArgs {
  std::string lengthsFile, lognormal, costText = "0.05,1e-3,2e-6";
  int64_t stages = 4, maxSamples = 128, padded = 8, seed = 1, repeat = 200,
          maxLength = 4096;
  double memoryLimit = 0, tokenBytes = 1024;
  int64_t bounds = dpc::planner::MicrobatchingOptions().bounds;
};

void addMicrobatchOptions(cli::ArgParser &parser, MicrobatchArgs &a) {
  parser.addOption("lengths", &a.lengthsFile, "FILE",
                   "sequence lengths, one positive integer per line");
  parser.addOption("lognormal", &a.lognormal, "MU,SIGMA,N",
                   "N lengths drawn from a log-normal law (--seed)");
  parser.addOption("seed", &a.seed, "N", "seed of --lognormal (default 1)");
  parser.addOption("max-length", &a.maxLength, "TOKENS",
                   "clamp drawn lengths to this (default 4096)");
  parser.addOption("cost", &a.costText, "A,B,C",
                   "a microbatch of s sequences padded to L tokens takes A + "
                   "B s L + C s L^2 ms on the slowest stage (default "
                   "0.05,1e-3,2e-6)");
  parser.addOption("token-bytes", &a.tokenBytes, "BYTES",
                   "activation bytes a token keeps on a stage (default 1024)");
  parser.addOption("memory-limit", &a.memoryLimit, "BYTES",
                   "activation bytes a stage may hold (default: no limit)");
  parser.addOption("stages", &a.stages, "P", "pipeline stages (default 4)");
  parser.addOption("max-samples", &a.maxSamples, "N",
                   "sequences per microbatch at most (default 128)");
  parser.addOption("padded-microbatches", &a.padded, "M",
                   "the comparison: M microbatches in the given order, each "
                   "padded to its longest (default 8)");
  parser.addOption("repeat", &a.repeat, "N",
                   "plan N times to time the planner (default 200)");
  parser.addOption("bounds", &a.bounds, "N",
                   "candidate bottleneck times the planner tries (default " +
                       std::to_string(a.bounds) + ")");
}

/// The sequence lengths of --lengths or --lognormal, or what is wrong.
std::string readLengths(const MicrobatchArgs &a,
                        std::vector<int64_t> &lengths) {
  if (!a.lengthsFile.empty() == !a.lognormal.empty())
    return "give --lengths FILE or --lognormal MU,SIGMA,N";
  if (!a.lengthsFile.empty()) {
    std::ifstream in(a.lengthsFile);
    if (!in)
      return "cannot open '" + a.lengthsFile + "'";
    std::string line;
    for (int number = 1; std::getline(in, line); ++number) {
      int64_t value = 0;
      if (!cli::parseInteger(line, value) || value <= 0)
        return a.lengthsFile + ":" + std::to_string(number) +
               ": expected a positive integer, got '" + line + "'";
      lengths.push_back(value);
    }
  } else {
    std::vector<double> law3;
    double mu = 0, sigma = -1, n = 0;
    if (parseDecimals(a.lognormal, 3, law3)) {
      mu = law3[0];
      sigma = law3[1];
      n = law3[2];
    }
    if (!(sigma >= 0) || !(n > 0 && n <= 1000000) || n != std::floor(n))
      return "--lognormal expects MU,SIGMA,N with SIGMA >= 0 and 0 < N <= "
             "1000000, got '" +
             a.lognormal + "'";
    std::mt19937_64 gen{uint64_t(a.seed)};
    std::lognormal_distribution<double> law(mu, sigma);
    for (int64_t i = 0; i < int64_t(n); ++i)
      lengths.push_back(std::clamp<int64_t>(int64_t(law(gen)), 1,
                                            std::max<int64_t>(a.maxLength, 1)));
  }
  if (lengths.empty())
    return "no sequences";
  return "";
}

/// The cost model of --cost and --token-bytes, or what is wrong.
std::string readSequenceCost(const MicrobatchArgs &a,
                             dpc::planner::SequenceCost &cost) {
  std::vector<double> abc;
  if (!parseDecimals(a.costText, 3, abc) ||
      !(abc[0] >= 0 && abc[1] >= 0 && abc[2] >= 0) ||
      abc[0] + abc[1] + abc[2] <= 0)
    return "--cost expects non-negative A,B,C, got '" + a.costText + "'";
  double ca = abc[0], cb = abc[1], cc = abc[2];
  cost.computeMs = [=](int64_t samples, int64_t length) {
    double sl = double(samples) * double(length);
    return ca + cb * sl + cc * sl * double(length);
  };
  double tokenBytes = a.tokenBytes;
  cost.activationBytes = [=](int64_t samples, int64_t length) {
    return tokenBytes * double(samples) * double(length);
  };
  return "";
}

/// Prints the planned and the padded microbatches of `lengths` side by side.
void printMicrobatchComparison(const std::vector<int64_t> &lengths,
                               const dpc::planner::Microbatching &plan,
                               const dpc::planner::Microbatching &baseline,
                               int stages, const std::vector<double> &micros) {
  double ours = dpc::planner::simulateMicrobatching(plan, stages);
  double theirs = baseline.simulatedMs;
  int64_t tokens = 0;
  for (int64_t l : lengths)
    tokens += l;
  std::printf("%zu sequences, %lld tokens (%lld to %lld a sequence), %d "
              "stages\n",
              lengths.size(), (long long)tokens,
              (long long)*std::min_element(lengths.begin(), lengths.end()),
              (long long)*std::max_element(lengths.begin(), lengths.end()),
              stages);
  std::printf("planned: %zu microbatches, padding %.1f%%, simulated 1F1B "
              "iteration %.3f ms\n",
              plan.microbatches.size(), 100 * plan.paddingOverhead, ours);
  std::printf("padded:  %zu microbatches, padding %.1f%%, simulated 1F1B "
              "iteration %.3f ms\n",
              baseline.microbatches.size(), 100 * baseline.paddingOverhead,
              theirs);
  std::printf("speedup over padded: %.2fx; planning time: median %.1f us, "
              "max %.1f us over %zu runs\n",
              ours > 0 ? theirs / ours : 0.0, micros[micros.size() / 2],
              micros.back(), micros.size());
}

/// `dpc-schedule microbatch`: plans one minibatch of variable-length
/// sequences (planner::planMicrobatches) and compares it, in the same run,
/// with padded microbatches of the same sequences.
int runMicrobatch(const std::vector<std::string> &args) {
  const std::string command = "dpc-schedule microbatch";
  cli::ArgParser parser(
      command,
      "split one minibatch of variable-length sequences into microbatches "
      "for a 1F1B pipeline, against padded microbatches",
      "dpc-schedule microbatch (--lengths FILE | --lognormal MU,SIGMA,N) "
      "[options]");
  MicrobatchArgs a;
  addMicrobatchOptions(parser, a);
  if (std::optional<int> exit = parser.parseOrExit(args))
    return *exit;

  std::vector<int64_t> lengths;
  dpc::planner::SequenceCost cost;
  std::string problem = readLengths(a, lengths);
  if (problem.empty())
    problem = readSequenceCost(a, cost);
  if (!problem.empty()) {
    std::cerr << command << ": " << problem << "\n";
    return cli::kUsageError;
  }
  dpc::planner::MicrobatchingOptions options;
  options.stages = int(std::max<int64_t>(a.stages, 1));
  options.maxSamples = a.maxSamples;
  options.memoryLimitBytes = a.memoryLimit;
  options.bounds = int(std::clamp<int64_t>(a.bounds, 2, 4096));

  dpc::planner::Microbatching plan;
  std::vector<double> micros;
  for (int64_t k = 0; k < std::max<int64_t>(a.repeat, 1); ++k) {
    auto begin = std::chrono::steady_clock::now();
    plan = dpc::planner::planMicrobatches(lengths, cost, options);
    auto end = std::chrono::steady_clock::now();
    micros.push_back(
        std::chrono::duration<double, std::micro>(end - begin).count());
  }
  std::sort(micros.begin(), micros.end());
  dpc::planner::Microbatching baseline = dpc::planner::padMicrobatches(
      lengths, int(a.padded), cost, options.stages);
  printMicrobatchComparison(lengths, plan, baseline, options.stages, micros);
  return 0;
}

/// "FIRST:LAST" or "N" (counted from 1) into `first` and `last`.
std::string parseStepRange(const std::string &text, int64_t &first,
                           int64_t &last) {
  long long a = 0, b = 0;
  char tail;
  if (std::sscanf(text.c_str(), "%lld:%lld%c", &a, &b, &tail) == 2) {
    first = a;
    last = b;
  } else if (std::sscanf(text.c_str(), "%lld%c", &a, &tail) == 1) {
    first = last = a;
  } else {
    return "expects FIRST:LAST or N, got '" + text + "'";
  }
  if (first < 1 || last < first)
    return "expects 1 <= FIRST <= LAST, got '" + text + "'";
  return "";
}

int runRender(const std::vector<std::string> &args) {
  const std::string command = "dpc-schedule render";
  cli::ArgParser parser(command,
                        "draw a Chrome trace (out/timeline.json, dpc run "
                        "--trace) as an SVG timeline",
                        "dpc-schedule render TRACE --svg FILE [options]");
  std::string path, svg, title, stepsText;
  bool transfers = false;
  int64_t first = 0, last = 0;
  parser.addPositional("trace", &path, "the Chrome trace to draw");
  parser.addOption("svg", &svg, "FILE", "write the SVG timeline here");
  parser.addOption(
      "steps",
      [&](const std::string &v) { return parseStepRange(v, first, last); },
      "FIRST:LAST",
      "the training steps to draw, from 1 (default: the middle step); an "
      "optimizer span ends a step");
  parser.addFlag("transfers", &transfers,
                 "draw sends and receives under each rank");
  parser.addOption("title", &title, "TEXT", "title of the SVG picture");
  if (std::optional<int> exit = parser.parseOrExit(args))
    return *exit;
  if (path.empty() || svg.empty()) {
    std::cerr << command << ": missing "
              << (path.empty() ? "the trace file" : "--svg FILE") << "\n";
    return cli::kUsageError;
  }
  Timeline timeline = readChromeTraceFile(path);
  if (timeline.events.empty()) {
    std::cerr << command << ": " << path << ": no spans to draw\n";
    return kFailure;
  }
  int steps = countSteps(timeline);
  if (!parser.given("steps"))
    first = last = (steps + 1) / 2;
  if (last > steps) {
    std::cerr << command << ": " << path << " has " << steps << " step"
              << (steps == 1 ? "" : "s") << "; cannot draw steps " << first
              << " to " << last << "\n";
    return kFailure;
  }
  Timeline window = selectSteps(timeline, int(first), int(last));
  double span = 0;
  for (const TimelineEvent &ev : window.events)
    span = std::max(span, ev.end);
  char range[64];
  std::snprintf(range, sizeof(range),
                first == last ? "step %lld" : "steps %lld-%lld",
                (long long)first, (long long)last);
  SvgOptions opts;
  opts.showTransfers = transfers;
  opts.title = title;
  if (opts.title.empty()) {
    char text[128];
    std::snprintf(text, sizeof(text), "%s of %d, %.3g ms", range, steps, span);
    opts.title = text;
  }
  dpc::support::writeAtomically(svg, toSvg(window, opts));
  std::printf("%s: %d ranks, %d step%s; drew %s (%.6g ms, %zu spans) to %s\n",
              path.c_str(), window.ranks, steps, steps == 1 ? "" : "s", range,
              span, window.events.size(), svg.c_str());
  return 0;
}

void printHelp(std::ostream &os) {
  os << "dpc-schedule - pipeline schedules without the compiler\n\n"
        "Usage: dpc-schedule <command> [options]\n\nCommands:\n"
        "  build     build, verify and simulate one schedule kind\n"
        "  verify    check a schedule.json\n"
        "  simulate  predict the timeline of a schedule.json\n"
        "  render    draw a predicted or measured Chrome trace as SVG\n"
        "  curves    draw the training curves of dpc run --metrics files\n"
        "  microbatch  split variable-length sequences into microbatches\n\n"
        "Run 'dpc-schedule <command> --help' for the options of a command.\n";
}

/// Runs the command `name` (argv[1]) on the rest of the command line.
int runCommand(const std::string &name, int argc, char **argv) {
  std::vector<std::string> rest(argv + 2, argv + argc);
  if (name == "build")
    return runBuild(rest);
  if (name == "verify")
    return runVerify(rest);
  if (name == "simulate")
    return runSimulate(rest);
  if (name == "render")
    return runRender(rest);
  if (name == "curves")
    return runCurves(rest);
  if (name == "microbatch")
    return runMicrobatch(rest);
  // `dpc-schedule --stages 4 ...` builds, as the short form.
  if (name.rfind("--", 0) == 0)
    return runBuild(std::vector<std::string>(argv + 1, argv + argc));
  std::cerr << "dpc-schedule: unknown command '" << name << "'\n";
  printHelp(std::cerr);
  return cli::kUsageError;
}

} // namespace

int main(int argc, char **argv) {
  if (argc < 2) {
    printHelp(std::cerr);
    return cli::kUsageError;
  }
  std::string name = argv[1];
  if (name == "--help" || name == "-h" || name == "help") {
    printHelp(std::cout);
    return 0;
  }
  // The one line of an error a command leaves to its caller
  // (docs/ARCHITECTURE.md, "Errors").
  std::string command =
      "dpc-schedule " + (name.rfind("--", 0) == 0 ? "build" : name);
  try {
    return runCommand(name, argc, argv);
  } catch (const dpc::InputError &e) {
    std::cerr << command << ": " << e.what() << "\n";
    return cli::kUsageError;
  } catch (const dpc::Error &e) {
    std::cerr << command << ": " << e.what() << "\n";
    return kFailure;
  }
}
