//===- Commands.h - The dpc subcommands -------------------------*- C++ -*-===//
//
// Each subcommand lives in its own file and takes its arguments without the
// program and subcommand names. It returns the process exit code: 0 on
// success, 1 when the work failed, 2 (cli::kUsageError) for bad usage.
//
//===----------------------------------------------------------------------===//

#ifndef DPC_TOOLS_DPC_COMMANDS_H
#define DPC_TOOLS_DPC_COMMANDS_H

#include <string>
#include <vector>

namespace dpc::tools {

using Args = std::vector<std::string>;

int runCompileCommand(const Args &args);
int runRunCommand(const Args &args);
int runPlanCommand(const Args &args);
int runProfileCommand(const Args &args);
int runExportCommand(const Args &args);

} // namespace dpc::tools

#endif // DPC_TOOLS_DPC_COMMANDS_H
