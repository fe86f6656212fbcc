//===- LauncherSrun.cpp - Launching the ranks under srun ------------------===//
//
// `dpc run --launcher srun`: the job as a Slurm --multi-prog configuration,
// a line per rank, with SLURM_HOSTFILE placing the ranks when a host file
// is given. The command and its files are printed, then run where srun
// exists.
//
//===----------------------------------------------------------------------===//

#include "LauncherInternal.h"

#include "dpc/support/WriteFile.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <sstream>
#include <sys/wait.h>

namespace dpc::runtime {

SrunCommand srunCommand(const LaunchJob &job) {
  SrunCommand srun;
  std::ostringstream conf, hosts;
  int ranks = 0;
  for (const AppLine &line : job.lines)
    for (int k = 0; k < line.ranks; ++k, ++ranks) {
      conf << ranks << " " << resolveProgram(job.outDir, line.program);
      for (const std::string &a : line.programArgs)
        conf << " " << a;
      for (const std::string &a : job.rankArgs)
        conf << " " << a;
      conf << "\n";
      if (!job.placement.empty())
        hosts << job.placement[ranks] << "\n";
    }
  srun.confPath = job.outDir + "/.dpc-srun.conf";
  srun.conf = conf.str();
  if (!job.placement.empty()) {
    srun.hostsPath = job.outDir + "/.dpc-srun.hosts";
    srun.hosts = hosts.str();
  }
  srun.argv = {"srun", "--ntasks=" + std::to_string(ranks),
               "--kill-on-bad-exit=1", "--label"};
  if (!job.placement.empty())
    srun.argv.push_back("--distribution=arbitrary");
  srun.argv.push_back("--multi-prog");
  srun.argv.push_back(srun.confPath);
  return srun;
}

namespace launcher_detail {

int runSrun(const LaunchJob &job, bool npCheck) {
  SrunCommand command = srunCommand(job);
  bool placed = !command.hostsPath.empty();
  std::string error;
  if (!support::writeAtomically(command.confPath, command.conf, error) ||
      (placed &&
       !support::writeAtomically(command.hostsPath, command.hosts, error)))
    throw Error(error);
  std::cout << (placed ? "SLURM_HOSTFILE=" + command.hostsPath + " " : "")
            << joinCommand(command.argv) << "\n"
            << command.confPath << ":\n"
            << command.conf;
  if (placed)
    std::cout << command.hostsPath << ":\n" << command.hosts;
  std::cout.flush();
  if (npCheck)
    return 0;
  std::string srun = findProgram("srun");
  if (srun.empty())
    throw Error("srun not found on PATH (Slurm); the command above was not "
                "run");
  if (placed)
    ::setenv("SLURM_HOSTFILE", command.hostsPath.c_str(), 1);
  std::vector<std::string> argv = command.argv;
  argv[0] = srun;
  int status = runProgram(argv, "");
  if (status == -1)
    throw Error(std::string("cannot run srun: ") + std::strerror(errno));
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
    return 0;
  throw Error("srun failed (" +
              (WIFEXITED(status)
                   ? "exit code " + std::to_string(WEXITSTATUS(status))
                   : "signal " + std::to_string(WTERMSIG(status))) +
              ")");
}

} // namespace launcher_detail

} // namespace dpc::runtime
