//===- AdaptTest.cpp - dpc run --adapt's re-planning pieces ---------------===//

#include "dpc/runtime/Adapt.h"
#include "test/unittests/runtime/ErrorOf.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <unistd.h>

using namespace dpc::runtime;
using ::testing::HasSubstr;

namespace {

std::string writeTemp(const std::string &text) {
  char path[] = "/tmp/dpc-adapt-test-XXXXXX";
  int fd = ::mkstemp(path);
  EXPECT_GE(fd, 0);
  EXPECT_EQ(::write(fd, text.data(), text.size()), ssize_t(text.size()));
  ::close(fd);
  return path;
}

// Rank 1 of a 2-rank job slowed 4x: its device runs at a quarter of the
// other's; after a re-partition that put device 1 on rank 0, the next
// layout's slowdowns are of those speeds.
TEST(Adapt, SpeedsDivideByTheSlowdownsOfTheDevicesRanks) {
  std::vector<double> speeds = slowedSpeeds({1, 1}, {0, 1}, {1.0, 4.0});
  EXPECT_THAT(speeds, ::testing::ElementsAre(1.0, 0.25));
  // Device 1 now runs rank 0; it recovers (the other rank looks 4x slow
  // against it): both back at the same speed.
  speeds = slowedSpeeds(speeds, {1, 0}, {1.0, 4.0});
  EXPECT_THAT(speeds, ::testing::ElementsAre(1.0, 1.0));
  // The fastest is 1, whichever it is.
  EXPECT_THAT(slowedSpeeds({1, 1, 1}, {0, 1, 2}, {2.0, 1.0, 4.0}),
              ::testing::ElementsAre(0.5, 1.0, 0.25));
}

TEST(Adapt, ClusterFileNamesTheSlots) {
  nlohmann::json c = nlohmann::json::parse(adaptClusterJson({1.0, 0.25}, 5e9));
  EXPECT_EQ(c["format"], "dpc-cluster");
  ASSERT_EQ(c["devices"].size(), 2u);
  EXPECT_EQ(c["devices"][1]["name"], "slot1");
  EXPECT_EQ(c["devices"][1]["speed"], 0.25);
  // Groups of one device: the planner keeps device d on rank d.
  ASSERT_EQ(c["levels"].size(), 2u);
  EXPECT_EQ(c["levels"][0]["size"], 1);
  EXPECT_EQ(c["levels"][1]["size"], 2);
  EXPECT_EQ(c["levels"][1]["bandwidth"], 5e9);
}

TEST(Adapt, ReplanOptionsFoldDevicesAndBandwidthIntoTheCluster) {
  ReplanOptions replan;
  EXPECT_EQ(errorOf([&] {
              replan = replanOptions({"--stages", "2", "--bandwidth", "2e9",
                                      "--microbatches=4", "--devices=2"});
            }),
            "");
  EXPECT_THAT(replan.kept,
              ::testing::ElementsAre("--stages", "2", "--microbatches=4"));
  EXPECT_EQ(replan.bandwidth, 2e9);
  EXPECT_EQ(errorOf([&] { replan = replanOptions({"--stages", "2"}); }), "");
  EXPECT_EQ(replan.bandwidth, 1e9);
  EXPECT_THAT(errorOf([] { replanOptions({"--cluster", "c.json"}); }),
              HasSubstr("not of --cluster"));
  EXPECT_THAT(errorOf([] { replanOptions({"--replicas=1,2"}); }),
              HasSubstr("not of --replicas"));
  EXPECT_THAT(errorOf([] { replanOptions({"--devices", "4x2"}); }),
              HasSubstr("'4x2' is not one flat level"));
}

TEST(Adapt, TestOptionsFollowTheirDevice) {
  EXPECT_EQ(onDevicesRank("1:20:10", {0, 1}), "1:20:10");
  EXPECT_EQ(onDevicesRank("1:20:10", {1, 0}), "0:20:10");
  EXPECT_EQ(onDevicesRank("2:20:10", {1, 0}), "");
}

TEST(Adapt, ReadsTheRequestAndTheRecord) {
  std::string path = writeTemp(
      R"({"decided_after": 32, "rank": 1, "stage": 1, "slowdown": 9.5,
          "since_step": 21, "slowdowns": [1.0, 9.5]})");
  AdaptRequest request;
  EXPECT_EQ(errorOf([&] { request = readAdaptRequest(path); }), "");
  EXPECT_EQ(request.decidedAfter, 32);
  EXPECT_EQ(request.sinceStep, 21);
  EXPECT_THAT(request.slowdowns, ::testing::ElementsAre(1.0, 9.5));
  std::remove(path.c_str());

  path = writeTemp(R"({"decided_after": 32, "rank": 1})");
  EXPECT_THAT(errorOf([&] { readAdaptRequest(path); }),
              HasSubstr("not a re-partition request"));
  std::remove(path.c_str());

  // The stop comes later, in a file of its own.
  path = writeTemp(R"({"stopped_after": 40, "stopped_at_s": 1.5e9})");
  AdaptStop stop;
  EXPECT_EQ(errorOf([&] { stop = readAdaptStop(path); }), "");
  EXPECT_EQ(stop.stoppedAfter, 40);
  EXPECT_EQ(stop.stoppedAtS, 1.5e9);
  EXPECT_THAT(errorOf([&] { readAdaptRequest(path); }),
              HasSubstr("not a re-partition request"));
  std::remove(path.c_str());
  path = writeTemp(R"({"stopped_after": 0, "stopped_at_s": 1.5e9})");
  EXPECT_THAT(errorOf([&] { readAdaptStop(path); }),
              HasSubstr("not a re-partition stop"));
  std::remove(path.c_str());

  path = writeTemp(R"({"format": "dpc-compile", "model": "/m.onnx",
      "directory": "/w", "options": ["--stages", "2"]})");
  CompileRecord record;
  EXPECT_EQ(errorOf([&] { record = readCompileRecord(path); }), "");
  EXPECT_EQ(record.model, "/m.onnx");
  EXPECT_THAT(record.options, ::testing::ElementsAre("--stages", "2"));
  std::remove(path.c_str());
  EXPECT_THAT(errorOf([] { readCompileRecord("/nonexistent/compile.json"); }),
              HasSubstr("/nonexistent/compile.json: "));
}

TEST(Adapt, TheLaunchersFilesLieBesideTheRequest) {
  EXPECT_EQ(adaptReadyPath("/w/out.adapt/request.json"), "/w/out.adapt/ready");
  EXPECT_EQ(adaptStopPath("/w/out.adapt/request.json"),
            "/w/out.adapt/stopped.json");
  EXPECT_EQ(adaptReadyPath("request.json"), "ready");
}

TEST(Adapt, RankDevicesOfAPlanOnTheSlots) {
  std::string path =
      writeTemp(R"({"cluster": {"rank_devices": ["slot1", "slot0"]}})");
  std::vector<int> devices;
  EXPECT_EQ(errorOf([&] { devices = readRankDevices(path); }), "");
  EXPECT_THAT(devices, ::testing::ElementsAre(1, 0));
  std::remove(path.c_str());
  path = writeTemp(R"({"cluster": {"rank_devices": ["fast"]}})");
  EXPECT_THAT(errorOf([&] { readRankDevices(path); }), HasSubstr("slotN"));
  std::remove(path.c_str());
  path = writeTemp(R"({"stages": []})");
  EXPECT_THAT(errorOf([&] { readRankDevices(path); }),
              HasSubstr("no cluster.rank_devices"));
  std::remove(path.c_str());
}

} // namespace
