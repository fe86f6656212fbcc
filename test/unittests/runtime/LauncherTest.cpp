//===- LauncherTest.cpp - Tests of dpc run's launcher ---------------------===//

#include "dpc/runtime/Launcher.h"

#include "dpc/support/CommandLine.h"
#include "test/unittests/runtime/ErrorOf.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sys/stat.h>
#include <thread>
#include <unistd.h>

using namespace dpc::runtime;

namespace {

/// A fresh directory under the test's temporary directory.
std::string makeDir(const std::string &name) {
  std::string dir = ::testing::TempDir() + "dpc-launcher-" +
                    std::to_string(::getpid()) + "-" + name;
  std::string command = "rm -rf '" + dir + "' && mkdir -p '" + dir + "'";
  EXPECT_EQ(std::system(command.c_str()), 0);
  return dir;
}

std::string writeFile(const std::string &path, const std::string &text,
                      bool executable = false) {
  std::ofstream(path) << text;
  if (executable)
    ::chmod(path.c_str(), 0755);
  return path;
}

/// OUT/ as `dpc compile` leaves it for two one-rank stages, with scripts
/// standing in for the rank executables.
std::string makeOut(const std::string &name) {
  std::string out = makeDir(name);
  writeFile(out + "/appfile", "-np 1 ./rank0\n-np 1 ./rank1 --stage 1\n");
  writeFile(out + "/rank0", "#!/bin/sh\n", true);
  writeFile(out + "/rank1", "#!/bin/sh\n", true);
  return out;
}

//===----------------------------------------------------------------------===//
// Host files and placement
//===----------------------------------------------------------------------===//

TEST(Launcher, HostfileSlotsAddUp) {
  std::string dir = makeDir("hosts");
  std::string path =
      writeFile(dir + "/hosts", "# the cluster\nnodeA slots=2 # two\n\n"
                                "nodeB max_slots=8\nnodeA slots=1\n");
  std::vector<HostSlots> hosts;
  ASSERT_EQ(errorOf([&] { hosts = parseHostfile(path); }), "");
  ASSERT_EQ(hosts.size(), 2u);
  EXPECT_EQ(hosts[0].host, "nodeA");
  EXPECT_EQ(hosts[0].slots, 3);
  EXPECT_EQ(hosts[1].host, "nodeB");
  EXPECT_EQ(hosts[1].slots, 1);
}

TEST(Launcher, HostfileErrorsNameFileAndLine) {
  std::string dir = makeDir("badhosts");
  auto problem = [&](const std::string &text) {
    return inputErrorOf([&] { parseHostfile(writeFile(dir + "/h", text)); });
  };
  std::string h = dir + "/h";
  EXPECT_EQ(problem("# x\nlocalhost slots=two\n"),
            h + ":2: slots expects a positive integer, not 'two'");
  EXPECT_EQ(problem("localhost slots=0\n"),
            h + ":1: slots expects a positive integer, not '0'");
  EXPECT_EQ(problem("localhost cpus=2\n"),
            h + ":1: expected slots=N or max_slots=N, not 'cpus=2'");
  EXPECT_EQ(problem("slots=2\n"),
            h + ":1: expected a host name before 'slots=2'");
  EXPECT_EQ(problem("# nothing\n"), h + ": no hosts");
  EXPECT_EQ(inputErrorOf([&] { parseHostfile(dir + "/missing"); }),
            dir + "/missing: No such file or directory");
}

TEST(Launcher, PlacementFillsHostsInStageOrder) {
  std::vector<HostSlots> hosts = {{"a", 2}, {"b", 1}, {"c", 4}};
  EXPECT_EQ(placeRanks(hosts, 4),
            (std::vector<std::string>{"a", "a", "b", "c"}));
  EXPECT_EQ(placeRanks(hosts, 9).size(), 7u); // the slots run out
}

//===----------------------------------------------------------------------===//
// The appfile
//===----------------------------------------------------------------------===//

TEST(Launcher, ParsesAppfile) {
  std::string dir = makeDir("appfile");
  std::vector<AppLine> lines;
  ASSERT_EQ(errorOf([&] {
              lines = parseAppfile(writeFile(
                  dir + "/appfile", "# stages\n-np 2 -x A ./rank0 --stage 0\n"
                                    "-mca btl self ./rank1\n"));
            }),
            "");
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0].lineNumber, 2);
  EXPECT_EQ(lines[0].ranks, 2);
  EXPECT_EQ(lines[0].mpirunOptions,
            (std::vector<std::string>{"-np", "2", "-x", "A"}));
  EXPECT_EQ(lines[0].program, "./rank0");
  EXPECT_EQ(lines[0].programArgs, (std::vector<std::string>{"--stage", "0"}));
  EXPECT_EQ(lines[1].mpirunOptions,
            (std::vector<std::string>{"-mca", "btl", "self"}));
  EXPECT_EQ(lines[1].ranks, 1);
}

TEST(Launcher, AppfileErrorsNameFileAndLine) {
  std::string dir = makeDir("badappfile");
  std::string path = dir + "/appfile";
  auto problem = [&](const std::string &text) {
    return errorOf([&] { parseAppfile(writeFile(path, text)); });
  };
  EXPECT_EQ(problem("-np 1\n"), path + ":1: no program to run");
  EXPECT_EQ(problem("\n-np\n"), path + ":2: option '-np' without its value");
  EXPECT_EQ(problem("-np two ./rank0\n"), path + ":1: bad rank count 'two'");
  EXPECT_EQ(problem("# nothing\n"), path + ": no ranks to launch");
}

TEST(Launcher, ProgramChecks) {
  std::string dir = makeDir("programs");
  EXPECT_EQ(programProblem(writeFile(dir + "/script", "#!/bin/sh\n")), "");
  EXPECT_EQ(programProblem(writeFile(dir + "/text", "hello\n")),
            "is not a program (no ELF header)");
  EXPECT_EQ(programProblem("/proc/self/exe"), "");
  // An ELF64 header whose one program header (56 bytes at 64) is missing.
  std::string elf(64, '\0');
  elf.replace(0, 4,
              "\x7f"
              "ELF");
  elf[4] = 2;     // 64-bit
  elf[5] = 1;     // little-endian
  elf[0x20] = 64; // program headers at 64
  elf[0x36] = 56; // of 56 bytes
  elf[0x38] = 1;  // one of them
  EXPECT_EQ(programProblem(writeFile(dir + "/short", elf)),
            "is truncated (its ELF header needs 120 bytes, the file has 64)");
}

//===----------------------------------------------------------------------===//
// The launch commands
//===----------------------------------------------------------------------===//

LaunchJob twoStageJob() {
  LaunchJob job;
  job.outDir = "/out";
  job.lines.resize(2);
  job.lines[0].mpirunOptions = {"-np", "1"};
  job.lines[0].program = "./rank0";
  job.lines[1].mpirunOptions = {"-np", "2"};
  job.lines[1].program = "./rank1";
  job.lines[1].programArgs = {"--stage", "1"};
  job.lines[1].ranks = 2;
  job.rankArgs = {"--steps", "3"};
  return job;
}

TEST(Launcher, ResolvesProgramsAgainstOut) {
  std::string out = makeOut("resolve");
  EXPECT_EQ(resolveProgram(out, "./rank0"), out + "/rank0");
  EXPECT_EQ(resolveProgram(out, "rank1"), out + "/rank1");
  EXPECT_EQ(resolveProgram(out, "bin/x"), out + "/bin/x");
  EXPECT_EQ(resolveProgram(out, "/abs/x"), "/abs/x");
  EXPECT_EQ(resolveProgram(out, "hostname"), "hostname"); // left to PATH
}

TEST(Launcher, MpirunAppfile) {
  LaunchJob job = twoStageJob();
  EXPECT_EQ(job.ranks(), 3);
  EXPECT_EQ(mpirunAppfile(job), "-np 1 /out/rank0 --steps 3\n"
                                "-np 2 /out/rank1 --stage 1 --steps 3\n");
  // With a host file each line names the hosts of its ranks, with all
  // their slots.
  job.hosts = {{"nodeA", 2}, {"nodeB", 4}};
  job.placement = placeRanks(job.hosts, 3);
  EXPECT_EQ(mpirunAppfile(job),
            "--host nodeA:2 -np 1 /out/rank0 --steps 3\n"
            "--host nodeA:2,nodeB:4 -np 2 /out/rank1 --stage 1 --steps 3\n");
}

TEST(Launcher, MpirunCommand) {
  // Threads that fit the cores: each rank on cores of its own.
  EXPECT_EQ(mpirunCommand("/usr/bin/mpirun", "", 2, 4, 2),
            (std::vector<std::string>{
                "/usr/bin/mpirun", "--tag-output", "-x", "OMP_NUM_THREADS",
                "--map-by", "slot:PE=2", "--bind-to", "core", "--app"}));
  EXPECT_EQ(mpirunCommand("mpirun", "", 2, 2, 1)[5], "slot:PE=1");
  // More threads than cores: shared, and idle OpenMP threads sleep.
  EXPECT_EQ(
      mpirunCommand("mpirun", "", 4, 2, 1),
      (std::vector<std::string>{
          "mpirun", "--tag-output", "--oversubscribe", "-x", "OMP_NUM_THREADS",
          "-x", "OMP_WAIT_POLICY", "--bind-to", "none", "--app"}));
  EXPECT_EQ(mpirunCommand("mpirun", "", 2, 2, 2)[5], "OMP_WAIT_POLICY");
  // A thread count that is no count (OMP_NUM_THREADS=0) binds nothing.
  EXPECT_FALSE(threadsFitCores("", 2, 4, 0));
  EXPECT_EQ(mpirunCommand("mpirun", "", 2, 4, 0)[5], "OMP_WAIT_POLICY");
  EXPECT_TRUE(threadsFitCores("", 2, 4, 2));
  EXPECT_FALSE(threadsFitCores("/h", 2, 4, 2));
  // On the hosts of a host file: bound to cores of their hosts when the
  // threads fit the slots (boundThreads), else nothing bound; a binding
  // the environment chooses is left to Open MPI.
  EXPECT_EQ(
      mpirunCommand("mpirun", "/h", 2, 4, 2),
      (std::vector<std::string>{"mpirun", "--tag-output", "--hostfile", "/h",
                                "-x", "OMP_NUM_THREADS", "--map-by",
                                "slot:PE=2", "--bind-to", "core", "--app"}));
  EXPECT_EQ(mpirunCommand("mpirun", "/h", 8, 4, 0),
            (std::vector<std::string>{
                "mpirun", "--tag-output", "--hostfile", "/h", "--oversubscribe",
                "-x", "OMP_NUM_THREADS", "--bind-to", "none", "--app"}));
  ::setenv("OMPI_MCA_hwloc_base_binding_policy", "none", 1);
  EXPECT_EQ(mpirunCommand("mpirun", "/h", 2, 4, 2),
            (std::vector<std::string>{"mpirun", "--tag-output", "--hostfile",
                                      "/h", "-x", "OMP_NUM_THREADS", "--app"}));
  ::unsetenv("OMPI_MCA_hwloc_base_binding_policy");
}

TEST(Launcher, ThreadsPerHostFromItsSlots) {
  // Ranks 0-1 on nodeA (2 slots), ranks 2-4 on nodeB (7 slots): 1 thread
  // each on nodeA, 7 / 3 = 2 on nodeB.
  LaunchJob job;
  job.lines = {{1, {"-np", "1"}, "rank0", {}, 1},
               {2, {"-np", "2"}, "rank1", {}, 2},
               {3, {"-np", "2"}, "rank2", {}, 2}};
  job.hosts = {{"nodeA", 2}, {"nodeB", 7}};
  job.placement = placeRanks(job.hosts, 5);
  // The second line spans both hosts: the smaller share.
  EXPECT_EQ(hostThreads(job, 0), (std::vector<long>{1, 1, 2}));
  job.lineThreads = hostThreads(job, 0);
  EXPECT_EQ(mpirunAppfile(job),
            "--host nodeA:2 -x OMP_NUM_THREADS=1 -np 1 rank0\n"
            "--host nodeA:2,nodeB:7 -x OMP_NUM_THREADS=1 -np 2 rank1\n"
            "--host nodeB:7 -x OMP_NUM_THREADS=2 -np 2 rank2\n");
  // Counts that differ bind nothing.
  EXPECT_EQ(boundThreads(job), 0);
  // The user's OMP_NUM_THREADS everywhere, bound where it fits the slots:
  // 2 threads for nodeA's 2 ranks do not fit its 2 slots.
  job.lineThreads = hostThreads(job, 2);
  EXPECT_EQ(job.lineThreads, (std::vector<long>{2, 2, 2}));
  EXPECT_EQ(boundThreads(job), 0);
  job.hosts[0].slots = 4;
  EXPECT_EQ(boundThreads(job), 2);
  // Slots fill in order: nodeA's 4 take ranks 0-3, one thread each, and
  // the last line's rank 4 on nodeB gets the smaller share of its line.
  job.placement = placeRanks(job.hosts, 5);
  EXPECT_EQ(hostThreads(job, 0), (std::vector<long>{1, 1, 1}));
  // Hosts with fewer ranks than slots share them out: 2 ranks on nodeA's
  // 4 slots get 2 threads each, nodeB's one rank all 4.
  job.hosts = {{"nodeA", 4}, {"nodeB", 4}};
  job.lines = {{1, {}, "rank0", {}, 2}, {2, {}, "rank1", {}, 1}};
  job.placement = {"nodeA", "nodeA", "nodeB"};
  job.lineThreads = hostThreads(job, 0);
  EXPECT_EQ(job.lineThreads, (std::vector<long>{2, 4}));
  EXPECT_EQ(boundThreads(job), 0);
  // No host file: nothing per line.
  EXPECT_EQ(boundThreads(LaunchJob()), 0);
}

TEST(Launcher, SrunCommand) {
  LaunchJob job = twoStageJob();
  SrunCommand plain = srunCommand(job);
  EXPECT_EQ(plain.argv, (std::vector<std::string>{
                            "srun", "--ntasks=3", "--kill-on-bad-exit=1",
                            "--label", "--multi-prog", "/out/.dpc-srun.conf"}));
  EXPECT_EQ(plain.conf, "0 /out/rank0 --steps 3\n"
                        "1 /out/rank1 --stage 1 --steps 3\n"
                        "2 /out/rank1 --stage 1 --steps 3\n");
  EXPECT_EQ(plain.hostsPath, "");
  job.hosts = {{"a", 1}, {"b", 2}};
  job.placement = placeRanks(job.hosts, 3);
  SrunCommand placed = srunCommand(job);
  EXPECT_EQ(placed.argv[4], "--distribution=arbitrary");
  EXPECT_EQ(placed.hostsPath, "/out/.dpc-srun.hosts");
  EXPECT_EQ(placed.hosts, "a\nb\nb\n");
  // Staged (--stage DIR): the programs and the working directory in DIR.
  job.runDir = "/stage/out";
  job.workDir = "/stage";
  SrunCommand staged = srunCommand(job);
  EXPECT_EQ(staged.argv[4], "--chdir=/stage");
  EXPECT_EQ(staged.conf.substr(0, staged.conf.find('\n')),
            "0 /stage/out/rank0 --steps 3");
}

//===----------------------------------------------------------------------===//
// launch: what it prints and refuses
//===----------------------------------------------------------------------===//

/// Runs launch(), returning its exit code and what it wrote.
struct Launched {
  int code;
  std::string out, err;
};
Launched run(const LaunchOptions &options,
             const RankOptions &rankOptions = RankOptions()) {
  ::testing::internal::CaptureStdout();
  ::testing::internal::CaptureStderr();
  int code = launch(options, rankOptions);
  std::string out = ::testing::internal::GetCapturedStdout();
  return {code, out, ::testing::internal::GetCapturedStderr()};
}

TEST(Launcher, NpCheckPrintsTheLaunch) {
  LaunchOptions options;
  options.outDir = makeOut("npcheck") + "/";
  options.mpirun = "/bin/true";
  options.npCheck = true;
  std::string hosts = writeFile(options.outDir + "hosts", "h1\nh2\n");
  options.hostfile = hosts;
  RankOptions rankOptions;
  rankOptions.steps = 3;
  rankOptions.given = {"steps"};
  Launched l = run(options, rankOptions);
  ASSERT_EQ(l.code, 0) << l.err;
  std::string out = options.outDir.substr(0, options.outDir.size() - 1);
  EXPECT_NE(l.out.find(out + ": 2 ranks on "), std::string::npos) << l.out;
  EXPECT_NE(l.out.find("/bin/true --tag-output --hostfile " + hosts),
            std::string::npos)
      << l.out;
  EXPECT_NE(l.out.find("--app " + out +
                       "/appfile (with the per-rank options)\n"
                       "--host h1:1 -x OMP_NUM_THREADS=1 -np 1 " +
                       out +
                       "/rank0 --steps 3\n--host h2:1 -x OMP_NUM_THREADS=1 "
                       "-np 1 " +
                       out + "/rank1 --stage 1 --steps 3\n"),
            std::string::npos)
      << l.out;

  // Under srun the same job is a --multi-prog file in OUT.
  options.launcher = "srun";
  l = run(options, rankOptions);
  ASSERT_EQ(l.code, 0) << l.err;
  EXPECT_EQ(l.out.rfind("SLURM_HOSTFILE=" + out +
                            "/.dpc-srun.hosts srun "
                            "--ntasks=2",
                        0),
            0u)
      << l.out;
  std::ifstream conf(out + "/.dpc-srun.conf");
  std::string line;
  std::getline(conf, line);
  EXPECT_EQ(line, "0 " + out + "/rank0 --steps 3");
}

TEST(Launcher, Refusals) {
  std::string out = makeOut("refusals");
  LaunchOptions options;
  options.outDir = out;
  options.mpirun = "/bin/true";
  options.npCheck = true;

  LaunchOptions pbs = options;
  pbs.launcher = "pbs";
  Launched l = run(pbs);
  EXPECT_EQ(l.code, dpc::cli::kUsageError);
  EXPECT_EQ(l.err, "dpc run: option '--launcher' expects mpirun or srun, not "
                   "'pbs'\n");

  LaunchOptions small = options;
  small.hostfile = writeFile(out + "/small", "localhost slots=1\n");
  l = run(small);
  EXPECT_EQ(l.code, dpc::cli::kUsageError);
  EXPECT_EQ(l.err, "dpc run: " + small.hostfile +
                       ": 1 slots for the 2 ranks "
                       "of " +
                       out + "/appfile\n");

  RankOptions spaced;
  spaced.metrics = "a b";
  spaced.given = {"metrics"};
  l = run(options, spaced);
  EXPECT_EQ(l.code, 1);
  EXPECT_EQ(l.err, "dpc run: option value 'a b' is empty or contains spaces "
                   "or quotes, which an mpirun appfile cannot carry\n");

  LaunchOptions missing = options;
  missing.outDir = out + "/nowhere";
  l = run(missing);
  EXPECT_EQ(l.code, 1);
  EXPECT_EQ(l.err, "dpc run: " + out +
                       "/nowhere: no such directory (the "
                       "output of 'dpc compile ... -o " +
                       out + "/nowhere')\n");

  ::unlink((out + "/rank1").c_str());
  l = run(options);
  EXPECT_EQ(l.code, 1);
  EXPECT_EQ(l.err, "dpc run: " + out + "/appfile:2: " + out +
                       "/./rank1: no such file\n");
  writeFile(out + "/rank1", "not a program", true);
  l = run(options);
  EXPECT_EQ(l.err, "dpc run: " + out + "/appfile:2: " + out +
                       "/rank1 is not a program (no ELF header): a corrupt "
                       "rank executable\n");

  writeFile(out + "/rank1", "#!/bin/sh\n", true);
  writeFile(out + "/plan.json", "{\"devices\": 4}");
  l = run(options);
  EXPECT_EQ(l.err, "dpc run: " + out + "/appfile launches 2 ranks but " + out +
                       "/plan.json plans for 4 devices\n");
}

// A dpc build (OUT/plan.json) gets --summary and --heartbeat after the
// forwarded options.
TEST(Launcher, DpcBuildsReportToTheLauncher) {
  std::string out = makeOut("summary");
  writeFile(out + "/plan.json", "{\"devices\": 2}");
  LaunchOptions options;
  options.outDir = out;
  options.mpirun = "/bin/true";
  options.npCheck = true;
  RankOptions rankOptions;
  rankOptions.shuffle = false;
  rankOptions.given = {"shuffle"};
  Launched l = run(options, rankOptions);
  ASSERT_EQ(l.code, 0) << l.err;
  EXPECT_NE(l.out.find("/rank0 --no-shuffle --summary " + out +
                       "/.dpc-run-summary." + std::to_string(::getpid()) +
                       ".json --heartbeat\n"),
            std::string::npos)
      << l.out;
}

//===----------------------------------------------------------------------===//
// Following the job
//===----------------------------------------------------------------------===//

TEST(Launcher, OutputFollowerSplitsRanks) {
  OutputFollower follower;
  std::vector<std::pair<int, std::string>> beats;
  follower.onHeartbeat = [&](int rank, const std::string &activity) {
    beats.push_back({rank, activity});
  };
  ::testing::internal::CaptureStdout();
  ::testing::internal::CaptureStderr();
  std::string err = "[1,1]<stderr>:rank 1: error: bad data\n[1,0]<stderr>:"
                    "dpc-heartbeat: runs Forward mb 0 (step 1)\n"
                    "[1,0]<stderr>:a note\n";
  std::string part = "[1,0]<stdout>:step 1/";
  follower.feed(false, part.data(), part.size());
  follower.feed(false, "3\n", 2);
  follower.feed(true, err.data(), err.size());
  follower.feed(true, "mpirun: a report", 16);
  follower.finish();
  std::string out = ::testing::internal::GetCapturedStdout();
  std::string printed = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(out, "step 1/3\n");
  EXPECT_EQ(printed, "rank 1: error: bad data\na note\n");
  EXPECT_EQ(follower.launcherOutput(), "mpirun: a report\n");
  EXPECT_EQ(follower.firstRankWithError(), 1);
  EXPECT_EQ(follower.lastMessage(1), "rank 1: error: bad data");
  EXPECT_EQ(follower.lastMessage(0), "a note");
  EXPECT_EQ(follower.lastMessage(2), "");
  ASSERT_EQ(beats.size(), 1u);
  EXPECT_EQ(beats[0].first, 0);
  EXPECT_EQ(beats[0].second, "runs Forward mb 0 (step 1)");
}

/// findFailedRank's answer as "RANK HOW", or "none".
std::string failedRank(const std::string &launcherOutput) {
  std::optional<RankFailure> failure = findFailedRank(launcherOutput);
  return failure ? std::to_string(failure->rank) + " " + failure->how : "none";
}

TEST(Launcher, FindsTheFailedRank) {
  EXPECT_EQ(failedRank("MPI_ABORT was invoked on rank 1 in communicator "
                       "MPI_COMM_WORLD\nwith errorcode 2.\n"),
            "1 aborted with error code 2");
  EXPECT_EQ(failedRank("  Process name: [[4242,1],3]\n  Exit code:    7\n"),
            "3 exited with code 7");
  EXPECT_EQ(failedRank("mpirun noticed that process rank 0 with PID 99 on "
                       "node box exited on signal 9 (Killed)."),
            "0 was killed by signal 9 (Killed)");
  EXPECT_EQ(failedRank("all is well"), "none");
  // srun's reports: the first task it names.
  EXPECT_EQ(failedRank("srun: error: h1: task 3: Exited with exit code 2\n"
                       "srun: error: h0: tasks 0-1: Killed\n"),
            "3 exited with code 2");
  EXPECT_EQ(failedRank("srun: error: h0: tasks 0-1: Killed\n"),
            "0 was ended (srun: Killed)");
}

TEST(Launcher, OutputFollowerReadsSrunLabels) {
  OutputFollower follower;
  follower.srunLabels = true;
  std::vector<int> beats;
  follower.onHeartbeat = [&](int rank, const std::string &) {
    beats.push_back(rank);
  };
  ::testing::internal::CaptureStdout();
  ::testing::internal::CaptureStderr();
  // srun pads a label to the width of the largest rank; the stream is
  // srun's own.
  std::string out = " 0: step 1/3\n10: done\n";
  std::string err = "10: rank 10: error: bad data\n 2: dpc-heartbeat: idle\n"
                    "srun: error: h1: task 10: Exited with exit code 1\n"
                    "[1,0]<stderr>:not a label\n";
  follower.feed(false, out.data(), out.size());
  follower.feed(true, err.data(), err.size());
  follower.finish();
  EXPECT_EQ(::testing::internal::GetCapturedStdout(), "step 1/3\ndone\n");
  EXPECT_EQ(::testing::internal::GetCapturedStderr(),
            "rank 10: error: bad data\n");
  EXPECT_EQ(follower.firstRankWithError(), 10);
  EXPECT_EQ(beats, std::vector<int>{2});
  EXPECT_EQ(follower.launcherOutput(),
            "srun: error: h1: task 10: Exited with exit code 1\n"
            "[1,0]<stderr>:not a label\n");
}

TEST(Launcher, WatchdogEndsTheJobOfASilentRank) {
  Watchdog watchdog(2, 0.01, 0.03);
  EXPECT_FALSE(watchdog.check()); // no heartbeat yet: not dpc's ranks
  ::testing::internal::CaptureStdout();
  watchdog.heartbeat(0, "done");
  watchdog.heartbeat(1, "waits to receive from rank 0");
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_TRUE(watchdog.check());
  EXPECT_FALSE(watchdog.check()); // once
  std::string out = ::testing::internal::GetCapturedStdout();
  EXPECT_EQ(watchdog.timedOut(), 1);
  EXPECT_EQ(watchdog.silentRank(), 1);
  EXPECT_GE(watchdog.silentSeconds(), 0.03);
  EXPECT_EQ(out.rfind("watchdog: rank 1 has not answered for 0 s", 0), 0u)
      << out;
}

} // namespace
