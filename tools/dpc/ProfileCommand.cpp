//===- ProfileCommand.cpp - dpc profile -----------------------------------===//
//
// `dpc profile model.onnx -o profile.json` measures each model node's
// forward and backward time on a backend, the role of PipeDream's profiler:
// it compiles a one-stage timing build (every kernel call bracketed, see
// lower-to-runtime's `profile` option), trains it for a few steps on
// synthetic data under `dpc run`, and writes the planner's graph of the
// model with the measured times in dpc's profile.json format, which
// `dpc plan --profile` and `dpc compile --profile` read.
//
//===----------------------------------------------------------------------===//

#include "Commands.h"
#include "Compile.h"

#include "dpc/planner/Profile.h"
#include "dpc/support/CommandLine.h"
#include "dpc/support/WriteFile.h"

#include "llvm/ADT/SmallVector.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Program.h"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>

namespace fs = std::filesystem;

namespace dpc::tools {
namespace {

// Removes the scratch directory however the command ends.
struct ScratchDirectory {
  fs::path path;
  ~ScratchDirectory() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

// Milliseconds per microbatch of each node, by phase, from the op times the
// rank wrote: an op runs once per microbatch, so its mean call is its cost.
bool readOpTimes(const fs::path &file,
                 std::map<std::string, std::pair<double, double>> &nodes,
                 std::string &error) {
  std::ifstream in(file);
  nlohmann::json root = nlohmann::json::parse(in, nullptr, false);
  if (root.is_discarded() || !root.contains("ops")) {
    error = "cannot read the op times in " + file.string();
    return false;
  }
  for (const nlohmann::json &op : root["ops"]) {
    int64_t calls = op.value("calls", 0);
    if (calls <= 0)
      continue;
    double ms = op.value("total_ms", 0.0) / static_cast<double>(calls);
    auto &node = nodes[op.value("node", "")];
    (op.value("phase", "") == "forward" ? node.first : node.second) += ms;
  }
  return true;
}

} // namespace

int runProfileCommand(const Args &args) {
  CompileOptions compile;
  std::string output, target = "cpu";
  int64_t steps = 20;
  cli::ArgParser p("dpc profile",
                   "measure each op's forward and backward time on a backend",
                   "dpc profile MODEL -o profile.json [options]");
  p.addPositional("MODEL", &compile.model, "the ONNX model");
  p.addOption("o", &output, "FILE", "profile to write (required)");
  p.addOption("target", &target, "cpu|cuda", "backend to measure on");
  p.addOption("steps", &steps, "N",
              "training steps to average over (default 20)");
  p.addOption("microbatches", &compile.microbatches, "M",
              "microbatches per step (default 4)");
  p.addOption("microbatch-size", &compile.microbatchSize, "B",
              "samples per microbatch (re-specialises the batch dimension)");
  if (std::optional<int> exit = p.parseOrExit(args))
    return *exit;
  if (output.empty()) {
    std::cerr << "dpc profile: missing output file: give -o FILE\n";
    return cli::kUsageError;
  }
  if (target != "cpu") {
    std::cerr << "dpc profile: --target " << target
              << " is not available yet; profile with --target cpu\n";
    return cli::kUsageError;
  }
  if (steps < 1 || compile.microbatches < 1) {
    std::cerr << "dpc profile: --steps and --microbatches expect positive "
                 "counts\n";
    return cli::kUsageError;
  }

  llvm::SmallString<128> scratchPath;
  if (llvm::sys::fs::createUniqueDirectory("dpc-profile", scratchPath)) {
    std::cerr << "dpc profile: cannot create a scratch directory\n";
    return 1;
  }
  ScratchDirectory scratch{std::string(scratchPath)};
  fs::path build = scratch.path / "build";
  compile.outDir = build.string();
  compile.stages = 1;
  compile.schedule = "gpipe";
  compile.target = target;
  compile.profileBuild = true;
  compile.graphOutput = (scratch.path / "graph.json").string();
  if (int rc = compileModel(compile))
    return rc;

  // Train the timing build with `dpc run`, from this very executable.
  std::string self = llvm::sys::fs::getMainExecutable(
      nullptr, reinterpret_cast<void *>(&runProfileCommand));
  fs::path opTimes = scratch.path / "optimes.json";
  std::string stepsArg = std::to_string(steps);
  std::string buildArg = build.string(), opTimesArg = opTimes.string();
  llvm::SmallVector<llvm::StringRef> run = {
      self,     "run",       buildArg,    "--steps",    stepsArg,
      "--data", "synthetic", "--no-eval", "--op-times", opTimesArg};
  // The rank's progress lines would only be noise here; errors still show.
  std::optional<llvm::StringRef> redirects[] = {
      std::nullopt, llvm::StringRef(""), std::nullopt};
  std::string message;
  int status = llvm::sys::ExecuteAndWait(self, run, std::nullopt, redirects, 0,
                                         0, &message);
  if (status != 0) {
    std::cerr << "dpc profile: the timing run failed"
              << (message.empty() ? "" : ": " + message) << "\n";
    return 1;
  }

  std::map<std::string, std::pair<double, double>> measured;
  std::string error;
  if (!readOpTimes(scratch.path / "optimes.rank0.json", measured, error)) {
    std::cerr << "dpc profile: " << error << "\n";
    return 1;
  }
  planner::Expected<planner::Graph> graph =
      planner::loadProfile(compile.graphOutput);
  if (!graph) {
    std::cerr << "dpc profile: " << graph.error() << "\n";
    return 1;
  }
  for (planner::NodeId id = 0; id < graph->size(); ++id) {
    planner::Node &node = graph->node(id);
    if (node.isInput)
      continue;
    auto it = measured.find(node.name);
    // Views (reshapes) run no kernel: they cost nothing.
    node.forwardMs = it == measured.end() ? 0 : it->second.first;
    node.backwardMs = it == measured.end() ? 0 : it->second.second;
  }

  if (!support::writeAtomically(output, planner::writeJsonProfile(*graph),
                                error)) {
    std::cerr << "dpc profile: " << error << "\n";
    return 1;
  }
  std::cout << "dpc profile: " << graph->size() << " nodes, " << steps
            << " steps of " << compile.microbatches << " microbatches; wrote "
            << output << "\n";
  return 0;
}

} // namespace dpc::tools
