//===- MetricsTest.cpp - Metrics file and progress line -------------------===//

#include "dpc/runtime/Metrics.h"
#include "dpc/runtime/Error.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <unistd.h>

using namespace dpc::runtime;
using ::testing::HasSubstr;

namespace {
std::string readAll(const std::string &path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}
} // namespace

TEST(MetricsWriter, WritesJsonLinesAsTheyComeIn) {
  std::string path =
      "/tmp/dpc-metrics-test-" + std::to_string(::getpid()) + ".jsonl";
  {
    MetricsWriter writer(path);
    writer.writeStep(1, 2.299054026603699, 64, 0.5);
    // Flushed per line: readable before the writer is closed.
    EXPECT_EQ(readAll(path), "{\"step\":1,\"loss\":2.299054026603699,"
                             "\"samples\":64,\"time_s\":0.5}\n");
    writer.writeStep(2, 2.25f, 128, 1.0);
    writer.writeEvalAccuracy(0.8512, 10000);
  }
  EXPECT_EQ(readAll(path),
            "{\"step\":1,\"loss\":2.299054026603699,\"samples\":64,"
            "\"time_s\":0.5}\n"
            "{\"step\":2,\"loss\":2.25,\"samples\":128,\"time_s\":1.0}\n"
            "{\"eval_accuracy\":0.8512,\"eval_samples\":10000}\n");
  {
    MetricsWriter writer(path, /*append=*/true);
    writer.write({{"note", "resumed"}});
  }
  EXPECT_THAT(readAll(path), HasSubstr("10000}\n{\"note\":\"resumed\"}\n"));
  {
    MetricsWriter writer(path);
  }
  EXPECT_EQ(readAll(path), "");
  ::unlink(path.c_str());
}

TEST(MetricsWriter, LossRoundTripsExactly) {
  std::string path =
      "/tmp/dpc-metrics-rt-" + std::to_string(::getpid()) + ".jsonl";
  float loss = 1.0f / 3.0f;
  {
    MetricsWriter writer(path);
    writer.writeStep(1, loss, 1, 0);
  }
  nlohmann::json record = nlohmann::json::parse(readAll(path));
  EXPECT_EQ(static_cast<float>(record["loss"].get<double>()), loss);
  ::unlink(path.c_str());
}

TEST(MetricsWriter, UnwritablePathIsAnError) {
  try {
    MetricsWriter writer("/nonexistent-dir/m.jsonl");
    FAIL() << "expected an error";
  } catch (const Error &e) {
    EXPECT_THAT(e.what(), HasSubstr("/nonexistent-dir/m.jsonl: cannot open "
                                    "metrics file"));
  }
}

TEST(Progress, FormatsDurations) {
  EXPECT_EQ(formatDuration(0), "0s");
  EXPECT_EQ(formatDuration(59.4), "59s");
  EXPECT_EQ(formatDuration(83), "1m23s");
  EXPECT_EQ(formatDuration(3725), "1h02m");
  EXPECT_EQ(formatDuration(-1), "--");
}

TEST(Progress, FormatsTheLine) {
  Progress p;
  p.step = 120;
  p.totalSteps = 937;
  p.loss = 0.51234;
  p.samplesPerSecond = 2345.64;
  p.etaSeconds = 83;
  EXPECT_EQ(formatProgress(p),
            "step 120/937  loss 0.5123  2345.6 samples/s  ETA 1m23s");
  p.totalSteps = 0;
  EXPECT_EQ(formatProgress(p), "step 120  loss 0.5123  2345.6 samples/s");
}

TEST(Progress, MeterExcludesWarmUpFromThroughput) {
  // 100 steps of 64 samples; the first step takes 5 s (warm-up), every
  // later one 0.5 s.
  ProgressMeter meter(100, 64, /*startS=*/10.0);
  Progress first = meter.update(1, 2.3, 15.0);
  EXPECT_DOUBLE_EQ(first.samplesPerSecond, 64 / 5.0);
  Progress p;
  for (int step = 2; step <= 11; ++step)
    p = meter.update(step, 1.0, 15.0 + 0.5 * (step - 1));
  EXPECT_DOUBLE_EQ(p.samplesPerSecond, 128.0);
  EXPECT_DOUBLE_EQ(p.etaSeconds, 89 * 0.5);
  EXPECT_EQ(p.step, 11);
  Progress last = meter.update(100, 0.5, 15.0 + 0.5 * 99);
  EXPECT_DOUBLE_EQ(last.etaSeconds, 0.0);
}

TEST(Progress, MeterHandlesAResumedRun) {
  // Resumed at step 51 of 100: the rate counts from there, not from step 1.
  ProgressMeter meter(100, 64, /*startS=*/0.0);
  Progress first = meter.update(51, 1.0, 2.0);
  EXPECT_DOUBLE_EQ(first.samplesPerSecond, 32.0);
  EXPECT_DOUBLE_EQ(first.etaSeconds, 49 * 2.0);
  Progress p = meter.update(61, 1.0, 7.0);
  EXPECT_DOUBLE_EQ(p.samplesPerSecond, 128.0);
  EXPECT_DOUBLE_EQ(p.etaSeconds, 39 * 0.5);
}
