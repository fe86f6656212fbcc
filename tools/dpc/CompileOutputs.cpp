//===- CompileOutputs.cpp - The files of the output directory -------------===//
//
// Writing what dpc compile leaves in OUT: each pass's IR under mlir/,
// model.mlir and the source model; the initial weights of each rank
// (weights/stageR.safetensors); and each rank's executable, lowered to the
// LLVM dialect, emitted as an object and linked with the target's runtime
// (for --seq-buckets, one object holding every bucket's segments), with
// hard links for a stage's replicas and the appfile that starts them.
//
//===----------------------------------------------------------------------===//

#include "CompilePhases.h"

#include "frontends/onnx/OnnxExport.h"

#include "backends/llvm/ObjectEmitter.h"
#include "dialects/nn/IR/NNOps.h"
#include "dialects/pipe/IR/PipeDialect.h"
#include "dialects/pipe/IR/PipeOps.h"
#include "dpc/support/Error.h"
#include "passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/raw_ostream.h"

#include <iostream>
#include <map>
#include <set>

namespace dpc::tools::detail {
namespace {

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
  try {
    mlir::dpc::linkRankExecutable(object.string(), (dir / name).string(),
                                  target);
  } catch (const dpc::Error &e) {
    std::cerr << "dpc compile: " << e.what() << "\n";
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
  std::string manifest;
  try {
    manifest = mergeBucketManifests(buckets.shapes, buckets.primary, manifests,
                                    buckets.costs);
  } catch (const dpc::Error &e) {
    std::cerr << "dpc compile: --seq-buckets: rank " << stage << ": "
              << e.what() << "\n";
    return false;
  }
  fs::path object = dir / "obj" / (name + ".o");
  fs::create_directories(object.parent_path());
  if (mlir::failed(mlir::dpc::emitBucketedObjectFile(
          modules, buckets.primary, manifest, object.string())))
    return false;
  return linkRank(object, target, dir, name);
}

} // namespace

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

int writeIR(const CompileOptions &options, const PhaseIR &phaseIR,
            support::OutputDirectory &out) {
  fs::path model(options.model);
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
  // A model with external data is copied with absolute locations, so
  // that the copy finds the files (never copied: they can be tens of GB).
  if (model.extension() == ".onnx") {
    try {
      mlir::dpc::onnx_frontend::copyModelForExport(
          model.string(), (out.path() / "model.onnx").string());
    } catch (const dpc::Error &e) {
      std::cerr << "dpc compile: cannot copy the model into the output: "
                << e.what() << "\n";
      return 1;
    }
  }
  if (options.emit == "mlir") {
    for (const char *name : {"plan.json", "schedule.json", "timeline.json"})
      fs::remove(out.path() / name);
  }
  return 0;
}

int writeRanks(const CompileOptions &options,
               mlir::OwningOpRef<mlir::ModuleOp> &module,
               const runtime::TensorFile &weights, BucketBuild &buckets,
               support::OutputDirectory &out) {
  bool bucketed = !options.seqBuckets.empty();
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
  return 0;
}

} // namespace dpc::tools::detail
