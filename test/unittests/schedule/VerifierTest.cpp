//===- VerifierTest.cpp - Violations of each kind -------------------------===//
//
// Each test breaks a correct schedule in one way and checks that the
// verifier names the rank, the instruction and the microbatch.
//
//===----------------------------------------------------------------------===//

#include "dpc/schedule/Verifier.h"
#include "dpc/schedule/Builder.h"
#include "test/unittests/schedule/ScheduleErrorOf.h"

#include <gtest/gtest.h>

#include <algorithm>

using namespace dpc::schedule;

namespace {

Schedule build(ScheduleKind kind, int p, int m) {
  BuildOptions options;
  options.kind = kind;
  options.stages = p;
  options.microbatches = m;
  Schedule schedule;
  EXPECT_EQ(buildError(options, schedule), "");
  return schedule;
}

/// Index of the first instruction on `rank` matching the predicate.
template <typename Pred> int find(const Schedule &s, int rank, Pred pred) {
  const auto &program = s.programs[rank];
  auto it = std::find_if(program.begin(), program.end(), pred);
  EXPECT_NE(it, program.end());
  return static_cast<int>(it - program.begin());
}

auto is(Op op, int mb, Payload what = Payload::None) {
  return [=](const Instruction &inst) {
    return inst.op == op && inst.mb == mb &&
           (what == Payload::None || inst.what == what);
  };
}

const Violation *findKind(const VerifyResult &r, ViolationKind kind) {
  for (const Violation &v : r.violations)
    if (v.kind == kind)
      return &v;
  return nullptr;
}

} // namespace

TEST(Verifier, FormatNamesRankInstructionAndMicrobatch) {
  Violation v;
  v.rank = 1;
  v.index = 7;
  v.instruction = "RecvFinish grad mb 3 from rank 2";
  v.mb = 3;
  v.message = "deadlock with blocking transfers: ...";
  EXPECT_EQ(v.format(), "rank 1: instruction 7 (RecvFinish grad mb 3 from "
                        "rank 2): deadlock with blocking transfers: ...");
}

TEST(Verifier, SendWithoutRecvDeadlocks) {
  Schedule s = build(ScheduleKind::OneFOneB, 2, 2);
  auto &rank1 = s.programs[1];
  // Rank 1 never posts the receive of mb 1's activation.
  rank1.erase(rank1.begin() +
              find(s, 1, is(Op::RecvStart, 1, Payload::Activation)));
  rank1.erase(rank1.begin() +
              find(s, 1, is(Op::RecvFinish, 1, Payload::Activation)));
  VerifyResult r = verifySchedule(s);
  const Violation *unmatched = findKind(r, ViolationKind::Unmatched);
  ASSERT_NE(unmatched, nullptr);
  EXPECT_EQ(unmatched->rank, 0);
  EXPECT_EQ(unmatched->mb, 1);
  EXPECT_EQ(unmatched->format(),
            "rank 0: instruction 8 (SendStart act mb 1 to rank 1): rank 1 "
            "never receives it (no RecvStart act mb 1 from rank 0 with tag "
            "4)");
  const Violation *deadlock = findKind(r, ViolationKind::Deadlock);
  ASSERT_NE(deadlock, nullptr);
  EXPECT_FALSE(r.blockingDeadlockFree);
  EXPECT_FALSE(r.nonBlockingDeadlockFree);
  // Rank 1 also runs mb 1's forward without its input.
  EXPECT_NE(findKind(r, ViolationKind::Dataflow), nullptr);
}

// Rank 1 posts mb 1's receive before mb 0's: fine when Starts do not block,
// a deadlock when they rendezvous.
TEST(Verifier, ReorderedRecvDeadlocksOnlyWhenBlocking) {
  Schedule s = build(ScheduleKind::GPipe, 2, 2);
  auto &rank1 = s.programs[1];
  int recv1 = find(s, 1, is(Op::RecvStart, 1, Payload::Activation));
  Instruction moved = rank1[recv1];
  rank1.erase(rank1.begin() + recv1);
  rank1.insert(rank1.begin(), moved);
  VerifyResult r = verifySchedule(s);
  EXPECT_FALSE(r.blockingDeadlockFree);
  EXPECT_TRUE(r.nonBlockingDeadlockFree);
  ASSERT_EQ(r.violations.size(), 1u) << r.violations[0].format();
  EXPECT_EQ(r.violations[0].format(),
            "rank 0: instruction 3 (SendStart act mb 0 to rank 1): deadlock "
            "with blocking transfers: waits for rank 1 to reach instruction 1 "
            "(RecvStart act mb 0 from rank 0), but rank 1 is blocked at "
            "instruction 0 (RecvStart act mb 1 from rank 0)");
  // Notes for the IR form: the receive it waits for, and where rank 1 is.
  const std::vector<Violation::Related> &related = r.violations[0].related;
  ASSERT_EQ(related.size(), 2u);
  EXPECT_EQ(related[0].rank, 1);
  EXPECT_EQ(related[0].index, 1);
  EXPECT_EQ(related[0].message, "the matching receive on rank 1");
  EXPECT_EQ(related[1].rank, 1);
  EXPECT_EQ(related[1].index, 0);
  EXPECT_EQ(related[1].message, "rank 1 is blocked here");

  VerifyOptions nonBlockingOnly;
  nonBlockingOnly.checkBlocking = false;
  EXPECT_TRUE(verifySchedule(s, nonBlockingOnly).ok());
}

// Receiving mb 1 completely before posting mb 0 deadlocks either way: the
// sender finishes mb 0 before it starts mb 1.
TEST(Verifier, SwappedRecvsDeadlockUnderBothModels) {
  Schedule s = build(ScheduleKind::GPipe, 2, 2);
  auto &rank1 = s.programs[1];
  std::vector<Instruction> recvs;
  for (int mb : {1, 0})
    for (Op op : {Op::RecvStart, Op::RecvFinish})
      recvs.push_back(rank1[find(s, 1, is(op, mb, Payload::Activation))]);
  rank1.erase(std::remove_if(rank1.begin(), rank1.end(),
                             [](const Instruction &inst) {
                               return inst.what == Payload::Activation;
                             }),
              rank1.end());
  rank1.insert(rank1.begin(), recvs.begin(), recvs.end());
  VerifyResult r = verifySchedule(s);
  EXPECT_FALSE(r.blockingDeadlockFree);
  EXPECT_FALSE(r.nonBlockingDeadlockFree);
  const Violation *deadlock = findKind(r, ViolationKind::Deadlock);
  ASSERT_NE(deadlock, nullptr);
  EXPECT_NE(deadlock->message.find("deadlock with non-blocking transfers"),
            std::string::npos);
}

TEST(Verifier, RestoreWithoutStash) {
  Schedule s = build(ScheduleKind::OneFOneB, 2, 4);
  auto &rank0 = s.programs[0];
  rank0.erase(rank0.begin() + find(s, 0, is(Op::Stash, 2)));
  VerifyResult r = verifySchedule(s);
  ASSERT_FALSE(r.ok());
  const Violation &v = r.violations[0];
  EXPECT_EQ(v.kind, ViolationKind::RestoreNoStash);
  EXPECT_EQ(v.rank, 0);
  EXPECT_EQ(v.mb, 2);
  EXPECT_EQ(v.instruction, "Restore mb 2");
  EXPECT_EQ(v.message, "restore of mb 2 without a live stash");
}

TEST(Verifier, StashNeverFreed) {
  Schedule s = build(ScheduleKind::GPipe, 3, 3);
  auto &rank2 = s.programs[2];
  rank2.erase(rank2.begin() + find(s, 2, is(Op::Free, 1)));
  VerifyResult r = verifySchedule(s);
  ASSERT_EQ(r.violations.size(), 1u);
  EXPECT_EQ(r.violations[0].kind, ViolationKind::StashLeak);
  EXPECT_EQ(r.violations[0].index, find(s, 2, is(Op::Stash, 1)));
  EXPECT_EQ(r.violations[0].message, "stash of mb 1 is never freed");
}

TEST(Verifier, MemoryLimit) {
  BuildOptions o;
  o.kind = ScheduleKind::OneFOneB;
  o.stages = 4;
  o.microbatches = 8;
  StageInfo info;
  info.paramBytes = 1000;
  info.activationBytes = 100;
  info.outputBytes = 10;
  o.stageInfo = {info};
  Schedule s;
  ASSERT_EQ(buildError(o, s), "");
  VerifyResult r = verifySchedule(s);
  ASSERT_TRUE(r.ok());
  // Rank 0: parameters, 4 stashes, one send in flight, the next send's
  // pack its forward fills, and one gradient receive posted early; rank 3,
  // the last, one stash, a received activation and the gradient pack its
  // backward fills. (A received buffer counts until the compute that reads
  // it, a send's pack and a stash slot from the compute that fills it: the
  // runtime's lifetimes.)
  EXPECT_EQ(r.ranks[0].peakMemoryBytes, 1000 + 4 * 100 + 3 * 10);
  EXPECT_EQ(r.ranks[3].peakMemoryBytes, 1000 + 1 * 100 + 2 * 10);

  VerifyOptions limit;
  limit.memoryLimit = 1300;
  VerifyResult over = verifySchedule(s, limit);
  ASSERT_EQ(over.violations.size(), 2u);
  EXPECT_EQ(over.violations[0].kind, ViolationKind::MemoryLimit);
  EXPECT_EQ(over.violations[0].rank, 0);
  EXPECT_EQ(over.violations[0].format(),
            "rank 0: instruction 10 (Forward mb 2): memory reaches 1.29 KiB "
            "(peak 1.40 KiB, parameters 1000 B), over the limit of 1.27 KiB");
  EXPECT_EQ(over.violations[1].rank, 1);

  // Each rank held to its own device's memory (a cluster), and to the
  // smaller of that and the global limit.
  VerifyOptions perRank;
  perRank.rankMemoryLimits = {0, 0, 0, 1000 + 100};
  VerifyResult last = verifySchedule(s, perRank);
  ASSERT_EQ(last.violations.size(), 1u);
  EXPECT_EQ(last.violations[0].rank, 3);
  EXPECT_EQ(last.violations[0].format(),
            "rank 3: instruction 3 (Forward mb 0): memory reaches 1.08 KiB "
            "(peak 1.09 KiB, parameters 1000 B), over the limit of 1.07 KiB");
  perRank.memoryLimit = 1300;
  perRank.rankMemoryLimits = {1e9, 0, 0, 1e9};
  EXPECT_EQ(verifySchedule(s, perRank).violations.size(), 2u);
}

TEST(Verifier, OptimizerStepCounts) {
  Schedule s = build(ScheduleKind::OneFOneB, 2, 2);
  s.programs[1].push_back(s.programs[1][find(
      s, 1, [](const Instruction &i) { return i.op == Op::OptimizerStep; })]);
  VerifyResult r = verifySchedule(s);
  ASSERT_EQ(r.violations.size(), 1u);
  EXPECT_EQ(r.violations[0].format(),
            "rank 1: 1f1b updates once per minibatch, but the stream has 2 "
            "optimizer steps");

  // An update in the middle of a synchronous step.
  Schedule early = build(ScheduleKind::GPipe, 2, 3);
  Instruction step;
  step.op = Op::OptimizerStep;
  auto &rank0 = early.programs[0];
  rank0.insert(rank0.begin() + find(early, 0, is(Op::Backward, 1)), step);
  VerifyResult r2 = verifySchedule(early);
  ASSERT_FALSE(r2.ok());
  EXPECT_EQ(r2.violations[0].message,
            "gpipe updates once per minibatch, but this update comes before "
            "the backward of mb 1");

  // PipeDream must update after every backward.
  Schedule pd = build(ScheduleKind::PipeDream, 2, 4);
  auto &pd1 = pd.programs[1];
  int firstStep = find(
      pd, 1, [](const Instruction &i) { return i.op == Op::OptimizerStep; });
  pd1.erase(pd1.begin() + firstStep);
  VerifyResult r3 = verifySchedule(pd);
  ASSERT_FALSE(r3.ok());
  EXPECT_EQ(r3.violations[0].kind, ViolationKind::Dataflow);
}

TEST(Verifier, WeightVersionRestoreWithoutStash) {
  Schedule s = build(ScheduleKind::PipeDream, 3, 6);
  auto &rank0 = s.programs[0];
  int stash =
      find(s, 0, [](const Instruction &i) { return i.op == Op::StashWeights; });
  int version = rank0[stash].version;
  rank0.erase(rank0.begin() + stash);
  VerifyResult r = verifySchedule(s);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.violations[0].kind, ViolationKind::RestoreNoStash);
  EXPECT_EQ(r.violations[0].message, "restore of weight version " +
                                         std::to_string(version) +
                                         " without a stash");
}

TEST(Verifier, SizeMismatch) {
  Schedule s = build(ScheduleKind::OneFOneB, 2, 2);
  for (Op op : {Op::RecvStart, Op::RecvFinish})
    s.programs[1][find(s, 1, is(op, 1, Payload::Activation))].bytes = 64;
  VerifyResult r = verifySchedule(s);
  ASSERT_EQ(r.violations.size(), 1u);
  EXPECT_EQ(r.violations[0].kind, ViolationKind::Mismatch);
  EXPECT_EQ(r.violations[0].format(),
            "rank 0: instruction 8 (SendStart act mb 1 to rank 1): matches "
            "instruction 5 (RecvStart act mb 1 from rank 0) of rank 1, which "
            "expects act of mb 1 and 64 bytes, not act of mb 1 and 0 bytes");
  ASSERT_EQ(r.violations[0].related.size(), 1u);
  EXPECT_EQ(r.violations[0].related[0].rank, 1);
  EXPECT_EQ(r.violations[0].related[0].index, 5);
}

TEST(Verifier, MissingBackward) {
  Schedule s = build(ScheduleKind::GPipe, 1, 2);
  // A custom stream: no update-count rule fires before the end-of-stream
  // check.
  s.kind = ScheduleKind::Custom;
  auto &rank0 = s.programs[0];
  for (Op op : {Op::Restore, Op::Backward, Op::Free})
    rank0.erase(rank0.begin() + find(s, 0, is(op, 1)));
  VerifyResult r = verifySchedule(s);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.violations[0].format(),
            "rank 0: the stream never runs the backward of mb 1");
}

TEST(Verifier, WrongPeer) {
  Schedule s = build(ScheduleKind::OneFOneB, 3, 2);
  s.programs[0][find(s, 0, is(Op::SendStart, 0))].peer = 2;
  VerifyResult r = verifySchedule(s);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.violations[0].format(),
            "rank 0: instruction 3 (SendStart act mb 0 to rank 2): sends act "
            "of mb 0 to rank 2, which does not hold the next stage");
}

TEST(Verifier, MalformedShape) {
  Schedule s = build(ScheduleKind::OneFOneB, 2, 2);
  s.programs[0][0].mb = 9;
  VerifyResult r = verifySchedule(s);
  ASSERT_EQ(r.violations.size(), 1u);
  EXPECT_EQ(r.violations[0].kind, ViolationKind::Malformed);
  EXPECT_EQ(r.violations[0].message, "microbatch 9 out of range [0, 2)");
}

namespace {

/// 1F1B over two stages, the first on two ranks: ranks 0 and 1 each train
/// half of the microbatches of stage 0, rank 2 trains all of stage 1.
Schedule buildReplicated(int m) {
  BuildOptions options;
  options.kind = ScheduleKind::OneFOneB;
  options.stages = 2;
  options.microbatches = m;
  options.replicas = {2, 1};
  Schedule schedule;
  EXPECT_EQ(buildError(options, schedule), "");
  return schedule;
}

} // namespace

TEST(Verifier, ReplicatedUpdateNeedsTheAllReduce) {
  Schedule s = buildReplicated(4);
  ASSERT_TRUE(verifySchedule(s).ok());
  auto &program = s.programs[1];
  program.erase(program.begin() + find(s, 1, [](const Instruction &i) {
                  return i.op == Op::AllReduce;
                }));
  VerifyResult r = verifySchedule(s);
  const Violation *v = findKind(r, ViolationKind::OptimizerCount);
  ASSERT_NE(v, nullptr);
  EXPECT_EQ(v->rank, 1);
  EXPECT_NE(v->message.find("stage 0 has 2 replicas, but this update comes "
                            "before the all-reduce"),
            std::string::npos)
      << v->format();
  // Rank 0 now waits in its all-reduce for a replica that never joins.
  const Violation *dead = findKind(r, ViolationKind::Deadlock);
  ASSERT_NE(dead, nullptr);
  EXPECT_EQ(dead->rank, 0);
  EXPECT_NE(dead->message.find("the all-reduce of stage 0 waits for its "
                               "replica on rank 1, which has finished"),
            std::string::npos)
      << dead->format();
}

TEST(Verifier, ReplicaRunsAnotherReplicasMicrobatch) {
  Schedule s = buildReplicated(4);
  // Rank 1 owns the odd microbatches; give it mb 0's forward too.
  auto &program = s.programs[1];
  program.insert(program.begin(), Instruction::compute(Op::Forward, 0, 0));
  VerifyResult r = verifySchedule(s);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.violations.front().kind, ViolationKind::Malformed);
  EXPECT_EQ(r.violations.front().message,
            "mb 0 belongs to rank 0, another replica of stage 0");
}

TEST(Verifier, AllReduceWithoutReplicas) {
  Schedule s = buildReplicated(2);
  auto &program = s.programs[2];
  program.insert(program.end() - 1, [] {
    Instruction i;
    i.op = Op::AllReduce;
    return i;
  }());
  VerifyResult r = verifySchedule(s);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.violations.front().message,
            "all-reduce on stage 1, which has no replicas");
}

TEST(Verifier, ReplicaLayoutMustAddUp) {
  Schedule s = buildReplicated(2);
  s.replicas = {2, 2};
  VerifyResult r = verifySchedule(s);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.violations.front().message,
            "the replicas per stage add up to 4 ranks, not 3");
}

namespace {

/// One stage on two ranks (data parallelism), reducing with `mode`.
Schedule buildDataParallel(ReduceMode mode) {
  BuildOptions options;
  options.kind = ScheduleKind::OneFOneB;
  options.stages = 1;
  options.microbatches = 4;
  options.replicas = {2};
  options.reduce = mode;
  Schedule schedule;
  EXPECT_EQ(buildError(options, schedule), "");
  return schedule;
}

int findAllReduce(const Schedule &s, int rank) {
  return find(s, rank,
              [](const Instruction &i) { return i.op == Op::AllReduce; });
}

} // namespace

TEST(Verifier, PartialReduceNeedsOneReplicatedStage) {
  BuildOptions options;
  options.kind = ScheduleKind::OneFOneB;
  options.stages = 2;
  options.microbatches = 4;
  options.replicas = {2, 1};
  options.reduce = ReduceMode::PartialReduce;
  Schedule schedule;
  EXPECT_EQ(buildError(options, schedule),
            "preduce needs one pipeline stage with replicas (--replicas R, R "
            "> 1): a replica that falls behind skips steps, which the stages "
            "it would feed cannot");
  // A schedule file that claims it anyway.
  Schedule s = buildReplicated(4);
  s.reduce = ReduceMode::PartialReduce;
  VerifyResult r = verifySchedule(s);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.violations.front().kind, ViolationKind::Malformed);
  // And schedule.json keeps the mode.
  Schedule parsed;
  ASSERT_EQ(
      jsonError(toJson(buildDataParallel(ReduceMode::PartialReduce)), parsed),
      "");
  EXPECT_EQ(parsed.reduce, ReduceMode::PartialReduce);
  std::string all = toJson(buildDataParallel(ReduceMode::AllReduce));
  EXPECT_EQ(all.find("\"reduce\""), std::string::npos)
      << "written only for preduce";
  ASSERT_EQ(jsonError(all, parsed), "");
  EXPECT_EQ(parsed.reduce, ReduceMode::AllReduce);
  std::string partial = toJson(buildDataParallel(ReduceMode::PartialReduce));
  size_t at = partial.find("\"preduce\"");
  ASSERT_NE(at, std::string::npos);
  EXPECT_EQ(jsonError(partial.replace(at, 9, "\"sometimes\""), parsed),
            "unknown reduce 'sometimes' (allreduce or preduce)");
}

// schedule.json keeps --shard-optimizer, which needs a replicated stage and
// the all-reduce.
TEST(Verifier, ShardOptimizerRoundTripsAndNeedsReplicas) {
  Schedule s = buildDataParallel(ReduceMode::AllReduce);
  std::string plain = toJson(s);
  EXPECT_EQ(plain.find("shard_optimizer"), std::string::npos);
  s.shardOptimizer = true;
  Schedule parsed;
  ASSERT_EQ(jsonError(toJson(s), parsed), "");
  EXPECT_TRUE(parsed.shardOptimizer);
  ASSERT_EQ(jsonError(plain, parsed), "");
  EXPECT_FALSE(parsed.shardOptimizer);

  s.reduce = ReduceMode::PartialReduce;
  EXPECT_EQ(s.checkLayout(),
            "shard_optimizer cannot be combined with preduce, whose replicas "
            "adopt replica 0's weights instead of updating their own shares");
  Schedule straight;
  straight.ranks = 2;
  straight.microbatches = 4;
  straight.shardOptimizer = true;
  EXPECT_EQ(straight.checkLayout(),
            "shard_optimizer splits a replicated stage's optimizer state, but "
            "no stage has replicas");
}

// Replica 0 of a partial reduce never waits for the others: a replica that
// has not reached its reduce (here: never does) blocks an all-reduce but
// not a partial one, where only the update count is wrong.
TEST(Verifier, PartialReduceLeaderDoesNotWait) {
  for (ReduceMode mode : {ReduceMode::AllReduce, ReduceMode::PartialReduce}) {
    Schedule s = buildDataParallel(mode);
    ASSERT_TRUE(verifySchedule(s).ok()) << reduceName(mode);
    s.programs[1].erase(s.programs[1].begin() + findAllReduce(s, 1));
    VerifyResult r = verifySchedule(s);
    EXPECT_NE(findKind(r, ViolationKind::OptimizerCount), nullptr);
    const Violation *dead = findKind(r, ViolationKind::Deadlock);
    if (mode == ReduceMode::AllReduce) {
      ASSERT_NE(dead, nullptr);
      EXPECT_EQ(dead->rank, 0);
    } else {
      EXPECT_EQ(dead, nullptr) << dead->format();
    }
  }
}

// The other replicas wait for replica 0's round: its weights come back
// then.
TEST(Verifier, PartialReduceReplicaWaitsForTheRound) {
  Schedule s = buildDataParallel(ReduceMode::PartialReduce);
  s.programs[0].erase(s.programs[0].begin() + findAllReduce(s, 0));
  VerifyResult r = verifySchedule(s);
  const Violation *dead = findKind(r, ViolationKind::Deadlock);
  ASSERT_NE(dead, nullptr);
  EXPECT_EQ(dead->rank, 1);
  EXPECT_NE(dead->message.find("the partial reduce waits for replica 0 "
                               "(rank 0) to send the weights of its round, "
                               "but rank 0 has finished"),
            std::string::npos)
      << dead->format();
}

// A zero-bubble stage's slot holds what its forward saves and what its
// backward's input half saves for the weight half; the second part counts
// from the BackwardInput that fills it, as the runtime allocates it.
TEST(Verifier, SplitBackwardFillsItsPartOfTheSlotLater) {
  BuildOptions o;
  o.kind = ScheduleKind::ZeroBubbleH1;
  o.stages = 2;
  o.microbatches = 4;
  StageInfo info;
  info.paramBytes = 1000;
  info.activationBytes = 100;
  o.stageInfo = {info};
  Schedule whole;
  ASSERT_EQ(buildError(o, whole), "");
  o.stageInfo[0].backwardStashBytes = 60;
  Schedule split;
  ASSERT_EQ(buildError(o, split), "");
  VerifyResult a = verifySchedule(whole), b = verifySchedule(split);
  ASSERT_TRUE(a.ok());
  ASSERT_TRUE(b.ok());
  // Rank 0 runs F0 F1 B0 W0 F2 B1 ...: two whole slots at F1, against two
  // forward parts (80) at F1 and one whole slot and a forward part at B0.
  EXPECT_EQ(a.ranks[0].peakMemoryBytes, 1000 + 2 * 100);
  EXPECT_EQ(b.ranks[0].peakMemoryBytes, 1000 + 100 + 40);
  // Rank 1 runs F0 B0 F1 B1 W0 ...: two whole slots after B1 either way.
  EXPECT_EQ(a.ranks[1].peakMemoryBytes, 1000 + 2 * 100);
  EXPECT_EQ(b.ranks[1].peakMemoryBytes, 1000 + 2 * 100);

  VerifyOptions limit;
  limit.memoryLimit = 1100;
  VerifyResult over = verifySchedule(split, limit);
  ASSERT_EQ(over.violations.size(), 2u);
  EXPECT_EQ(over.violations[0].rank, 0);
  EXPECT_EQ(split.programs[0][size_t(over.violations[0].index)].op,
            Op::BackwardInput);
  EXPECT_EQ(over.violations[1].rank, 1);
  EXPECT_EQ(split.programs[1][size_t(over.violations[1].index)].op,
            Op::Forward);

  // 1F1B's backward is whole: the slot counts from the forward.
  o.kind = ScheduleKind::OneFOneB;
  Schedule oneF;
  ASSERT_EQ(buildError(o, oneF), "");
  EXPECT_EQ(verifySchedule(oneF).ranks[0].peakMemoryBytes, 1000 + 2 * 100);
}

// dpc run --clip-grad-norm all-reduces the gradient norm at every update:
// every built kind, PipeDream's update per microbatch included, stays free
// of deadlock when the ranks' k-th updates must meet.
TEST(Verifier, UpdatesMeetInEveryBuiltKind) {
  VerifyOptions meeting;
  meeting.checkBlocking = false;
  meeting.updatesMeet = true;
  for (ScheduleKind kind :
       {ScheduleKind::GPipe, ScheduleKind::OneFOneB, ScheduleKind::ZeroBubbleH1,
        ScheduleKind::ZeroBubble2P, ScheduleKind::PipeDream})
    for (int p : {2, 3, 4})
      for (int m : {1, 4, 8}) {
        Schedule s = build(kind, p, m);
        VerifyResult r = verifySchedule(s, meeting);
        EXPECT_TRUE(r.ok()) << kindName(kind) << " p=" << p << " m=" << m
                            << ": " << r.violations.front().format();
      }
  BuildOptions vs;
  vs.kind = ScheduleKind::PipeDream;
  vs.stages = 4;
  vs.microbatches = 8;
  vs.verticalSync = true;
  Schedule s;
  ASSERT_EQ(buildError(vs, s), "");
  EXPECT_TRUE(verifySchedule(s, meeting).ok());
}

// A PipeDream stream whose last stage starts sending microbatch 0's
// gradient only after its first update: correct on its own, since stage 0
// waits for the gradient and the last stage does not wait for stage 0; a
// deadlock once the first update needs stage 0's norm, which stage 0 has
// only after that gradient.
TEST(Verifier, UpdateThatMustMeetDeadlocks) {
  Schedule s = build(ScheduleKind::PipeDream, 2, 4);
  auto &last = s.programs[1];
  int start = find(s, 1, is(Op::SendStart, 0, Payload::Gradient));
  int update = find(
      s, 1, [](const Instruction &i) { return i.op == Op::OptimizerStep; });
  int finish = find(s, 1, is(Op::SendFinish, 0, Payload::Gradient));
  ASSERT_LT(start, update);
  ASSERT_LT(update, finish);
  Instruction sendStart = last[start];
  last.insert(last.begin() + update + 1, sendStart);
  last.erase(last.begin() + start);
  VerifyOptions nonBlocking;
  nonBlocking.checkBlocking = false;
  VerifyResult alone = verifySchedule(s, nonBlocking);
  EXPECT_TRUE(alone.ok()) << alone.violations.front().format();

  VerifyOptions meeting = nonBlocking;
  meeting.updatesMeet = true;
  VerifyResult r = verifySchedule(s, meeting);
  const Violation *v = findKind(r, ViolationKind::Deadlock);
  ASSERT_NE(v, nullptr);
  EXPECT_EQ(v->format().find("deadlock with non-blocking transfers"),
            v->format().find("deadlock"))
      << v->format();
  EXPECT_NE(v->message.find("but rank 1 is blocked at instruction " +
                            std::to_string(update - 1) +
                            " (OptimizerStep), whose update waits for every "
                            "rank's gradient norm"),
            std::string::npos)
      << v->message;
}
