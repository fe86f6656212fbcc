//===- ExportCommand.cpp - dpc export -------------------------------------===//
//
// `dpc export out/ --checkpoint DIR -o trained.onnx` writes the model that
// `dpc compile` compiled (its copy, out/model.onnx) with every trained
// parameter replaced by its value in the checkpoints a run wrote. The
// checkpoint must hold every parameter the compiled model has (those of
// out/weights/), under the same names and shapes; the stage split of the run
// that wrote it does not matter.
//
//===----------------------------------------------------------------------===//

#include "Commands.h"

#include "frontends/onnx/OnnxExport.h"

#include "dpc/runtime/Error.h"
#include "dpc/runtime/Safetensors.h"
#include "dpc/support/CommandLine.h"

#include <filesystem>
#include <iostream>
#include <set>
#include <vector>

namespace fs = std::filesystem;

namespace dpc::tools {

namespace {

// Names of the parameters the compiled model has: those of its initial
// weights, out/weights/stage*.safetensors.
std::set<std::string> compiledParams(const fs::path &weightsDir) {
  std::set<std::string> names;
  for (const fs::directory_entry &entry : fs::directory_iterator(weightsDir))
    if (entry.path().extension() == ".safetensors")
      for (const auto &[name, tensor] :
           runtime::readSafetensors(entry.path().string()).tensors)
        names.insert(name);
  return names;
}

} // namespace

int runExportCommand(const Args &args) {
  std::string compiled, checkpoint, output;
  cli::ArgParser p("dpc export",
                   "write trained weights from a checkpoint back into ONNX",
                   "dpc export OUT_DIR --checkpoint DIR -o trained.onnx");
  p.addPositional("OUT_DIR", &compiled, "output directory of 'dpc compile'");
  p.addOption("checkpoint", &checkpoint, "DIR",
              "checkpoint directory written by the ranks (required)");
  p.addOption("o", &output, "FILE", "ONNX model to write (required)");
  mlir::dpc::onnx_frontend::ExportOptions exportOptions;
  p.addFlag("external-data", &exportOptions.externalData,
            "write tensors of 1 KiB and up to FILE.data beside the model, as "
            "torch.onnx does past 2 GiB (the default for a model that large, "
            "or one compiled from external data)");
  if (std::optional<int> exit = p.parseOrExit(args))
    return *exit;
  if (checkpoint.empty() || output.empty()) {
    std::cerr << "dpc export: give --checkpoint DIR and -o FILE\n";
    return cli::kUsageError;
  }
  for (const std::string &dir : {compiled, checkpoint}) {
    if (!fs::is_directory(dir)) {
      std::cerr << "dpc export: '" << dir << "' is not a directory\n";
      return 1;
    }
  }
  fs::path model = fs::path(compiled) / "model.onnx";
  if (!fs::is_regular_file(model)) {
    std::cerr << "dpc export: " << model.string()
              << ": no such file (only a model compiled from ONNX can be "
                 "exported)\n";
    return 1;
  }

  // The trained values are views into the mapped checkpoint files, which
  // `trained` keeps mapped while the model is written.
  std::map<std::string, mlir::dpc::onnx_frontend::TrainedTensor> weights;
  runtime::TensorFile trained;
  std::vector<std::vector<float>> widened;
  try {
    trained = runtime::readCheckpoint(checkpoint, /*optimizerState=*/false);
    for (const std::string &name :
         compiledParams(fs::path(compiled) / "weights"))
      if (!trained.tensors.count(name))
        throw runtime::Error(checkpoint + ": no parameter '" + name +
                             "', which " + compiled +
                             " trains (a checkpoint of another model?)");
    for (const auto &[name, tensor] : trained.tensors) {
      const float *data = reinterpret_cast<const float *>(tensor.data());
      if (tensor.dtype != runtime::DType::F32)
        data = widened.emplace_back(tensor.toF32()).data();
      weights[name] = {tensor.shape, data};
    }
  } catch (const std::exception &e) {
    std::cerr << "dpc export: " << e.what() << "\n";
    return 1;
  }
  mlir::dpc::onnx_frontend::writeOnnxWithWeights(model.string(), weights,
                                                 output, exportOptions);
  std::cout << "wrote " << output << " (" << weights.size()
            << " trained parameters from " << checkpoint << ")\n";
  return 0;
}

} // namespace dpc::tools
