//===- CompilePhases.h - The phases of dpc compile --------------*- C++ -*-===//
//
// Private to tools/dpc. compileModel (Compile.cpp) runs a compilation as
// named phases, each in the file of its concern: CompilePipeline.cpp loads
// the model and runs the pass pipeline on it (and on the other shape buckets
// of a --seq-buckets build), CompilePlan.cpp completes plan.json, records the
// options and picks the stages --recompute auto recomputes, and
// CompileOutputs.cpp writes the IR, the weights and the rank executables.
// This header declares what crosses those files; CompileCommand.cpp parses
// and checks the options. Nothing outside tools/dpc includes it.
//
//===----------------------------------------------------------------------===//

#ifndef DPC_TOOLS_DPC_COMPILEPHASES_H
#define DPC_TOOLS_DPC_COMPILEPHASES_H

#include "Buckets.h"
#include "Compile.h"

#include "passes/Pipeline.h"

#include "dpc/runtime/Safetensors.h"
#include "dpc/support/OutputDirectory.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/SourceMgr.h"

#include <filesystem>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace dpc::tools::detail {

namespace fs = std::filesystem;

/// Each pass's name and the module's IR after it, "import" first.
using PhaseIR = std::vector<std::pair<std::string, std::string>>;

/// Runs the pass pipeline on a module, calling `after` with each pass's
/// name; false when a pass or `after` failed.
using PhaseRunner = std::function<bool(
    mlir::ModuleOp, const std::function<bool(llvm::StringRef)> &)>;

// The shape buckets of a --seq-buckets build: each bucket's outlined module
// and the stage costs build-schedule gave it.
struct BucketBuild {
  std::vector<ShapeBucket> shapes;
  size_t primary = 0;
  std::vector<mlir::OwningOpRef<mlir::ModuleOp>> modules;
  std::vector<std::vector<schedule::StageInfo>> costs;
};

//===----------------------------------------------------------------------===//
// CompilePipeline.cpp: the model and the pass pipeline
//===----------------------------------------------------------------------===//

// Loads the model into `module`: ONNX through the frontend (collecting the
// initial weights), or nn-dialect MLIR as is. Returns false after the
// diagnostics have been printed.
bool loadModel(const CompileOptions &options, mlir::MLIRContext &context,
               llvm::SourceMgr &sourceMgr,
               mlir::OwningOpRef<mlir::ModuleOp> &module,
               runtime::TensorFile &weights);

// Imports every bucket but the primary one, which loadModel imported at
// the longest length (the importer checks that the inputs are token ids).
int importBuckets(const CompileOptions &options, mlir::MLIRContext &context,
                  mlir::ModuleOp primary, BucketBuild &buckets);

/// Sets the pipeline's options from dpc compile's, writing plan.json,
/// schedule.json and timeline.json into `out`.
void setPipelineOptions(const CompileOptions &options,
                        const support::OutputDirectory &out,
                        mlir::dpc::PipelineOptions &pipeline);

/// Runs DESIGN.md's pipeline on `module`, one pass at a time so that each
/// one's IR is kept in `phaseIR`, after --recompute auto's probe; then, for
/// --seq-buckets, the other buckets on the same partition. Returns the exit
/// code (0, or 2 for bad input, the diagnostics printed).
int runPipeline(const CompileOptions &options, mlir::MLIRContext &context,
                mlir::dpc::PipelineOptions &pipeline,
                mlir::OwningOpRef<mlir::ModuleOp> &module, BucketBuild &buckets,
                support::OutputDirectory &out, PhaseIR &phaseIR);

//===----------------------------------------------------------------------===//
// CompilePlan.cpp: plan.json, compile.json, --recompute auto
//===----------------------------------------------------------------------===//

/// OUT/compile.json: what `dpc run --adapt` needs to compile the model again
/// for another layout (docs/RUNTIME.md, "Re-partitioning"): the model, the
/// directory its relative paths were given from, and the other options.
nlohmann::ordered_json compileRecord(const CompileOptions &options);

// Adds what the later phases know beside the planner's figures in
// plan.json: whether the build is forward-only, the schedule kind built,
// the schedule simulation's step time and bubbles (per-op costs through the
// real instruction streams) and plan-memory's peak per rank.
bool completePlan(mlir::ModuleOp module, const fs::path &planPath,
                  const fs::path &schedulePath, bool inference);

/// `--recompute auto`: the stages to recompute are those of every rank
/// whose peak without recomputation exceeds `limit` (or its device's
/// memory) and whose peak with it is lower. Peaks are plan-memory's, the
/// ones held to the limits (parameters with their gradients and optimizer
/// state, stash slots of the microbatches in flight, transfer buffers, and
/// the arena of the segment running): recomputation shrinks the stashes
/// but runs the forward again inside the backward's arena, so a rank with
/// one microbatch in flight (the last) can only grow. Found by running the
/// phases up to plan-memory on copies of `module` (`runPhases` runs
/// `pipeline` as it is when called), with no stage recomputed, then, when
/// a rank is over, with every stage, and no rank held to a limit; `pipeline`
/// is left as it was. All chunks of such a rank are recomputed. Nothing
/// when a phase fails (it has said why).
std::optional<std::vector<int64_t>>
stagesOverLimit(mlir::ModuleOp module, double limit,
                mlir::dpc::PipelineOptions &pipeline,
                const PhaseRunner &runPhases);

//===----------------------------------------------------------------------===//
// CompileOutputs.cpp: the files of the output directory
//===----------------------------------------------------------------------===//

/// Writes `text` to `path`; false after saying why.
bool writeText(const fs::path &path, const std::string &text);

/// mlir/NN-PASS.mlir for every pass, model.mlir, and the source model
/// (model.onnx); with --emit mlir, no plan or schedule. Returns the exit
/// code.
int writeIR(const CompileOptions &options, const PhaseIR &phaseIR,
            support::OutputDirectory &out);

/// The initial weights of each rank and, with --emit exe, the rank
/// executables (hard links for a stage's replicas) and the appfile.
/// Returns the exit code.
int writeRanks(const CompileOptions &options,
               mlir::OwningOpRef<mlir::ModuleOp> &module,
               const runtime::TensorFile &weights, BucketBuild &buckets,
               support::OutputDirectory &out);

} // namespace dpc::tools::detail

#endif // DPC_TOOLS_DPC_COMPILEPHASES_H
