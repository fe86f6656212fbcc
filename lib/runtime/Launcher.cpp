//===- Launcher.cpp - Launching the ranks of a compiled pipeline ----------===//
//
// `dpc run`'s launcher (include/dpc/runtime/Launcher.h): it reads
// OUT/appfile, checks the rank executables, places the ranks on the hosts of
// a host file in stage order, forwards the rank options to every rank, runs
// the job under mpirun (or srun) and, after a successful run, gathers what
// the ranks wrote apart.
//
// The launcher lives in files by concern, over the private header
// LauncherInternal.h: this file holds the entry point (launch, and
// launchOnce, one launch of a build) and the small helpers every part uses;
// LauncherPlacement.cpp the appfile, host files and rank placement;
// LauncherMonitor.cpp the output follower and the watchdog;
// LauncherMpirun.cpp and LauncherSrun.cpp the two launch commands;
// LauncherReport.cpp what is gathered after a run; LauncherAdapt.cpp
// `dpc run --adapt`.
//
//===----------------------------------------------------------------------===//

#include "LauncherInternal.h"

#include "dpc/planner/PlanJson.h"
#include "dpc/support/CommandLine.h"

#include <cstdlib>
#include <iostream>
#include <optional>
#include <sstream>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

namespace dpc::runtime {

namespace launcher_detail {

bool isDirectory(const std::string &path) {
  struct stat info;
  return ::stat(path.c_str(), &info) == 0 && S_ISDIR(info.st_mode);
}

bool isRegularFile(const std::string &path) {
  struct stat info;
  return ::stat(path.c_str(), &info) == 0 && S_ISREG(info.st_mode);
}

std::string absolutePath(const std::string &path) {
  if (!path.empty() && path[0] == '/')
    return path;
  char cwd[4096];
  if (!::getcwd(cwd, sizeof(cwd)))
    return path;
  return std::string(cwd) + "/" + path;
}

std::string executablePath() {
  char path[4096];
  ssize_t n = ::readlink("/proc/self/exe", path, sizeof path - 1);
  return n > 0 ? std::string(path, size_t(n)) : "dpc";
}

std::string findProgram(const std::string &name) {
  if (name.find('/') != std::string::npos)
    return ::access(name.c_str(), X_OK) == 0 ? name : "";
  const char *path = std::getenv("PATH");
  std::stringstream dirs(path ? path : "/usr/bin:/bin");
  std::string dir;
  while (std::getline(dirs, dir, ':')) {
    std::string candidate = (dir.empty() ? "." : dir) + "/" + name;
    if (isRegularFile(candidate) && ::access(candidate.c_str(), X_OK) == 0)
      return candidate;
  }
  return "";
}

std::vector<std::string> splitWords(const std::string &line) {
  std::istringstream in(line);
  std::vector<std::string> words;
  std::string word;
  while (in >> word)
    words.push_back(word);
  return words;
}

std::string joinCommand(const std::vector<std::string> &argv) {
  std::string text;
  for (const std::string &a : argv)
    text += (text.empty() ? "" : " ") + a;
  return text;
}

int runProgram(const std::vector<std::string> &argv,
               const std::string &directory) {
  std::vector<char *> cargv;
  for (const std::string &a : argv)
    cargv.push_back(const_cast<char *>(a.c_str()));
  cargv.push_back(nullptr);
  std::cout.flush();
  pid_t pid = ::fork();
  if (pid == 0) {
    if (!directory.empty() && ::chdir(directory.c_str()) != 0)
      ::_exit(127);
    ::execv(cargv[0], cargv.data());
    ::_exit(127);
  }
  int status = 0;
  if (pid < 0 || ::waitpid(pid, &status, 0) < 0)
    return -1;
  return status;
}

int launchOnce(const LaunchOptions &options, const std::string &givenOutDir,
               const RankOptions &rankOptions, const StdoutHook &onStdout) {
  LaunchJob job;
  if (!options.hostfile.empty())
    job.hosts = parseHostfile(options.hostfile);

  // The options every rank gets, in the table's order.
  std::vector<std::string> forwarded =
      rankOptionArgs(rankOptions, RankOptionSet::Forwarded);
  for (const std::string &value : forwarded)
    if (value.empty() || value.find_first_of(" \t\n\"'") != std::string::npos)
      throw Error("option value '" + value +
                  "' is empty or contains spaces or quotes, which an "
                  "mpirun appfile cannot carry");

  // The compiled output.
  std::string outDir = givenOutDir;
  while (outDir.size() > 1 && outDir.back() == '/')
    outDir.pop_back();
  if (!isDirectory(outDir))
    throw Error(outDir +
                ": no such directory (the output of 'dpc compile "
                "... -o " +
                outDir + "')");
  std::string appfilePath = outDir + "/appfile";
  if (!isRegularFile(appfilePath))
    throw Error(appfilePath + ": no such file; is " + outDir +
                " the output directory of 'dpc compile'?");
  job.lines = parseAppfile(appfilePath);
  job.outDir = absolutePath(outDir);
  const int ranks = job.ranks();

  // A directory `dpc compile` wrote has a plan.json; its ranks report their
  // step times to the launcher through this file.
  std::string planPath = outDir + "/plan.json";
  std::string summaryPath;
  if (isRegularFile(planPath))
    summaryPath = job.outDir + "/.dpc-run-summary." +
                  std::to_string(::getpid()) + ".json";
  // With a host file, every appfile line names the hosts of its ranks.
  if (!job.hosts.empty()) {
    job.placement = placeRanks(job.hosts, ranks);
    if (int(job.placement.size()) < ranks)
      throw InputError(options.hostfile + ": " +
                       std::to_string(job.placement.size()) +
                       " slots for the " + std::to_string(ranks) +
                       " ranks of " + appfilePath);
  }
  // Without a shared file system the ranks read and write under the
  // staging directory on their hosts.
  std::optional<Staging> staging;
  RankOptions forRanks = rankOptions;
  if (!options.stageDir.empty()) {
    staging = planStaging(options, job, forRanks);
    job.runDir = staging->dir + "/out";
    // The ranks' working directory on every host: DIR, which exists there
    // (the launching directory need not, nor a home directory).
    job.workDir = staging->dir;
  }
  checkPrograms(job, outDir, appfilePath);
  // The ranks of a dpc build also write their step times and a heartbeat
  // for the watchdog.
  RankOptions withLauncher = forRanks;
  if (!summaryPath.empty()) {
    withLauncher.summary =
        staging ? staging->stageOutput(summaryPath, "summary", false)
                : summaryPath;
    withLauncher.heartbeat = true;
    withLauncher.given.insert({"summary", "heartbeat"});
  }
  job.rankArgs = rankOptionArgs(withLauncher, RankOptionSet::All);

  // plan.json, when there, says how many ranks the plan was made for.
  if (isRegularFile(planPath)) {
    std::string text;
    planner::PlanSummary plan = planner::loadPlanSummary(planPath, text);
    if (plan.devices && *plan.devices != ranks)
      throw Error(appfilePath + " launches " + std::to_string(ranks) +
                  " ranks but " + planPath + " plans for " +
                  std::to_string(*plan.devices) + " devices");
  }

  if (options.launcher == "srun")
    return runSrun(options, rankOptions, job, summaryPath, planPath,
                   staging ? &*staging : nullptr, onStdout);

  std::string mpirunPath =
      findProgram(options.mpirun.empty() ? "mpirun" : options.mpirun);
  if (mpirunPath.empty())
    throw Error(options.mpirun.empty()
                    ? std::string("mpirun not found on PATH (Debian package "
                                  "openmpi-bin)")
                    : options.mpirun + ": not an executable");
  long cores = ::sysconf(_SC_NPROCESSORS_ONLN);
  // Kernel threads per rank, so that ranks do not fight over cores: on
  // this machine its cores shared out, on the hosts of a host file each
  // host's slots (per appfile line).
  const char *user = std::getenv("OMP_NUM_THREADS");
  long threads = threadsPerRank(ranks, cores);
  ::setenv("OMP_NUM_THREADS", std::to_string(threads).c_str(), 0);
  long bound = threads;
  if (!job.hosts.empty()) {
    job.lineThreads = hostThreads(job, user ? std::atol(user) : 0);
    bound = boundThreads(job);
  }
  // Ranks whose threads outnumber this machine's cores share them: idle
  // OpenMP threads sleep (mpirunCommand exports it), and the step is
  // predicted on the shared cores.
  int shared = sharedCores(options.hostfile, ranks, cores, threads);
  if (shared > 0)
    ::setenv("OMP_WAIT_POLICY", "passive", /*overwrite=*/0);
  std::vector<std::string> argv = mpirunCommand(
      mpirunPath,
      options.hostfile.empty() ? "" : absolutePath(options.hostfile), ranks,
      cores, bound);

  if (options.npCheck) {
    argv.push_back(appfilePath + " (with the per-rank options)");
    std::cout << outDir << ": " << ranks << " ranks on " << cores << " cores\n"
              << joinCommand(argv) << "\n"
              << mpirunAppfile(job);
    return 0;
  }
  if (staging) {
    stageToHosts(*staging, job.outDir);
    job.afterRun = [&] { collectFromHosts(*staging); };
  }
  return runMpirun(options, rankOptions, std::move(argv), job, summaryPath,
                   planPath, shared, onStdout);
}

} // namespace launcher_detail

using namespace launcher_detail;

int LaunchJob::ranks() const {
  int total = 0;
  for (const AppLine &line : lines)
    total += line.ranks;
  return total;
}

int launch(const LaunchOptions &options, const RankOptions &rankOptions) {
  // The launcher's parts throw what they cannot get past (Error.h): one
  // line on stderr, exit 1, or 2 for what the user gave it.
  try {
    if (options.launcher != "mpirun" && options.launcher != "srun")
      throw InputError("option '--launcher' expects mpirun or srun, not '" +
                       options.launcher + "'");
    if (rankOptions.adapt && !options.stageDir.empty())
      throw InputError("--stage does not support --adapt yet: its "
                       "re-partitions coordinate through files");
    if (options.elastic && rankOptions.adapt)
      throw InputError("--elastic and --adapt do not go together yet");
    if (options.elastic && options.minDevices < 1)
      throw InputError("--min-devices expects at least 1");
    if (rankOptions.adapt && !options.npCheck)
      return launchAdaptive(options, rankOptions);
    if (options.elastic && !options.npCheck)
      return launchElastic(options, rankOptions);
    return launchOnce(options, options.outDir, rankOptions, nullptr);
  } catch (const InputError &e) {
    std::cerr << kCommand << ": " << e.what() << "\n";
    return cli::kUsageError;
  } catch (const Error &e) {
    std::cerr << kCommand << ": " << e.what() << "\n";
    return 1;
  }
}

} // namespace dpc::runtime
