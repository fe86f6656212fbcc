//===- StepPlannerTest.cpp - Planning each step of a variable-length build ===//
//
// A manifest with shape buckets, and the executor running steps planned
// for it: each microbatch in its bucket's shape, padded with the ignored
// label, its stash of its bucket's size; and the step planner's three
// groupings against what they promise.
//
//===----------------------------------------------------------------------===//

#include "dpc/runtime/StepPlanner.h"
#include "dpc/runtime/Error.h"
#include "dpc/runtime/Executor.h"
#include "dpc/runtime/Manifest.h"
#include "dpc/schedule/Builder.h"
#include "dpc/schedule/Verifier.h"
#include "test/unittests/runtime/ErrorOf.h"
#include "test/unittests/runtime/SoloCommunicator.h"
#include "test/unittests/schedule/ScheduleErrorOf.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <functional>
#include <numeric>
#include <set>

using namespace dpc::runtime;
using ::testing::HasSubstr;
namespace sched = dpc::schedule;

namespace {

constexpr int64_t kIgnore = -100;

/// A bucket of `batch` sequences of `length` tokens for a one-stage token
/// model with 3 classes, stashing its input; its stage cost grows with the
/// tokens it computes, after `callMs` a microbatch.
nlohmann::json bucketJson(int64_t batch, int64_t length, int stages = 1,
                          double callMs = 0) {
  nlohmann::json costs = nlohmann::json::array();
  for (int s = 0; s < stages; ++s)
    costs.push_back({{"forward", callMs + 0.01 * double(batch * length)},
                     {"backward_input", 0.01 * double(batch * length)},
                     {"backward_weight", 0.01 * double(batch * length)},
                     {"activation_bytes", 8 * batch * length},
                     {"output_bytes", 0}});
  return {{"batch", batch},
          {"length", length},
          {"inputs",
           {{{"name", "input"}, {"shape", {batch, length}}, {"dtype", "i64"}}}},
          {"labels", {{"shape", {batch, length}}}},
          {"output", {{"shape", {batch, length, 3}}}},
          {"sends", nlohmann::json::array()},
          {"recvs", nlohmann::json::array()},
          {"stashes",
           {{{"key", 0}, {"name", "ids"}, {"bytes", 8 * batch * length}}}},
          {"stage_costs", costs}};
}

/// Buckets (4 x 2), (1 x 4), (2 x 4); the top level is (2 x 4).
nlohmann::json bucketedJson() {
  nlohmann::json m = {{"format", "dpc-rank"},
                      {"version", 1},
                      {"rank", 0},
                      {"stage", 0},
                      {"stages", 1},
                      {"schedule", "schedule.json"},
                      {"weights", nullptr},
                      {"microbatch_size", 2},
                      {"params", nlohmann::json::array()},
                      {"segments", {"forward", "backward", "optimizer"}}};
  nlohmann::json top = bucketJson(2, 4);
  for (const char *key :
       {"inputs", "labels", "output", "sends", "recvs", "stashes"})
    m[key] = top[key];
  m["labels"]["ignore_index"] = kIgnore;
  m["buckets"] = {bucketJson(4, 2), bucketJson(1, 4), bucketJson(2, 4)};
  return m;
}

std::string parseError(const nlohmann::json &m) {
  return errorOf([&] { parseManifest(m.dump(), "rank0"); });
}

TEST(ManifestBuckets, ParsesEveryBucket) {
  RankManifest m = parseManifest(bucketedJson().dump(), "rank0");
  ASSERT_EQ(m.buckets.size(), 3u);
  EXPECT_EQ(m.topBucket, 2);
  EXPECT_EQ(m.buckets[0].batch, 4);
  EXPECT_EQ(m.buckets[0].length, 2);
  EXPECT_EQ(m.buckets[0].inputs[0].shape, (std::vector<int64_t>{4, 2}));
  EXPECT_TRUE(m.buckets[0].inputs[0].integer);
  EXPECT_EQ(*m.buckets[1].outputShape, (std::vector<int64_t>{1, 4, 3}));
  EXPECT_EQ(m.buckets[1].stashes[0].bytes, 32);
  ASSERT_EQ(m.buckets[2].stageCosts.size(), 1u);
  EXPECT_DOUBLE_EQ(m.buckets[2].stageCosts[0].forward, 0.08);
  EXPECT_EQ(m.buckets[2].stageCosts[0].activationBytes, 64);
  // A fixed-shape manifest has none.
  nlohmann::json fixed = bucketedJson();
  fixed.erase("buckets");
  EXPECT_TRUE(parseManifest(fixed.dump(), "rank0").buckets.empty());
}

TEST(ManifestBuckets, ErrorsNameTheBucket) {
  nlohmann::json m = bucketedJson();
  std::swap(m["buckets"][0], m["buckets"][1]);
  EXPECT_THAT(parseError(m), HasSubstr("buckets[1]: buckets must be sorted "
                                       "by (length, batch)"));
  m = bucketedJson();
  m["buckets"][1]["inputs"][0]["shape"] = {1, 3};
  EXPECT_THAT(parseError(m), HasSubstr("buckets[1].inputs[0].shape: expected "
                                       "[1, 4, ...], got [1, 3]"));
  m = bucketedJson();
  m["buckets"][0]["stashes"][0]["key"] = 7;
  EXPECT_THAT(parseError(m), HasSubstr("buckets[0].stashes: the bucket's "
                                       "stash keys are not the top level's"));
  m = bucketedJson();
  m["buckets"][0].erase("stage_costs");
  EXPECT_THAT(parseError(m), HasSubstr("buckets[0].stage_costs: missing"));
  m = bucketedJson();
  m["buckets"][0]["stage_costs"][0]["forward"] = -1;
  EXPECT_THAT(parseError(m), HasSubstr("buckets[0].stage_costs[0].forward: "
                                       "expected a finite number >= 0"));
  m = bucketedJson();
  m["buckets"].erase(2);
  EXPECT_THAT(parseError(m), HasSubstr("no bucket holds microbatch_size (2) "
                                       "sequences of the longest length (4)"));
  m = bucketedJson();
  m["buckets"][0]["labels"] = nullptr;
  EXPECT_THAT(parseError(m), HasSubstr("buckets[0].labels: missing, but "
                                       "present at the top level"));
}

//===----------------------------------------------------------------------===//
// The executor running planned steps
//===----------------------------------------------------------------------===//

std::function<void(dpc_context *)> onForward, onBackward;
void forwardSegment(dpc_context *c) { onForward(c); }
void backwardSegment(dpc_context *c) { onBackward(c); }
void optimizerSegment(dpc_context *) {}

sched::Schedule oneFOneB(int stages, int microbatches) {
  sched::BuildOptions options;
  options.stages = stages;
  options.microbatches = microbatches;
  sched::Schedule s;
  EXPECT_EQ(sched::buildError(options, s), "");
  return s;
}

/// Four sequences of lengths 1, 4, 2 and 3: token t of sample i is
/// 10 * i + t + 1, its label 10 * i + t + 2 (past the length: 0 and the
/// ignored label).
Dataset fourSequences() {
  std::vector<int64_t> lengths = {1, 4, 2, 3}, inputs(16, 0),
                       labels(16, kIgnore);
  for (int64_t i = 0; i < 4; ++i)
    for (int64_t t = 0; t < lengths[size_t(i)]; ++t) {
      inputs[size_t(4 * i + t)] = 10 * i + t + 1;
      labels[size_t(4 * i + t)] = 10 * i + t + 2;
    }
  return Dataset::fromTokenSequences(4, inputs, labels, lengths, 64);
}

TEST(PlannedSteps, EachMicrobatchRunsInItsBucket) {
  RankManifest manifest = parseManifest(bucketedJson().dump(), "rank0");
  SegmentFunctions f;
  f.forward = forwardSegment;
  f.backward = backwardSegment;
  f.optimizer = optimizerSegment;
  SoloCommunicator comm;
  Executor exec(manifest, oneFOneB(1, 2), comm, f);
  Dataset data = fourSequences();
  exec.setTrainData(&data, /*shuffle=*/false, 0);

  struct Seen {
    int64_t bucket;
    std::vector<int64_t> ids, labels;
    float scale;
  };
  std::vector<Seen> seen;
  std::vector<std::vector<int64_t>> restored;
  onForward = [&](dpc_context *ctx) {
    Seen s;
    s.bucket = dpc_bucket(ctx);
    const ManifestBucket &b = manifest.buckets[size_t(s.bucket)];
    const auto *ids = static_cast<const int64_t *>(dpc_input(ctx, 0));
    s.ids.assign(ids, ids + b.batch * b.length);
    s.labels.assign(dpc_labels(ctx), dpc_labels(ctx) + b.batch * b.length);
    s.scale = dpc_loss_scale(ctx);
    dpc_stash(ctx, 0, ids);
    float loss = 0.5f;
    dpc_report_loss(ctx, &loss);
    seen.push_back(s);
  };
  onBackward = [&](dpc_context *ctx) {
    const ManifestBucket &b = manifest.buckets[size_t(dpc_bucket(ctx))];
    const auto *ids = static_cast<const int64_t *>(dpc_restore(ctx, 0));
    restored.emplace_back(ids, ids + b.batch * b.length);
  };

  StepPlan plan;
  plan.schedule = oneFOneB(1, 2);
  plan.microbatches = {{0, {0, 2}}, {2, {1, 3}}};
  EXPECT_DOUBLE_EQ(exec.runStep(0, plan), 1.0);
  ASSERT_EQ(seen.size(), 2u);
  // Bucket 0: 4 rows of 2 tokens, two of them padding.
  EXPECT_EQ(seen[0].bucket, 0);
  EXPECT_EQ(seen[0].ids, (std::vector<int64_t>{1, 0, 21, 22, 0, 0, 0, 0}));
  EXPECT_EQ(seen[0].labels, (std::vector<int64_t>{2, kIgnore, 22, 23, kIgnore,
                                                  kIgnore, kIgnore, kIgnore}));
  EXPECT_EQ(seen[1].bucket, 2);
  EXPECT_EQ(seen[1].ids, (std::vector<int64_t>{11, 12, 13, 14, 31, 32, 33, 0}));
  // The step keeps 1 + 2 + 4 + 3 labels: every microbatch's loss is scaled
  // by their count, as a mean over the minibatch's tokens.
  EXPECT_FLOAT_EQ(seen[0].scale, 0.1f);
  EXPECT_FLOAT_EQ(seen[1].scale, 0.1f);
  // Each stash is its bucket's size and comes back as it went.
  ASSERT_EQ(restored.size(), 2u);
  EXPECT_EQ(restored[0], seen[0].ids);
  EXPECT_EQ(restored[1], seen[1].ids);
  EXPECT_EQ(exec.memoryStats().peakStashBytes, 64);

  // A step without a plan runs the sampler's microbatches in the top
  // bucket.
  seen.clear();
  exec.runStep(0);
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen[0].bucket, 2);
  EXPECT_EQ(seen[0].ids, (std::vector<int64_t>{1, 0, 0, 0, 11, 12, 13, 14}));

  // Plans that do not fit are errors naming the step.
  auto error = [&](StepPlan p) {
    try {
      exec.runStep(4, p);
    } catch (const Error &e) {
      return std::string(e.what());
    }
    return std::string();
  };
  StepPlan tooMany = plan;
  tooMany.microbatches[1] = {1, {1, 3}};
  EXPECT_THAT(error(tooMany), HasSubstr("step 5: planned schedule: "
                                        "microbatch 1 has 2 samples; its "
                                        "bucket holds 1 to 1"));
  StepPlan noBucket = plan;
  noBucket.microbatches[0].bucket = 3;
  EXPECT_THAT(error(noBucket), HasSubstr("microbatch 0 names bucket 3 of 3"));
  StepPlan short1 = plan;
  short1.microbatches.pop_back();
  EXPECT_THAT(error(short1), HasSubstr("it runs 2 microbatches but the plan "
                                       "has 1"));
}

//===----------------------------------------------------------------------===//
// The step planner
//===----------------------------------------------------------------------===//

/// A two-stage build (stage 0's manifest) of microbatches of 4 sequences of
/// 128 tokens, with buckets of 64 sequences of 8 tokens, 32 of 16, ..., 4
/// of 128, and every power of two below each; each microbatch costs
/// `callMs` besides its tokens.
RankManifest twoStageManifest(double callMs = 0) {
  nlohmann::json m = bucketedJson();
  m["stages"] = 2;
  m["labels"] = nullptr;
  m["output"] = nullptr;
  m["microbatch_size"] = 4;
  nlohmann::json buckets = nlohmann::json::array();
  for (int64_t length = 8; length <= 128; length *= 2)
    for (int64_t batch = 1; batch * length <= 512; batch *= 2) {
      nlohmann::json b = bucketJson(batch, length, 2, callMs);
      b["labels"] = nullptr;
      b["output"] = nullptr;
      buckets.push_back(b);
    }
  m["buckets"] = buckets;
  m["inputs"] = buckets.back()["inputs"];
  m["stashes"] = buckets.back()["stashes"];
  return parseManifest(m.dump(), "rank0");
}

TEST(StepPlanner, EveryModeCoversTheStepInBucketsThatHoldIt) {
  RankManifest manifest = twoStageManifest();
  sched::Schedule fixed = oneFOneB(2, 4);
  std::vector<int64_t> lengths = {5, 120, 7,   9, 64, 3, 17, 33,
                                  8, 2,   100, 6, 11, 4, 9,  12},
                       samples(lengths.size());
  std::iota(samples.begin(), samples.end(), int64_t(100));
  double padded = 0, planned = 0;
  for (MicrobatchingMode mode :
       {MicrobatchingMode::Planned, MicrobatchingMode::Padded,
        MicrobatchingMode::Sorted}) {
    SCOPED_TRACE(microbatchingModeName(mode));
    StepPlanner planner(manifest, fixed, mode);
    StepPlanSummary summary;
    StepPlan plan = planner.plan(samples, lengths, summary);
    std::multiset<int64_t> covered;
    int64_t tokens = 0;
    for (const PlannedMicrobatch &mb : plan.microbatches) {
      const ManifestBucket &b = manifest.buckets[size_t(mb.bucket)];
      EXPECT_LE(int64_t(mb.samples.size()), b.batch);
      for (int64_t sample : mb.samples) {
        covered.insert(sample);
        EXPECT_LE(lengths[size_t(sample - 100)], b.length);
        tokens += lengths[size_t(sample - 100)];
        if (mode == MicrobatchingMode::Padded)
          EXPECT_EQ(b.length, 128);
      }
    }
    EXPECT_EQ(covered, std::multiset<int64_t>(samples.begin(), samples.end()));
    EXPECT_EQ(summary.tokens, tokens);
    EXPECT_EQ(plan.schedule.microbatches, int(plan.microbatches.size()));
    EXPECT_TRUE(sched::verifySchedule(plan.schedule).ok());
    EXPECT_GT(summary.predictedMs, 0);
    if (mode != MicrobatchingMode::Planned)
      EXPECT_EQ(plan.microbatches.size(), 4u);
    if (mode == MicrobatchingMode::Padded)
      padded = summary.predictedMs;
    if (mode == MicrobatchingMode::Planned)
      planned = summary.predictedMs;
  }
  // Padding the step's short sequences to 120 tokens is what the planner
  // avoids.
  EXPECT_LT(planned, padded / 2);
}

TEST(StepPlanner, RefusesWhatNoBucketHolds) {
  RankManifest manifest = twoStageManifest();
  sched::Schedule fixed = oneFOneB(2, 4);
  StepPlanner planner(manifest, fixed, MicrobatchingMode::Planned);
  EXPECT_EQ(planner.bucketFor(2, 64), planner.bucketFor(2, 50));
  EXPECT_EQ(planner.bucketFor(2, 129), -1);
  EXPECT_EQ(planner.bucketFor(65, 8), -1);
  EXPECT_EQ(planner.bucketFor(5, 128), -1);
  StepPlanSummary summary;
  try {
    planner.plan({0, 1}, {3, 200}, summary);
    FAIL() << "no error";
  } catch (const Error &e) {
    EXPECT_THAT(e.what(), HasSubstr("a sequence of 200 tokens is longer than "
                                    "the longest bucket (128)"));
  }
  nlohmann::json fixedShape = bucketedJson();
  fixedShape.erase("buckets");
  RankManifest plain = parseManifest(fixedShape.dump(), "rank0");
  EXPECT_THROW(StepPlanner(plain, fixed, MicrobatchingMode::Planned), Error);
}

// A compiled memory limit bounds what each planned microbatch stashes
// (1F1B keeps up to `stages` of them on the first stage) and every step's
// schedule is verified against it.
TEST(StepPlanner, KeepsPlannedMicrobatchesUnderTheMemoryLimit) {
  // A fixed cost per microbatch makes large microbatches worth it.
  RankManifest manifest = twoStageManifest(/*callMs=*/2.0);
  sched::Schedule fixed = oneFOneB(2, 4);
  for (sched::StageInfo &stage : fixed.stages)
    stage.paramBytes = 1000;
  std::vector<int64_t> lengths = {5,  6,  7,  8,  9, 10, 11, 12,
                                  13, 14, 15, 16, 6, 7,  8,  9},
                       samples(lengths.size());
  std::iota(samples.begin(), samples.end(), int64_t(0));
  auto largestStash = [&](const StepPlan &plan) {
    int64_t largest = 0;
    for (const PlannedMicrobatch &mb : plan.microbatches)
      largest = std::max(
          largest,
          manifest.buckets[size_t(mb.bucket)].stageCosts[0].activationBytes);
    return largest;
  };
  StepPlanSummary summary;
  StepPlan free = StepPlanner(manifest, fixed, MicrobatchingMode::Planned)
                      .plan(samples, lengths, summary);
  int64_t unlimited = largestStash(free);
  // A limit that leaves each of the 2 in-flight microbatches half of the
  // largest one the unlimited plan stashes.
  double limit = 1000 + 2 * double(unlimited) / 2;
  StepPlanner bounded(manifest, fixed, MicrobatchingMode::Planned, limit);
  StepPlan plan = bounded.plan(samples, lengths, summary);
  EXPECT_LE(largestStash(plan), unlimited / 2);
  EXPECT_GT(plan.microbatches.size(), free.microbatches.size());
  sched::VerifyOptions verify;
  verify.memoryLimit = limit;
  EXPECT_TRUE(sched::verifySchedule(plan.schedule, verify).ok());

  // One sequence alone over the limit, and a limit under the parameters.
  StepPlanner tight(manifest, fixed, MicrobatchingMode::Planned, 1100);
  try {
    tight.plan(samples, lengths, summary);
    FAIL() << "no error";
  } catch (const Error &e) {
    // 50 bytes a microbatch; the shortest bucket of 8 tokens stashes 64.
    EXPECT_THAT(e.what(), HasSubstr("microbatching: a sequence of 5 tokens "
                                    "alone needs more activation memory"));
  }
  try {
    StepPlanner(manifest, fixed, MicrobatchingMode::Planned, 1000);
    FAIL() << "no error";
  } catch (const Error &e) {
    EXPECT_THAT(e.what(), HasSubstr("the memory limit of 1000 bytes does not "
                                    "hold a stage's 1000 bytes of parameters"));
  }
}

} // namespace
