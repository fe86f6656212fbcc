//===- ExecutorTest.cpp - The rank manifest and the executor in-process ---===//
//
// The manifest parser's checks, and the executor on one rank with C++
// segment functions standing in for generated code: data loading, the
// optimizer's arithmetic, stash lifetimes and the errors a compiler bug
// must produce. Transfers between ranks are covered under mpirun by the
// e2e.executor tests (test/e2e/executor).
//
//===----------------------------------------------------------------------===//

#include "dpc/runtime/Executor.h"
#include "dpc/runtime/Error.h"
#include "dpc/runtime/Manifest.h"
#include "dpc/schedule/Builder.h"
#include "dpc/schedule/Verifier.h"

#include "test/unittests/runtime/ErrorOf.h"
#include "test/unittests/runtime/SoloCommunicator.h"
#include "test/unittests/runtime/StagingDevice.h"
#include "test/unittests/runtime/TorchOptim.h"
#include "test/unittests/schedule/ScheduleErrorOf.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <cmath>
#include <cstring>
#include <functional>

using namespace dpc::runtime;
using ::testing::HasSubstr;
namespace sched = dpc::schedule;

namespace {

//===----------------------------------------------------------------------===//
// Manifest
//===----------------------------------------------------------------------===//

/// A valid two-stage manifest for stage `stage`; tests patch one field.
nlohmann::json manifestJson(int stage = 0) {
  nlohmann::json m = {{"format", "dpc-rank"},
                      {"version", 1},
                      {"rank", stage},
                      {"stage", stage},
                      {"stages", 2},
                      {"schedule", "schedule.json"},
                      {"weights", "weights/stage0.safetensors"},
                      {"microbatch_size", 4},
                      {"inputs", nlohmann::json::array()},
                      {"labels", nullptr},
                      {"params",
                       {{{"id", 0}, {"name", "w"}, {"shape", {3, 2}}},
                        {{"id", 5}, {"name", "b"}, {"shape", {3}}}}},
                      {"sends", nlohmann::json::array()},
                      {"recvs", nlohmann::json::array()},
                      {"stashes", {{{"key", 0}, {"name", "x"}, {"bytes", 32}}}},
                      {"output", nullptr},
                      {"segments", {"forward", "backward", "optimizer"}}};
  if (stage == 0) {
    m["inputs"] = {{{"name", "input"}, {"shape", {4, 2}}}};
    m["sends"] = {
        {{"tag", 3}, {"peer_stage", 1}, {"what", "act"}, {"bytes", 48}}};
    m["recvs"] = {
        {{"tag", 4}, {"peer_stage", 1}, {"what", "grad"}, {"bytes", 48}}};
  } else {
    m["labels"] = {{"shape", {4}}};
    m["output"] = {{"shape", {4, 3}}};
  }
  return m;
}

std::string parseError(const nlohmann::json &m) {
  return errorOf([&] { parseManifest(m.dump(), "rank0"); });
}

TEST(Manifest, ParsesEveryField) {
  RankManifest m = parseManifest(manifestJson(0).dump(), "rank0");
  EXPECT_EQ(m.stage, 0);
  EXPECT_EQ(m.stages, 2);
  EXPECT_EQ(m.microbatchSize, 4);
  ASSERT_EQ(m.inputs.size(), 1u);
  EXPECT_EQ(m.inputs[0].elements(), 8);
  EXPECT_FALSE(m.inputs[0].integer);
  EXPECT_EQ(m.inputs[0].bytes(), 32);
  EXPECT_FALSE(m.labelsShape);
  ASSERT_NE(m.findParam(5), nullptr);
  EXPECT_EQ(m.findParam(5)->name, "b");
  EXPECT_EQ(m.findParam(1), nullptr);
  ASSERT_NE(m.findSend(3), nullptr);
  EXPECT_EQ(m.findSend(3)->what, TransferKind::Activation);
  EXPECT_EQ(m.findRecv(4)->what, TransferKind::Gradient);
  EXPECT_EQ(m.findStash(0)->bytes, 32);
  EXPECT_TRUE(m.hasSegment("backward"));
  EXPECT_FALSE(m.hasSegment("backward_input"));

  RankManifest last = parseManifest(manifestJson(1).dump(), "rank1");
  EXPECT_TRUE(last.isLastStage());
  EXPECT_EQ(*last.outputShape, (std::vector<int64_t>{4, 3}));
}

TEST(Manifest, Bf16PrecisionAndWireTypes) {
  // fp32 unless the build says bf16; transfers as they are unless marked.
  RankManifest plain = parseManifest(manifestJson(0).dump(), "rank0");
  EXPECT_FALSE(plain.bf16);
  EXPECT_FALSE(plain.findSend(3)->bf16);
  EXPECT_EQ(plain.findSend(3)->wireBytes(), 48);
  nlohmann::json m = manifestJson(0);
  m["precision"] = "bf16";
  m["sends"][0]["wire"] = "bf16";
  RankManifest bf16 = parseManifest(m.dump(), "rank0");
  EXPECT_TRUE(bf16.bf16);
  EXPECT_TRUE(bf16.findSend(3)->bf16);
  EXPECT_EQ(bf16.findSend(3)->bytes, 48);
  EXPECT_EQ(bf16.findSend(3)->wireBytes(), 24);
  EXPECT_FALSE(bf16.findRecv(4)->bf16);
  m["precision"] = "fp32";
  EXPECT_FALSE(parseManifest(m.dump(), "rank0").bf16);

  m["precision"] = "fp16";
  EXPECT_EQ(parseError(m),
            "rank0: manifest: precision: expected \"fp32\" or \"bf16\"");
  m["precision"] = "bf16";
  m["sends"][0]["wire"] = "f16";
  EXPECT_EQ(parseError(m),
            "rank0: manifest: sends[0].wire: expected \"bf16\" or \"f32\"");
  m["sends"][0]["wire"] = "bf16";
  m["sends"][0]["bytes"] = 50;
  EXPECT_EQ(parseError(m), "rank0: manifest: sends[0].wire: bf16 packs f32 "
                           "tensors, but bytes 50 is not a multiple of 4");
}

TEST(Manifest, ErrorsNameTheField) {
  auto with = [](auto patch, int stage = 0) {
    nlohmann::json m = manifestJson(stage);
    patch(m);
    return parseError(m);
  };
  EXPECT_EQ(parseError(manifestJson(0)), "");
  EXPECT_EQ(with([](auto &m) { m["format"] = "dpc-plan"; }),
            "rank0: manifest: format: expected \"dpc-rank\", got "
            "\"dpc-plan\"");
  EXPECT_EQ(with([](auto &m) { m.erase("microbatch_size"); }),
            "rank0: manifest: microbatch_size: missing");
  EXPECT_EQ(with([](auto &m) { m["params"][1]["shape"] = {3, -1}; }),
            "rank0: manifest: params[1].shape: expected an array of "
            "positive integers");
  // A scalar parameter is fine; a scalar (unbatched) input is not.
  EXPECT_EQ(
      with([](auto &m) { m["params"][1]["shape"] = nlohmann::json::array(); }),
      "");
  EXPECT_EQ(
      with([](auto &m) { m["inputs"][0]["shape"] = nlohmann::json::array(); }),
      "rank0: manifest: inputs[0].shape: expected a non-empty array of "
      "positive integers");
  // Token ids: int64 inputs, and a label per position.
  nlohmann::json tokens = manifestJson(0);
  tokens["inputs"][0]["dtype"] = "i64";
  RankManifest ids = parseManifest(tokens.dump(), "rank0");
  EXPECT_TRUE(ids.inputs[0].integer);
  EXPECT_EQ(ids.inputs[0].bytes(), 64);
  EXPECT_EQ(with([](auto &m) { m["inputs"][0]["dtype"] = "f16"; }),
            "rank0: manifest: inputs[0].dtype: expected \"f32\" or \"i64\"");
  EXPECT_EQ(with([](auto &m) { m["labels"]["shape"] = {4, 16}; }, 1), "");
  EXPECT_EQ(with([](auto &m) { m["labels"]["shape"] = {2, 16}; }, 1),
            "rank0: manifest: labels.shape: the first dimension is 2 but "
            "microbatch_size is 4");
  // Float targets (--loss mse) say so; class ids are the default.
  nlohmann::json targets = manifestJson(1);
  targets["labels"] = {{"shape", {4, 16}}, {"dtype", "f32"}};
  EXPECT_TRUE(parseManifest(targets.dump(), "rank1").floatLabels);
  EXPECT_FALSE(parseManifest(manifestJson(1).dump(), "rank1").floatLabels);
  EXPECT_EQ(with([](auto &m) { m["labels"]["dtype"] = "f64"; }, 1),
            "rank0: manifest: labels.dtype: expected \"f32\" or \"i64\"");
  EXPECT_EQ(with(
                [](auto &m) {
                  m["labels"]["dtype"] = "f32";
                  m["labels"]["ignore_index"] = -100;
                },
                1),
            "rank0: manifest: labels.ignore_index: applies to class labels "
            "(\"i64\"), not float targets");
  EXPECT_EQ(with([](auto &m) { m["inference"] = "yes"; }),
            "rank0: manifest: inference: expected true or false");
  EXPECT_EQ(with([](auto &m) { m["optimizer"] = "adam"; }), "");
  EXPECT_EQ(
      with([](auto &m) { m["optimizer"] = "rmsprop"; }),
      "rank0: manifest: optimizer: expected \"sgd\", \"adam\" or \"adamw\"");
  EXPECT_EQ(with([](auto &m) { m["params"][1]["id"] = 0; }),
            "rank0: manifest: params[1].id: id 0 appears twice");
  EXPECT_EQ(with([](auto &m) { m["sends"][0]["what"] = "grad"; }),
            "rank0: manifest: sends[0].what: \"grad\" cannot go to stage 1 "
            "(activations flow forward, gradients back)");
  EXPECT_EQ(with([](auto &m) { m["sends"][0]["peer_stage"] = 0; }),
            "rank0: manifest: sends[0].peer_stage: stage 0 is not another "
            "stage of the 2-stage pipeline");
  // Model chunks: rank 0 of 2 ranks x 2 chunks holds stages 0 and 2.
  EXPECT_EQ(with([](auto &m) {
              m["chunks"] = 2;
              m["sends"][0]["stage"] = 2;
              m["sends"][0]["peer_stage"] = 3;
              m["stashes"][0]["stage"] = 2;
            }),
            "");
  EXPECT_EQ(with([](auto &m) { m["sends"][0]["stage"] = 2; }),
            "rank0: manifest: sends[0].stage: stage 2 is not a stage of rank "
            "0");
  EXPECT_EQ(with([](auto &m) {
              m["chunks"] = 2;
              m["stashes"][0]["stage"] = 1;
            }),
            "rank0: manifest: stashes[0].stage: stage 1 is not a stage of "
            "rank 0");
  EXPECT_EQ(with([](auto &m) { m["inputs"][0]["shape"] = {5, 2}; }),
            "rank0: manifest: inputs[0].shape: the first dimension is 5 but "
            "microbatch_size is 4");
  EXPECT_EQ(with([](auto &m) { m["labels"] = {{"shape", {4}}}; }),
            "rank0: manifest: labels: only the last stage reads labels");
  EXPECT_EQ(with([](auto &m) { m["segments"] = {"forward", "fwd"}; }),
            "rank0: manifest: segments[1]: unknown segment \"fwd\" (expected "
            "forward, backward, backward_input, backward_weight or "
            "optimizer)");
  EXPECT_EQ(with([](auto &m) { m["segments"] = {"forward"}; }),
            "rank0: manifest: segments: must list at least \"forward\" and "
            "\"optimizer\"");
  EXPECT_EQ(with([](auto &m) { m["stashes"][0]["bytes"] = 0; }),
            "rank0: manifest: stashes[0].bytes: expected an integer >= 1, "
            "got 0");
  EXPECT_EQ(with([](auto &m) { m["inputs"] = nlohmann::json::array(); }),
            "rank0: manifest: inputs: the first stage must read at least one "
            "data input");
  EXPECT_EQ(with([](auto &m) { m.erase("weights"); }),
            "rank0: manifest: weights: missing, but the stage has parameters");
  EXPECT_THAT(parseError(nlohmann::json("{")),
              HasSubstr("rank0: manifest: expected a JSON object"));
  try {
    parseManifest("{not json", "rank0");
    FAIL() << "no error";
  } catch (const Error &e) {
    EXPECT_THAT(e.what(), HasSubstr("rank0: manifest: not valid JSON"));
  }
}

//===----------------------------------------------------------------------===//
// Executor on one rank
//===----------------------------------------------------------------------===//

// The C++ stand-ins for generated segments call whatever the test installed.
std::function<void(dpc_context *)> onForward, onBackward, onOptimizer;
void forwardSegment(dpc_context *c) { onForward(c); }
void backwardSegment(dpc_context *c) { onBackward(c); }
void optimizerSegment(dpc_context *c) { onOptimizer(c); }

constexpr int64_t kB = 2, kM = 2;

RankManifest soloManifest() {
  nlohmann::json m = manifestJson(0);
  m["stages"] = 1;
  m["sends"] = nlohmann::json::array();
  m["recvs"] = nlohmann::json::array();
  m["microbatch_size"] = kB;
  m["inputs"] = {{{"name", "input"}, {"shape", {kB, 2}}}};
  m["labels"] = {{"shape", {kB}}};
  m["output"] = {{"shape", {kB, 3}}};
  return parseManifest(m.dump(), "solo");
}

sched::Schedule
soloSchedule(sched::ScheduleKind kind = sched::ScheduleKind::OneFOneB) {
  sched::BuildOptions options;
  options.kind = kind;
  options.stages = 1;
  options.microbatches = kM;
  sched::Schedule s;
  EXPECT_EQ(sched::buildError(options, s), "");
  return s;
}

/// Every executor test runs twice: on the host device (the CPU target's),
/// and on a device the host may not read (the CUDA target's paths, in host
/// memory: StagingDevice.h), which must give the same results.
class ExecutorTest : public ::testing::TestWithParam<bool> {
protected:
  void SetUp() override {
    std::vector<float> inputs(16);
    for (size_t i = 0; i < inputs.size(); ++i)
      inputs[i] = float(i);
    data = Dataset::fromFloats({2}, inputs, {0, 1, 2, 0, 1, 2, 0, 1}, 3);
    onForward = [](dpc_context *ctx) {
      float loss = 0.25f;
      dpc_report_loss(ctx, &loss);
    };
    onBackward = [](dpc_context *) {};
    onOptimizer = [](dpc_context *) {};
  }

  std::unique_ptr<Executor> make(RankManifest m = soloManifest(),
                                 sched::Schedule s = soloSchedule()) {
    SegmentFunctions f;
    f.forward = forwardSegment;
    f.backward = backwardSegment;
    f.optimizer = optimizerSegment;
    auto e = GetParam() ? std::make_unique<Executor>(m, s, comm, f, staging)
                        : std::make_unique<Executor>(m, s, comm, f);
    TensorFile weights;
    float w[6] = {1, 2, 3, 4, 5, 6}, b[3] = {0.5f, -0.5f, 1};
    weights.tensors["w"] = Tensor::fromF32({3, 2}, w);
    weights.tensors["b"] = Tensor::fromF32({3}, b);
    e->loadParams(weights, "weights.safetensors", false);
    e->setTrainData(&data, /*shuffle=*/false, 0);
    return e;
  }

  std::string stepError(Executor &e, int64_t step = 0) {
    try {
      e.runStep(step);
    } catch (const Error &err) {
      return err.what();
    }
    return "";
  }

  SoloCommunicator comm;
  StagingDevice staging;
  Dataset data;
};

INSTANTIATE_TEST_SUITE_P(Devices, ExecutorTest, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool> &info) {
                           return info.param ? "Staged" : "Host";
                         });

TEST_P(ExecutorTest, LoadsMicrobatchesInFileOrderAndSumsLosses) {
  std::vector<std::vector<float>> seen;
  std::vector<std::vector<int64_t>> labels;
  onForward = [&](dpc_context *ctx) {
    const auto *x = static_cast<const float *>(dpc_input(ctx, 0));
    seen.emplace_back(x, x + kB * 2);
    const int64_t *y = dpc_labels(ctx);
    labels.emplace_back(y, y + kB);
    float loss = 0.25f * float(seen.size());
    dpc_report_loss(ctx, &loss);
  };
  auto e = make();
  EXPECT_DOUBLE_EQ(e->runStep(1), 0.25 + 0.5); // step 1: samples 4..7
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen[0], (std::vector<float>{8, 9, 10, 11}));
  EXPECT_EQ(seen[1], (std::vector<float>{12, 13, 14, 15}));
  EXPECT_EQ(labels[0], (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(labels[1], (std::vector<int64_t>{0, 1}));
}

TEST_P(ExecutorTest, SgdStepIsTorchSgd) {
  // Each backward accumulates g = (1, 1, ...): 2 microbatches give 2.
  onBackward = [](dpc_context *ctx) {
    std::vector<float> g(6, 1.0f);
    dpc_grad_accumulate(ctx, 0, g.data());
  };
  onOptimizer = [](dpc_context *ctx) {
    dpc_sgd_step(ctx, 0, 0.1f, 0.9f, 0.01f);
  };
  auto e = make();
  e->runStep(0);
  e->runStep(1);
  // torch.optim.SGD(lr=0.1, momentum=0.9, weight_decay=0.01), by hand.
  std::vector<float> w = {1, 2, 3, 4, 5, 6}, v(6, 0.0f);
  for (int step = 0; step < 2; ++step)
    torchSgdStep(w, v, 2.0f, 0.1f, 0.9f, 0.01f);
  std::vector<float> got = e->param(0);
  for (size_t k = 0; k < 6; ++k)
    EXPECT_FLOAT_EQ(got[k], w[k]) << k;
  // The checkpoint carries the momentum buffers too.
  TensorFile ckpt = e->checkpoint(2);
  EXPECT_EQ(ckpt.tensors.at("momentum.w").toF32(), v);
  EXPECT_EQ(Executor::checkpointStep(ckpt, "ckpt"), 2);
}

RankManifest adamManifest() {
  RankManifest m = soloManifest();
  m.optimizer = Optimizer::Adam;
  return m;
}

TEST_P(ExecutorTest, AdamStepIsTorchAdamAndResumesFromItsCheckpoint) {
  // Each backward accumulates g = (1, 1, ...): 2 microbatches give 2.
  onBackward = [](dpc_context *ctx) {
    std::vector<float> g(6, 1.0f);
    dpc_grad_accumulate(ctx, 0, g.data());
  };
  onOptimizer = [](dpc_context *ctx) {
    dpc_adam_step(ctx, 0, 0.1f, 0.9f, 0.99f, 1e-3f, 0.01f);
  };
  // torch.optim.Adam(lr=0.1, betas=(0.9, 0.99), eps=1e-3,
  // weight_decay=0.01), in double, by hand.
  std::vector<double> w = {1, 2, 3, 4, 5, 6};
  TorchAdam adam{0.1, 0.9, 0.99, 1e-3, 0.01, {}, {}};
  auto torchStep = [&](int t) { adam.step(w, 2.0, t); };
  auto expectNear = [](const std::vector<float> &got,
                       const std::vector<double> &want, const char *what) {
    ASSERT_EQ(got.size(), want.size());
    for (size_t k = 0; k < got.size(); ++k)
      EXPECT_NEAR(got[k], want[k], 1e-5 * std::max(1.0, std::fabs(want[k])))
          << what << " " << k;
  };

  auto e = make(adamManifest());
  e->runStep(0);
  e->runStep(1);
  torchStep(1);
  torchStep(2);
  expectNear(e->param(0), w, "w");
  // The first steps move every weight by about lr: the bias correction
  // undoes the moments' zero start.
  EXPECT_NEAR(e->param(0)[0], 1.0 - 2 * 0.1, 0.01);

  // The checkpoint holds both moments and the update count, which the bias
  // correction of the next step needs.
  TensorFile ckpt = e->checkpoint(2);
  expectNear(ckpt.tensors.at("exp_avg.w").toF32(), adam.m, "exp_avg");
  expectNear(ckpt.tensors.at("exp_avg_sq.w").toF32(), adam.v, "exp_avg_sq");
  EXPECT_EQ(ckpt.tensors.count("momentum.w"), 0u);
  EXPECT_EQ(ckpt.metadata.at("optimizer"), "adam");
  EXPECT_EQ(ckpt.metadata.at("optimizer_updates"), "2");

  // Resumed, the third step is the uninterrupted run's third step.
  auto resumed = make(adamManifest());
  resumed->loadParams(ckpt, "ckpt", /*optimizerState=*/true);
  resumed->runStep(2);
  torchStep(3);
  expectNear(resumed->param(0), w, "w after resuming");

  // Without the update count the bias correction would restart: refused.
  TensorFile countless = ckpt;
  countless.metadata.erase("optimizer_updates");
  EXPECT_THROW(
      {
        try {
          make(adamManifest())->loadParams(countless, "c.safetensors", true);
        } catch (const Error &err) {
          EXPECT_STREQ(err.what(),
                       "c.safetensors: no \"optimizer_updates\" metadata, "
                       "which Adam's bias correction needs");
          throw;
        }
      },
      Error);
}

TEST_P(ExecutorTest, OptimizerStateMustMatchTheManifest) {
  // An SGD checkpoint cannot resume an Adam build, nor the other way round.
  auto sgd = make();
  TensorFile sgdCkpt = sgd->checkpoint(1);
  EXPECT_EQ(sgdCkpt.metadata.at("optimizer"), "sgd");
  auto adam = make(adamManifest());
  try {
    adam->loadParams(sgdCkpt, "s.safetensors", true);
    ADD_FAILURE() << "an SGD checkpoint resumed an Adam build";
  } catch (const Error &err) {
    EXPECT_STREQ(err.what(), "s.safetensors: written by a run with the sgd "
                             "optimizer; this build trains with adam");
  }
  // Weights alone load whatever wrote them.
  EXPECT_NO_THROW(adam->loadParams(sgdCkpt, "s.safetensors", false));

  // Each update call checks the manifest's optimizer.
  onOptimizer = [](dpc_context *ctx) { dpc_sgd_step(ctx, 0, 0.1f, 0, 0); };
  auto mismatched = make(adamManifest());
  EXPECT_EQ(stepError(*mismatched),
            "OptimizerStep: dpc_sgd_step: the manifest's optimizer is adam");
  onOptimizer = [](dpc_context *ctx) {
    dpc_adam_step(ctx, 0, 0.1f, 0.9f, 0.999f, 1e-8f, 0);
  };
  auto plain = make();
  EXPECT_EQ(stepError(*plain),
            "OptimizerStep: dpc_adam_step: the manifest's optimizer is sgd");
}

TEST_P(ExecutorTest, StashLivesUntilItsBackward) {
  std::vector<float> restored;
  onForward = [](dpc_context *ctx) {
    float x[8];
    for (int k = 0; k < 8; ++k)
      x[k] = float(100 * k);
    x[0] = static_cast<const float *>(dpc_input(ctx, 0))[0];
    dpc_stash(ctx, 0, x);
    float loss = 0;
    dpc_report_loss(ctx, &loss);
  };
  onBackward = [&](dpc_context *ctx) {
    const float *x = static_cast<const float *>(dpc_restore(ctx, 0));
    restored.push_back(x[0]);
    EXPECT_EQ(x[7], 700.0f);
  };
  auto e = make();
  e->runStep(0);
  EXPECT_EQ(restored, (std::vector<float>{0, 4}));
  // Released after each backward: a restore in the optimizer finds nothing.
  onOptimizer = [](dpc_context *ctx) { dpc_restore(ctx, 0); };
  EXPECT_EQ(stepError(*e),
            "OptimizerStep: dpc_restore: stash key 0 ('x') holds nothing for "
            "this microbatch (never stashed, or already released)");
}

TEST_P(ExecutorTest, GeneratedCodeErrorsGoToTheFatalHandler) {
  auto e = make();
  std::string reported;
  e->setFatalHandler([&](const std::string &m) {
    reported = m;
    throw Error("handled");
  });
  onBackward = [](dpc_context *ctx) { dpc_restore(ctx, 7); };
  EXPECT_EQ(stepError(*e), "handled");
  EXPECT_EQ(reported,
            "Backward mb 0: dpc_restore: stash key 7 is not in the manifest");
}

TEST_P(ExecutorTest, ChecksEveryIdAndOrder) {
  auto e = make();
  auto errorOf = [&](std::function<void(dpc_context *)> backward) {
    onBackward = std::move(backward);
    return stepError(*e);
  };
  EXPECT_EQ(errorOf([](dpc_context *ctx) { dpc_param(ctx, 1); }),
            "Backward mb 0: dpc_param: parameter id 1 is not in the manifest");
  EXPECT_EQ(errorOf([](dpc_context *ctx) { dpc_sgd_step(ctx, 0, 1, 0, 0); }),
            "Backward mb 0: dpc_sgd_step: called outside the optimizer "
            "segment");
  EXPECT_EQ(errorOf([](dpc_context *ctx) {
              dpc_adam_step(ctx, 0, 1, 0.9f, 0.999f, 1e-8f, 0);
            }),
            "Backward mb 0: dpc_adam_step: called outside the optimizer "
            "segment");
  EXPECT_EQ(errorOf([](dpc_context *ctx) { dpc_send(ctx, 3, nullptr); }),
            "Backward mb 0: dpc_send: transfer tag 3 is not in the manifest's "
            "sends");
  EXPECT_EQ(errorOf([](dpc_context *ctx) { dpc_recv(ctx, 4); }),
            "Backward mb 0: dpc_recv: transfer tag 4 is not in the manifest's "
            "recvs");
  EXPECT_EQ(errorOf([](dpc_context *ctx) {
              float x[8] = {};
              dpc_stash(ctx, 0, x);
              dpc_stash(ctx, 0, x);
            }),
            "Backward mb 0: dpc_stash: stash key 0 ('x') was already stashed "
            "for this microbatch");
  EXPECT_EQ(errorOf([](dpc_context *ctx) { dpc_input(ctx, 1); }),
            "Backward mb 0: dpc_input: input 1 is not in the manifest's 1 "
            "inputs");
  EXPECT_EQ(errorOf([](dpc_context *ctx) {
              float l = 0;
              dpc_report_loss(ctx, &l);
            }),
            "Backward mb 0: dpc_report_loss: the loss of this microbatch was "
            "already reported");
}

TEST_P(ExecutorTest, LastStageMustReportTheLoss) {
  auto e = make();
  onForward = [](dpc_context *) {};
  EXPECT_THAT(stepError(*e),
              HasSubstr("(Forward mb 0): the last stage's forward did not "
                        "call dpc_report_loss"));
}

TEST_P(ExecutorTest, ScratchIsAligned) {
  onForward = [](dpc_context *ctx) {
    for (int64_t bytes : {1, 3, 64, 100, 3 << 20}) {
      void *p = dpc_alloc(ctx, bytes);
      EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % 64, 0u) << bytes;
      std::memset(p, 0, size_t(bytes));
    }
    float loss = 0;
    dpc_report_loss(ctx, &loss);
  };
  auto e = make();
  e->runStep(0);
  e->runStep(1); // after merging the overflowed blocks
}

TEST_P(ExecutorTest, EvaluationCountsArgmaxHits) {
  onForward = [](dpc_context *ctx) {
    const int64_t *y = dpc_labels(ctx);
    float out[kB * 3] = {};
    // Right on the first sample of each microbatch, wrong on the second.
    out[y[0]] = 1;
    out[3 + (y[1] + 1) % 3] = 1;
    float x[8] = {};
    dpc_stash(ctx, 0, x); // a no-op in evaluation
    dpc_report_output(ctx, out);
    float loss = 0.5f;
    dpc_report_loss(ctx, &loss);
  };
  auto e = make();
  EvalResult r = e->evaluate(&data, 4);
  EXPECT_EQ(r.samples, 8);
  EXPECT_EQ(r.correct, 4);
  EXPECT_DOUBLE_EQ(r.reportedLoss, 2.0);
}

TEST_P(ExecutorTest, ConnectTakesTheDevicesCommunicator) {
  std::unique_ptr<Executor> e = make();
  EXPECT_EQ(e->transportDescription(),
            GetParam() ? "mpi, staged through host memory by the executor"
                       : "mpi");
  if (!GetParam()) {
    // The host device has no communicator of its own.
    try {
      e->connect(Transport::Nccl);
      ADD_FAILURE() << "connected the host device through NCCL";
    } catch (const Error &err) {
      EXPECT_THAT(err.what(), HasSubstr("transport nccl: this rank's tensors "
                                        "are on the host, which has no device "
                                        "communicator"));
    }
    e->connect(Transport::Auto);
    EXPECT_EQ(e->transportDescription(), "mpi");
  } else {
    e->connect(Transport::Auto);
    EXPECT_EQ(e->transportDescription(), "device memory in start order (test)");
    EXPECT_THROW(e->connect(Transport::Auto), Error);
  }
  EXPECT_NE(e->runStep(0), 0.0);
}

TEST_P(ExecutorTest, TouchesDeviceMemoryOnlyThroughCopies) {
  auto e = make();
  e->runStep(0);
  e->evaluate(&data, 4);
  if (!GetParam()) {
    EXPECT_EQ(staging.uploads + staging.downloads, 0);
    return;
  }
  // Up: the two parameters, then inputs and labels of 2 training and 4
  // evaluation microbatches. Down: each microbatch's loss. The step and the
  // evaluation end by waiting for the device.
  EXPECT_EQ(staging.uploads, 2 + 2 * 2 + 2 * 4);
  EXPECT_EQ(staging.downloads, 2 + 4);
  EXPECT_EQ(staging.synchronizations, 2);
}

TEST_P(ExecutorTest, RejectsSchedulesItCannotRun) {
  auto errorOf = [&](RankManifest m, sched::Schedule s) {
    try {
      make(m, s);
    } catch (const Error &e) {
      return std::string(e.what());
    }
    return std::string();
  };
  sched::Schedule replicated = soloSchedule();
  replicated.replicas = {2};
  EXPECT_THAT(errorOf(soloManifest(), replicated),
              HasSubstr("the replicas per stage add up to 2 ranks, not 1"));
  // zb-h1 needs the split backward segments, which this object lacks.
  EXPECT_THAT(
      errorOf(soloManifest(), soloSchedule(sched::ScheduleKind::ZeroBubbleH1)),
      HasSubstr("runs BackwardInput mb 0 but the rank's object has no "
                "backward_input segment"));
  sched::Schedule twoRanks;
  sched::BuildOptions options;
  options.stages = 2;
  options.microbatches = 2;
  ASSERT_EQ(sched::buildError(options, twoRanks), "");
  EXPECT_THAT(errorOf(soloManifest(), twoRanks),
              HasSubstr("2 stages but the manifest says 1"));
}

/// A one-rank PipeDream stream with three microbatches in a window: two
/// forwards run before the first backward, so microbatch 1's backward needs
/// the weights its forward used after the first update overwrote them.
sched::Schedule pipedreamSchedule(int mb2BackwardVersion = 1) {
  std::string text = R"({"format": "dpc-schedule", "version": 1,
    "kind": "pipedream", "ranks": 1, "microbatches": 3, "programs": [
    {"rank": 0, "instructions": [
      {"op": "load", "mb": 0}, {"op": "forward", "mb": 0, "version": 0},
      {"op": "stash", "mb": 0},
      {"op": "load", "mb": 1}, {"op": "forward", "mb": 1, "version": 0},
      {"op": "stash", "mb": 1},
      {"op": "restore", "mb": 0}, {"op": "backward", "mb": 0, "version": 0},
      {"op": "free", "mb": 0},
      {"op": "stash_weights", "version": 0}, {"op": "optimizer_step"},
      {"op": "load", "mb": 2}, {"op": "forward", "mb": 2, "version": 1},
      {"op": "stash", "mb": 2},
      {"op": "restore_weights", "version": 0}, {"op": "restore", "mb": 1},
      {"op": "backward", "mb": 1, "version": 0}, {"op": "free", "mb": 1},
      {"op": "free_weights", "version": 0},
      {"op": "stash_weights", "version": 1}, {"op": "optimizer_step"},
      {"op": "restore_weights", "version": 1}, {"op": "restore", "mb": 2},
      {"op": "backward", "mb": 2, "version": MB2}, {"op": "free", "mb": 2},
      {"op": "free_weights", "version": 1}, {"op": "optimizer_step"}]}]})";
  text.replace(text.find("MB2"), 3, std::to_string(mb2BackwardVersion));
  sched::Schedule s;
  EXPECT_EQ(errorOf([&] { s = sched::fromJson(text); }), "");
  return s;
}

TEST_P(ExecutorTest, PipeDreamBackwardUsesItsForwardsWeights) {
  // Each backward adds 1 to every gradient and each update subtracts it
  // (lr 1, no momentum): version v has w[0] = 1 - v.
  std::vector<float> forwardSaw, backwardSaw;
  onForward = [&](dpc_context *ctx) {
    forwardSaw.push_back(dpc_param(ctx, 0)[0]);
    float loss = 0.5f;
    dpc_report_loss(ctx, &loss);
  };
  onBackward = [&](dpc_context *ctx) {
    backwardSaw.push_back(dpc_param(ctx, 0)[0]);
    std::vector<float> g(6, 1.0f);
    dpc_grad_accumulate(ctx, 0, g.data());
  };
  onOptimizer = [](dpc_context *ctx) { dpc_sgd_step(ctx, 0, 1.0f, 0, 0); };
  auto e = make(soloManifest(), pipedreamSchedule());
  // The window's loss is the mean of its microbatch losses.
  EXPECT_DOUBLE_EQ(e->runStep(0), 0.5);
  EXPECT_EQ(forwardSaw, (std::vector<float>{1, 1, 0}));
  EXPECT_EQ(backwardSaw, (std::vector<float>{1, 1, 0}));
  EXPECT_EQ(e->param(0)[0], -2.0f);
  // What the schedule's verifier promises, measured.
  sched::VerifyResult promised = sched::verifySchedule(pipedreamSchedule());
  ASSERT_TRUE(promised.ok());
  EXPECT_EQ(e->memoryStats().peakStashes, promised.ranks[0].peakStashes);
  EXPECT_EQ(e->memoryStats().peakWeightVersions,
            promised.ranks[0].peakWeightVersions);
  EXPECT_EQ(e->memoryStats().peakStashes, 2);
  EXPECT_EQ(e->memoryStats().peakWeightVersions, 2);
  // The next window starts again from version 0, the live weights.
  forwardSaw.clear();
  e->runStep(1);
  EXPECT_EQ(forwardSaw, (std::vector<float>{-2, -2, -3}));
}

TEST_P(ExecutorTest, PipeDreamVersionMismatchIsAnError) {
  auto e = make(soloManifest(), pipedreamSchedule(/*mb2BackwardVersion=*/2));
  EXPECT_THAT(
      stepError(*e),
      HasSubstr("instruction 23 (Backward mb 2 weights v2): uses weight "
                "version 2 but "
                "RestoreWeights selected version 1"));
}

TEST_P(ExecutorTest, LoadParamsChecksNamesAndShapes) {
  auto e = make();
  TensorFile weights;
  float w[6] = {};
  weights.tensors["w"] = Tensor::fromF32({2, 3}, w);
  try {
    e->loadParams(weights, "s0.safetensors", false);
    FAIL() << "no error";
  } catch (const Error &err) {
    EXPECT_STREQ(err.what(), "s0.safetensors: tensor 'w' has shape [2,3], "
                             "the model expects [3,2]");
  }
  weights.tensors.erase("w");
  try {
    e->loadParams(weights, "s0.safetensors", false);
    FAIL() << "no error";
  } catch (const Error &err) {
    EXPECT_STREQ(err.what(), "s0.safetensors: no tensor 'w'");
  }
}

} // namespace
