//===- CompilePipeline.cpp - The model and the pass pipeline --------------===//
//
// Loading the model (ONNX through the frontend with its initial weights, or
// nn-dialect MLIR), the pipeline's options, and running DESIGN.md's pipeline
// (passes/Pipeline.h) one pass at a time so that each pass's IR is kept. A
// --seq-buckets build imports the model at every bucket's shape and runs the
// other buckets through the same passes on the primary bucket's partition.
//
//===----------------------------------------------------------------------===//

#include "CompilePhases.h"

#include "dialects/nn/IR/NNOps.h"
#include "dialects/pipe/IR/PipeDialect.h"
#include "dialects/pipe/IR/PipeOps.h"
#include "frontends/onnx/OnnxImporter.h"
#include "passes/Passes.h"
#include "passes/StageInfo.h"

#include "dpc/support/CommandLine.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <iostream>
#include <map>

namespace dpc::tools::detail {
namespace {

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

// The other buckets of a --seq-buckets build (runPipeline ran the primary
// one): the primary one's partition, `forwardStage` for the ops of
// `forward`, then the same passes.
int compileOtherBuckets(
    mlir::OwningOpRef<mlir::ModuleOp> &module,
    mlir::dpc::PipelineOptions &pipeline, BucketBuild &buckets,
    const std::vector<std::pair<std::string, std::string>> &forward,
    const std::vector<int64_t> &forwardStage, const PhaseRunner &runPhases,
    const std::string &current, support::OutputDirectory &out) {
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
          std::cerr << "dpc compile: --seq-buckets: bucket " << describe(shape)
                    << " imports to other ops than bucket "
                    << describe(buckets.shapes[buckets.primary])
                    << ", so one partition cannot serve both: forward op " << i
                    << " is " << show(ops) << " against " << show(forward)
                    << "\n";
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
  return 0;
}

} // namespace

// The imported parameters as the stages' weights files will hold them: in
// their ONNX types, an external initializer as a view into its mapped file
// (written out piece by piece, never held). Float16, bfloat16 and float64
// ones train as float32: the ranks widen them as they load their weights,
// and the compile says so.
static void
collectWeights(std::vector<mlir::dpc::onnx_frontend::ImportedParam> &params,
               runtime::TensorFile &weights) {
  using mlir::dpc::onnx_frontend::ParamDType;
  std::map<std::string, std::pair<int64_t, uint64_t>> widened;
  for (auto &param : params) {
    runtime::DType dtype =
        param.dtype == ParamDType::F16    ? runtime::DType::F16
        : param.dtype == ParamDType::BF16 ? runtime::DType::BF16
        : param.dtype == ParamDType::F64  ? runtime::DType::F64
                                          : runtime::DType::F32;
    runtime::Tensor tensor;
    if (param.file) {
      tensor = runtime::Tensor::mapped(dtype, param.shape, param.file,
                                       param.offset, param.name);
    } else {
      tensor.dtype = dtype;
      tensor.shape = param.shape;
      tensor.bytes = std::move(param.bytes);
    }
    if (dtype != runtime::DType::F32) {
      auto &[count, bytes] = widened[runtime::dtypeName(dtype)];
      ++count;
      bytes += tensor.size();
    }
    weights.tensors[param.name] = std::move(tensor);
  }
  for (const auto &[dtype, counts] : widened)
    std::cerr << "dpc compile: note: " << counts.first << " initializers are "
              << dtype << " (" << counts.second
              << " bytes); they train as F32, widened as the ranks load "
                 "their weights\n";
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
    collectWeights(imported->params, weights);
    weights.metadata["source"] = path.filename().string();
    weights.metadata["onnx_opset"] = std::to_string(imported->fileOpset);
    return true;
  }
  module =
      mlir::parseSourceFile<mlir::ModuleOp>(options.model, sourceMgr, &context);
  return static_cast<bool>(module);
}

std::string printIR(mlir::ModuleOp module) {
  std::string text;
  llvm::raw_string_ostream os(text);
  module.print(os);
  return text;
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

void setPipelineOptions(const CompileOptions &options,
                        const support::OutputDirectory &out,
                        mlir::dpc::PipelineOptions &pipeline) {
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
  pipeline.classAxis = options.classAxis;
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
  pipeline.shardOptimizer = options.shardOptimizer;
  pipeline.verticalSync = options.verticalSync;
  pipeline.scheduleOutput = (out.path() / "schedule.json").string();
  pipeline.traceOutput = (out.path() / "timeline.json").string();
  pipeline.fusion = options.fusion == "on";
  pipeline.blockedLayouts = options.activationLayout == "blocked";
  pipeline.convAlgorithm = options.convAlgorithm;
}

int runPipeline(const CompileOptions &options, mlir::MLIRContext &context,
                mlir::dpc::PipelineOptions &pipeline,
                mlir::OwningOpRef<mlir::ModuleOp> &module, BucketBuild &buckets,
                support::OutputDirectory &out, PhaseIR &phaseIR) {
  bool bucketed = !options.seqBuckets.empty();
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
  phaseIR = {{"import", printIR(*module)}};
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
    std::optional<std::vector<int64_t>> stages =
        stagesOverLimit(*module, options.memoryLimit, pipeline, runPhases);
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
        (current == "verify-schedule" || current == "plan-memory"))
      std::cerr << "dpc compile: --memory-limit is too low even with "
                   "--recompute "
                << options.recompute << " (above)\n";
    return cli::kUsageError;
  }
  if (bucketed)
    return compileOtherBuckets(module, pipeline, buckets, forward, forwardStage,
                               runPhases, current, out);
  return 0;
}

} // namespace dpc::tools::detail
