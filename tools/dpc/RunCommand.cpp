//===- RunCommand.cpp - dpc run -------------------------------------------===//
//
// `dpc run OUT/` launches the rank executables that `dpc compile` wrote, with
// `mpirun --app` on OUT/appfile (or srun), and forwards the per-rank options
// (--data, --steps, ...) to every rank. The options are the rank's own
// (runtime/RankOptions.h), parsed here with the rank's table; the launcher
// is runtime/Launcher.h.
//
//===----------------------------------------------------------------------===//

#include "Commands.h"

#include "dpc/runtime/Launcher.h"
#include "dpc/runtime/RankOptions.h"
#include "dpc/support/CommandLine.h"

#include <iostream>

namespace dpc::tools {

int runRunCommand(const Args &args) {
  runtime::LaunchOptions launch;
  runtime::RankOptions rankOptions;
  cli::ArgParser parser("dpc run",
                        "launch a compiled pipeline under mpirun and train it "
                        "(or, built with --inference, predict)",
                        "dpc run OUT [options]");
  parser.addPositional("OUT", &launch.outDir,
                       "output directory of 'dpc compile' (has an appfile)");
  parser.addFlag("np-check", &launch.npCheck,
                 "check the appfile, executables and rank count, print the "
                 "mpirun command and exit without running it");
  parser.addOption("mpirun", &launch.mpirun, "PATH",
                   "the mpirun to use (default: mpirun on PATH)");
  parser.addFlag("verbose", &launch.verbose,
                 "also print mpirun's own messages when a rank fails");
  parser.addOption("hostfile", &launch.hostfile, "FILE",
                   "Open MPI host file (HOST slots=N a line): ranks in stage "
                   "order fill each host's slots in turn");
  parser.addOption("launcher", &launch.launcher, "L",
                   "mpirun (default) or srun (Slurm: prints the srun command "
                   "and runs it where srun exists)");
  parser.addOption("stage", &launch.stageDir, "DIR",
                   "hosts without a shared file system: copy the compiled "
                   "ranks and their data to DIR on every host of --hostfile "
                   "through the launch agent, run them there and bring back "
                   "what they write");
  parser.addOption("agent", &launch.agent, "CMD",
                   "how --stage runs a command on a host, CMD HOST COMMAND "
                   "(default: $OMPI_MCA_plm_rsh_agent, else ssh)");
  parser.addFlag("elastic", &launch.elastic,
                 "when a rank is lost (its process ended, its host "
                 "unreachable), plan again for the devices left, compile and "
                 "resume from the last checkpoint (--checkpoint-every, 10 by "
                 "default)");
  parser.addOption("min-devices", &launch.minDevices, "N",
                   "with --elastic: end the job instead when fewer than N "
                   "devices are left (default 1)");
  // Per-rank options, forwarded to every rank.
  runtime::addRankOptions(parser, rankOptions,
                          runtime::RankOptionSet::Forwarded);

  if (std::optional<int> exit = parser.parseOrExit(args))
    return *exit;
  if (std::string problem = runtime::finishRankOptions(
          parser, rankOptions, runtime::RankOptionSet::Forwarded);
      !problem.empty()) {
    std::cerr << "dpc run: " << problem << "\n";
    return cli::kUsageError;
  }
  return runtime::launch(launch, rankOptions);
}

} // namespace dpc::tools
