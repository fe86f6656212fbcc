//===- AbiEntryPointsTest.cpp - The C ABI on an executor state ------------===//
//
// The C ABI functions called on an executor state that runs no schedule:
// the test sets the running segment and microbatch itself, as the executor
// does around a segment call, and checks what each function hands back and
// how it reports a misuse ("Forward mb 1: dpc_param: parameter id 9 is not
// in the manifest") to the fatal handler.
//
//===----------------------------------------------------------------------===//

#include "lib/runtime/ExecutorImpl.h"

#include "dpc/runtime/Abi.h"

#include "test/unittests/runtime/ErrorOf.h"
#include "test/unittests/runtime/SoloCommunicator.h"

#include <gtest/gtest.h>

#include <cstring>

using namespace dpc::runtime;

namespace {

/// Stage 0 of two ranks with two chunks each: virtual stages 0 and 2.
RankManifest chunkedManifest() {
  RankManifest m;
  m.stages = 2;
  m.chunks = 2;
  m.microbatchSize = 2;
  m.inputs = {ManifestTensor{"input", {2, 2}, false}};
  ManifestParam w;
  w.id = 3;
  w.name = "w";
  w.shape = {2};
  m.params = {w};
  ManifestTransfer act;
  act.tag = 7;
  act.stage = 2;
  act.peerStage = 3;
  act.bytes = 8;
  m.sends = {act};
  ManifestStash x;
  x.key = 0;
  x.name = "x";
  x.bytes = 16;
  m.stashes = {x};
  return m;
}

class AbiEntryPoints : public ::testing::Test {
protected:
  AbiEntryPoints()
      : state(chunkedManifest(), dpc::schedule::Schedule(), comm,
              SegmentFunctions(), nullptr) {
    state.losses.assign(2, std::nullopt);
  }
  void enter(Phase phase, int mb, int chunk = 0) {
    state.phase = phase;
    state.currentMb = mb;
    state.currentChunk = chunk;
  }

  SoloCommunicator comm;
  Executor::Impl state;
  dpc_context *ctx = &state;
};

TEST_F(AbiEntryPoints, MisusesNameTheFunctionAndTheSegment) {
  EXPECT_EQ(errorOf([&] { dpc_alloc(ctx, 8); }),
            "outside any segment: dpc_alloc: called outside a segment "
            "function");
  enter(Phase::Forward, 1);
  EXPECT_EQ(errorOf([&] { dpc_param(ctx, 9); }),
            "Forward mb 1: dpc_param: parameter id 9 is not in the manifest");
  EXPECT_EQ(errorOf([&] { dpc_alloc(ctx, -1); }),
            "Forward mb 1: dpc_alloc: negative size -1");
  EXPECT_EQ(errorOf([&] { dpc_input(ctx, 0); }),
            "Forward mb 1: dpc_input: microbatch 1 has not been loaded");
  EXPECT_EQ(errorOf([&] { dpc_input(ctx, 1); }),
            "Forward mb 1: dpc_input: input 1 is not in the manifest's 1 "
            "inputs");
  EXPECT_EQ(errorOf([&] { dpc_labels(ctx); }),
            "Forward mb 1: dpc_labels: the manifest declares no labels for "
            "this stage");
  EXPECT_EQ(errorOf([&] { dpc_loss_scale(ctx); }),
            "Forward mb 1: dpc_loss_scale: the manifest's labels declare no "
            "ignore_index for this stage");
  EXPECT_EQ(errorOf([&] { dpc_sgd_step(ctx, 3, 0.1f, 0, 0); }),
            "Forward mb 1: dpc_sgd_step: called outside the optimizer "
            "segment");
  EXPECT_EQ(errorOf([&] { dpc_report_loss(ctx, nullptr); }),
            "Forward mb 1: dpc_report_loss: only the last stage reports the "
            "loss");
  EXPECT_EQ(errorOf([&] { dpc_report_output(ctx, nullptr); }),
            "Forward mb 1: dpc_report_output: the manifest declares no "
            "output for this stage");
  EXPECT_EQ(errorOf([&] { dpc_recv(ctx, 7); }),
            "Forward mb 1: dpc_recv: transfer tag 7 is not in the manifest's "
            "recvs");
  EXPECT_EQ(errorOf([&] { dpc_profile_end(ctx, 0); }),
            "Forward mb 1: dpc_profile_end: op 0 is not in the manifest's "
            "profile");
  EXPECT_NE(dpc_param_state(ctx, 3), nullptr);
  enter(Phase::Backward, 0);
  EXPECT_EQ(errorOf([&] { dpc_param_state(ctx, 3); }),
            "Backward mb 0: dpc_param_state: called outside the forward "
            "segment");
  EXPECT_EQ(errorOf([&] { dpc_restore(ctx, 0); }),
            "Backward mb 0: dpc_restore: stash key 0 ('x') holds nothing for "
            "this microbatch (never stashed, or already released)");
  enter(Phase::Optimizer, -1);
  EXPECT_EQ(errorOf([&] { dpc_adam_step(ctx, 3, 0.1f, 0.9f, 0.99f, 0, 0); }),
            "OptimizerStep: dpc_adam_step: the manifest's optimizer is sgd");
  EXPECT_EQ(errorOf([&] { dpc_sgd_step(ctx, 4, 0.1f, 0, 0); }),
            "OptimizerStep: dpc_sgd_step: parameter id 4 is not in the "
            "manifest");
  state.evaluating = true;
  enter(Phase::Forward, 0);
  EXPECT_EQ(errorOf([&] { dpc_grad_accumulate(ctx, 3, nullptr); }),
            "Forward mb 0 (evaluation): dpc_grad_accumulate: called during a "
            "forward-only pass");
}

TEST_F(AbiEntryPoints, ErrorsGoToTheFatalHandler) {
  std::string message;
  state.fatalHandler = [&](const std::string &m) {
    message = m;
    throw Error("handled");
  };
  enter(Phase::Backward, 1);
  EXPECT_EQ(errorOf([&] { dpc_restore(ctx, 5); }), "handled");
  EXPECT_EQ(message,
            "Backward mb 1: dpc_restore: stash key 5 is not in the manifest");
}

TEST_F(AbiEntryPoints, SendsBelongToTheRunningChunk) {
  float values[2] = {1, 2};
  enter(Phase::Forward, 0, /*chunk=*/0);
  EXPECT_EQ(errorOf([&] { dpc_send(ctx, 7, values); }),
            "Forward mb 0: dpc_send: transfer tag 7 belongs to stage 2, not "
            "to the running chunk's");
  EXPECT_EQ(errorOf([&] { dpc_send(ctx, 8, values); }),
            "Forward mb 0: dpc_send: transfer tag 8 is not in the manifest's "
            "sends");
  enter(Phase::Forward, 0, /*chunk=*/1);
  EXPECT_EQ(dpc_chunk(ctx), 1);
  dpc_send(ctx, 7, values);
  EXPECT_EQ(errorOf([&] { dpc_send(ctx, 7, values); }),
            "Forward mb 0: dpc_send: transfer tag 7 was already sent for "
            "this microbatch");
  EXPECT_EQ(state.transfers.leftoverInFlight(),
            "dpc_send stored act for mb 0 to stage 3 but the schedule never "
            "sent it");
}

TEST_F(AbiEntryPoints, StashesAreCopiesKeptPerMicrobatch) {
  float x[4] = {1, 2, 3, 4};
  enter(Phase::Forward, 0);
  dpc_stash(ctx, 0, x);
  x[0] = 5;
  enter(Phase::Forward, 1);
  dpc_stash(ctx, 0, x);
  EXPECT_EQ(state.memory.peakStashBytes, 32);
  EXPECT_EQ(errorOf([&] { dpc_stash(ctx, 0, x); }),
            "Forward mb 1: dpc_stash: stash key 0 ('x') was already stashed "
            "for this microbatch");
  enter(Phase::Backward, 0);
  EXPECT_EQ(static_cast<const float *>(dpc_restore(ctx, 0))[0], 1.0f);
  state.releaseMicrobatch(0, 0);
  EXPECT_EQ(state.stashes.bytes(), 16);
  enter(Phase::Backward, 1);
  EXPECT_EQ(static_cast<const float *>(dpc_restore(ctx, 0))[0], 5.0f);

  // Evaluation stashes nothing, and nothing may restore.
  state.evaluating = true;
  enter(Phase::Forward, 2);
  dpc_stash(ctx, 0, x);
  EXPECT_EQ(state.stashes.slots(), 1u);
  EXPECT_EQ(errorOf([&] { dpc_restore(ctx, 0); }),
            "Forward mb 2 (evaluation): dpc_restore: called during a "
            "forward-only pass");
}

TEST_F(AbiEntryPoints, ParametersAndScratch) {
  enter(Phase::Forward, 0);
  float *w = dpc_param_state(ctx, 3);
  w[0] = 2;
  w[1] = 3;
  EXPECT_EQ(dpc_param(ctx, 3)[1], 3.0f);
  float g[2] = {1, 1};
  dpc_grad_accumulate(ctx, 3, g);
  dpc_grad_accumulate(ctx, 3, g);
  enter(Phase::Optimizer, -1);
  dpc_sgd_step(ctx, 3, 0.5f, 0, 0);
  EXPECT_EQ(state.params.value(3), (std::vector<float>{1, 2}));
  enter(Phase::Backward, 0);
  void *p = dpc_alloc(ctx, 3);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % 64, 0u);
  EXPECT_EQ(dpc_bucket(ctx), 0);
  EXPECT_EQ(dpc_training(ctx), 1);
}

TEST_F(AbiEntryPoints, RandomKeysDependOnStepMicrobatchAndOp) {
  state.seed = 42;
  state.currentStep = 3;
  enter(Phase::Forward, 1);
  int64_t key = dpc_random_key(ctx, 0);
  // The key the dropout masks of existing runs were drawn with.
  EXPECT_EQ(key, 1392282768578128674);
  EXPECT_GE(key, 0);
  EXPECT_EQ(dpc_random_key(ctx, 0), key);
  EXPECT_NE(dpc_random_key(ctx, 1), key);
  enter(Phase::Backward, 1);
  EXPECT_EQ(dpc_random_key(ctx, 0), key); // the backward's mask is the same
  enter(Phase::Forward, 0);
  EXPECT_NE(dpc_random_key(ctx, 0), key);
  state.currentStep = 4;
  enter(Phase::Forward, 1);
  EXPECT_NE(dpc_random_key(ctx, 0), key);
  state.seed = 43;
  state.currentStep = 3;
  EXPECT_NE(dpc_random_key(ctx, 0), key);
  state.evaluating = true;
  EXPECT_EQ(dpc_random_key(ctx, 0), -1);
  EXPECT_EQ(dpc_training(ctx), 0);
}

} // namespace
