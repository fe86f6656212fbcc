//===- MemoryAdviceTest.cpp - What would make a plan fit its memory -------===//

#include "dpc/schedule/MemoryAdvice.h"
#include "dpc/schedule/Builder.h"
#include "test/unittests/schedule/ScheduleErrorOf.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

using namespace dpc::schedule;
using ::testing::HasSubstr;
using ::testing::Not;

namespace {

// 1F1B on 4 stages, 8 microbatches: rank 0 peaks at 1000 resident bytes, 4
// stashes of 100 and 30 bytes of transfer buffers (VerifierTest's
// MemoryLimit case).
Schedule fourStages() {
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
  EXPECT_EQ(buildError(o, s), "");
  return s;
}

} // namespace

TEST(MemoryAdvice, NamesTheGapAndTheLeversThatCloseIt) {
  Schedule s = fourStages();
  VerifyOptions limit;
  limit.memoryLimit = 1300;
  VerifyResult over = verifySchedule(s, limit);
  std::string advice = memoryAdvice(s, limit, over, {});
  // Rank 0: peak 1430 = 1000 resident + 430 transient, 130 over.
  EXPECT_THAT(advice, HasSubstr("rank 0 is over its limit by 130 B (peak "
                                "1.40 KiB: weights, gradients and optimizer "
                                "state 1000 B, activations and buffers "
                                "430 B)"));
  // 4000 resident bytes over the 1300 - 430 a rank has left: 5 stages.
  EXPECT_THAT(advice, HasSubstr("about 5 stages (--stages 5"));
  EXPECT_THAT(advice, HasSubstr("--recompute auto"));
  EXPECT_THAT(advice, HasSubstr("--precision bf16"));
  // No stage is replicated: sharding does not apply.
  EXPECT_THAT(advice, Not(HasSubstr("--shard-optimizer")));
}

TEST(MemoryAdvice, LeavesOutTheLeversAlreadyPulled) {
  Schedule s = fourStages();
  VerifyOptions limit;
  limit.memoryLimit = 1300;
  VerifyResult over = verifySchedule(s, limit);
  std::string advice =
      memoryAdvice(s, limit, over, {/*recompute=*/true, /*bf16=*/true});
  EXPECT_THAT(advice, HasSubstr("about 5 stages"));
  EXPECT_THAT(advice, Not(HasSubstr("--recompute")));
  EXPECT_THAT(advice, Not(HasSubstr("--precision")));
}

TEST(MemoryAdvice, HalvingActivationsMustCoverTheGap) {
  Schedule s = fourStages();
  // 300 over: bf16 saves at most 215 of rank 0's 430 transient bytes;
  // recomputation keeps one of its 4 stashes of 100, saving 300.
  VerifyOptions limit;
  limit.memoryLimit = 1130;
  VerifyResult over = verifySchedule(s, limit);
  std::string advice = memoryAdvice(s, limit, over, {});
  EXPECT_THAT(advice, HasSubstr("over its limit by 300 B"));
  EXPECT_THAT(advice, HasSubstr("--recompute auto"));
  EXPECT_THAT(advice, Not(HasSubstr("--precision bf16")));
}

TEST(MemoryAdvice, RecomputationMustCoverTheGap) {
  Schedule s = fourStages();
  // 330 over: more than the 300 bytes recomputation saves (the rest of the
  // 430 transient bytes are transfer buffers and the stash it keeps).
  VerifyOptions limit;
  limit.memoryLimit = 1100;
  VerifyResult over = verifySchedule(s, limit);
  std::string advice = memoryAdvice(s, limit, over, {});
  EXPECT_THAT(advice, HasSubstr("over its limit by 330 B"));
  EXPECT_THAT(advice, Not(HasSubstr("--recompute")));
  EXPECT_THAT(advice, Not(HasSubstr("--precision bf16")));
}

TEST(MemoryAdvice, NothingWhenEveryRankFits) {
  Schedule s = fourStages();
  VerifyOptions roomy;
  roomy.memoryLimit = 1e6;
  VerifyResult fits = verifySchedule(s, roomy);
  EXPECT_EQ(memoryAdvice(s, roomy, fits, {}), "");
}
