//===- CompileCommand.cpp - dpc compile -----------------------------------===//
//
// Parses and checks every `dpc compile` option of DESIGN.md, loads the model
// and runs the pass pipeline as far as it is built, writing the output
// directory only when everything succeeded (support::OutputDirectory: a
// staging directory swapped into place at the end, and never over anything
// dpc did not write).
//
//===----------------------------------------------------------------------===//

#include "Buckets.h"
#include "Commands.h"
#include "Compile.h"

#include "backends/llvm/ObjectEmitter.h"
#include "dialects/nn/IR/NNDialect.h"
#include "dialects/nn/IR/NNOps.h"
#include "dialects/pipe/IR/PipeDialect.h"
#include "dialects/pipe/IR/PipeOps.h"
#include "frontends/onnx/OnnxImporter.h"
#include "passes/Passes.h"
#include "passes/Pipeline.h"
#include "passes/StageInfo.h"

#include "dpc/runtime/Safetensors.h"
#include "dpc/schedule/Schedule.h"
#include "dpc/schedule/Verifier.h"
#include "dpc/support/CommandLine.h"
#include "dpc/support/OutputDirectory.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>

#include <functional>
#include <iostream>
#include <nlohmann/json.hpp>
#include <set>
#include <unistd.h>

namespace fs = std::filesystem;

namespace dpc::tools {
namespace {

using cli::oneOf;

// The largest microbatch size a build accepts. The runtime moves a
// microbatch's activations between stages as one MPI message, whose size is
// an int count of bytes: this many samples of a single float each fill it.
constexpr int64_t kMaxMicrobatchSize = schedule::kMaxMessageBytes / 4;

// Refuses microbatch counts and sizes the runtime cannot run, before any
// work. The exact checks (the stage count the planner picks for --devices,
// the bytes each boundary sends) follow in build-schedule.
std::string checkRuntimeLimits(const CompileOptions &o,
                               const cli::ArgParser &p) {
  // --devices lets the planner pick the stages, at least one.
  int64_t stages = p.given("stages")     ? o.stages
                   : p.given("replicas") ? int64_t(o.replicas.size())
                                         : 1;
  int64_t virtualStages =
      std::min<int64_t>(stages, schedule::kScheduleTagLimit) *
      std::min<int64_t>(o.virtualStages, schedule::kScheduleTagLimit);
  if (virtualStages <= schedule::kScheduleTagLimit / 2) {
    int64_t most = schedule::maxMicrobatches(int(virtualStages));
    if (o.microbatches > most)
      return "--microbatches " + std::to_string(o.microbatches) +
             " is more than the " + std::to_string(most) + " that " +
             std::to_string(virtualStages) +
             (virtualStages == 1     ? " stage"
              : o.virtualStages == 1 ? " stages"
                                     : " virtual stages") +
             " can run: every message of a step has its own MPI tag (2 per "
             "microbatch and stage), and the runtime's stop at " +
             std::to_string(schedule::kScheduleTagLimit) +
             " (MPI guarantees 32767; the runtime keeps the rest)";
  }
  if (p.given("microbatch-size") && o.microbatchSize > kMaxMicrobatchSize)
    return "--microbatch-size " + std::to_string(o.microbatchSize) +
           " is more than " + std::to_string(kMaxMicrobatchSize) +
           ": a microbatch's activations travel between stages as one MPI "
           "message of at most " +
           std::to_string(schedule::kMaxMessageBytes) +
           " bytes (an int), 4 bytes a sample at the least";
  return "";
}

// Checks relations between options that the parser cannot see one at a time.
std::string checkOptions(const CompileOptions &o, const cli::ArgParser &p) {
  if (p.given("stages") && p.given("devices"))
    return "give --stages or --devices, not both";
  if (p.given("stages") && o.stages < 1)
    return "--stages expects a positive count, got " + std::to_string(o.stages);
  if (p.given("devices") && o.devices < 1)
    return "--devices expects a positive count, got " +
           std::to_string(o.devices);
  if (o.microbatches < 1)
    return "--microbatches expects a positive count, got " +
           std::to_string(o.microbatches);
  if (p.given("microbatch-size") && o.microbatchSize < 1)
    return "--microbatch-size expects a positive size, got " +
           std::to_string(o.microbatchSize);
  if (o.virtualStages < 1)
    return "--virtual-stages expects a positive count";
  if (std::string problem = checkRuntimeLimits(o, p); !problem.empty())
    return problem;
  if (o.verticalSync && o.schedule != "pipedream")
    return "--vertical-sync applies only to --schedule pipedream";
  if (o.virtualStages > 1 && o.schedule != "interleaved")
    return "--virtual-stages applies only to --schedule interleaved";
  if (p.given("replicas")) {
    if (p.given("devices"))
      return "give --replicas or --devices, not both";
    if (p.given("stages") && int64_t(o.replicas.size()) != o.stages)
      return "--replicas lists " + std::to_string(o.replicas.size()) +
             " stages but --stages is " + std::to_string(o.stages);
    if (o.schedule == "pipedream" || o.schedule == "interleaved")
      return "--replicas needs a synchronous schedule with one model chunk "
             "per rank (gpipe, 1f1b, zb-h1, zb-2p), not " +
             o.schedule;
  }
  if (o.reduce == "preduce" &&
      (o.replicas.size() != 1 || o.replicas.front() < 2))
    return "--reduce preduce needs one replicated stage (--replicas R with "
           "R > 1): a replica that falls behind skips steps, which other "
           "stages cannot";
  if (o.schedule == "interleaved" && p.given("devices"))
    return "--schedule interleaved needs --stages (ranks), not --devices";
  if (p.given("cluster")) {
    for (const char *other : {"devices", "bandwidth"})
      if (p.given(other))
        return std::string("--cluster gives the devices and their links; "
                           "drop --") +
               other;
    if (p.given("replicas") || o.schedule == "interleaved")
      return "--cluster lets the planner pick the replicas, one model chunk "
             "per rank: drop --replicas and --schedule interleaved";
  }
  if (!(o.bandwidth > 0))
    return "--bandwidth expects a positive rate";
  if (!(o.lr > 0))
    return "--lr expects a positive learning rate";
  if (!(o.momentum >= 0 && o.momentum < 1))
    return "--momentum expects a value in [0, 1)";
  if (!(o.weightDecay >= 0))
    return "--weight-decay expects a non-negative value";
  if (!(o.eps > 0))
    return "--eps expects a positive value";
  if (o.optimizer != "sgd" && p.given("momentum"))
    return "--momentum applies to --optimizer sgd; Adam takes --betas";
  if (o.optimizer == "sgd")
    for (const char *adam : {"betas", "eps"})
      if (p.given(adam))
        return std::string("--") + adam +
               " applies to --optimizer adam or adamw";
  if (p.given("no-decay") && !p.given("weight-decay"))
    return "--no-decay names parameters left out of --weight-decay; give "
           "--weight-decay too";
  if (o.ignoreIndex && o.loss != "softmax-cross-entropy")
    return "--ignore-index applies to --loss softmax-cross-entropy";
  if (!(o.labelSmoothing >= 0 && o.labelSmoothing < 1))
    return "--label-smoothing expects a value in [0, 1)";
  if (p.given("label-smoothing") && o.loss != "softmax-cross-entropy")
    return "--label-smoothing applies to --loss softmax-cross-entropy";
  if (o.inference) {
    for (const char *training :
         {"devices", "replicas", "reduce", "schedule", "virtual-stages",
          "vertical-sync", "loss", "ignore-index", "label-smoothing",
          "optimizer", "lr", "momentum", "betas", "eps", "weight-decay",
          "no-decay"})
      if (p.given(training))
        return std::string("--inference builds a forward pass only; --") +
               training + " applies to training";
  }
  if (p.given("bucket-tokens") && !p.given("seq-buckets"))
    return "--bucket-tokens applies to --seq-buckets";
  if (p.given("seq-buckets")) {
    const std::vector<int64_t> &lengths = o.seqBuckets;
    for (size_t i = 1; i < lengths.size(); ++i)
      if (lengths[i] <= lengths[i - 1])
        return "--seq-buckets expects ascending lengths, got " +
               std::to_string(lengths[i]) + " after " +
               std::to_string(lengths[i - 1]);
    if (!o.ignoreIndex)
      return "--seq-buckets needs --ignore-index P: samples shorter than "
             "their bucket are padded, and the loss must leave out the "
             "padding's labels";
    if (p.given("bucket-tokens") && o.bucketTokens < lengths.back())
      return "--bucket-tokens " + std::to_string(o.bucketTokens) +
             " is less than the longest bucket length " +
             std::to_string(lengths.back()) +
             ": no microbatch of that length fits";
    if (fs::path(o.model).extension() != ".onnx")
      return "--seq-buckets binds an ONNX model's input dimensions; give "
             "the model as .onnx";
  }
  if (o.cores < 0 || o.cores > (1 << 20))
    return "--cores expects a count from 0 to 1048576, got " +
           std::to_string(o.cores);
  if (o.precision == "bf16" && o.target != "cpu")
    return "--precision bf16 needs --target cpu (the CUDA kernels are f32)";
  if (o.recompute != "none" && o.inference)
    return "--recompute applies to training builds, not --inference";
  if (o.recompute != "none" && !o.seqBuckets.empty())
    return "--recompute does not combine with --seq-buckets yet";
  if (o.recompute == "auto" && !(o.memoryLimit > 0))
    return "--recompute auto needs --memory-limit: it recomputes the stages "
           "that would not fit without";
  if (o.fusion == "on" && o.target != "cpu")
    return "--fusion on needs --target cpu (the fused loops run on the host)";
  if (o.activationLayout == "blocked" && o.target != "cpu")
    return "--activation-layout blocked needs --target cpu (the CUDA kernels "
           "read NCHW)";
  if (o.convAlgorithm == "winograd" && o.target != "cpu")
    return "--conv-algorithm winograd needs --target cpu (the CUDA "
           "convolutions are cuDNN's)";
  if (o.convAlgorithm == "winograd" && o.precision == "bf16")
    return "--conv-algorithm winograd computes in f32; --precision bf16 "
           "takes it only where auto finds it faster than bf16";
  if (!p.given("o"))
    return "missing output directory: give -o DIR";
  return "";
}

// Loads the model into `module`: ONNX through the frontend (collecting the
// initial weights), or nn-dialect MLIR as is. Returns false after the
// diagnostics have been printed.
bool loadModel(const CompileOptions &options, mlir::MLIRContext &context,
               llvm::SourceMgr &sourceMgr,
               mlir::OwningOpRef<mlir::ModuleOp> &module,
               runtime::TensorFile &weights) {
  fs::path path(options.model);
  if (path.extension() == ".onnx") {
    mlir::dpc::onnx_frontend::ImportOptions importOptions;
    importOptions.batchSize = options.microbatchSize;
    if (!options.seqBuckets.empty())
      importOptions.sequenceLength = options.seqBuckets.back();
    else if (options.sequenceLength > 0)
      importOptions.sequenceLength = options.sequenceLength;
    auto imported = mlir::dpc::onnx_frontend::importOnnxFile(
        options.model, &context, importOptions);
    if (mlir::failed(imported))
      return false;
    module = std::move(imported->module);
    for (auto &param : imported->params)
      weights.tensors[param.name] =
          runtime::Tensor::fromF32(param.shape, param.data.data());
    weights.metadata["source"] = path.filename().string();
    weights.metadata["onnx_opset"] = std::to_string(imported->fileOpset);
    return true;
  }
  module =
      mlir::parseSourceFile<mlir::ModuleOp>(options.model, sourceMgr, &context);
  return static_cast<bool>(module);
}

bool writeText(const fs::path &path, const std::string &text) {
  std::error_code ec;
  llvm::raw_fd_ostream os(path.string(), ec);
  if (!ec)
    os << text;
  if (ec || os.has_error()) {
    std::cerr << "dpc compile: cannot write '" << path.string() << "'\n";
    return false;
  }
  return true;
}

std::string printIR(mlir::ModuleOp module) {
  std::string text;
  llvm::raw_string_ostream os(text);
  module.print(os);
  return text;
}

// The stages that read each parameter name, from the outlined segments: a
// trainable parameter's owner, or every stage that holds a copy of a frozen
// one (a constant read on several stages).
std::map<std::string, std::set<int64_t>>
parameterStages(mlir::ModuleOp module) {
  std::map<std::string, std::set<int64_t>> stages;
  for (auto func : module.getOps<mlir::func::FuncOp>()) {
    std::optional<int64_t> stage = mlir::dpc::pipe::getStage(func);
    func.walk([&](mlir::dpc::nn::ParamOp param) {
      if (stage)
        stages[param.getName().str()].insert(*stage);
    });
  }
  return stages;
}

// Initial weights of each rank (all its chunks' parameters), as the ranks'
// manifests name them: weights/stageR.safetensors.
bool writeStageWeights(mlir::ModuleOp module, int64_t numRanks,
                       const runtime::TensorFile &weights,
                       const fs::path &dir) {
  std::vector<runtime::TensorFile> files(numRanks);
  for (auto &[name, stages] : parameterStages(module)) {
    auto it = weights.tensors.find(name);
    if (it == weights.tensors.end()) {
      std::cerr << "dpc compile: no initial value for parameter '" << name
                << "' (an nn-dialect model carries no weights; compile the "
                   "ONNX model)\n";
      return false;
    }
    for (int64_t stage : stages)
      files[stage % numRanks].tensors[name] = it->second;
  }
  try {
    fs::create_directories(dir);
    for (int64_t stage = 0; stage < numRanks; ++stage) {
      files[stage].metadata = weights.metadata;
      files[stage].metadata["stage"] = std::to_string(stage);
      runtime::writeSafetensors(
          (dir / ("stage" + std::to_string(stage) + ".safetensors")).string(),
          files[stage]);
    }
  } catch (const std::exception &e) {
    std::cerr << "dpc compile: cannot write the weights: " << e.what() << "\n";
    return false;
  }
  return true;
}

// Lowers pipeline stage `stage` (with model chunks, the virtual stages
// stage, stage + stages, ...) of the outlined module to the LLVM dialect;
// null after the diagnostics.
mlir::OwningOpRef<mlir::ModuleOp> lowerRank(mlir::ModuleOp outlined,
                                            int64_t stage, int64_t numRanks,
                                            bool profile) {
  mlir::OwningOpRef<mlir::ModuleOp> rank(outlined.clone());
  for (auto func :
       llvm::make_early_inc_range(rank->getOps<mlir::func::FuncOp>())) {
    std::optional<int64_t> funcStage = mlir::dpc::pipe::getStage(func);
    if (!funcStage || *funcStage % numRanks != stage)
      func.erase();
  }
  mlir::PassManager pm(rank->getContext());
  mlir::dpc::LowerToRuntimePassOptions lowering;
  lowering.profile = profile;
  pm.addPass(mlir::dpc::createLowerToRuntimePass(lowering));
  if (mlir::failed(pm.run(*rank)))
    return nullptr;
  // Only the LLVM dialect goes to translation.
  for (mlir::NamedAttribute attr :
       llvm::to_vector(rank->getOperation()->getAttrs()))
    rank->getOperation()->removeAttr(attr.getName());
  return rank;
}

// Links `object` with the target's runtime into `dir/<name>`.
bool linkRank(const fs::path &object, const std::string &target,
              const fs::path &dir, const std::string &name) {
  std::string error;
  if (!mlir::dpc::linkRankExecutable(object.string(), (dir / name).string(),
                                     target, error)) {
    std::cerr << "dpc compile: " << error << "\n";
    return false;
  }
  return true;
}

// Lowers rank `stage` of the outlined module to an object and links it with
// the target's runtime into `dir/<name>`.
bool emitStage(mlir::ModuleOp outlined, int64_t stage, int64_t numRanks,
               const std::string &target, bool profile, const fs::path &dir,
               const std::string &name) {
  mlir::OwningOpRef<mlir::ModuleOp> rank =
      lowerRank(outlined, stage, numRanks, profile);
  if (!rank)
    return false;
  fs::path object = dir / "obj" / (name + ".o");
  fs::create_directories(object.parent_path());
  if (mlir::failed(mlir::dpc::emitObjectFile(*rank, object.string())))
    return false;
  return linkRank(object, target, dir, name);
}

// The shape buckets of a --seq-buckets build: each bucket's outlined module
// and the stage costs build-schedule gave it.
struct BucketBuild {
  std::vector<ShapeBucket> shapes;
  size_t primary = 0;
  std::vector<mlir::OwningOpRef<mlir::ModuleOp>> modules;
  std::vector<std::vector<schedule::StageInfo>> costs;
};

// Lowers rank `stage` of every bucket, merges their manifests and links one
// executable whose segments dispatch on dpc_bucket(ctx).
bool emitBucketedStage(BucketBuild &buckets, mlir::ModuleOp primary,
                       int64_t stage, int64_t numRanks,
                       const std::string &target, const fs::path &dir,
                       const std::string &name) {
  std::vector<mlir::OwningOpRef<mlir::ModuleOp>> lowered;
  std::vector<mlir::ModuleOp> modules;
  std::vector<std::string> manifests;
  for (size_t k = 0; k < buckets.shapes.size(); ++k) {
    mlir::ModuleOp outlined =
        k == buckets.primary ? primary : *buckets.modules[k];
    lowered.push_back(lowerRank(outlined, stage, numRanks, false));
    if (!lowered.back())
      return false;
    auto global =
        lowered.back()->lookupSymbol<mlir::LLVM::GlobalOp>("dpc_rank_manifest");
    auto text =
        global
            ? llvm::dyn_cast_or_null<mlir::StringAttr>(global.getValueOrNull())
            : nullptr;
    assert(text && "lower-to-runtime writes the manifest");
    manifests.push_back(text.getValue().rtrim('\0').str());
    modules.push_back(*lowered.back());
  }
  std::string error;
  std::string manifest = mergeBucketManifests(buckets.shapes, buckets.primary,
                                              manifests, buckets.costs, error);
  if (manifest.empty()) {
    std::cerr << "dpc compile: --seq-buckets: rank " << stage << ": " << error
              << "\n";
    return false;
  }
  fs::path object = dir / "obj" / (name + ".o");
  fs::create_directories(object.parent_path());
  if (mlir::failed(mlir::dpc::emitBucketedObjectFile(
          modules, buckets.primary, manifest, object.string())))
    return false;
  return linkRank(object, target, dir, name);
}

// The forward ops the planner places (all of @main but nn.param), by op
// and node name: what must agree between buckets for one partition to
// serve them all.
std::vector<std::pair<std::string, std::string>>
forwardOps(mlir::ModuleOp module) {
  std::vector<std::pair<std::string, std::string>> ops;
  auto main = module.lookupSymbol<mlir::func::FuncOp>("main");
  if (!main || main.isExternal())
    return ops;
  for (mlir::Operation &op : main.getBody().front().without_terminator()) {
    if (llvm::isa<mlir::dpc::nn::ParamOp>(op))
      continue;
    auto node = op.getAttrOfType<mlir::StringAttr>("nn.node");
    ops.emplace_back(op.getName().getStringRef().str(), node ? node.str() : "");
  }
  return ops;
}

// The stage partition-stages gave each op of forwardOps.
std::vector<int64_t> forwardStages(mlir::ModuleOp module) {
  std::vector<int64_t> stages;
  auto main = module.lookupSymbol<mlir::func::FuncOp>("main");
  for (mlir::Operation &op : main.getBody().front().without_terminator())
    if (!llvm::isa<mlir::dpc::nn::ParamOp>(op))
      stages.push_back(mlir::dpc::pipe::getStage(&op).value_or(0));
  return stages;
}

// Imports every bucket but the primary one, which loadModel imported at
// the longest length (the importer checks that the inputs are token ids).
int importBuckets(const CompileOptions &options, mlir::MLIRContext &context,
                  mlir::ModuleOp primary, BucketBuild &buckets) {
  auto main = primary.lookupSymbol<mlir::func::FuncOp>("main");
  if (main.getNumArguments() == 0) {
    std::cerr << "dpc compile: --seq-buckets needs a model that reads token "
                 "ids; this one has no inputs\n";
    return cli::kUsageError;
  }
  int64_t length = options.seqBuckets.back();
  ShapeBucket top{
      llvm::cast<mlir::RankedTensorType>(main.getArgument(0).getType())
          .getDimSize(0),
      length};
  int64_t tokens =
      options.bucketTokens > 0 ? options.bucketTokens : top.batch * length;
  buckets.shapes = shapeBuckets(options.seqBuckets, tokens, top);
  buckets.primary =
      std::find(buckets.shapes.begin(), buckets.shapes.end(), top) -
      buckets.shapes.begin();
  buckets.modules.resize(buckets.shapes.size());
  buckets.costs.resize(buckets.shapes.size());
  for (auto [k, shape] : llvm::enumerate(buckets.shapes)) {
    if (k == buckets.primary)
      continue;
    mlir::dpc::onnx_frontend::ImportOptions importOptions;
    importOptions.batchSize = shape.batch;
    importOptions.sequenceLength = shape.length;
    auto imported = mlir::dpc::onnx_frontend::importOnnxFile(
        options.model, &context, importOptions);
    if (mlir::failed(imported)) {
      std::cerr << "dpc compile: --seq-buckets: the model does not import "
                   "at bucket "
                << describe(shape) << "\n";
      return cli::kUsageError;
    }
    buckets.modules[k] = std::move(imported->module);
  }
  return 0;
}

/// OUT/compile.json: what `dpc run --adapt` needs to compile the model again
/// for another layout (docs/RUNTIME.md, "Re-partitioning"): the model, the
/// directory its relative paths were given from, and the other options.
nlohmann::ordered_json compileRecord(const CompileOptions &options) {
  std::error_code error;
  fs::path model = fs::absolute(options.model, error);
  return {{"format", "dpc-compile"},
          {"version", 1},
          {"model", error ? options.model : model.string()},
          {"directory", fs::current_path(error).string()},
          {"options", options.recordedOptions}};
}

// Adds what the later phases know beside the planner's figures in
// plan.json: whether the build is forward-only, the schedule kind built,
// the schedule simulation's step time and bubbles (per-op costs through the
// real instruction streams) and plan-memory's peak per rank.
bool completePlan(mlir::ModuleOp module, const fs::path &planPath,
                  const fs::path &schedulePath, bool inference) {
  auto step = module->getAttrOfType<mlir::FloatAttr>("pipe.predicted_step_ms");
  auto bubble = module->getAttrOfType<mlir::FloatAttr>("pipe.predicted_bubble");
  auto peaks =
      module->getAttrOfType<mlir::DenseI64ArrayAttr>("pipe.peak_memory");
  bool simulated = step && bubble && peaks;
  if (!simulated && !inference)
    return true;
  std::ifstream in(planPath);
  nlohmann::ordered_json plan =
      nlohmann::ordered_json::parse(in, nullptr, false);
  if (plan.is_discarded()) {
    std::cerr << "dpc compile: cannot read back " << planPath.string() << "\n";
    return false;
  }
  if (inference)
    plan["inference"] = true;
  // The kind build-schedule built (--schedule auto's choice; the planner
  // plans zb-h1, zb-2p and interleaved as 1f1b).
  std::ifstream streams(schedulePath);
  nlohmann::json built = nlohmann::json::parse(streams, nullptr, false);
  if (!built.is_discarded() && built.contains("kind") &&
      plan.contains("schedule"))
    plan["schedule"]["kind"] = built["kind"];
  if (simulated) {
    plan["predicted"]["simulated_step_ms"] = step.getValueAsDouble();
    plan["predicted"]["simulated_bubble_fraction"] = bubble.getValueAsDouble();
    // The cores the simulation shared among the ranks (--cores).
    if (!built.is_discarded() && built.contains("cores"))
      plan["predicted"]["cores"] = built["cores"];
    // Peaks are per rank; a replicated stage's ranks hold the same.
    auto &stages = plan["stages"];
    for (size_t i = 0; i < stages.size(); ++i) {
      size_t rank = i;
      if (stages[i].contains("ranks") && !stages[i]["ranks"].empty())
        rank = stages[i]["ranks"][0].get<size_t>();
      if (rank < peaks.size())
        stages[i]["planned_peak_bytes"] = peaks[rank];
    }
    plan["predicted"]["planned_peak_bytes"] =
        *std::max_element(peaks.asArrayRef().begin(), peaks.asArrayRef().end());
  }
  if (auto recomputed = module->getAttrOfType<mlir::DenseI64ArrayAttr>(
          mlir::dpc::pipe::PipeDialect::kRecomputeAttrName))
    for (int64_t stage : recomputed.asArrayRef())
      if (stage < int64_t(plan["stages"].size()))
        plan["stages"][stage]["recompute"] = true;
  return writeText(planPath, plan.dump(2) + "\n");
}

/// `--recompute auto`: the stages to recompute are those of every rank
/// whose peak without recomputation exceeds `limit`, the peak the verifier
/// holds against --memory-limit (parameters with their gradients and
/// optimizer state, stash slots of the microbatches in flight, transfer
/// buffers). Found by running the phases up to build-schedule on a copy of
/// `module` with no stage recomputed (`runPhases` writes the schedule to
/// `schedulePath`). All chunks of such a rank are recomputed. Nothing when
/// a phase fails (it has said why).
std::optional<std::vector<int64_t>> stagesOverLimit(
    mlir::ModuleOp module, double limit, const std::string &schedulePath,
    const std::function<bool(mlir::ModuleOp,
                             const std::function<bool(llvm::StringRef)> &)>
        &runPhases) {
  mlir::OwningOpRef<mlir::ModuleOp> probe = module.clone();
  bool scheduled = false;
  runPhases(*probe, [&](llvm::StringRef phase) {
    scheduled |= phase == "build-schedule";
    return !scheduled;
  });
  if (!scheduled)
    return std::nullopt;
  dpc::schedule::Schedule streams;
  if (std::string error =
          dpc::schedule::readScheduleFile(schedulePath, streams);
      !error.empty()) {
    std::cerr << "dpc compile: --recompute auto: " << error << "\n";
    return std::nullopt;
  }
  dpc::schedule::VerifyResult verified = dpc::schedule::verifySchedule(streams);
  std::vector<int64_t> stages;
  for (auto [rank, stats] : llvm::enumerate(verified.ranks))
    if (double(stats.peakMemoryBytes) > limit)
      for (int chunk = 0; chunk < streams.chunks; ++chunk)
        stages.push_back(streams.virtualStage(rank, chunk));
  llvm::sort(stages);
  stages.erase(std::unique(stages.begin(), stages.end()), stages.end());
  return stages;
}

} // namespace

int compileModel(const CompileOptions &options) {
  fs::path model(options.model);
  if (!fs::is_regular_file(model)) {
    std::cerr << "dpc compile: cannot read model '" << options.model
              << "': no such file\n";
    return cli::kUsageError;
  }
  if (model.extension() != ".onnx" && model.extension() != ".mlir") {
    std::cerr << "dpc compile: '" << options.model
              << "': expects an ONNX model (.onnx) or nn-dialect MLIR "
                 "(.mlir)\n";
    return cli::kUsageError;
  }

  // dpc replaces only its own earlier output and never the input.
  std::vector<fs::path> inputs = {model};
  if (!options.profile.empty())
    inputs.emplace_back(options.profile);
  if (std::string problem = support::checkOutputTarget(options.outDir, inputs);
      !problem.empty()) {
    std::cerr << "dpc compile: " << problem << "\n";
    return cli::kUsageError;
  }

  // A target this build cannot link for fails before any work is done.
  if (options.emit == "exe") {
    if (std::string problem = mlir::dpc::checkRankRuntime(options.target);
        !problem.empty()) {
      std::cerr << "dpc compile: " << problem << "\n";
      return 1;
    }
  }

  mlir::DialectRegistry registry;
  registry.insert<mlir::func::FuncDialect, mlir::arith::ArithDialect,
                  mlir::tensor::TensorDialect, mlir::dpc::nn::NNDialect,
                  mlir::dpc::pipe::PipeDialect>();
  mlir::MLIRContext context(registry);
  // Users get the message and its location, not a dump of the module.
  context.printOpOnDiagnostic(false);
  llvm::SourceMgr sourceMgr;
  mlir::SourceMgrDiagnosticHandler diagnostics(sourceMgr, &context);
  mlir::OwningOpRef<mlir::ModuleOp> module;
  runtime::TensorFile weights;
  // A model that cannot be read or imported is bad input: exit code 2.
  bool bucketed = !options.seqBuckets.empty();
  if (!loadModel(options, context, sourceMgr, module, weights)) {
    if (bucketed)
      std::cerr << "dpc compile: --seq-buckets: the model does not import at "
                   "length "
                << options.seqBuckets.back() << ", the longest bucket's\n";
    return cli::kUsageError;
  }
  BucketBuild buckets;
  if (bucketed)
    if (int exit = importBuckets(options, context, *module, buckets))
      return exit;

  // Everything is written under a staging name and appears at -o only when
  // the whole compilation succeeded.
  support::OutputDirectory out(options.outDir);
  if (std::string problem = out.open(inputs); !problem.empty()) {
    std::cerr << "dpc compile: " << problem << "\n";
    return 1;
  }

  if (options.inference)
    (*module)->setAttr(mlir::dpc::pipe::PipeDialect::kInferenceAttrName,
                       mlir::UnitAttr::get(&context));
  // Before partition-stages: the planner prices bf16 transfers.
  if (options.precision == "bf16")
    (*module)->setAttr(mlir::dpc::pipe::PipeDialect::kPrecisionAttrName,
                       mlir::StringAttr::get(&context, "bf16"));

  // DESIGN.md's pipeline (passes/Pipeline.h, which dpc-opt --dpc-pipeline
  // runs too), one pass at a time so that each one's IR is kept.
  mlir::dpc::PipelineOptions pipeline;
  pipeline.stages = options.stages;
  pipeline.devices = options.devices;
  pipeline.cluster = options.cluster;
  pipeline.replicas = options.replicas;
  pipeline.bandwidth = options.bandwidth;
  pipeline.memoryLimit = options.memoryLimit;
  pipeline.cores = options.cores;
  pipeline.profile = options.profile;
  pipeline.planOutput = (out.path() / "plan.json").string();
  pipeline.graphOutput = options.graphOutput;
  pipeline.inference = options.inference;
  pipeline.loss = options.loss;
  pipeline.hasIgnoreIndex = options.ignoreIndex.has_value();
  pipeline.ignoreIndex = options.ignoreIndex.value_or(-100);
  pipeline.optimizer = options.optimizer;
  pipeline.lr = options.lr;
  pipeline.momentum = options.momentum;
  pipeline.beta1 = options.beta1;
  pipeline.beta2 = options.beta2;
  pipeline.eps = options.eps;
  pipeline.weightDecay = options.weightDecay;
  pipeline.noDecay = options.noDecay;
  pipeline.labelSmoothing = options.labelSmoothing;
  pipeline.recompute = options.recompute;
  pipeline.schedule = options.schedule;
  pipeline.microbatches = options.microbatches;
  pipeline.virtualStages = options.virtualStages;
  pipeline.reduce = options.reduce;
  pipeline.verticalSync = options.verticalSync;
  pipeline.scheduleOutput = (out.path() / "schedule.json").string();
  pipeline.traceOutput = (out.path() / "timeline.json").string();
  pipeline.fusion = options.fusion == "on";
  pipeline.blockedLayouts = options.activationLayout == "blocked";
  pipeline.convAlgorithm = options.convAlgorithm;
  // Runs the pipeline on `m`, calling `after` with each pass's name; false
  // when a pass or `after` failed, in pass `current`.
  std::string current;
  auto runPhases = [&](mlir::ModuleOp m,
                       const std::function<bool(llvm::StringRef)> &after) {
    for (mlir::dpc::PipelinePass &phase :
         mlir::dpc::buildPipelinePasses(pipeline)) {
      current = phase.name;
      mlir::PassManager pm(&context);
      pm.addPass(std::move(phase.pass));
      if (mlir::failed(pm.run(m)) || !after(phase.name))
        return false;
    }
    return true;
  };
  std::vector<std::pair<std::string, std::string>> phaseIR = {
      {"import", printIR(*module)}};
  std::vector<std::pair<std::string, std::string>> forward;
  std::vector<int64_t> forwardStage;
  // Every pass checks the model and the options against each other (more
  // stages than ops, logits the loss cannot take, an unreadable profile,
  // a plan over the memory limit) and says what and where: bad input.
  if (bucketed) {
    pipeline.profileBatch = buckets.shapes[buckets.primary].batch;
    pipeline.profileLength = buckets.shapes[buckets.primary].length;
  }
  if (options.recompute == "auto") {
    std::optional<std::vector<int64_t>> stages = stagesOverLimit(
        *module, options.memoryLimit, pipeline.scheduleOutput, runPhases);
    if (!stages)
      return cli::kUsageError;
    pipeline.recomputeStages = *stages;
  }
  if (!runPhases(*module, [&](llvm::StringRef phase) {
        phaseIR.emplace_back(phase.str(), printIR(*module));
        if (bucketed && phase == "partition-stages") {
          forward = forwardOps(*module);
          forwardStage = forwardStages(*module);
        }
        if (bucketed && phase == "build-schedule")
          buckets.costs[buckets.primary] = mlir::dpc::collectStageInfo(*module);
        return true;
      })) {
    if (options.recompute != "none" &&
        llvm::StringRef(current) == "verify-schedule")
      std::cerr << "dpc compile: --memory-limit is too low even with "
                   "--recompute "
                << options.recompute << " (above)\n";
    return cli::kUsageError;
  }
  if (bucketed) {
    // Every other bucket: the primary one's partition, op by op, then the
    // same passes; its schedule only feeds plan-memory and the verifier.
    pipeline.fixedStages = forwardStage;
    int64_t chunks = mlir::dpc::pipe::getNumChunks(*module);
    pipeline.stages = (*module)
                          ->getAttrOfType<mlir::IntegerAttr>(
                              mlir::dpc::pipe::PipeDialect::kNumStagesAttrName)
                          .getInt() /
                      chunks;
    pipeline.devices = 0;
    pipeline.replicas = llvm::ArrayRef<int64_t>();
    if (auto replicas = (*module)->getAttrOfType<mlir::DenseI64ArrayAttr>(
            mlir::dpc::pipe::PipeDialect::kReplicasAttrName);
        replicas &&
        llvm::any_of(replicas.asArrayRef(), [](int64_t r) { return r > 1; }))
      pipeline.replicas = replicas.asArrayRef();
    // The pipeline gives partition-stages no profile for a fixed partition.
    pipeline.planOutput = "";
    pipeline.graphOutput = "";
    fs::path scratch = out.path() / "buckets";
    fs::create_directories(scratch);
    pipeline.scheduleOutput = (scratch / "schedule.json").string();
    pipeline.traceOutput = "";
    for (auto [k, shape] : llvm::enumerate(buckets.shapes)) {
      if (k == buckets.primary)
        continue;
      mlir::ModuleOp m = *buckets.modules[k];
      pipeline.profileBatch = shape.batch;
      pipeline.profileLength = shape.length;
      bool compared = false, differ = false;
      bool ok = runPhases(m, [&](llvm::StringRef phase) {
        if (phase == "annotate-costs" && !compared) {
          compared = true;
          std::vector<std::pair<std::string, std::string>> ops = forwardOps(m);
          for (size_t i = 0; i < std::max(ops.size(), forward.size()); ++i) {
            if (i < ops.size() && i < forward.size() && ops[i] == forward[i])
              continue;
            auto show = [&](const auto &list) {
              return i < list.size() ? "'" + list[i].first + "' (node '" +
                                           list[i].second + "')"
                                     : std::string("the end of @main");
            };
            std::cerr << "dpc compile: --seq-buckets: bucket "
                      << describe(shape) << " imports to other ops than bucket "
                      << describe(buckets.shapes[buckets.primary])
                      << ", so one partition cannot serve both: forward op "
                      << i << " is " << show(ops) << " against "
                      << show(forward) << "\n";
            differ = true;
            return false;
          }
        }
        if (phase == "build-schedule")
          buckets.costs[k] = mlir::dpc::collectStageInfo(m);
        return true;
      });
      if (!ok) {
        if (!differ)
          std::cerr << "dpc compile: --seq-buckets: bucket " << describe(shape)
                    << " fails in " << current << " (above)\n";
        return cli::kUsageError;
      }
    }
    fs::remove_all(scratch);
  }

  if (!completePlan(*module, out.path() / "plan.json",
                    out.path() / "schedule.json", options.inference))
    return 1;
  if (!options.profileBuild)
    if (!writeText(out.path() / "compile.json",
                   compileRecord(options).dump(2) + "\n"))
      return 1;

  fs::create_directories(out.path() / "mlir");
  for (auto [i, phase] : llvm::enumerate(phaseIR)) {
    std::string name =
        (i < 10 ? "0" : "") + std::to_string(i) + "-" + phase.first + ".mlir";
    if (!writeText(out.path() / "mlir" / name, phase.second))
      return 1;
  }
  if (!writeText(out.path() / "model.mlir", phaseIR.back().second))
    return 1;
  // The source model, which `dpc export` writes back with trained weights.
  if (model.extension() == ".onnx") {
    std::error_code error;
    fs::copy_file(model, out.path() / "model.onnx", error);
    if (error) {
      std::cerr << "dpc compile: cannot copy the model into the output: "
                << error.message() << "\n";
      return 1;
    }
  }
  if (options.emit == "mlir") {
    for (const char *name : {"plan.json", "schedule.json", "timeline.json"})
      fs::remove(out.path() / name);
  }

  int64_t numStages = 1;
  if (auto attr = (*module)->getAttrOfType<mlir::IntegerAttr>(
          mlir::dpc::pipe::PipeDialect::kNumStagesAttrName))
    numStages = attr.getInt();
  int64_t numRanks = numStages / mlir::dpc::pipe::getNumChunks(*module);
  if (!weights.tensors.empty() || options.emit == "exe")
    if (!writeStageWeights(*module, numRanks, weights, out.path() / "weights"))
      return 1;

  if (options.emit == "exe") {
    // One executable per stage; the replicas of a stage run the same file
    // under their own rank names (hard links), and learn their share of the
    // microbatches from schedule.json.
    std::vector<int64_t> replicas(numRanks, 1);
    if (auto attr = (*module)->getAttrOfType<mlir::DenseI64ArrayAttr>(
            mlir::dpc::pipe::PipeDialect::kReplicasAttrName);
        attr && int64_t(attr.size()) == numRanks)
      replicas.assign(attr.asArrayRef().begin(), attr.asArrayRef().end());
    std::string appfile;
    int64_t rank = 0;
    for (int64_t stage = 0; stage < numRanks; ++stage) {
      std::string name = "rank" + std::to_string(rank);
      if (bucketed ? !emitBucketedStage(buckets, *module, stage, numRanks,
                                        options.target, out.path(), name)
                   : !emitStage(*module, stage, numRanks, options.target,
                                options.profileBuild, out.path(), name))
        return 1;
      for (int64_t replica = 0; replica < replicas[stage]; ++replica, ++rank) {
        std::string alias = "rank" + std::to_string(rank);
        if (replica > 0) {
          std::error_code error;
          fs::create_hard_link(out.path() / name, out.path() / alias, error);
          if (error)
            fs::copy_file(out.path() / name, out.path() / alias, error);
          if (error) {
            std::cerr << "dpc compile: cannot write " << alias << ": "
                      << error.message() << "\n";
            return 1;
          }
        }
        appfile += "-np 1 ./" + alias + "\n";
      }
    }
    fs::remove_all(out.path() / "obj");
    if (!writeText(out.path() / "appfile", appfile))
      return 1;
  }

  if (std::string problem = out.commit(); !problem.empty()) {
    std::cerr << "dpc compile: " << problem << "\n";
    return 1;
  }
  return 0;
}

int64_t machineCores() {
  long cores = ::sysconf(_SC_NPROCESSORS_ONLN);
  return cores > 0 ? cores : 0;
}

int runCompileCommand(const Args &args) {
  CompileOptions o;
  cli::ArgParser p("dpc compile",
                   "compile an ONNX model into per-rank pipeline executables",
                   "dpc compile MODEL -o DIR [--stages N | --devices N | "
                   "--cluster FILE] "
                   "[options]");
  p.addPositional("MODEL", &o.model, "the model (.onnx, or nn-dialect .mlir)");
  p.addOption("o", &o.outDir, "DIR", "output directory (required)");
  p.addOption("stages", &o.stages, "N", "number of pipeline stages");
  p.addOption("devices", &o.devices, "N",
              "number of devices; the planner picks stages and replicas");
  p.addCountListOption("replicas", &o.replicas, "R0,R1,...",
                       "ranks of each stage (hybrid data parallelism): "
                       "stage s splits the microbatches over R_s ranks");
  p.addOption("microbatches", &o.microbatches, "M",
              "microbatches per minibatch (default 4)");
  p.addOption("microbatch-size", &o.microbatchSize, "B",
              "re-specialise the batch dimension to B samples");
  p.addOption("schedule",
              oneOf(&o.schedule, {"gpipe", "1f1b", "pipedream", "interleaved",
                                  "zb-h1", "zb-2p", "auto"}),
              "KIND",
              "pipeline schedule; auto: 1f1b, zb-h1 or zb-2p, whichever the "
              "simulator predicts faster within the memory limit (default "
              "1f1b)");
  p.addOption("virtual-stages", &o.virtualStages, "V",
              "model chunks per rank for --schedule interleaved "
              "(default 2)");
  p.addFlag("vertical-sync", &o.verticalSync,
            "pipedream: every stage uses stage 0's weight version of a "
            "microbatch");
  p.addOption("reduce", oneOf(&o.reduce, {"allreduce", "preduce"}),
              "allreduce|preduce",
              "how replicas sum gradients: allreduce waits for every one; "
              "preduce (one replicated stage) lets a late replica join a "
              "later round, see docs/RUNTIME.md (default allreduce)");
  p.addOption("target", oneOf(&o.target, {"cpu", "cuda"}), "cpu|cuda",
              "backend (default cpu)");
  p.addOption("precision", oneOf(&o.precision, {"fp32", "bf16"}), "fp32|bf16",
              "bf16: convolutions and matmuls in bf16 with f32 accumulation "
              "and f32 master weights, transfers between stages in bf16 "
              "(default fp32)");
  p.addOption("fusion", oneOf(&o.fusion, {"on", "off"}), "on|off",
              "on: chains of elementwise ops become one loop generated in "
              "the rank object instead of a runtime call each (default "
              "on for --target cpu; cuda: off)");
  p.addOption("activation-layout",
              oneOf(&o.activationLayout, {"blocked", "plain"}), "blocked|plain",
              "blocked: activations stay in oneDNN's channel-blocked layout "
              "from one convolution to the next, through batch norms and "
              "elementwise ops, instead of being reordered by every "
              "convolution (default blocked for --target cpu; cuda: plain)");
  p.addOption("conv-algorithm",
              oneOf(&o.convAlgorithm, {"auto", "winograd", "direct"}),
              "auto|winograd|direct",
              "how convolutions run: winograd computes 3x3, stride-1 f32 "
              "layers from 4x4 tiles with fewer multiplications; auto picks "
              "it where it pays, in a bf16 build where it beats bf16 "
              "(default auto for --target cpu; direct for cuda)");
  p.addOption("loss", oneOf(&o.loss, {"softmax-cross-entropy", "mse", "none"}),
              "KIND", "loss appended to the model's output");
  int64_t ignoreIndex = -100;
  p.addOption("ignore-index", &ignoreIndex, "N",
              "softmax-cross-entropy leaves out positions labelled N, "
              "averaging over the minibatch's others (torch's ignore_index)");
  p.addOption("label-smoothing", &o.labelSmoothing, "E",
              "softmax-cross-entropy's label smoothing in [0, 1) (torch's "
              "CrossEntropyLoss(label_smoothing=E); default 0)");
  p.addOption("optimizer", oneOf(&o.optimizer, {"sgd", "adam", "adamw"}),
              "sgd|adam|adamw",
              "optimizer (default sgd; adamw: Adam with decoupled weight "
              "decay, as torch.optim.AdamW)");
  p.addOption("lr", &o.lr, "X", "learning rate (default 0.01)");
  p.addOption("momentum", &o.momentum, "X", "SGD momentum (default 0)");
  p.addOption(
      "betas",
      [&o](const std::string &value) -> std::string {
        double b1 = 0, b2 = 0;
        char tail = 0;
        if (std::sscanf(value.c_str(), "%lf,%lf%c", &b1, &b2, &tail) != 2 ||
            !(b1 >= 0 && b1 < 1) || !(b2 >= 0 && b2 < 1))
          return "expects two decays in [0, 1) as B1,B2, got '" + value + "'";
        o.beta1 = b1;
        o.beta2 = b2;
        return "";
      },
      "B1,B2", "Adam's moment decays (default 0.9,0.999)");
  p.addOption("eps", &o.eps, "X", "Adam's denominator term (default 1e-8)");
  p.addOption("weight-decay", &o.weightDecay, "X", "weight decay (default 0)");
  p.addOption("no-decay", &o.noDecay, "GLOBS",
              "parameters without weight decay, by name: comma-separated "
              "glob patterns, e.g. '*.bias,*norm*'");
  p.addByteCountOption("memory-limit", &o.memoryLimit,
                       "memory per device the plan must fit");
  p.addOption("recompute", oneOf(&o.recompute, {"none", "all", "auto"}),
              "none|all|auto",
              "activation recomputation: all stages keep only their inputs "
              "per microbatch in flight and recompute their forward in the "
              "backward; auto recomputes the stages whose rank would exceed "
              "--memory-limit without it (default none)");
  p.addOption("bandwidth", &o.bandwidth, "BYTES/S",
              "bandwidth between devices for planning (default 1e9)");
  p.addOption("cores", &o.cores, "N",
              "cores the ranks share on the machine they run on: the "
              "predicted step shares them among the ranks computing at a "
              "moment when there are fewer than the ranks (default this "
              "machine's count for --target cpu without --cluster; 0: a "
              "core per rank)");
  p.addOption("cluster", &o.cluster, "FILE",
              "plan on these devices of their own speed and memory "
              "(docs/PLANNER.md) instead of --devices");
  p.addOption("profile", &o.profile, "FILE",
              "measured op costs from 'dpc profile'");
  p.addOption("emit", oneOf(&o.emit, {"mlir", "plan", "exe"}), "mlir|plan|exe",
              "stop after that stage (default exe)");
  p.addCountListOption(
      "seq-buckets", &o.seqBuckets, "L1,L2,...",
      "compile shape buckets for token models of variable length: the "
      "input's dimension 1 bound to each length (ascending), dimension 0 to "
      "each batch that fits --bucket-tokens; needs --ignore-index");
  p.addOption("bucket-tokens", &o.bucketTokens, "N",
              "tokens per microbatch of the buckets (default the microbatch "
              "size x the longest length)");
  p.addFlag("inference", &o.inference,
            "forward pass only: the ranks predict (dpc run --predictions) "
            "instead of training");

  if (std::optional<int> exit = p.parseOrExit(args))
    return *exit;
  if (o.schedule == "interleaved" && !p.given("virtual-stages"))
    o.virtualStages = 2;
  if (p.given("replicas") && !p.given("stages"))
    o.stages = int64_t(o.replicas.size());
  if (p.given("ignore-index"))
    o.ignoreIndex = ignoreIndex;
  // The options as given, less the model and the output directory.
  bool modelSeen = false;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string &a = args[i];
    if (a == "-o" || a == "--o") {
      ++i;
      continue;
    }
    if (a.rfind("-o=", 0) == 0 || a.rfind("--o=", 0) == 0)
      continue;
    if (!modelSeen && a == o.model) {
      modelSeen = true;
      continue;
    }
    o.recordedOptions.push_back(a);
  }
  if (std::string problem = checkOptions(o, p); !problem.empty()) {
    std::cerr << "dpc compile: " << problem << "\n";
    return cli::kUsageError;
  }
  // An inference run is GPipe's forward phase: microbatch after microbatch
  // through the stages (the ranks run it as Executor::evaluate).
  if (o.inference)
    o.schedule = "gpipe";
  // Fusion by default where the generated loops run: on the host
  // (bench/training/README.md measures it).
  if (!p.given("fusion"))
    o.fusion = o.target == "cpu" ? "on" : "off";
  // Winograd where it pays, on the CPU in f32 (select-conv-algorithm
  // leaves a bf16 build direct).
  // Channel-blocked activations where oneDNN's kernels read them.
  if (!p.given("activation-layout"))
    o.activationLayout = o.target == "cpu" ? "blocked" : "plain";
  if (!p.given("conv-algorithm") || o.target != "cpu")
    o.convAlgorithm = o.target == "cpu" ? "auto" : "direct";
  // CPU ranks on this machine share its cores (GPUs and a cluster's
  // devices are each a rank's own).
  if (!p.given("cores"))
    o.cores = o.target == "cpu" && o.cluster.empty() ? machineCores() : 0;
  return compileModel(o);
}

} // namespace dpc::tools
