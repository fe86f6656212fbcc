//===- ExportCommand.cpp - dpc export -------------------------------------===//
//
// `dpc export out/ --checkpoint DIR -o trained.onnx` writes trained weights
// back into the ONNX model that was compiled. It needs the frontend's record
// of which initializer each parameter came from (the end-to-end issue); until
// then the options are checked and the command says what is missing.
//
//===----------------------------------------------------------------------===//

#include "Commands.h"

#include "dpc/support/CommandLine.h"

#include <filesystem>
#include <iostream>

namespace dpc::tools {

int runExportCommand(const Args &args) {
  std::string compiled, checkpoint, output;
  cli::ArgParser p("dpc export",
                   "write trained weights from a checkpoint back into ONNX",
                   "dpc export OUT_DIR --checkpoint DIR -o trained.onnx");
  p.addPositional("OUT_DIR", &compiled, "output directory of 'dpc compile'");
  p.addOption("checkpoint", &checkpoint, "DIR",
              "checkpoint directory written by the ranks (required)");
  p.addOption("o", &output, "FILE", "ONNX model to write (required)");
  if (std::optional<int> exit = p.parseOrExit(args))
    return *exit;
  if (checkpoint.empty() || output.empty()) {
    std::cerr << "dpc export: give --checkpoint DIR and -o FILE\n";
    return cli::kUsageError;
  }
  for (const std::string &dir : {compiled, checkpoint}) {
    if (!std::filesystem::is_directory(dir)) {
      std::cerr << "dpc export: '" << dir << "' is not a directory\n";
      return 1;
    }
  }
  std::cerr << "dpc export: writing ONNX needs the ONNX frontend, which is "
               "not in this build yet\n";
  return 1;
}

} // namespace dpc::tools
