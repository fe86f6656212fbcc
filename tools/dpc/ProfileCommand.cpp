//===- ProfileCommand.cpp - dpc profile -----------------------------------===//
//
// `dpc profile model.onnx -o profile.json` measures each op's forward and
// backward time on a backend, the role of PipeDream's profiler. Measuring
// needs the ONNX frontend and a backend (the end-to-end issue); until then
// the options are checked and the command says what is missing.
//
//===----------------------------------------------------------------------===//

#include "Commands.h"

#include "dpc/support/CommandLine.h"

#include <filesystem>
#include <iostream>

namespace dpc::tools {

int runProfileCommand(const Args &args) {
  std::string model, output, target = "cpu";
  int64_t repeats = 10, microbatchSize = 0;
  cli::ArgParser p("dpc profile",
                   "measure each op's forward and backward time on a backend",
                   "dpc profile MODEL -o profile.json [options]");
  p.addPositional("MODEL", &model, "the ONNX model");
  p.addOption("o", &output, "FILE", "profile to write (required)");
  p.addOption("target", &target, "cpu|cuda", "backend to measure on");
  p.addOption("repeats", &repeats, "N", "timed runs per op (default 10)");
  p.addOption("microbatch-size", &microbatchSize, "B",
              "batch size to measure with");
  switch (p.parse(args)) {
  case cli::ArgParser::Result::Help:
    std::cout << p.help();
    return 0;
  case cli::ArgParser::Result::Error:
    std::cerr << p.error() << "\n";
    return cli::kUsageError;
  case cli::ArgParser::Result::Ok:
    break;
  }
  if (output.empty()) {
    std::cerr << "dpc profile: missing output file: give -o FILE\n";
    return cli::kUsageError;
  }
  if (target != "cpu" && target != "cuda") {
    std::cerr << "dpc profile: --target expects cpu or cuda, got '" << target
              << "'\n";
    return cli::kUsageError;
  }
  if (!std::filesystem::is_regular_file(model)) {
    std::cerr << "dpc profile: cannot read model '" << model
              << "': no such file\n";
    return 1;
  }
  std::cerr << "dpc profile: measuring needs the ONNX frontend and a backend, "
               "which are not in this build yet\n";
  return 1;
}

} // namespace dpc::tools
