//===- NoCompiler.cpp - Subcommands of a runtime-only dpc -----------------===//
//
// A build with DPC_ENABLE_COMPILER=OFF has no MLIR; the compiler subcommands
// say so instead of pretending to work.
//
//===----------------------------------------------------------------------===//

#include "Commands.h"

#include <iostream>

namespace dpc::tools {

static int noCompiler(const char *command) {
  std::cerr << "dpc " << command
            << ": this dpc was built without the compiler "
               "(DPC_ENABLE_COMPILER=OFF); rebuild with it ON\n";
  return 1;
}

int runCompileCommand(const Args &) { return noCompiler("compile"); }
int runProfileCommand(const Args &) { return noCompiler("profile"); }
int runExportCommand(const Args &) { return noCompiler("export"); }

} // namespace dpc::tools
