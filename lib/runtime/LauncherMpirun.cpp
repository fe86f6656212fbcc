//===- LauncherMpirun.cpp - Launching the ranks under mpirun --------------===//
//
// The mpirun command line and appfile, and the run under it. The launcher
// adds what a user would otherwise have to know about mpirun: the
// environment that lets it run as root, --oversubscribe when there are more
// ranks than cores, cores bound per rank when the ranks' threads fit the
// machine, and program paths that work from any directory. mpirun itself
// ends the job when one rank exits non-zero, aborts or dies, so nothing is
// left hanging; followJob (LauncherMonitor.cpp, shared with srun) then
// names the rank that failed first and its last error.
//
//===----------------------------------------------------------------------===//

#include "LauncherInternal.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <map>
#include <sstream>
#include <unistd.h>

namespace dpc::runtime {

std::string mpirunAppfile(const LaunchJob &job) {
  std::ostringstream appfile;
  int ranks = 0;
  for (size_t l = 0; l < job.lines.size(); ++l) {
    const AppLine &line = job.lines[l];
    if (!job.placement.empty()) {
      // HOST:SLOTS, each host of the line's ranks once: Open MPI fills the
      // slots in order as placeRanks did, counting what earlier lines took
      // (a bare HOST would mean one slot).
      std::string list;
      for (int r = ranks; r < ranks + line.ranks; ++r) {
        if (r > ranks && job.placement[r] == job.placement[r - 1])
          continue;
        for (const HostSlots &h : job.hosts)
          if (h.host == job.placement[r])
            list += (list.empty() ? "" : ",") + h.host + ":" +
                    std::to_string(h.slots);
      }
      appfile << "--host " << list << " ";
    }
    ranks += line.ranks;
    // A line's own -x overrides mpirun's for its ranks (Open MPI 4.1).
    if (l < job.lineThreads.size())
      appfile << "-x OMP_NUM_THREADS=" << job.lineThreads[l] << " ";
    if (!job.workDir.empty())
      appfile << "--wdir " << job.workDir << " ";
    for (const std::string &o : line.mpirunOptions)
      appfile << o << " ";
    appfile << resolveProgram(job.runDir.empty() ? job.outDir : job.runDir,
                              line.program);
    for (const std::string &a : line.programArgs)
      appfile << " " << a;
    for (const std::string &a : job.rankArgs)
      appfile << " " << a;
    appfile << "\n";
  }
  return appfile.str();
}

bool threadsFitCores(const std::string &hostfile, int ranks, long cores,
                     long threads) {
  return hostfile.empty() && cores > 0 && threads > 0 &&
         ranks * threads <= cores;
}

long threadsPerRank(int ranks, long cores) {
  if (const char *user = std::getenv("OMP_NUM_THREADS"))
    return std::atol(user);
  return std::max<long>(1, cores > 0 ? cores / ranks : 1);
}

namespace {

/// The ranks placed on each host.
std::map<std::string, int> ranksPerHost(const LaunchJob &job) {
  std::map<std::string, int> count;
  for (const std::string &host : job.placement)
    ++count[host];
  return count;
}

int slotsOf(const LaunchJob &job, const std::string &host) {
  for (const HostSlots &h : job.hosts)
    if (h.host == host)
      return h.slots;
  return 1;
}

} // namespace

std::vector<long> hostThreads(const LaunchJob &job, long userThreads) {
  std::map<std::string, int> placed = ranksPerHost(job);
  std::vector<long> threads;
  int first = 0;
  for (const AppLine &line : job.lines) {
    long least = 0;
    for (int r = first; r < first + line.ranks && r < int(job.placement.size());
         ++r) {
      const std::string &host = job.placement[r];
      long share = std::max(1, slotsOf(job, host) / placed[host]);
      least = least == 0 ? share : std::min(least, share);
    }
    threads.push_back(userThreads > 0 ? userThreads : std::max(1L, least));
    first += line.ranks;
  }
  return threads;
}

long boundThreads(const LaunchJob &job) {
  if (job.lineThreads.empty())
    return 0;
  long common = job.lineThreads.front();
  for (long t : job.lineThreads)
    if (t != common)
      return 0;
  for (const auto &[host, ranks] : ranksPerHost(job))
    if (ranks * common > slotsOf(job, host))
      return 0;
  return common;
}

int sharedCores(const std::string &hostfile, int ranks, long cores,
                long threads) {
  if (!hostfile.empty() || threadsFitCores(hostfile, ranks, cores, threads))
    return 0;
  return int(std::max(1L, cores / std::max(1L, threads)));
}

std::vector<std::string> mpirunCommand(const std::string &mpirun,
                                       const std::string &hostfile, int ranks,
                                       long cores, long threads) {
  std::vector<std::string> argv = {mpirun, "--tag-output"};
  if (!hostfile.empty()) {
    argv.push_back("--hostfile");
    argv.push_back(hostfile);
  }
  // Open MPI counts slots by cores and refuses to start more ranks than
  // that unless told.
  if (cores > 0 && ranks > cores)
    argv.push_back("--oversubscribe");
  argv.push_back("-x");
  argv.push_back("OMP_NUM_THREADS");
  if (threadsFitCores(hostfile, ranks, cores, threads)) {
    // The ranks' threads fit the machine: each rank gets cores of its own,
    // as many as its threads, so no rank's threads run on another's cores.
    argv.push_back("--map-by");
    argv.push_back("slot:PE=" + std::to_string(threads));
    argv.push_back("--bind-to");
    argv.push_back("core");
  } else if (hostfile.empty()) {
    // More threads than cores: nothing is bound (the kernel shares the
    // cores, as the simulator's --cores assumes), and OpenMP threads with
    // nothing to do sleep instead of spinning on a core another rank needs.
    argv.push_back("-x");
    argv.push_back("OMP_WAIT_POLICY");
    argv.push_back("--bind-to");
    argv.push_back("none");
  } else if (std::getenv("OMPI_MCA_hwloc_base_binding_policy")) {
    // The user (or scripts/cluster) chose Open MPI's binding.
  } else if (threads > 0) {
    // Hosts of a host file whose ranks' threads fit their slots: each rank
    // on cores of its own on its host, as many as its threads.
    argv.push_back("--map-by");
    argv.push_back("slot:PE=" + std::to_string(threads));
    argv.push_back("--bind-to");
    argv.push_back("core");
  } else {
    // Thread counts that differ between lines, or more than the slots:
    // nothing is bound (Open MPI would bind each rank to one core).
    argv.push_back("--bind-to");
    argv.push_back("none");
  }
  argv.push_back("--app");
  return argv;
}

namespace launcher_detail {

int runMpirun(const LaunchOptions &options, const RankOptions &rankOptions,
              std::vector<std::string> argv, const LaunchJob &job,
              const std::string &summaryPath, const std::string &planPath,
              int shared, const StdoutHook &onStdout) {
  // The rewritten appfile: absolute programs, forwarded options.
  char tempPath[] = "/tmp/dpc-run-appfile-XXXXXX";
  int fd = ::mkstemp(tempPath);
  if (fd < 0)
    throw Error(std::string("cannot create a temporary appfile: ") +
                std::strerror(errno));
  std::string text = mpirunAppfile(job);
  bool written = ::write(fd, text.data(), text.size()) == ssize_t(text.size());
  ::close(fd);
  if (!written) {
    ::unlink(tempPath);
    throw Error(std::string(tempPath) + ": write failed");
  }
  argv.push_back(tempPath);

  if (::geteuid() == 0) {
    // mpirun refuses to run as root (containers, CI) without both.
    ::setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 1);
    ::setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 1);
  }

  struct RemoveAppfile {
    const char *path;
    ~RemoveAppfile() { ::unlink(path); }
  } removeAppfile{tempPath};
  return followJob(options, rankOptions, argv, job, summaryPath, planPath,
                   shared, onStdout);
}

} // namespace launcher_detail

} // namespace dpc::runtime
