//===- LauncherSrun.cpp - Launching the ranks under srun ------------------===//
//
// `dpc run --launcher srun`: the job as a Slurm --multi-prog configuration,
// a line per rank, with SLURM_HOSTFILE placing the ranks when a host file
// is given. The command and its files are printed, then run where srun
// exists, followed as under mpirun (followJob): srun's --label tags each
// line with its rank, the ranks' heartbeats feed the watchdog, and after
// the run come the merged trace and the measured step time. With --stage
// the ranks run from DIR on their hosts (srun --chdir, and TMPDIR inside
// it), staged through the launch agent as under mpirun. srun passes the
// environment on, so the ranks get OMP_NUM_THREADS and TMPDIR from here.
//
//===----------------------------------------------------------------------===//

#include "LauncherInternal.h"

#include "dpc/support/WriteFile.h"

#include <algorithm>
#include <cstdlib>
#include <iostream>
#include <sstream>
#include <unistd.h>

namespace dpc::runtime {

SrunCommand srunCommand(const LaunchJob &job) {
  SrunCommand srun;
  std::ostringstream conf, hosts;
  int ranks = 0;
  for (const AppLine &line : job.lines)
    for (int k = 0; k < line.ranks; ++k, ++ranks) {
      conf << ranks << " "
           << resolveProgram(job.runDir.empty() ? job.outDir : job.runDir,
                             line.program);
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
  if (!job.workDir.empty())
    srun.argv.push_back("--chdir=" + job.workDir);
  if (!job.placement.empty())
    srun.argv.push_back("--distribution=arbitrary");
  srun.argv.push_back("--multi-prog");
  srun.argv.push_back(srun.confPath);
  return srun;
}

namespace launcher_detail {

namespace {

/// The ranks' kernel threads, exported to them through srun's environment
/// unless the user set OMP_NUM_THREADS: this machine's cores shared out,
/// or on the hosts of a host file the fewest any line gets from its hosts'
/// slots (hostThreads; srun has no per-rank environment).
void exportThreads(const LaunchJob &job) {
  long threads = threadsPerRank(job.ranks(), ::sysconf(_SC_NPROCESSORS_ONLN));
  if (!job.hosts.empty()) {
    std::vector<long> lines = hostThreads(job, 0);
    if (!lines.empty())
      threads = *std::min_element(lines.begin(), lines.end());
  }
  ::setenv("OMP_NUM_THREADS", std::to_string(threads).c_str(), 0);
}

} // namespace

int runSrun(const LaunchOptions &options, const RankOptions &rankOptions,
            LaunchJob &job, const std::string &summaryPath,
            const std::string &planPath, const Staging *staging,
            const StdoutHook &onStdout) {
  SrunCommand command = srunCommand(job);
  bool placed = !command.hostsPath.empty();
  support::writeAtomically(command.confPath, command.conf);
  if (placed)
    support::writeAtomically(command.hostsPath, command.hosts);
  std::cout << (placed ? "SLURM_HOSTFILE=" + command.hostsPath + " " : "")
            << joinCommand(command.argv) << "\n"
            << command.confPath << ":\n"
            << command.conf;
  if (placed)
    std::cout << command.hostsPath << ":\n" << command.hosts;
  std::cout.flush();
  if (options.npCheck)
    return 0;
  std::string srun = findProgram("srun");
  if (srun.empty())
    throw Error("srun not found on PATH (Slurm); the command above was not "
                "run");
  if (placed)
    ::setenv("SLURM_HOSTFILE", command.hostsPath.c_str(), 1);
  exportThreads(job);
  // slurmstepd makes srun's TMPDIR on every host for the ranks (and leaves
  // it there): a staged job's is inside DIR, which goes after the run.
  if (!job.workDir.empty())
    ::setenv("TMPDIR", (job.workDir + "/tmp").c_str(), 1);
  if (staging) {
    stageToHosts(*staging, job.outDir);
    job.afterRun = [staging] { collectFromHosts(*staging); };
  }
  std::vector<std::string> argv = command.argv;
  argv[0] = srun;
  // The ranks share this machine's cores only without a host file (and
  // then only as Slurm places them): the prediction assumes a core each.
  return followJob(options, rankOptions, argv, job, summaryPath, planPath,
                   /*shared=*/0, onStdout);
}

} // namespace launcher_detail

} // namespace dpc::runtime
