//===- ManifestTest.cpp - Writing the rank manifest and reading it back ---===//
//
// writeManifest is what the compiler emits and parseManifest what the
// runtime reads: every field must survive the round trip, and the fields a
// build leaves at their defaults must stay out of the text. The parser's
// own checks are in ExecutorTest.cpp.
//
//===----------------------------------------------------------------------===//

#include "dpc/runtime/Manifest.h"

#include <gtest/gtest.h>

#include <tuple>

using namespace dpc::runtime;

namespace {

auto fields(const ManifestTensor &t) {
  return std::tie(t.name, t.shape, t.integer);
}
auto fields(const ManifestParam &p) { return std::tie(p.id, p.name, p.shape); }
auto fields(const ManifestTransfer &t) {
  return std::tie(t.tag, t.stage, t.peerStage, t.what, t.bytes, t.bf16);
}
auto fields(const ManifestStash &s) {
  return std::tie(s.key, s.name, s.stage, s.bytes);
}
auto fields(const ManifestProfileOp &op) {
  return std::tie(op.id, op.node, op.phase, op.share);
}
auto fields(const BucketStageCost &c) {
  return std::tie(c.forward, c.backwardInput, c.backwardWeight,
                  c.activationBytes, c.outputBytes);
}

template <typename T>
void expectSameList(const std::vector<T> &a, const std::vector<T> &b,
                    const char *what) {
  ASSERT_EQ(a.size(), b.size()) << what;
  for (size_t i = 0; i < a.size(); ++i)
    EXPECT_TRUE(fields(a[i]) == fields(b[i])) << what << "[" << i << "]";
}

void expectSame(const ManifestBucket &a, const ManifestBucket &b) {
  EXPECT_EQ(a.batch, b.batch);
  EXPECT_EQ(a.length, b.length);
  expectSameList(a.inputs, b.inputs, "inputs");
  EXPECT_EQ(a.labelsShape, b.labelsShape);
  EXPECT_EQ(a.outputShape, b.outputShape);
  expectSameList(a.sends, b.sends, "sends");
  expectSameList(a.recvs, b.recvs, "recvs");
  expectSameList(a.stashes, b.stashes, "stashes");
  expectSameList(a.stageCosts, b.stageCosts, "stage_costs");
}

void expectSame(const RankManifest &a, const RankManifest &b) {
  EXPECT_EQ(std::tie(a.rank, a.stage, a.stages, a.chunks),
            std::tie(b.rank, b.stage, b.stages, b.chunks));
  EXPECT_EQ(a.schedule, b.schedule);
  EXPECT_EQ(a.weights, b.weights);
  EXPECT_EQ(a.microbatchSize, b.microbatchSize);
  expectSameList(a.inputs, b.inputs, "inputs");
  EXPECT_EQ(a.labelsShape, b.labelsShape);
  EXPECT_EQ(a.floatLabels, b.floatLabels);
  EXPECT_EQ(a.ignoreIndex, b.ignoreIndex);
  expectSameList(a.params, b.params, "params");
  expectSameList(a.sends, b.sends, "sends");
  expectSameList(a.recvs, b.recvs, "recvs");
  expectSameList(a.stashes, b.stashes, "stashes");
  EXPECT_EQ(a.outputShape, b.outputShape);
  EXPECT_EQ(a.inference, b.inference);
  EXPECT_EQ(a.optimizer, b.optimizer);
  EXPECT_EQ(a.namesOptimizer, b.namesOptimizer);
  EXPECT_EQ(a.bf16, b.bf16);
  EXPECT_EQ(a.segments, b.segments);
  expectSameList(a.profile, b.profile, "profile");
  ASSERT_EQ(a.buckets.size(), b.buckets.size());
  for (size_t i = 0; i < a.buckets.size(); ++i)
    expectSame(a.buckets[i], b.buckets[i]);
  EXPECT_EQ(a.topBucket, b.topBucket);
}

/// Rank 0 of two with model chunks: virtual stages 0 and 2 of four, a
/// bf16 build that trains with Adam and was built for profiling.
RankManifest firstRank() {
  RankManifest m;
  m.rank = m.stage = 0;
  m.stages = 2;
  m.chunks = 2;
  m.schedule = "schedule.json";
  m.weights = "weights/stage0.safetensors";
  m.microbatchSize = 4;
  m.inputs = {{"input0", {4, 1, 28, 28}, false}};
  m.params = {{0, "conv1.weight", {6, 1, 5, 5}}, {1, "scale", {}}};
  m.sends = {{0, 0, 1, TransferKind::Activation, 4704, true},
             {3, 2, 3, TransferKind::Activation, 64, false}};
  m.recvs = {{1, 0, 1, TransferKind::Gradient, 4704, true}};
  m.stashes = {{0, "input", 0, 12544}, {1, "/relu/Relu", 2, 64}};
  m.optimizer = Optimizer::Adam;
  m.namesOptimizer = true;
  m.bf16 = true;
  m.segments = {"forward", "backward", "backward_input", "backward_weight",
                "optimizer"};
  m.profile = {{0, "/conv1/Conv", "forward"},
               {1, "/conv1/Conv", "backward"},
               {2, "/relu/Relu", "forward", 0.375}};
  return m;
}

/// The last of two ranks of a bucketed token model: buckets (4, 8) and
/// (2, 16), the top level being the latter.
RankManifest bucketedLastRank() {
  RankManifest m;
  m.rank = m.stage = 1;
  m.stages = 2;
  m.schedule = "schedule.json";
  m.weights = "weights/stage1.safetensors";
  m.microbatchSize = 2;
  m.labelsShape = std::vector<int64_t>{2, 16};
  m.ignoreIndex = -100;
  m.outputShape = std::vector<int64_t>{2, 16, 64};
  m.params = {{0, "head.weight", {64, 32}}};
  m.recvs = {{0, 1, 0, TransferKind::Activation, 4096, false}};
  m.sends = {{1, 1, 0, TransferKind::Gradient, 4096, false}};
  m.stashes = {{0, "h", 1, 4096}};
  m.namesOptimizer = true;
  m.segments = {"forward", "backward", "optimizer"};
  auto bucket = [&](int64_t batch, int64_t length, double forward) {
    ManifestBucket b;
    b.batch = batch;
    b.length = length;
    int64_t bytes = batch * length * 32 * 4;
    b.labelsShape = std::vector<int64_t>{batch, length};
    b.outputShape = std::vector<int64_t>{batch, length, 64};
    b.recvs = {{0, 1, 0, TransferKind::Activation, bytes, false}};
    b.sends = {{1, 1, 0, TransferKind::Gradient, bytes, false}};
    b.stashes = {{0, "h", 1, bytes}};
    b.stageCosts = {{forward, 2 * forward, 0.1, bytes, bytes},
                    {0.0096872000000000017, 1.0 / 3, 0, 0, 0}};
    return b;
  };
  m.buckets = {bucket(4, 8, 0.25), bucket(2, 16, 0.018918999999999998)};
  m.topBucket = 1;
  return m;
}

TEST(Manifest, WriteThenReadGivesTheSameManifest) {
  for (const RankManifest &m : {firstRank(), bucketedLastRank()}) {
    std::string text = writeManifest(m);
    RankManifest read = parseManifest(text, "rank" + std::to_string(m.rank));
    expectSame(read, m);
    EXPECT_EQ(writeManifest(read), text);
  }
}

TEST(Manifest, InferenceAndFloatTargetsRoundTrip) {
  RankManifest predict;
  predict.schedule = "schedule.json";
  predict.microbatchSize = 8;
  predict.inputs = {{"input0", {8, 16}, true}};
  // Flatten with axis 0: an inference output need not be batch-major.
  predict.outputShape = std::vector<int64_t>{1, 80};
  predict.inference = true;
  predict.segments = {"forward", "optimizer"};
  expectSame(parseManifest(writeManifest(predict), "rank0"), predict);

  RankManifest regression = predict;
  regression.inference = false;
  regression.outputShape = std::vector<int64_t>{8, 4};
  regression.labelsShape = std::vector<int64_t>{8, 4};
  regression.floatLabels = true;
  expectSame(parseManifest(writeManifest(regression), "rank0"), regression);
}

// The text is compact JSON with sorted keys, as the lowering's lit tests
// and the e2e tests' greps read it.
TEST(Manifest, WritesCompactSortedJson) {
  std::string text = writeManifest(firstRank());
  EXPECT_EQ(text.rfind("{\"chunks\":2,\"format\":\"dpc-rank\",", 0), 0u)
      << text;
  EXPECT_NE(text.find("\"sends\":[{\"bytes\":4704,\"peer_stage\":1,"
                      "\"stage\":0,\"tag\":0,\"what\":\"act\",\"wire\":"
                      "\"bf16\"},{\"bytes\":64,\"peer_stage\":3,\"stage\":2,"
                      "\"tag\":3,\"what\":\"act\"}]"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("\"params\":[{\"id\":0,\"name\":\"conv1.weight\","
                      "\"shape\":[6,1,5,5]},{\"id\":1,\"name\":\"scale\","
                      "\"shape\":[]}]"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("\"optimizer\":\"adam\""), std::string::npos);
  EXPECT_NE(text.find("\"precision\":\"bf16\""), std::string::npos);

  std::string bucketed = writeManifest(bucketedLastRank());
  EXPECT_NE(bucketed.find("\"labels\":{\"dtype\":\"i64\",\"ignore_index\":"
                          "-100,\"shape\":[4,8]}"),
            std::string::npos)
      << bucketed;
}

// What a build leaves at its default stays out of the manifest: a stage
// without updates names no optimizer, an fp32 build no precision.
TEST(Manifest, DefaultsStayAbsent) {
  RankManifest m = firstRank();
  m.optimizer = Optimizer::Sgd;
  m.namesOptimizer = false;
  m.bf16 = false;
  m.sends[0].bf16 = m.recvs[0].bf16 = false;
  m.profile.clear();
  m.weights.clear();
  m.params.clear();
  std::string text = writeManifest(m);
  for (const char *absent :
       {"\"optimizer\":", "\"precision\":", "\"inference\":", "\"profile\":",
        "\"buckets\":", "\"wire\":", "\"ignore_index\":"})
    EXPECT_EQ(text.find(absent), std::string::npos) << absent << " in " << text;
  EXPECT_NE(text.find("\"weights\":null"), std::string::npos) << text;
  EXPECT_NE(text.find("\"labels\":null"), std::string::npos) << text;
  expectSame(parseManifest(text, "rank0"), m);
}

} // namespace
