//===- ProfileCommand.cpp - dpc profile -----------------------------------===//
//
// `dpc profile model.onnx -o profile.json` measures each model node's
// forward and backward time on a backend, the role of PipeDream's profiler:
// it compiles a one-stage timing build (every kernel call bracketed, see
// lower-to-runtime's `profile` option; fused as dpc compile fuses, a fused
// region's time shared among its ops' nodes), trains it for a few steps on
// synthetic data under `dpc run`, and writes the planner's graph of the
// model with the measured times in dpc's profile.json format, which
// `dpc plan --profile` and `dpc compile --profile` read. With
// --seq-buckets it measures a token model at each shape bucket (or at the
// --grid's shapes), one timing build per shape, and writes every shape's
// node times under "shapes"; the graph is the longest bucket's. It also
// trains a 1F1B build of the model on 2 stages (--message-ranks) with
// `dpc run --trace` and writes how long a message between stages took
// (schedule::messageLatency) under "message_latency_ms", which
// `dpc compile --profile` charges every transfer of its schedule, and,
// where each of those ranks had a core, how long they computed against the
// measured times (schedule::computeFactor) under "compute_factor", which
// apply-profile charges a job of several ranks. With --precision bf16 it
// times a bf16 build, and the profile says so.
//
//===----------------------------------------------------------------------===//

#include "Buckets.h"
#include "Commands.h"
#include "Compile.h"

#include "dpc/planner/Profile.h"
#include "dpc/runtime/Launcher.h"
#include "dpc/schedule/Schedule.h"
#include "dpc/schedule/Timeline.h"
#include "dpc/support/CommandLine.h"
#include "dpc/support/Error.h"
#include "dpc/support/WriteFile.h"

#include "llvm/ADT/SmallVector.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Program.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>

namespace fs = std::filesystem;

namespace dpc::tools {
namespace {

// The most steps a message run trains (models whose step is short).
constexpr int64_t kMaxMessageSteps = 500;

// Removes the scratch directory however the command ends.
struct ScratchDirectory {
  fs::path path;
  ~ScratchDirectory() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

// Trains `build` `steps` steps on synthetic data with `dpc run` (this very
// executable) and the options `extra`; `what` names the run in errors.
int train(const std::string &build, int64_t steps,
          const std::vector<std::string> &extra, const std::string &what) {
  std::string self = llvm::sys::fs::getMainExecutable(
      nullptr, reinterpret_cast<void *>(&runProfileCommand));
  std::string stepsArg = std::to_string(steps);
  llvm::SmallVector<llvm::StringRef> run = {self,        "run",      build,
                                            "--steps",   stepsArg,   "--data",
                                            "synthetic", "--no-eval"};
  run.append(extra.begin(), extra.end());
  // The rank's progress lines would only be noise here; errors still show.
  std::optional<llvm::StringRef> redirects[] = {
      std::nullopt, llvm::StringRef(""), std::nullopt};
  std::string message;
  if (llvm::sys::ExecuteAndWait(self, run, std::nullopt, redirects, 0, 0,
                                &message) != 0) {
    std::cerr << "dpc profile: " << what << " failed"
              << (message.empty() ? "" : ": " + message) << "\n";
    return 1;
  }
  return 0;
}

// Milliseconds per microbatch of each node, by phase, from the op times the
// rank wrote: an op runs once per microbatch, so its median call (its mean
// in op times without medians) is its cost.
std::map<std::string, std::pair<double, double>>
readOpTimes(const fs::path &file) {
  std::ifstream in(file);
  nlohmann::json root = nlohmann::json::parse(in, nullptr, false);
  if (root.is_discarded() || !root.contains("ops"))
    throw dpc::Error("cannot read the op times in " + file.string());
  std::map<std::string, std::pair<double, double>> nodes;
  for (const nlohmann::json &op : root["ops"]) {
    int64_t calls = op.value("calls", 0);
    if (calls <= 0)
      continue;
    double ms = op.contains("median_ms")
                    ? op.value("median_ms", 0.0)
                    : op.value("total_ms", 0.0) / static_cast<double>(calls);
    auto &node = nodes[op.value("node", "")];
    (op.value("phase", "") == "forward" ? node.first : node.second) += ms;
  }
  return nodes;
}

// "BxL,BxL,...": the microbatch shapes of --grid.
std::string parseGrid(const std::string &text,
                      std::vector<ShapeBucket> &shapes) {
  std::stringstream list(text);
  std::string item;
  while (std::getline(list, item, ',')) {
    size_t x = item.find('x');
    ShapeBucket shape;
    if (x == std::string::npos ||
        !cli::parseInteger(item.substr(0, x), shape.batch) ||
        !cli::parseInteger(item.substr(x + 1), shape.length) ||
        shape.batch < 1 || shape.length < 1)
      return "--grid expects shapes BATCHxLENGTH separated by commas, got '" +
             item + "'";
    if (std::find(shapes.begin(), shapes.end(), shape) != shapes.end())
      return "--grid names " + item + " twice";
    shapes.push_back(shape);
  }
  if (shapes.empty())
    return "--grid expects at least one shape BATCHxLENGTH";
  return "";
}

// The model's graph with every node's measured milliseconds per
// microbatch, from a one-stage timing build of `compile` (at its shape)
// trained `steps` steps under `dpc run` in `dir`.
int measure(CompileOptions compile, const fs::path &dir, int64_t steps,
            planner::Graph &graph) {
  compile.outDir = (dir / "build").string();
  compile.stages = 1;
  compile.schedule = schedule::kindName(schedule::ScheduleKind::GPipe);
  compile.profileBuild = true;
  compile.graphOutput = (dir / "graph.json").string();
  if (int rc = compileModel(compile))
    return rc;

  fs::path opTimes = dir / "optimes.json";
  if (int rc = train(compile.outDir, steps, {"--op-times", opTimes.string()},
                     "the timing run"))
    return rc;

  std::map<std::string, std::pair<double, double>> measured =
      readOpTimes(dir / "optimes.rank0.json");
  try {
    graph = planner::loadProfile(compile.graphOutput);
  } catch (const dpc::Error &e) {
    // The graph the timing build wrote: not the user's input, exit 1.
    std::cerr << "dpc profile: " << e.what() << "\n";
    return 1;
  }
  for (planner::NodeId id = 0; id < graph.size(); ++id) {
    planner::Node &node = graph.node(id);
    if (node.isInput)
      continue;
    auto it = measured.find(node.name);
    // Views (reshapes) run no kernel: they cost nothing.
    node.forwardMs = it == measured.end() ? 0 : it->second.first;
    node.backwardMs = it == measured.end() ? 0 : it->second.second;
  }
  return 0;
}

// The mean latency of a message between stages (schedule::messageLatency)
// of `compile`'s model on `ranks` stages of a 1F1B build, trained `steps`
// steps on synthetic data under `dpc run --trace` in `dir`, and when the
// ranks share this machine's cores, how long a rank waiting for a message
// took to resume (schedule::wakeLatency; else `wake` is left empty), and
// when they do not, how long they computed against the profile's times
// (schedule::computeFactor; else `factor` is left empty).
int measureMessages(CompileOptions compile, const fs::path &dir, int64_t steps,
                    int ranks, double &latency, std::optional<double> &wake,
                    std::optional<double> &factor) {
  compile.outDir = (dir / ("messages" + std::to_string(ranks))).string();
  compile.stages = ranks;
  compile.schedule = schedule::kindName(schedule::ScheduleKind::OneFOneB);
  if (int rc = compileModel(compile))
    return rc;
  std::string traceArg = compile.outDir + ".trace.json";
  if (int rc = train(compile.outDir, steps, {"--trace", traceArg},
                     "the run on " + std::to_string(ranks) + " stages"))
    return rc;
  schedule::Timeline trace = schedule::readChromeTraceFile(traceArg);
  latency = schedule::messageLatency(trace);
  if (latency < 0) {
    std::cerr << "dpc profile: the run on " << ranks
              << " stages waited for no message\n";
    return 1;
  }
  long cores = machineCores();
  if (runtime::sharedCores("", ranks, cores,
                           runtime::threadsPerRank(ranks, cores)) > 0) {
    wake = schedule::wakeLatency(trace);
    return 0;
  }
  // With a core each, how the ranks' compute compares with the times the
  // run was priced at (its stages' costs are the profile's); on shared
  // cores the spans hold the sharing, which the simulator models itself.
  schedule::Schedule priced =
      schedule::readScheduleFile(compile.outDir + "/schedule.json");
  if (double f = schedule::computeFactor(trace, priced); f > 0)
    factor = f;
  return 0;
}

/// What `dpc profile`'s command line says beside the compile options.
struct ProfileArgs {
  std::string output, target = "cpu", grid;
  int64_t steps = 20, ignoreIndex = -100;
  std::vector<int64_t> messageRanks = {2};
};

void addProfileOptions(cli::ArgParser &p, CompileOptions &compile,
                       ProfileArgs &a) {
  p.addPositional("MODEL", &compile.model, "the ONNX model");
  p.addOption("o", &a.output, "FILE", "profile to write (required)");
  p.addOption("target", &a.target, "cpu|cuda", "backend to measure on");
  p.addOption("steps", &a.steps, "N",
              "training steps to average over, after a first one left out "
              "(default 20)");
  p.addOption("microbatches", &compile.microbatches, "M",
              "microbatches per step (default 4)");
  p.addOption("microbatch-size", &compile.microbatchSize, "B",
              "samples per microbatch (re-specialises the batch dimension)");
  p.addCountListOption(
      "seq-buckets", &compile.seqBuckets, "L1,L2,...",
      "measure a token model at every shape bucket 'dpc compile "
      "--seq-buckets' builds (needs --microbatch-size)");
  p.addOption("bucket-tokens", &compile.bucketTokens, "N",
              "tokens per microbatch of the buckets, as for dpc compile");
  p.addOption("grid", &a.grid, "BxL,...",
              "with --seq-buckets: measure these shapes only (and the "
              "longest bucket's); dpc compile fits the others");
  p.addOption("ignore-index", &a.ignoreIndex, "N",
              "label value the loss leaves out, as for dpc compile");
  p.addCountListOption(
      "message-ranks", &a.messageRanks, "N1,N2,...",
      "also measure the latency of a message between stages, on N stages "
      "of a 1F1B build for each N (default 2; 1 measures none)");
  p.addOption("fusion", cli::oneOf(&compile.fusion, {"on", "off"}), "on|off",
              "time the build as dpc compile --fusion makes it (default on "
              "for the CPU): a fused region's time is shared among its ops' "
              "nodes");
  p.addOption("precision", cli::oneOf(&compile.precision, {"fp32", "bf16"}),
              "fp32|bf16",
              "time the build as dpc compile --precision makes it (default "
              "fp32): bf16 runs convolutions and matmuls in bf16; the "
              "profile records it");
  p.addOption("activation-layout",
              cli::oneOf(&compile.activationLayout, {"blocked", "plain"}),
              "blocked|plain",
              "time the build as dpc compile --activation-layout makes it "
              "(default blocked, as dpc compile's for the CPU)");
  p.addOption(
      "conv-algorithm",
      cli::oneOf(&compile.convAlgorithm, {"auto", "winograd", "direct"}),
      "auto|winograd|direct",
      "time the convolutions as dpc compile --conv-algorithm runs "
      "them (default auto, as dpc compile's for the CPU)");
}

/// Checks the options and sets the build's: returns what is wrong, or "".
std::string checkProfileOptions(const cli::ArgParser &p, const ProfileArgs &a,
                                CompileOptions &compile) {
  if (a.output.empty())
    return "missing output file: give -o FILE";
  if (a.target != "cpu")
    return "--target " + a.target +
           " is not available yet; profile with --target cpu";
  if (a.steps < 1 || compile.microbatches < 1)
    return "--steps and --microbatches expect positive counts";
  if (p.given("ignore-index"))
    compile.ignoreIndex = a.ignoreIndex;
  compile.target = a.target;
  // Time the kernels the build will run: with fusion, a fused region is one
  // call, whose time goes to the nodes of its ops.
  if (!p.given("fusion"))
    compile.fusion = "on";
  // In the layouts the build's kernels will read.
  if (!p.given("activation-layout"))
    compile.activationLayout = "blocked";
  // And the convolutions by the algorithms the build will choose: a
  // Winograd layer takes about half the direct time.
  if (!p.given("conv-algorithm"))
    compile.convAlgorithm = "auto";
  return "";
}

/// The shapes to measure: none (the model's own), or the shape buckets of
/// --seq-buckets (or --grid's), the longest bucket's first. Returns what is
/// wrong, or "".
std::string shapesToMeasure(const cli::ArgParser &p, const ProfileArgs &a,
                            const CompileOptions &compile,
                            std::vector<ShapeBucket> &shapes) {
  std::string problem;
  const std::vector<int64_t> &lengths = compile.seqBuckets;
  if ((p.given("grid") || p.given("bucket-tokens")) && lengths.empty())
    problem = "--grid and --bucket-tokens apply to --seq-buckets";
  else if (!lengths.empty() && compile.microbatchSize < 1)
    problem = "--seq-buckets needs --microbatch-size B, the batch of the "
              "longest bucket";
  else if (!std::is_sorted(lengths.begin(), lengths.end()) ||
           std::adjacent_find(lengths.begin(), lengths.end()) != lengths.end())
    problem = "--seq-buckets expects ascending lengths";
  else if (!lengths.empty() && p.given("bucket-tokens") &&
           compile.bucketTokens < lengths.back())
    problem = "--bucket-tokens is less than the longest bucket length";
  else if (!lengths.empty()) {
    ShapeBucket top{compile.microbatchSize, lengths.back()};
    if (!a.grid.empty())
      problem = parseGrid(a.grid, shapes);
    else
      shapes = shapeBuckets(lengths,
                            compile.bucketTokens > 0 ? compile.bucketTokens
                                                     : top.batch * top.length,
                            top);
    if (std::find(shapes.begin(), shapes.end(), top) == shapes.end())
      shapes.push_back(top);
    // The top graph is the longest bucket's, which partitions the model.
    std::stable_partition(shapes.begin(), shapes.end(),
                          [&](const ShapeBucket &s) { return s == top; });
  }
  return problem;
}

/// Measures the node times of every shape in `shapes` (or of the model's
/// own, when there are none) into `graph`, the longest bucket's, and
/// `measured`, one a shape.
int measureShapes(const CompileOptions &compile, const fs::path &scratch,
                  int64_t steps, const std::vector<ShapeBucket> &shapes,
                  planner::Graph &graph,
                  std::vector<planner::MeasuredShape> &measured) {
  if (shapes.empty()) {
    if (int rc = measure(compile, scratch, steps, graph))
      return rc;
  }
  for (auto [k, shape] : llvm::enumerate(shapes)) {
    CompileOptions at = compile;
    at.microbatchSize = shape.batch;
    at.sequenceLength = shape.length;
    planner::Graph shapeGraph;
    fs::path dir = scratch / ("shape" + std::to_string(k));
    if (int rc = measure(at, dir, steps, shapeGraph)) {
      std::cerr << "dpc profile: measuring " << describe(shape) << " failed\n";
      return rc;
    }
    planner::MeasuredShape times{shape.batch, shape.length, {}};
    double forward = 0, backward = 0;
    for (planner::NodeId id = 0; id < shapeGraph.size(); ++id) {
      const planner::Node &node = shapeGraph.node(id);
      if (node.isInput)
        continue;
      times.nodes[node.name] = {node.forwardMs, node.backwardMs};
      forward += node.forwardMs;
      backward += node.backwardMs;
    }
    std::printf("dpc profile: %lldx%lld: %.3f ms forward, %.3f ms backward "
                "a microbatch\n",
                (long long)shape.batch, (long long)shape.length, forward,
                backward);
    measured.push_back(std::move(times));
    if (k == 0)
      graph = std::move(shapeGraph);
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
  return 0;
}

/// Messages, at the longest bucket's shape for a token model, on the
/// stages dpc compile --profile plans from the times just measured (`graph`
/// and `sections`, written to the scratch directory for it), for at least
/// `steps` steps and about kMessageRunMs: the slow messages that a wake-up
/// on shared cores takes are a few percent of them. Adds what each of
/// `messageRanks` measured to `sections`.
int measureAllMessages(const CompileOptions &compile, const fs::path &scratch,
                       int64_t steps, const std::vector<int64_t> &messageRanks,
                       const std::vector<ShapeBucket> &shapes,
                       const planner::Graph &graph,
                       planner::ProfileSections &sections) {
  constexpr double kMessageRunMs = 1000;
  double stepMs = 0;
  for (planner::NodeId id = 0; id < graph.size(); ++id)
    stepMs += (graph.node(id).forwardMs + graph.node(id).backwardMs) *
              double(compile.microbatches);
  int64_t messageSteps = std::max<int64_t>(
      steps,
      std::min<int64_t>(kMaxMessageSteps,
                        int64_t(kMessageRunMs / std::max(stepMs, 1e-3))));
  std::string times = (scratch / "times.json").string();
  support::writeAtomically(times, planner::writeJsonProfile(graph, sections));
  for (int64_t ranks : messageRanks) {
    if (ranks < 2)
      continue;
    CompileOptions at = compile;
    at.profile = times;
    at.cores = machineCores();
    if (!shapes.empty()) {
      at.microbatchSize = shapes.front().batch;
      at.sequenceLength = shapes.front().length;
    }
    double latency = 0;
    std::optional<double> wake, factor;
    if (int rc = measureMessages(at, scratch, messageSteps, int(ranks), latency,
                                 wake, factor))
      return rc;
    // Where the ranks share the cores, a receiver's wait includes its
    // wake-up, which the simulation charges apart from the transfer's
    // latency: such a run gives the wake-up only.
    if (wake) {
      std::printf("dpc profile: %lld ranks share %lld cores: a rank waiting "
                  "for a message resumed after %.4f ms\n",
                  (long long)ranks, (long long)machineCores(), *wake);
      sections.wakes[int(ranks)] = *wake;
    } else {
      std::printf("dpc profile: a message between %lld stages: %.4f ms\n",
                  (long long)ranks, latency);
      sections.messages[int(ranks)] = latency;
    }
    if (factor) {
      std::printf("dpc profile: on %lld stages with a core each the ranks "
                  "computed %.3fx the profiled times\n",
                  (long long)ranks, *factor);
      sections.computeFactors[int(ranks)] = *factor;
    }
  }
  return 0;
}

} // namespace

int runProfileCommand(const Args &args) {
  CompileOptions compile;
  ProfileArgs a;
  cli::ArgParser p("dpc profile",
                   "measure each op's forward and backward time on a backend",
                   "dpc profile MODEL -o profile.json [options]");
  addProfileOptions(p, compile, a);
  if (std::optional<int> exit = p.parseOrExit(args))
    return *exit;
  std::vector<ShapeBucket> shapes;
  std::string problem = checkProfileOptions(p, a, compile);
  if (problem.empty())
    problem = shapesToMeasure(p, a, compile, shapes);
  if (!problem.empty()) {
    std::cerr << "dpc profile: " << problem << "\n";
    return cli::kUsageError;
  }
  compile.seqBuckets.clear();
  compile.bucketTokens = 0;

  llvm::SmallString<128> scratchPath;
  if (llvm::sys::fs::createUniqueDirectory("dpc-profile", scratchPath)) {
    std::cerr << "dpc profile: cannot create a scratch directory\n";
    return 1;
  }
  ScratchDirectory scratch{std::string(scratchPath)};

  planner::Graph graph;
  planner::ProfileSections sections;
  if (int rc = measureShapes(compile, scratch.path, a.steps, shapes, graph,
                             sections.shapes))
    return rc;
  sections.precision = compile.precision;
  if (int rc = measureAllMessages(compile, scratch.path, a.steps,
                                  a.messageRanks, shapes, graph, sections))
    return rc;

  support::writeAtomically(a.output,
                           planner::writeJsonProfile(graph, sections));
  std::cout << "dpc profile: " << graph.size() << " nodes";
  if (!sections.shapes.empty())
    std::cout << " at " << sections.shapes.size() << " shapes";
  std::cout << ", " << a.steps << " steps of " << compile.microbatches
            << " microbatches; wrote " << a.output << "\n";
  return 0;
}

} // namespace dpc::tools
