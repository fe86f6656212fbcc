//===- PartialReduceTest.cpp - Rounds of a partial reduce -----------------===//
//
// Replica 0 and the others of a partial reduce (--reduce preduce) in one
// process, over a fake network whose messages arrive when the test sends
// them: a replica that has not sent is late, and a wait for a message that
// never comes throws instead of hanging.
//
//===----------------------------------------------------------------------===//

#include "lib/runtime/PartialReduce.h"

#include "test/unittests/runtime/ErrorOf.h"
#include "test/unittests/runtime/MessagesOnly.h"

#include "dpc/runtime/Error.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <deque>
#include <map>
#include <tuple>

using namespace dpc::runtime;
using ::testing::HasSubstr;

namespace {

/// Messages in flight, per (from, to, tag), in send order.
using Mailboxes =
    std::map<std::tuple<int, int, int>, std::deque<std::vector<uint8_t>>>;

/// One rank of the fake network: sends are delivered at once; a receive
/// completes when its message is there.
class FakeCommunicator : public MessagesOnlyCommunicator {
public:
  FakeCommunicator(Mailboxes &boxes, int rank, int size)
      : boxes(boxes), me(rank), ranks(size) {}
  int rank() const override { return me; }
  int size() const override { return ranks; }
  Request isend(const void *data, size_t bytes, int peer, int tag) override {
    const auto *p = static_cast<const uint8_t *>(data);
    boxes[{me, peer, tag}].emplace_back(p, p + bytes);
    return Request{};
  }
  Request irecv(void *data, size_t bytes, int peer, int tag) override {
    Request r{next++};
    receives[r.id] = {data, bytes, peer, tag};
    return r;
  }
  void wait(Request &r) override {
    if (!test(r)) {
      const Receive &receive = receives.at(r.id);
      throw Error("would wait forever for rank " +
                  std::to_string(receive.peer) + " (tag " +
                  std::to_string(receive.tag) + ")");
    }
  }
  bool test(Request &r) override {
    auto it = receives.find(r.id);
    if (it == receives.end()) {
      r.id = -1;
      return true;
    }
    auto box = boxes.find({it->second.peer, me, it->second.tag});
    if (box == boxes.end() || box->second.empty())
      return false;
    std::vector<uint8_t> &m = box->second.front();
    if (m.size() != it->second.bytes)
      throw Error("size mismatch");
    std::memcpy(it->second.data, m.data(), m.size());
    box->second.pop_front();
    receives.erase(it);
    r.id = -1;
    return true;
  }

private:
  struct Receive {
    void *data;
    size_t bytes;
    int peer, tag;
  };
  Mailboxes &boxes;
  int me, ranks;
  int64_t next = 0;
  std::map<int64_t, Receive> receives;
};

/// R replicas with 3 floats of gradient and weights and 2 losses, no grace.
struct Replicas {
  explicit Replicas(int r) {
    for (int j = 0; j < r; ++j)
      comms.push_back(std::make_unique<FakeCommunicator>(boxes, j, r));
    for (int j = 0; j < r; ++j)
      reduce.push_back(std::make_unique<PartialReduce>(*comms[size_t(j)], 3, 2,
                                                       3, /*graceMs=*/0, 0));
  }
  PartialReduce &operator[](int j) { return *reduce[size_t(j)]; }
  Mailboxes boxes;
  std::vector<std::unique_ptr<FakeCommunicator>> comms;
  std::vector<std::unique_ptr<PartialReduce>> reduce;
};

const std::vector<float> kWeights = {0.5f, -1.0f, 2.0f};

} // namespace

// With every gradient there, a round is the all-reduce's sum, added in
// replica order, and every replica gets replica 0's weights.
TEST(PartialReduce, EveryGradientInTimeIsTheSum) {
  Replicas r(2);
  ASSERT_TRUE(r[0].leads());
  ASSERT_FALSE(r[1].leads());
  std::vector<float> g1 = {0.1f, 0.2f, 0.3f}, l1 = {0, 0.25f};
  r[1].sendGradient(0, g1, l1, StepTimes{4, 1, 5});
  std::vector<float> g = {1, 2, 3}, l = {0.5f, 0};
  ReduceRound round = r[0].reduce(0, g, l, StepTimes{3, 0, 3}, false);
  EXPECT_EQ(round.steps, (std::vector<int64_t>{0, 0}));
  EXPECT_EQ(round.members(), 2);
  EXPECT_EQ(g, (std::vector<float>{1 + 0.1f, 2 + 0.2f, 3 + 0.3f}));
  EXPECT_EQ(l, (std::vector<float>{0.5f, 0.25f}));
  EXPECT_EQ(round.times[1].computeMs, 4);
  r[0].sendWeights(round, kWeights, false);
  std::vector<float> weights;
  EXPECT_EQ(r[1].receiveWeights(weights), 0);
  EXPECT_EQ(weights, kWeights);
}

// A replica that is not ready does not hold the round up: the round takes
// replica 0's gradient alone, scaled by R / n. The late gradient joins the
// next round (one step stale, so weighted 1/2), whose weights the replica
// adopts to go on at the step after it, skipping one.
TEST(PartialReduce, ALateGradientJoinsTheNextRound) {
  Replicas r(2);
  std::vector<float> g = {1, 2, 3}, l = {0.5f, 0};
  ReduceRound first = r[0].reduce(0, g, l, StepTimes(), false);
  EXPECT_EQ(first.steps, (std::vector<int64_t>{0, -1}));
  EXPECT_EQ(g, (std::vector<float>{2, 4, 6}));
  EXPECT_EQ(l, (std::vector<float>{1, 0}));
  r[0].sendWeights(first, kWeights, false);
  EXPECT_TRUE(r.boxes.empty()) << "the late replica got weights";

  r[1].sendGradient(0, {2, 2, 2}, {0, 1}, StepTimes());
  g = {1, 2, 3};
  l = {0.5f, 0};
  ReduceRound second = r[0].reduce(1, g, l, StepTimes(), false);
  EXPECT_EQ(second.steps, (std::vector<int64_t>{1, 0}));
  // One round stale: weighted 1/2, and the weighted mean scaled to 2.
  EXPECT_FLOAT_EQ(g[0], (1 + 0.5f * 2) * 2 / 1.5f);
  EXPECT_FLOAT_EQ(g[2], (3 + 0.5f * 2) * 2 / 1.5f);
  EXPECT_EQ(l, (std::vector<float>{0.5f, 1}));
  r[0].sendWeights(second, kWeights, false);
  std::vector<float> weights;
  EXPECT_EQ(r[1].receiveWeights(weights), 1) << "goes on at step 3";
  EXPECT_EQ(weights, kWeights);

  // It computes step 2 on the weights of round 1: fresh again, so round 2
  // does not wait for it either.
  ReduceRound third = r[0].reduce(2, g, l, StepTimes(), false);
  EXPECT_EQ(third.steps, (std::vector<int64_t>{2, -1}));
}

// The staleness bound: a gradient one round late is due, and the next round
// waits for it (here it never comes, so the wait would never end).
TEST(PartialReduce, TheRoundWaitsForADueGradient) {
  Replicas r(2);
  std::vector<float> g = {1, 2, 3}, l = {0, 0};
  r[0].reduce(0, g, l, StepTimes(), false);
  EXPECT_THAT(errorOf([&] { r[0].reduce(1, g, l, StepTimes(), false); }),
              HasSubstr("would wait forever for rank 1"));
}

// The last round waits for every replica, so every replica ends with the
// same weights.
TEST(PartialReduce, TheLastRoundTakesEveryReplica) {
  Replicas r(3);
  std::vector<float> g = {1, 2, 3}, l = {0, 0};
  EXPECT_THAT(errorOf([&] { r[0].reduce(0, g, l, StepTimes(), true); }),
              HasSubstr("would wait forever for rank 1"));
  Replicas fresh(3);
  fresh[2].sendGradient(0, {0, 0, 3}, {0, 0}, StepTimes());
  fresh[1].sendGradient(0, {0, 3, 0}, {0, 0}, StepTimes());
  g = {3, 0, 0};
  ReduceRound round = fresh[0].reduce(0, g, l, StepTimes(), true);
  EXPECT_EQ(round.members(), 3);
  EXPECT_EQ(g, (std::vector<float>{3, 3, 3}));
  fresh[0].sendWeights(round, kWeights, true);
  for (int j : {1, 2}) {
    std::vector<float> weights;
    EXPECT_EQ(fresh[j].receiveWeights(weights), 0);
    EXPECT_EQ(weights, kWeights);
  }
}

// Three replicas, one late: the round's mean over the two it took, scaled
// to three.
TEST(PartialReduce, ScalesByReplicasOverMembers) {
  Replicas r(3);
  r[1].sendGradient(0, {1, 1, 1}, {0, 0}, StepTimes());
  std::vector<float> g = {1, 1, 1}, l = {0, 0};
  ReduceRound round = r[0].reduce(0, g, l, StepTimes(), false);
  EXPECT_EQ(round.steps, (std::vector<int64_t>{0, 0, -1}));
  EXPECT_EQ(g, (std::vector<float>{3, 3, 3}));
}

TEST(PartialReduce, RefusesAGradientOfAnotherStep) {
  Replicas r(2);
  r[1].sendGradient(5, {1, 1, 1}, {0, 0}, StepTimes());
  std::vector<float> g = {1, 1, 1}, l = {0, 0};
  EXPECT_EQ(errorOf([&] { r[0].reduce(0, g, l, StepTimes(), false); }),
            "partial reduce: replica 1 sent the gradient of step 6 but "
            "computes step 1");
}
