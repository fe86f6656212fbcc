//===- PlanJsonTest.cpp - What dpc run reads from plan.json ---------------===//

#include "dpc/planner/PlanJson.h"

#include "test/unittests/runtime/ErrorOf.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

using namespace dpc::planner;
using ::testing::HasSubstr;

namespace {
std::string error(const std::string &text) {
  return dpc::errorOf([&] { readPlanSummary(text, "out/plan.json"); });
}
} // namespace

TEST(PlanJson, ReadsDevicesAndStepTime) {
  PlanSummary summary = readPlanSummary(
      R"({"devices":4,"predicted":{"simulated_step_ms":2.5}})", "p");
  EXPECT_EQ(summary.devices, 4);
  EXPECT_EQ(summary.simulatedStepMs, 2.5);
  summary = readPlanSummary(R"({"stages":[]})", "p");
  EXPECT_FALSE(summary.devices);
  EXPECT_FALSE(summary.simulatedStepMs);
  EXPECT_FALSE(summary.memoryLimitBytes);
}

TEST(PlanJson, ReadsTheMemoryLimit) {
  PlanSummary summary =
      readPlanSummary(R"({"memory_limit_bytes":67108864.0})", "p");
  EXPECT_EQ(summary.memoryLimitBytes, 67108864.0);
  for (const char *limit : {"-1", "\"64MiB\"", "null"})
    EXPECT_THAT(error(std::string(R"({"memory_limit_bytes":)") + limit + "}"),
                HasSubstr("out/plan.json: \"memory_limit_bytes\" must be a "
                          "finite number >= 0, got " +
                          std::string(limit)));
}

TEST(PlanJson, RefusesNonsense) {
  EXPECT_THAT(error("[1]"), HasSubstr("out/plan.json: not a JSON object"));
  EXPECT_THAT(error("{\"devices\":"), HasSubstr("not a JSON object"));
  for (const char *devices :
       {"0", "-3", "2.5", "\"4\"", "18446744073709551615", "2147483648"})
    EXPECT_THAT(error(std::string("{\"devices\":") + devices + "}"),
                HasSubstr("\"devices\" must be an integer from 1 to "
                          "2147483647, got " +
                          std::string(devices)));
  // JSON has no infinity, and nlohmann's parser refuses 1e400 rather than
  // reading it as one (which dpc run would write back as null).
  EXPECT_THAT(error(R"({"predicted":{"simulated_step_ms":1e400}})"),
              HasSubstr("not a JSON object"));
  for (const char *step : {"-1", "\"fast\"", "null"})
    EXPECT_THAT(error(std::string(R"({"predicted":{"simulated_step_ms":)") +
                      step + "}}"),
                HasSubstr("\"predicted.simulated_step_ms\" must be a finite "
                          "number >= 0"));
}

TEST(PlanJson, SetsAKeyKeepingTheOthersInOrder) {
  std::string text =
      setPlanKey(R"({"devices":2,"stages":[],"measured":1})", "p", "measured",
                 nlohmann::ordered_json{{"step_ms", 1.5}});
  EXPECT_EQ(text, "{\n  \"devices\": 2,\n  \"stages\": [],\n  \"measured\": "
                  "{\n    \"step_ms\": 1.5\n  }\n}\n");
  EXPECT_THROW(setPlanKey("{\"devices\":0}", "p", "measured", 1), dpc::Error);
}
