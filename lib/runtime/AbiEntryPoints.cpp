//===- AbiEntryPoints.cpp - The C ABI functions of the context ------------===//
//
// What generated code calls (Abi.h). Each function checks its arguments
// against the manifest and the running segment and hands the work to the
// executor's units; a misuse (an id not in the manifest, a call from the
// wrong segment, a value sent twice) goes to the executor's fatal handler
// as "Backward mb 0: dpc_restore: stash key 7 is not in the manifest",
// because generated code has no unwind tables to throw through.
//
//===----------------------------------------------------------------------===//

#include "ExecutorImpl.h"

#include "dpc/runtime/Abi.h"
#include "dpc/runtime/ParamEpochs.h"

using dpc::runtime::AbiError;
using dpc::runtime::Boundary;
using dpc::runtime::Executor;
using dpc::runtime::ManifestStash;
using dpc::runtime::ManifestTransfer;
using dpc::runtime::markParamWritten;
using dpc::runtime::ParamState;
using dpc::runtime::Phase;

namespace {

Executor::Impl &state(dpc_context *ctx) {
  return *static_cast<Executor::Impl *>(ctx);
}

const ManifestStash &stashSpec(const Executor::Impl &s, int64_t key) {
  const ManifestStash *spec = s.manifest.findStash(key);
  if (!spec)
    throw AbiError("stash key " + std::to_string(key) +
                   " is not in the manifest");
  return *spec;
}

/// The running microbatch's loaded inputs and labels.
const Executor::Impl::Loaded &loadedOf(const Executor::Impl &s) {
  auto it = s.loaded.find({s.currentMb, s.currentChunk});
  static const Executor::Impl::Loaded none;
  return it == s.loaded.end() ? none : it->second;
}

/// dpc_random_key: (seed, step, microbatch, op) mixed by splitmix64's
/// finalizer, 63 bits.
int64_t randomKey(uint64_t seed, int64_t step, int64_t mb, int64_t op) {
  uint64_t h = seed;
  for (uint64_t part : {uint64_t(step), uint64_t(mb), uint64_t(op)}) {
    h += 0x9E3779B97F4A7C15ull + part;
    h = (h ^ (h >> 30)) * 0xBF58476D1CE4E5B9ull;
    h = (h ^ (h >> 27)) * 0x94D049BB133111EBull;
    h ^= h >> 31;
  }
  return int64_t(h >> 1);
}

} // namespace

extern "C" {

int64_t dpc_chunk(dpc_context *ctx) { return state(ctx).currentChunk; }

int64_t dpc_bucket(dpc_context *ctx) {
  Executor::Impl &s = state(ctx);
  return int64_t(s.shapeIndex(s.currentMb));
}

const void *dpc_input(dpc_context *ctx, int64_t index) {
  Executor::Impl &s = state(ctx);
  return s.guarded("dpc_input", [&] {
    s.requireSegment();
    if (index < 0 || index >= int64_t(s.manifest.inputs.size()))
      throw AbiError("input " + std::to_string(index) +
                     " is not in the manifest's " +
                     std::to_string(s.manifest.inputs.size()) + " inputs");
    const Executor::Impl::Loaded &l = loadedOf(s);
    if (size_t(index) >= l.inputs.size() || !l.inputs[size_t(index)])
      throw AbiError("microbatch " + std::to_string(s.currentMb) +
                     " has not been loaded");
    return static_cast<const void *>(l.inputs[size_t(index)].data());
  });
}

const int64_t *dpc_labels(dpc_context *ctx) {
  Executor::Impl &s = state(ctx);
  return s.guarded("dpc_labels", [&] {
    s.requireSegment();
    if (!s.manifest.labelsShape)
      throw AbiError("the manifest declares no labels for this stage");
    const Executor::Impl::Loaded &l = loadedOf(s);
    if (!l.labels)
      throw AbiError("microbatch " + std::to_string(s.currentMb) +
                     " has not been loaded");
    return reinterpret_cast<const int64_t *>(l.labels.data());
  });
}

float dpc_loss_scale(dpc_context *ctx) {
  Executor::Impl &s = state(ctx);
  return s.guarded("dpc_loss_scale", [&] {
    s.requireSegment();
    if (!s.manifest.ignoreIndex)
      throw AbiError(
          "the manifest's labels declare no ignore_index for this stage");
    if (s.evaluating)
      return s.evalLossScale;
    return s.lossScales.at(size_t(s.currentMb));
  });
}

void *dpc_alloc(dpc_context *ctx, int64_t bytes) {
  Executor::Impl &s = state(ctx);
  return s.guarded("dpc_alloc", [&] {
    s.requireSegment();
    if (bytes < 0)
      throw AbiError("negative size " + std::to_string(bytes));
    return s.scratch.alloc(size_t(bytes));
  });
}

const float *dpc_param(dpc_context *ctx, int64_t param) {
  Executor::Impl &s = state(ctx);
  return s.guarded("dpc_param", [&] { return s.params.served(param); });
}

int64_t dpc_training(dpc_context *ctx) { return !state(ctx).evaluating; }

int64_t dpc_random_key(dpc_context *ctx, int64_t op) {
  Executor::Impl &s = state(ctx);
  if (s.evaluating)
    return -1;
  return randomKey(s.seed, s.currentStep, s.currentMb, op);
}

float *dpc_param_state(dpc_context *ctx, int64_t param) {
  Executor::Impl &s = state(ctx);
  return s.guarded("dpc_param_state", [&] {
    if (s.phase != Phase::Forward)
      throw AbiError("called outside the forward segment");
    // The caller writes it next (a running statistic, which no kernel
    // derives anything from): a new epoch now is as good as after.
    float *values = s.params.get(param).value.floats();
    markParamWritten(values);
    return values;
  });
}

void dpc_grad_accumulate(dpc_context *ctx, int64_t param, const float *grad) {
  Executor::Impl &s = state(ctx);
  s.guarded("dpc_grad_accumulate", [&] {
    s.requireSegment();
    ParamState &p = s.params.get(param);
    if (s.evaluating)
      throw AbiError("called during a forward-only pass");
    s.params.accumulate(p, grad);
  });
}

float *dpc_grad_accumulator(dpc_context *ctx, int64_t param) {
  Executor::Impl &s = state(ctx);
  return s.guarded("dpc_grad_accumulator", [&] {
    s.requireSegment();
    if (s.evaluating)
      throw AbiError("called during a forward-only pass");
    return s.params.get(param).grad.floats();
  });
}

void dpc_sgd_step(dpc_context *ctx, int64_t param, float lr, float momentum,
                  float weight_decay) {
  Executor::Impl &s = state(ctx);
  s.guarded("dpc_sgd_step", [&] {
    if (s.phase != Phase::Optimizer)
      throw AbiError("called outside the optimizer segment");
    s.params.sgdStep(param, lr, momentum, weight_decay);
  });
}

void dpc_adam_step(dpc_context *ctx, int64_t param, float lr, float beta1,
                   float beta2, float eps, float weight_decay) {
  Executor::Impl &s = state(ctx);
  s.guarded("dpc_adam_step", [&] {
    if (s.phase != Phase::Optimizer)
      throw AbiError("called outside the optimizer segment");
    s.params.adamStep(param, lr, beta1, beta2, eps, weight_decay);
  });
}

void dpc_send(dpc_context *ctx, int64_t tag, const void *data) {
  Executor::Impl &s = state(ctx);
  s.guarded("dpc_send", [&] {
    s.requireSegment();
    const ManifestTransfer *t = s.manifest.findSend(tag);
    if (!t)
      throw AbiError("transfer tag " + std::to_string(tag) +
                     " is not in the manifest's sends");
    Boundary b = boundaryOf(*t);
    if (b.stage != s.manifest.virtualStage(s.currentChunk))
      throw AbiError("transfer tag " + std::to_string(tag) +
                     " belongs to stage " + std::to_string(b.stage) +
                     ", not to the running chunk's");
    s.transfers.pack(s.shapesOf(s.currentMb).sendLayouts.at(b), b, s.currentMb,
                     tag, data);
  });
}

const void *dpc_recv(dpc_context *ctx, int64_t tag) {
  Executor::Impl &s = state(ctx);
  return s.guarded("dpc_recv", [&] {
    s.requireSegment();
    const ManifestTransfer *t = s.manifest.findRecv(tag);
    if (!t)
      throw AbiError("transfer tag " + std::to_string(tag) +
                     " is not in the manifest's recvs");
    return s.transfers.unpacked(s.shapesOf(s.currentMb).recvLayouts,
                                boundaryOf(*t), s.currentMb, tag);
  });
}

void dpc_stash(dpc_context *ctx, int64_t key, const void *data) {
  Executor::Impl &s = state(ctx);
  s.guarded("dpc_stash", [&] {
    s.requireSegment();
    const ManifestStash &spec = stashSpec(s, key);
    if (s.evaluating)
      return; // nothing runs backward
    s.stashes.stash(spec, s.currentMb,
                    s.shapesOf(s.currentMb).stashBytes.at(key), data);
    s.memory.peakStashBytes = s.stashes.peakBytes();
  });
}

const void *dpc_restore(dpc_context *ctx, int64_t key) {
  Executor::Impl &s = state(ctx);
  return s.guarded("dpc_restore", [&] {
    s.requireSegment();
    const ManifestStash &spec = stashSpec(s, key);
    if (s.evaluating)
      throw AbiError("called during a forward-only pass");
    return s.stashes.restore(spec, s.currentMb);
  });
}

void dpc_report_loss(dpc_context *ctx, const float *loss) {
  Executor::Impl &s = state(ctx);
  s.guarded("dpc_report_loss", [&] {
    s.requireSegment();
    if (!s.manifest.isLastStage())
      throw AbiError("only the last stage reports the loss");
    float value = 0;
    s.device.copyToHost(&value, loss, sizeof value);
    if (s.evaluating) {
      s.eval.reportedLoss += value;
      return;
    }
    std::optional<double> &reported = s.losses[size_t(s.currentMb)];
    if (reported)
      throw AbiError("the loss of this microbatch was already reported");
    reported = value;
  });
}

void dpc_report_output(dpc_context *ctx, const float *output) {
  Executor::Impl &s = state(ctx);
  s.guarded("dpc_report_output", [&] {
    s.requireSegment();
    if (!s.manifest.outputShape)
      throw AbiError("the manifest declares no output for this stage");
    s.scoreOutput(output);
  });
}

void dpc_profile_begin(dpc_context *ctx, int64_t op) {
  Executor::Impl &s = state(ctx);
  double now = Executor::nowMs();
  s.guarded("dpc_profile_begin", [&] { s.profile.begin(op, now); });
}

void dpc_profile_end(dpc_context *ctx, int64_t op) {
  Executor::Impl &s = state(ctx);
  double now = Executor::nowMs();
  s.guarded("dpc_profile_end", [&] { s.profile.end(op, now); });
}

} // extern "C"
