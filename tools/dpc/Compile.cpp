//===- Compile.cpp - The compilation behind dpc compile -------------------===//
//
// compileModel as a sequence of named phases: check the inputs, load the
// model, run the pass pipeline (CompilePipeline.cpp), complete the plan
// (CompilePlan.cpp), write the IR, the weights and the rank executables
// (CompileOutputs.cpp). The output directory is written only when everything
// succeeded (support::OutputDirectory: a staging directory swapped into
// place at the end, and never over anything dpc did not write).
//
//===----------------------------------------------------------------------===//

#include "CompilePhases.h"

#include "backends/llvm/ObjectEmitter.h"
#include "dialects/nn/IR/NNDialect.h"
#include "dialects/pipe/IR/PipeDialect.h"

#include "dpc/support/CommandLine.h"
#include "dpc/support/Error.h"
#include "dpc/support/OutputDirectory.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Diagnostics.h"

#include <iostream>
#include <unistd.h>

namespace dpc::tools {

using namespace detail;

namespace {

// Refuses a model that is not there or not a model, an output directory
// that would replace an input or what dpc did not write, and a target this
// build cannot link for: `inputs` are the files -o must not replace.
int checkInputs(const CompileOptions &options, std::vector<fs::path> &inputs) {
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
  inputs = {model};
  if (!options.profile.empty())
    inputs.emplace_back(options.profile);
  try {
    support::checkOutputTarget(options.outDir, inputs);
  } catch (const dpc::InputError &e) {
    // Named "dpc compile" under dpc profile's timing builds too.
    std::cerr << "dpc compile: " << e.what() << "\n";
    return cli::kUsageError;
  }

  // A target this build cannot link for fails before any work is done.
  if (options.emit == "exe") {
    try {
      mlir::dpc::checkRankRuntime(options.target);
    } catch (const dpc::Error &e) {
      std::cerr << "dpc compile: " << e.what() << "\n";
      return 1;
    }
  }
  return 0;
}

} // namespace

int compileModel(const CompileOptions &options) {
  std::vector<fs::path> inputs;
  if (int exit = checkInputs(options, inputs))
    return exit;

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
  try {
    out.open(inputs);
  } catch (const dpc::Error &e) {
    std::cerr << "dpc compile: " << e.what() << "\n";
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
  setPipelineOptions(options, out, pipeline);
  PhaseIR phaseIR;
  if (int exit = runPipeline(options, context, pipeline, module, buckets, out,
                             phaseIR))
    return exit;

  if (!completePlan(*module, out.path() / "plan.json",
                    out.path() / "schedule.json", options.inference))
    return 1;
  if (!options.profileBuild)
    if (!writeText(out.path() / "compile.json",
                   compileRecord(options).dump(2) + "\n"))
      return 1;

  if (int exit = writeIR(options, phaseIR, out))
    return exit;
  if (int exit = writeRanks(options, module, weights, buckets, out))
    return exit;

  try {
    out.commit();
  } catch (const dpc::Error &e) {
    std::cerr << "dpc compile: " << e.what() << "\n";
    return 1;
  }
  return 0;
}

int64_t machineCores() {
  long cores = ::sysconf(_SC_NPROCESSORS_ONLN);
  return cores > 0 ? cores : 0;
}

} // namespace dpc::tools
