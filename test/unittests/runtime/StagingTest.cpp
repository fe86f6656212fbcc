//===- StagingTest.cpp - dpc run --stage's plan of what goes where --------===//

#include "LauncherInternal.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sys/stat.h>
#include <unistd.h>

using namespace dpc;
using namespace dpc::runtime;
using namespace dpc::runtime::launcher_detail;

namespace {

LaunchJob twoHosts() {
  LaunchJob job;
  job.outDir = "/out";
  job.placement = {"a", "a", "b", "b"};
  return job;
}

LaunchOptions staged(const std::string &dir) {
  LaunchOptions options;
  options.stageDir = dir;
  options.agent = "my-agent";
  return options;
}

} // namespace

TEST(Staging, RewritesEveryPathOfAnNpySpec) {
  RankOptions rank;
  rank.data = "npy:/d/x.npy,/d/y.npy,lengths=/e/len.npy,scale=255";
  Staging s = planStaging(staged("/s"), twoHosts(), rank);
  EXPECT_EQ(rank.data, "npy:/s/data/train-0/x.npy,/s/data/train-1/y.npy,"
                       "lengths=/s/data/train-2/len.npy,scale=255");
  ASSERT_EQ(s.inputs.size(), 3u);
  EXPECT_EQ(s.inputs[0].from, "/d");
  EXPECT_EQ(s.inputs[0].names, std::vector<std::string>{"x.npy"});
  EXPECT_EQ(s.inputs[2].to, "/s/data/train-2");
  EXPECT_EQ(s.hosts, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(s.agent, "my-agent");
}

TEST(Staging, KeepsOptionsAndSyntheticData) {
  RankOptions rank;
  rank.data = "synthetic:64";
  rank.evalData = "fashion-mnist:/usr/share/datasets/fashion-mnist";
  Staging s = planStaging(staged("/s"), twoHosts(), rank);
  EXPECT_EQ(rank.data, "synthetic:64");
  EXPECT_EQ(rank.evalData, "fashion-mnist:/s/data/eval-0/fashion-mnist");
  ASSERT_EQ(s.inputs.size(), 1u);
  EXPECT_EQ(s.inputs[0].from, "/usr/share/datasets");
}

TEST(Staging, GlobsCopyTheirMatchesAndKeepThePattern) {
  char dir[] = "/tmp/dpc-staging-test-XXXXXX";
  ASSERT_NE(::mkdtemp(dir), nullptr);
  std::string root = dir;
  for (const char *name : {"a-0.npy", "a-1.npy", "b.npy"})
    std::ofstream(root + "/" + name) << "x";
  RankOptions rank;
  rank.data = "npy:" + root + "/a-*.npy," + root + "/b.npy";
  Staging s = planStaging(staged("/s"), twoHosts(), rank);
  EXPECT_EQ(rank.data, "npy:/s/data/train-0/a-*.npy,/s/data/train-1/b.npy");
  ASSERT_EQ(s.inputs.size(), 2u);
  EXPECT_EQ(s.inputs[0].names,
            (std::vector<std::string>{"a-0.npy", "a-1.npy"}));
  for (const char *name : {"a-0.npy", "a-1.npy", "b.npy"})
    ::unlink((root + "/" + name).c_str());
  ::rmdir(dir);

  rank.data = "npy:/nowhere/z-*.npy";
  EXPECT_THROW(planStaging(staged("/s"), twoHosts(), rank), InputError);
}

TEST(Staging, OutputsGoUnderResultsAndComeBack) {
  RankOptions rank;
  rank.data = "synthetic";
  rank.metrics = "/runs/m.jsonl";
  rank.trace = "/runs/t.json";
  rank.tensorboard = "/runs/tb";
  rank.checkpointDir = "/nonexistent-checkpoints";
  Staging s = planStaging(staged("/s"), twoHosts(), rank);
  EXPECT_EQ(rank.metrics, "/s/results/metrics/m.jsonl");
  EXPECT_EQ(rank.trace, "/s/results/trace/t.json");
  EXPECT_EQ(rank.tensorboard, "/s/results/tensorboard");
  EXPECT_EQ(rank.checkpointDir, "/s/checkpoint");
  // A checkpoint directory that does not exist yet is only brought back.
  EXPECT_TRUE(s.inputs.empty());
  ASSERT_EQ(s.outputs.size(), 4u);
  EXPECT_EQ(s.outputs[0].local, "/nonexistent-checkpoints");
  EXPECT_TRUE(s.outputs[0].isDirectory);
  EXPECT_EQ(s.outputs[1].staged, "/s/results/metrics");
  EXPECT_EQ(s.outputs[1].local, "/runs/m.jsonl");
  EXPECT_FALSE(s.outputs[1].isDirectory);
}

TEST(Staging, RefusesWhatItCannotStage) {
  RankOptions rank;
  EXPECT_THROW(planStaging(staged("relative"), twoHosts(), rank), InputError);
  EXPECT_THROW(planStaging(staged("/with space"), twoHosts(), rank),
               InputError);
  EXPECT_THROW(planStaging(staged("/"), twoHosts(), rank), InputError);
  LaunchJob local = twoHosts();
  local.placement.clear();
  EXPECT_THROW(planStaging(staged("/s"), local, rank), InputError);
}

TEST(Staging, QuotesTheRemoteCommand) {
  Staging s;
  s.agent = "/x/cluster agent";
  EXPECT_EQ(s.remote("h1", "echo 'hi' && ls"),
            "/x/cluster agent 'h1' 'echo '\\''hi'\\'' && ls'");
}

TEST(Staging, EveryLineRunsFromTheStagedDirectory) {
  LaunchJob job = twoHosts();
  AppLine line;
  line.program = "./rank0";
  line.ranks = 4;
  line.mpirunOptions = {"-np", "4"};
  job.lines = {line};
  job.hosts = {{"a", 2}, {"b", 2}};
  job.runDir = "/s/out";
  job.workDir = "/s";
  EXPECT_EQ(mpirunAppfile(job),
            "--host a:2,b:2 --wdir /s -np 4 /s/out/rank0\n");
}
