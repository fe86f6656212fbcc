//===- TinyModel.cpp - A hand-written "generated object" ------------------===//
//
// What `dpc compile` will emit for a two-layer perceptron, written by hand so
// that the executor, the rank main and the kernels can be tested end to end
// without the compiler: logits = relu(x W0^T) W1^T + b1, softmax
// cross-entropy scaled by 1 / (M * B), SGD with momentum and weight decay.
//
// Compiled three times: DPC_TINY_PART 0 and 1 are the two stages of a
// pipeline (the relu activation goes forward as transfer 0, its gradient
// back as transfer 1), 2 is the whole model on one stage, the reference the
// pipelines must match. Ids are global, as the compiler assigns them: params
// 0-2, stash keys 0-3; each stage's manifest lists the ones it uses.
//
// DPC_TINY_FAIL=restore makes stage 1 restore a stash key that does not
// exist, to test that one rank's error stops the job.
//
//===----------------------------------------------------------------------===//

#include "dpc/runtime/Abi.h"

#include <cstdlib>
#include <cstring>

namespace {

constexpr int64_t B = 8, M = 4, F = 64, H = 32, C = 5;
constexpr float kLr = 0.05f, kMomentum = 0.9f, kWeightDecay = 1e-3f;
constexpr int64_t kW0 = 0, kW1 = 1, kB1 = 2;                       // params
constexpr int64_t kInput = 0, kRelu = 1, kHidden = 2, kLogits = 3; // stashes
constexpr int64_t kAct = 0, kGrad = 1;                             // transfers

float *alloc(dpc_context *ctx, int64_t floats) {
  return static_cast<float *>(dpc_alloc(ctx, floats * 4));
}

[[maybe_unused]] const float *layer0Forward(dpc_context *ctx, const float *x) {
  float *z = alloc(ctx, B * H), *h = alloc(ctx, B * H);
  dpc_matmul(x, dpc_param(ctx, kW0), z, 1, B, H, F, 0, 1, 0, 0, 0);
  dpc_relu(z, h, B * H);
  dpc_stash(ctx, kInput, x);
  dpc_stash(ctx, kRelu, h);
  return h;
}

[[maybe_unused]] void layer1Forward(dpc_context *ctx, const float *h) {
  float *t = alloc(ctx, B * C), *logits = alloc(ctx, B * C);
  dpc_matmul(h, dpc_param(ctx, kW1), t, 1, B, C, H, 0, 1, 0, 0, 0);
  int64_t shape[2] = {B, C}, biasShape[2] = {1, C};
  dpc_binary(DPC_BINARY_ADD, t, shape, dpc_param(ctx, kB1), biasShape, logits,
             shape, 2);
  dpc_stash(ctx, kHidden, h);
  dpc_stash(ctx, kLogits, logits);
  float loss;
  dpc_softmax_cross_entropy(logits, dpc_labels(ctx), B, C, 1.0f / (M * B),
                            &loss);
  dpc_report_loss(ctx, &loss);
  dpc_report_output(ctx, logits);
}

[[maybe_unused]] const float *lossGrad(dpc_context *ctx) {
  if (const char *mode = std::getenv("DPC_TINY_FAIL"))
    if (std::strcmp(mode, "restore") == 0)
      dpc_restore(ctx, 99);
  const float *logits = static_cast<const float *>(dpc_restore(ctx, kLogits));
  float *d = alloc(ctx, B * C);
  dpc_softmax_cross_entropy_grad(logits, dpc_labels(ctx), B, C, 1.0f / (M * B),
                                 d);
  return d;
}

/// The input gradient of layer 1: what goes back to stage 0.
[[maybe_unused]] const float *layer1BackwardInput(dpc_context *ctx) {
  float *dh = alloc(ctx, B * H);
  dpc_matmul(lossGrad(ctx), dpc_param(ctx, kW1), dh, 1, B, H, C, 0, 0, 0, 0, 0);
  return dh;
}

[[maybe_unused]] void layer1BackwardWeight(dpc_context *ctx) {
  const float *dlogits = lossGrad(ctx);
  const float *h = static_cast<const float *>(dpc_restore(ctx, kHidden));
  float *dw = alloc(ctx, C * H), *db = alloc(ctx, C);
  dpc_matmul(dlogits, h, dw, 1, C, H, B, 1, 0, 0, 0, 0);
  int64_t shape[2] = {B, C}, biasShape[2] = {1, C};
  dpc_sum_to_shape(dlogits, shape, db, biasShape, 2, 1.0f);
  dpc_grad_accumulate(ctx, kW1, dw);
  dpc_grad_accumulate(ctx, kB1, db);
}

[[maybe_unused]] void layer0BackwardWeight(dpc_context *ctx, const float *dh) {
  const float *x = static_cast<const float *>(dpc_restore(ctx, kInput));
  const float *h = static_cast<const float *>(dpc_restore(ctx, kRelu));
  float *dz = alloc(ctx, B * H), *dw = alloc(ctx, H * F);
  dpc_relu_grad(dh, h, dz, B * H);
  dpc_matmul(dz, x, dw, 1, H, F, B, 1, 0, 0, 0, 0);
  dpc_grad_accumulate(ctx, kW0, dw);
}

} // namespace

extern "C" {

#if DPC_TINY_PART == 0

const char dpc_rank_manifest[] = R"({
  "format": "dpc-rank", "version": 1, "rank": 0, "stage": 0, "stages": 2,
  "schedule": "schedule.json", "weights": "weights/stage0.safetensors",
  "microbatch_size": 8,
  "inputs": [{"name": "input", "shape": [8, 1, 8, 8]}], "labels": null,
  "params": [{"id": 0, "name": "fc0.weight", "shape": [32, 64]}],
  "sends": [{"tag": 0, "peer_stage": 1, "what": "act", "bytes": 1024}],
  "recvs": [{"tag": 1, "peer_stage": 1, "what": "grad", "bytes": 1024}],
  "stashes": [{"key": 0, "name": "fc0.input", "bytes": 2048},
              {"key": 1, "name": "relu0", "bytes": 1024}],
  "output": null,
  "segments": ["forward", "backward", "backward_input", "backward_weight",
               "optimizer"]
})";

void dpc_segment_forward(dpc_context *ctx) {
  dpc_send(ctx, kAct,
           layer0Forward(ctx, static_cast<const float *>(dpc_input(ctx, 0))));
}
void dpc_segment_backward(dpc_context *ctx) {
  layer0BackwardWeight(ctx, static_cast<const float *>(dpc_recv(ctx, kGrad)));
}
void dpc_segment_backward_input(dpc_context *) {} // no earlier stage
void dpc_segment_backward_weight(dpc_context *ctx) {
  layer0BackwardWeight(ctx, static_cast<const float *>(dpc_recv(ctx, kGrad)));
}
void dpc_segment_optimizer(dpc_context *ctx) {
  dpc_sgd_step(ctx, kW0, kLr, kMomentum, kWeightDecay);
}

#elif DPC_TINY_PART == 1

const char dpc_rank_manifest[] = R"({
  "format": "dpc-rank", "version": 1, "rank": 1, "stage": 1, "stages": 2,
  "schedule": "schedule.json", "weights": "weights/stage1.safetensors",
  "microbatch_size": 8, "inputs": [], "labels": {"shape": [8]},
  "params": [{"id": 1, "name": "fc1.weight", "shape": [5, 32]},
             {"id": 2, "name": "fc1.bias", "shape": [5]}],
  "sends": [{"tag": 1, "peer_stage": 0, "what": "grad", "bytes": 1024}],
  "recvs": [{"tag": 0, "peer_stage": 0, "what": "act", "bytes": 1024}],
  "stashes": [{"key": 2, "name": "fc1.input", "bytes": 1024},
              {"key": 3, "name": "logits", "bytes": 160}],
  "output": {"shape": [8, 5]},
  "segments": ["forward", "backward", "backward_input", "backward_weight",
               "optimizer"]
})";

void dpc_segment_forward(dpc_context *ctx) {
  layer1Forward(ctx, static_cast<const float *>(dpc_recv(ctx, kAct)));
}
void dpc_segment_backward(dpc_context *ctx) {
  dpc_send(ctx, kGrad, layer1BackwardInput(ctx));
  layer1BackwardWeight(ctx);
}
void dpc_segment_backward_input(dpc_context *ctx) {
  dpc_send(ctx, kGrad, layer1BackwardInput(ctx));
}
void dpc_segment_backward_weight(dpc_context *ctx) {
  layer1BackwardWeight(ctx);
}
void dpc_segment_optimizer(dpc_context *ctx) {
  dpc_sgd_step(ctx, kW1, kLr, kMomentum, kWeightDecay);
  dpc_sgd_step(ctx, kB1, kLr, kMomentum, kWeightDecay);
}

#else // the whole model on one stage

const char dpc_rank_manifest[] = R"({
  "format": "dpc-rank", "version": 1, "rank": 0, "stage": 0, "stages": 1,
  "schedule": "schedule.json", "weights": "weights/stage0.safetensors",
  "microbatch_size": 8,
  "inputs": [{"name": "input", "shape": [8, 1, 8, 8]}],
  "labels": {"shape": [8]},
  "params": [{"id": 0, "name": "fc0.weight", "shape": [32, 64]},
             {"id": 1, "name": "fc1.weight", "shape": [5, 32]},
             {"id": 2, "name": "fc1.bias", "shape": [5]}],
  "sends": [], "recvs": [],
  "stashes": [{"key": 0, "name": "fc0.input", "bytes": 2048},
              {"key": 1, "name": "relu0", "bytes": 1024},
              {"key": 2, "name": "fc1.input", "bytes": 1024},
              {"key": 3, "name": "logits", "bytes": 160}],
  "output": {"shape": [8, 5]},
  "segments": ["forward", "backward", "backward_input", "backward_weight",
               "optimizer"]
})";

void dpc_segment_forward(dpc_context *ctx) {
  layer1Forward(
      ctx, layer0Forward(ctx, static_cast<const float *>(dpc_input(ctx, 0))));
}
void dpc_segment_backward(dpc_context *ctx) {
  const float *dh = layer1BackwardInput(ctx);
  layer1BackwardWeight(ctx);
  layer0BackwardWeight(ctx, dh);
}
// With one stage nothing waits for the input gradient: W does it all.
void dpc_segment_backward_input(dpc_context *) {}
void dpc_segment_backward_weight(dpc_context *ctx) {
  dpc_segment_backward(ctx);
}
void dpc_segment_optimizer(dpc_context *ctx) {
  dpc_sgd_step(ctx, kW0, kLr, kMomentum, kWeightDecay);
  dpc_sgd_step(ctx, kW1, kLr, kMomentum, kWeightDecay);
  dpc_sgd_step(ctx, kB1, kLr, kMomentum, kWeightDecay);
}

#endif

} // extern "C"
