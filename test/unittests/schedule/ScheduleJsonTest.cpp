//===- ScheduleJsonTest.cpp - schedule.json round trip and errors --------===//

#include "dpc/schedule/Builder.h"
#include "dpc/schedule/Schedule.h"
#include "dpc/schedule/Simulator.h"
#include "test/unittests/schedule/ScheduleErrorOf.h"

#include <gtest/gtest.h>

using namespace dpc::schedule;

// Every kind, in the enum's order up to Custom, its last: a hand-written
// stream, which the builder refuses, so a built 1F1B stream stands for it.
// The backward's halves cost differently so that zb-2p's order, which
// comes from the stages' costs, is not the uniform one.
TEST(ScheduleJson, RoundTripsEveryKind) {
  for (int k = 0; k <= static_cast<int>(ScheduleKind::Custom); ++k) {
    ScheduleKind kind = static_cast<ScheduleKind>(k);
    bool custom = kind == ScheduleKind::Custom;
    BuildOptions o;
    o.kind = custom ? ScheduleKind::OneFOneB : kind;
    o.stages = 3;
    o.microbatches = 6;
    o.virtualStages = kind == ScheduleKind::Interleaved ? 2 : 1;
    o.verticalSync = kind == ScheduleKind::PipeDream;
    StageInfo info;
    info.forward = 1.5;
    info.backwardInput = 2.5;
    info.backwardWeight = 0.75;
    info.paramBytes = 123;
    info.weightBytes = 45;
    info.activationBytes = 67;
    info.backwardStashBytes = 23;
    info.outputBytes = 89;
    o.stageInfo = {info};
    Schedule s;
    ASSERT_EQ(buildError(o, s), "") << kindName(kind);
    if (custom) {
      BuildOptions refused = o;
      refused.kind = kind;
      Schedule none;
      EXPECT_NE(buildError(refused, none), "");
      s.kind = kind;
    }
    Schedule back;
    ASSERT_EQ(jsonError(toJson(s, 1), back), "") << kindName(kind);
    EXPECT_EQ(back.kind, kind);
    EXPECT_EQ(back.ranks, s.ranks);
    EXPECT_EQ(back.microbatches, s.microbatches);
    EXPECT_EQ(back.chunks, s.chunks);
    EXPECT_EQ(back.verticalSync, s.verticalSync);
    ASSERT_EQ(back.stages.size(), s.stages.size());
    EXPECT_EQ(back.stages.back().forward, 1.5);
    EXPECT_EQ(back.stages.back().backwardInput, 2.5);
    EXPECT_EQ(back.stages.back().backwardWeight, 0.75);
    EXPECT_EQ(back.stages.back().outputBytes, 89);
    EXPECT_EQ(back.stages.back().backwardStashBytes, 23);
    EXPECT_EQ(back.programs, s.programs) << kindName(kind);
  }
}

namespace {

// Two ranks with no instructions, for the header's fields.
Schedule twoEmptyRanks() {
  Schedule s;
  s.ranks = 2;
  s.stages.assign(2, StageInfo());
  s.programs.resize(2);
  return s;
}

} // namespace

// A measured message latency is kept; a schedule without one writes none.
TEST(ScheduleJson, MessageLatency) {
  Schedule s = twoEmptyRanks();
  EXPECT_EQ(toJson(s).find("message_latency_ms"), std::string::npos);
  s.messageLatency = 0.125;
  Schedule back;
  ASSERT_EQ(jsonError(toJson(s), back), "");
  EXPECT_EQ(back.messageLatency, 0.125);
  EXPECT_EQ(jsonError(R"({"ranks":1,"microbatches":1,)"
                      R"("message_latency_ms":-1})",
                      back),
            "\"message_latency_ms\" must be milliseconds >= 0");
}

// The machine a build predicted on: the cores its ranks share and the
// wake-up latency there; absent means a core per rank and none.
TEST(ScheduleJson, CoresAndWakeLatency) {
  Schedule s = twoEmptyRanks();
  EXPECT_EQ(toJson(s).find("cores"), std::string::npos);
  EXPECT_EQ(toJson(s).find("wake_latency_ms"), std::string::npos);
  s.cores = 1;
  s.wakeLatency = 0.25;
  Schedule back;
  ASSERT_EQ(jsonError(toJson(s), back), "");
  EXPECT_EQ(back.cores, 1);
  EXPECT_EQ(back.wakeLatency, 0.25);
  SimulateOptions machine = recordedMachine(back);
  EXPECT_EQ(machine.cores, 1);
  EXPECT_EQ(machine.wakeLatency, 0.25);
  EXPECT_EQ(jsonError(R"({"ranks":1,"microbatches":1,"cores":-2})", back),
            "\"cores\" must be a count >= 0");
  EXPECT_EQ(jsonError(R"({"ranks":1,"microbatches":1,)"
                      R"("wake_latency_ms":-1})",
                      back),
            "\"wake_latency_ms\" must be milliseconds >= 0");
}

// What a split backward saves is part of the stage's slot.
TEST(ScheduleJson, BackwardStashBytesArePartOfTheSlot) {
  Schedule back;
  EXPECT_EQ(jsonError(R"({"ranks":1,"microbatches":1,"stages":[{"id":0,)"
                      R"("activation_bytes":10,"backward_stash_bytes":11}]})",
                      back),
            "stage 0: \"backward_stash_bytes\" must be between 0 and its "
            "\"activation_bytes\"");
  EXPECT_EQ(
      jsonError(
          R"({"ranks":1,"microbatches":1,"stages":[{"id":0,)"
          R"("activation_bytes":10,"backward_stash_bytes":4}],"programs":[{"instructions":[]}]})",
          back),
      "");
  EXPECT_EQ(back.stages[0].backwardStashBytes, 4);
}

// A dpc-schedule cost file's stages, in order, read as schedule.json's.
TEST(ScheduleJson, StagesOfACostFile) {
  std::vector<StageInfo> stages;
  ASSERT_EQ(stagesError(R"({"stages":[{"forward_ms":2,"input_bytes":8},)"
                        R"({"activation_bytes":10,)"
                        R"("backward_stash_bytes":4}],"latency_ms":1})",
                        stages),
            "");
  ASSERT_EQ(stages.size(), 2u);
  EXPECT_EQ(stages[0].forward, 2.0);
  EXPECT_EQ(stages[0].backwardInput, 1.0);
  EXPECT_EQ(stages[0].inputBytes, 8);
  EXPECT_EQ(stages[1].backwardStashBytes, 4);
  EXPECT_EQ(stagesError(R"({"stages":[{},{"activation_bytes":1,)"
                        R"("backward_stash_bytes":2}]})",
                        stages),
            "stage 1: \"backward_stash_bytes\" must be between 0 and its "
            "\"activation_bytes\"");
  EXPECT_EQ(stagesError(R"({"stages":[{"param_bytes":"many"}]})", stages)
                .rfind("stage 0: ", 0),
            0u);
  EXPECT_EQ(stagesError(R"({"latency_ms":1})", stages),
            "missing \"stages\" array");
}

TEST(ScheduleJson, CompactInstructionForm) {
  Schedule s = twoEmptyRanks();
  s.programs[0].push_back(Instruction::transfer(
      Op::SendStart, Payload::Activation, 3, 0, 1, 12, 4096));
  std::string json = toJson(s);
  EXPECT_NE(json.find(R"({"bytes":4096,"mb":3,"op":"send_start","peer":1,)"
                      R"("tag":12,"what":"act"})"),
            std::string::npos)
      << json;
}

TEST(ScheduleJson, Errors) {
  Schedule s;
  EXPECT_EQ(jsonError("[", s).substr(0, 13), "invalid JSON:");
  EXPECT_EQ(jsonError(R"({"ranks":1,"microbatches":1})", s),
            "missing \"programs\" array");
  EXPECT_EQ(jsonError(R"({"kind":"zb-h2","ranks":1,"microbatches":1})", s),
            "unknown schedule kind 'zb-h2'");
  EXPECT_EQ(jsonError(R"({"ranks":1,"microbatches":1,"programs":[
                {"rank":0,"instructions":[{"op":"jump"}]}]})",
                      s),
            "rank 0: instruction 0: unknown op 'jump'");
  EXPECT_EQ(jsonError(R"({"ranks":1,"microbatches":1,"programs":[
                {"rank":0,"instructions":[{"op":"send_start","mb":0}]}]})",
                      s),
            "rank 0: instruction 0: SendStart without \"what\"");
  EXPECT_EQ(jsonError(R"({"ranks":2,"microbatches":1,"programs":[
                {"rank":5,"instructions":[]}]})",
                      s),
            "program for rank 5 but the schedule has 2 ranks");
  // Found by fuzz-schedule: numbers out of their field's range were
  // converted anyway (3e83 to an int64 is undefined behaviour).
  EXPECT_EQ(jsonError(R"({"ranks":1,"microbatches":1,"programs":[
      {"instructions":[{"op":"send_start","what":"act","peer":0,"tag":0,
                        "bytes":3.2e83}]}]})",
                      s),
            "rank 0: instruction 0: \"bytes\" must be an integer from "
            "-9223372036854775808 to 9223372036854775807, got 3.2e+83");
  EXPECT_EQ(
      jsonError(R"({"ranks":5000000000,"microbatches":1,"programs":[]})", s),
      "\"ranks\" must be an integer from -2147483648 to 2147483647, "
      "got 5000000000");
  EXPECT_EQ(jsonError(R"({"ranks":1,"microbatches":1.5,"programs":[]})", s),
            "\"microbatches\" must be an integer from -2147483648 to "
            "2147483647, got 1.5");
  // Found by fuzz-schedule: a stage count that asked for gigabytes.
  EXPECT_EQ(
      jsonError(R"({"ranks":55555554,"microbatches":2,"programs":[]})", s),
      "2 microbatches on 55555554 stages of 1 chunks need more message "
      "tags than the 30000 the runtime has");
  EXPECT_EQ(jsonError(R"({"ranks":2,"microbatches":7500,"programs":[]})", s),
            "7500 microbatches on 2 stages of 1 chunks need more message tags "
            "than the 30000 the runtime has");
  EXPECT_EQ(
      dpc::errorOf([] { readScheduleFile("/nonexistent/schedule.json"); }),
      "cannot open '/nonexistent/schedule.json'");
}

TEST(ScheduleJson, KindNames) {
  for (const char *name : {"gpipe", "1f1b", "pipedream", "interleaved", "zb-h1",
                           "zb-2p", "custom"}) {
    ScheduleKind kind;
    ASSERT_TRUE(parseKind(name, kind));
    EXPECT_STREQ(kindName(kind), name);
  }
  ScheduleKind kind;
  EXPECT_FALSE(parseKind("zb-v", kind));
}

// The columns of the kinds' table: what every command's --schedule takes.
TEST(ScheduleJson, KindsTheBuilderAndThePlannerTake) {
  std::vector<ScheduleKind> built = kindsFor(KindUse::Build);
  EXPECT_EQ(joinKindNames(built),
            "gpipe, 1f1b, pipedream, interleaved, zb-h1 or zb-2p");
  EXPECT_EQ(joinKindNames(kindsFor(KindUse::Plan)), "gpipe, 1f1b or pipedream");
  EXPECT_FALSE(takes(KindUse::Build, ScheduleKind::Custom));
  EXPECT_FALSE(takes(KindUse::Plan, ScheduleKind::ZeroBubbleH1));
  EXPECT_TRUE(takes(KindUse::Plan, ScheduleKind::PipeDream));
}

TEST(ScheduleJson, Describe) {
  Instruction fwd = Instruction::compute(Op::Forward, 4, 1);
  EXPECT_EQ(describe(fwd), "Forward mb 4");
  EXPECT_EQ(describe(fwd, 2), "Forward mb 4 chunk 1");
  fwd.version = 2;
  EXPECT_EQ(describe(fwd), "Forward mb 4 weights v2");
  Instruction restore;
  restore.op = Op::RestoreWeights;
  restore.version = 3;
  EXPECT_EQ(describe(restore), "RestoreWeights version 3");
  EXPECT_EQ(describe(Instruction::transfer(Op::RecvFinish, Payload::Gradient, 3,
                                           0, 2, 0, 0)),
            "RecvFinish grad mb 3 from rank 2");
}
