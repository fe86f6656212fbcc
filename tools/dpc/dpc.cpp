//===- dpc.cpp - The dpc driver -------------------------------------------===//
//
// `dpc <subcommand> ...`: dispatches to the subcommand files. Kept thin: every
// subcommand owns its options and its errors.
//
//===----------------------------------------------------------------------===//

#include "Commands.h"

#include "dpc/support/CommandLine.h"
#include "dpc/support/Error.h"

#include <cstring>
#include <iostream>

namespace {

struct Subcommand {
  const char *name;
  const char *summary;
  int (*run)(const dpc::tools::Args &);
};

const Subcommand kSubcommands[] = {
    {"compile", "compile an ONNX model into per-rank pipeline executables",
     dpc::tools::runCompileCommand},
    {"run", "launch a compiled pipeline under mpirun and train it",
     dpc::tools::runRunCommand},
    {"plan", "partition a model or a PipeDream profile into pipeline stages",
     dpc::tools::runPlanCommand},
    {"profile", "measure each op's forward and backward time on a backend",
     dpc::tools::runProfileCommand},
    {"export", "write trained weights from a checkpoint back into ONNX",
     dpc::tools::runExportCommand},
};

void printHelp(std::ostream &os) {
  os << "dpc - a compiler for pipeline-parallel training\n\n"
        "Usage: dpc <command> [options]\n\nCommands:\n";
  for (const Subcommand &sub : kSubcommands)
    os << "  " << sub.name << std::string(10 - std::strlen(sub.name), ' ')
       << sub.summary << "\n";
  os << "\nRun 'dpc <command> --help' for the options of a command.\n";
}

} // namespace

int main(int argc, char **argv) {
  if (argc < 2) {
    printHelp(std::cerr);
    return dpc::cli::kUsageError;
  }
  std::string name = argv[1];
  if (name == "--help" || name == "-h" || name == "help") {
    printHelp(std::cout);
    return 0;
  }
  for (const Subcommand &sub : kSubcommands) {
    if (name != sub.name)
      continue;
    // The one line of an error a command leaves to its caller
    // (docs/ARCHITECTURE.md, "Errors").
    try {
      return sub.run(dpc::tools::Args(argv + 2, argv + argc));
    } catch (const dpc::InputError &e) {
      std::cerr << "dpc " << name << ": " << e.what() << "\n";
      return dpc::cli::kUsageError;
    } catch (const dpc::Error &e) {
      std::cerr << "dpc " << name << ": " << e.what() << "\n";
      return 1;
    }
  }
  std::cerr << "dpc: unknown command '" << name
            << "'; run 'dpc --help' for the list of commands\n";
  return dpc::cli::kUsageError;
}
