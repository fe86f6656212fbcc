//===- ScheduleChecksTest.cpp - The executor's checks of a schedule -------===//
//
// The checks the executor makes before and after running a schedule, called
// directly: a schedule against the manifest and the job, a planned step
// against the built one, what a step leaves over, and the op profile's
// bookkeeping. Each error message is the one a user or compiler bug gets.
//
//===----------------------------------------------------------------------===//

#include "lib/runtime/ScheduleChecks.h"
#include "lib/runtime/AbiError.h"
#include "lib/runtime/OpProfile.h"

#include "dpc/schedule/Builder.h"

#include "test/unittests/runtime/ErrorOf.h"
#include "test/unittests/runtime/SoloCommunicator.h"
#include "test/unittests/schedule/ScheduleErrorOf.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <vector>

#include <nlohmann/json.hpp>

using namespace dpc::runtime;
using ::testing::HasSubstr;
namespace sched = dpc::schedule;

namespace {

void segment(dpc_context *) {}

SegmentFunctions allSegments() {
  SegmentFunctions f;
  f.forward = f.backward = f.optimizer = segment;
  return f;
}

/// Stage 0 of two: activations out to stage 1, gradients back.
RankManifest firstStage() {
  RankManifest m;
  m.stages = 2;
  m.schedule = "schedule.json";
  m.microbatchSize = 4;
  m.segments = {"forward", "backward", "optimizer"};
  ManifestTransfer act, grad;
  act.tag = 3;
  act.peerStage = 1;
  act.bytes = 48;
  grad = act;
  grad.tag = 4;
  grad.what = TransferKind::Gradient;
  m.sends = {act};
  m.recvs = {grad};
  return m;
}

sched::Schedule
twoStages(sched::ScheduleKind kind = sched::ScheduleKind::OneFOneB) {
  sched::BuildOptions options;
  options.kind = kind;
  options.stages = 2;
  options.microbatches = 2;
  sched::Schedule s;
  EXPECT_EQ(sched::buildError(options, s), "");
  return s;
}

TEST(ScheduleChecks, AScheduleThatFitsGivesItsBoundariesAndPeaks) {
  RankManifest m = firstStage();
  sched::Schedule s = twoStages();
  Shapes top = bucketShapes(m)[0];
  ScheduleCheck check = checkSchedule(m, s, 0, 2, allSegments(), top);
  EXPECT_EQ(check.sends,
            (std::vector<Boundary>{{0, 1, TransferKind::Activation}}));
  EXPECT_EQ(check.recvs,
            (std::vector<Boundary>{{0, 1, TransferKind::Gradient}}));
  sched::VerifyResult verified = sched::verifySchedule(s);
  EXPECT_EQ(check.promised.peakStashes, verified.ranks[0].peakStashes);
  EXPECT_TRUE(check.rendezvousProven);

  // A stage whose gradient the IR does not send back still gets the
  // schedule's (empty) message.
  m.recvs.clear();
  check = checkSchedule(m, s, 0, 2, allSegments(), bucketShapes(m)[0]);
  EXPECT_EQ(check.recvs.size(), 1u);
}

TEST(ScheduleChecks, ScheduleAgainstManifestAndJob) {
  RankManifest m = firstStage();
  sched::Schedule s = twoStages();
  auto errorWith = [&](const RankManifest &manifest, int rank, int ranks,
                       SegmentFunctions segments = allSegments()) {
    std::vector<Shapes> shapes = bucketShapes(manifest);
    return errorOf(
        [&] { checkSchedule(manifest, s, rank, ranks, segments, shapes[0]); });
  };
  EXPECT_EQ(errorWith(m, 0, 3), "the job has 3 ranks but the schedule has 2 "
                                "(launch one rank per line of the appfile)");
  RankManifest second = m;
  second.stage = 1;
  EXPECT_EQ(errorWith(second, 0, 2),
            "this executable runs stage 1 but was started as rank 0, which "
            "runs stage 0 (launch the ranks in appfile order)");
  RankManifest three = m;
  three.stages = 3;
  EXPECT_EQ(errorWith(three, 0, 2),
            "schedule.json: 2 stages but the manifest says 3");
  RankManifest chunked = m;
  chunked.chunks = 2;
  EXPECT_EQ(errorWith(chunked, 0, 2), "schedule.json: 1 chunks per rank but "
                                      "the rank's object holds 2");
  SegmentFunctions noBackward = allSegments();
  noBackward.backward = nullptr;
  EXPECT_THAT(errorWith(m, 0, 2, noBackward),
              HasSubstr("schedule.json: rank 0 runs Backward mb 0 but the "
                        "rank's object has no backward segment"));
  RankManifest unnamed = m;
  unnamed.segments = {"forward", "optimizer"};
  EXPECT_THAT(errorWith(unnamed, 0, 2), HasSubstr("has no backward segment"));
  // A gradient the schedule never sends from the first stage.
  RankManifest stray = m;
  ManifestTransfer grad = stray.recvs[0];
  grad.tag = 9;
  stray.sends.push_back(grad);
  EXPECT_EQ(errorWith(stray, 0, 2),
            "manifest: sends tag 9 (grad, peer_stage 1) is never moved by "
            "schedule.json, which only transfers between neighbouring "
            "stages");
}

TEST(ScheduleChecks, PlannedStepsMatchTheBuiltSchedule) {
  RankManifest m = firstStage();
  std::vector<Shapes> shapes = bucketShapes(m);
  sched::Schedule fixed = twoStages();
  StepPlan plan;
  plan.schedule = fixed;
  plan.microbatches = {{0, {0, 1, 2, 3}}, {0, {4}}};
  auto errorWith = [&](const StepPlan &p) {
    return errorOf(
        [&] { checkPlannedStep(3, p, fixed, "schedule.json", shapes); });
  };
  EXPECT_EQ(errorWith(plan), "");
  StepPlan other = plan;
  other.schedule = twoStages(sched::ScheduleKind::GPipe);
  EXPECT_EQ(errorWith(other), "step 4: planned schedule: its kind or rank "
                              "layout differs from schedule.json's");
  other = plan;
  other.microbatches.pop_back();
  EXPECT_EQ(errorWith(other), "step 4: planned schedule: it runs 2 "
                              "microbatches but the plan has 1");
  other = plan;
  other.microbatches[1].bucket = 1;
  EXPECT_EQ(errorWith(other),
            "step 4: planned schedule: microbatch 1 names bucket 1 of 1");
  other = plan;
  other.microbatches[0].samples = {0, 1, 2, 3, 4};
  EXPECT_EQ(errorWith(other), "step 4: planned schedule: microbatch 0 has 5 "
                              "samples; its bucket holds 1 to 4");
  other.microbatches[0].samples.clear();
  EXPECT_EQ(errorWith(other), "step 4: planned schedule: microbatch 0 has 0 "
                              "samples; its bucket holds 1 to 4");
}

TEST(ScheduleChecks, ErrorsNameTheInstruction) {
  sched::Instruction send = sched::Instruction::transfer(
      sched::Op::SendStart, sched::Payload::Activation, 1, 0, 1, 2, 0);
  EXPECT_EQ(instructionWhere(2, 12, send, 1),
            "step 3: instruction 12 (" + sched::describe(send) + "): ");
  EXPECT_THAT(instructionWhere(2, 12, send, 1),
              HasSubstr("SendStart act mb 1"));
}

TEST(ScheduleChecks, NothingOutlivesAStep) {
  RankManifest m = firstStage();
  ManifestParam w;
  w.name = "w";
  w.shape = {2};
  m.params = {w};
  std::unique_ptr<Device> device = createHostDevice();
  BufferPool pool(*device);
  SoloCommunicator comm;
  Transfers transfers(*device, pool, pool, comm);
  StashStore stashes(*device, pool);
  ParamStore params(m, *device, pool);
  auto left = [&] {
    return errorOf([&] { checkStepEnd("step 2", transfers, stashes, params); });
  };
  EXPECT_EQ(left(), "");

  ManifestStash x;
  x.key = 6;
  float values[4] = {};
  stashes.stash(x, 1, 16, values);
  EXPECT_EQ(left(), "step 2: at the end: stash key 6 of mb 1 is still live "
                    "(its backward never ran)");
  // A message is named before a stash slot.
  std::map<Boundary, PackLayout> layouts = makeLayouts(m.sends);
  Boundary act{0, 1, TransferKind::Activation};
  // As many bytes as the whole message holds: pack reads its entry's size.
  std::vector<uint8_t> payload(size_t(layouts.at(act).wireTotal));
  transfers.pack(layouts.at(act), act, 0, 3, payload.data());
  EXPECT_EQ(left(), "step 2: at the end: dpc_send stored act for mb 0 to "
                    "stage 1 but the schedule never sent it");

  params.stashVersion(0, "");
  Transfers idle(*device, pool, pool, comm);
  StashStore empty(*device, pool);
  EXPECT_EQ(errorOf([&] { checkStepEnd("evaluation", idle, empty, params); }),
            "evaluation: at the end: weight version 0 is still stashed (no "
            "FreeWeights)");
}

//===----------------------------------------------------------------------===//
// OpProfile
//===----------------------------------------------------------------------===//

TEST(OpProfile, TimesEveryCallAndTakesTheMedian) {
  std::vector<ManifestProfileOp> ops = {{0, "conv1", "forward"},
                                        {1, "conv1", "backward"}};
  OpProfile profile(ops);
  for (double ms : {1.0, 9.0, 2.0}) {
    profile.begin(0, 100);
    profile.end(0, 100 + ms);
  }
  nlohmann::json j = nlohmann::json::parse(profile.json(3));
  EXPECT_EQ(j["format"], "dpc-op-times");
  EXPECT_EQ(j["rank"], 3);
  ASSERT_EQ(j["ops"].size(), 2u);
  EXPECT_EQ(j["ops"][0]["node"], "conv1");
  EXPECT_EQ(j["ops"][0]["calls"], 3);
  EXPECT_DOUBLE_EQ(j["ops"][0]["total_ms"].get<double>(), 12.0);
  EXPECT_DOUBLE_EQ(j["ops"][0]["median_ms"].get<double>(), 2.0);
  EXPECT_EQ(j["ops"][1]["phase"], "backward");
  EXPECT_EQ(j["ops"][1]["calls"], 0);

  EXPECT_EQ(errorOf([&] { profile.end(1, 0); }), "op 1 was not begun");
  EXPECT_EQ(errorOf([&] { profile.begin(2, 0); }),
            "op 2 is not in the manifest's profile");
  EXPECT_THROW(profile.begin(-1, 0), AbiError);
  // Cleared (after the first training step), the ops start over.
  profile.clear();
  j = nlohmann::json::parse(profile.json(3));
  EXPECT_EQ(j["ops"][0]["calls"], 0);
  EXPECT_EQ(j["ops"][0]["median_ms"], 0);
}

// A fused region's call is timed once per node of its ops; each entry
// reports its share of the call.
TEST(OpProfile, FusedRegionsShareTheirCall) {
  std::vector<ManifestProfileOp> ops = {{0, "bias", "forward", 0.25},
                                        {1, "act", "forward", 0.75}};
  OpProfile profile(ops);
  for (double ms : {4.0, 8.0}) {
    profile.begin(0, 10);
    profile.begin(1, 10);
    profile.end(0, 10 + ms);
    profile.end(1, 10 + ms);
  }
  nlohmann::json j = nlohmann::json::parse(profile.json(0));
  EXPECT_DOUBLE_EQ(j["ops"][0]["total_ms"].get<double>(), 3.0);
  EXPECT_DOUBLE_EQ(j["ops"][0]["median_ms"].get<double>(), 2.0);
  EXPECT_DOUBLE_EQ(j["ops"][0]["share"].get<double>(), 0.25);
  EXPECT_DOUBLE_EQ(j["ops"][1]["total_ms"].get<double>(), 9.0);
  EXPECT_DOUBLE_EQ(j["ops"][1]["median_ms"].get<double>(), 6.0);
  EXPECT_EQ(j["ops"][1]["calls"], 2);
}

} // namespace
