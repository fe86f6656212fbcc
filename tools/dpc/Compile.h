//===- Compile.h - The compilation behind dpc compile -----------*- C++ -*-===//
//
// `dpc compile` and `dpc profile` (which compiles a 1-stage timing build)
// share the whole pipeline: options in, output directory out.
//
//===----------------------------------------------------------------------===//

#ifndef DPC_TOOLS_DPC_COMPILE_H
#define DPC_TOOLS_DPC_COMPILE_H

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace dpc::tools {

struct CompileOptions {
  std::string model;
  std::string outDir = "out";
  int64_t stages = 0;
  int64_t devices = 0;
  /// Ranks per stage, when the user pins hybrid data parallelism.
  std::vector<int64_t> replicas;
  int64_t microbatches = 4;
  int64_t microbatchSize = 0;
  std::string schedule = "1f1b";
  int64_t virtualStages = 1;
  bool verticalSync = false;
  /// How the replicas reduce: "allreduce" or "preduce".
  std::string reduce = "allreduce";
  /// ZeRO stage 1: the replicas of a replicated stage split its optimizer
  /// state and update, and all-gather the updated weights.
  bool shardOptimizer = false;
  std::string target = "cpu";
  /// "fp32", or "bf16": convolutions and matmuls read bf16 inputs and
  /// tensors cross stages as bf16; weights and optimizer state stay f32.
  std::string precision = "fp32";
  /// "on": fuse-elementwise groups chains of elementwise ops into loops
  /// generated in the rank object; "off": one runtime call per op. dpc
  /// compile's default is on for the CPU target, off for CUDA (the loops
  /// run on the host).
  std::string fusion = "off";
  /// How convolutions run (select-conv-algorithm): "auto" (Winograd where
  /// it pays, dpc compile's default for the CPU target), "winograd" (where
  /// it applies) or "direct" (the default for CUDA, whose kernels are
  /// cuDNN's own choice).
  std::string convAlgorithm = "direct";
  /// "blocked": propagate-layouts keeps activations channel-blocked between
  /// convolutions (dpc compile's default for the CPU target); "plain": every
  /// kernel reads NCHW (CUDA's only layout).
  std::string activationLayout = "plain";
  std::string loss = "softmax-cross-entropy";
  /// The logits' class dimension for softmax-cross-entropy: -1 (the last),
  /// or 1 for per-pixel logits [N, C, H, W] (torch's CrossEntropyLoss).
  int64_t classAxis = -1;
  /// Rows with this label are left out of softmax-cross-entropy and of the
  /// mean (torch's ignore_index), which the runtime then scales per step.
  std::optional<int64_t> ignoreIndex;
  std::string optimizer = "sgd";
  double lr = 0.01;
  double momentum = 0.0;
  /// Adam's moment decays and denominator term (torch.optim.Adam's).
  double beta1 = 0.9, beta2 = 0.999;
  double eps = 1e-8;
  double weightDecay = 0.0;
  /// softmax-cross-entropy's label smoothing (torch's label_smoothing).
  double labelSmoothing = 0.0;
  /// Comma-separated glob patterns of parameter names without weight decay.
  std::string noDecay;
  double memoryLimit = 0;
  /// Activation recomputation: "none", "all" (every stage keeps only its
  /// inputs per microbatch in flight and recomputes its forward in the
  /// backward), or "auto" (the stages over `memoryLimit` without it).
  std::string recompute = "none";
  /// The cores the ranks share on the machine they run on, which the
  /// schedule's prediction (and --schedule auto's choice) shares among
  /// them when fewer than the ranks; 0: a core per rank. dpc compile's
  /// default is this machine's count for the CPU target on one machine.
  int64_t cores = 0;
  double bandwidth = 1e9;
  /// A cluster description to plan on instead of `devices` equal ones.
  std::string cluster;
  std::string profile;
  std::string emit = "exe";
  /// Sequence lengths of the shape buckets (`--seq-buckets`, ascending):
  /// every rank holds the step's code for each (batch, length) bucket under
  /// `bucketTokens` tokens per microbatch (0: microbatch size x the longest).
  std::vector<int64_t> seqBuckets;
  int64_t bucketTokens = 0;
  /// Forward only: no loss, gradients or optimizer; the ranks write the
  /// model's outputs for their data (`dpc run --predictions`).
  bool inference = false;
  /// The command line's options less MODEL and -o, which OUT/compile.json
  /// records so that `dpc run --adapt` can compile the model again for
  /// another layout (empty: no record, as for `dpc profile`'s builds).
  std::vector<std::string> recordedOptions;
  /// Internal, for `dpc profile`: time every kernel call of the rank
  /// executables, and write the planner's graph of the model here.
  bool profileBuild = false;
  std::string graphOutput;
  /// Internal, for `dpc profile --seq-buckets`: the sequence length a
  /// one-shape build binds the token input's second dimension to (0: none).
  int64_t sequenceLength = 0;
};

/// The cores of this machine that are online (0 when unknown): dpc
/// compile's default --cores.
int64_t machineCores();

/// Compiles `options.model` into `options.outDir`; prints diagnostics and
/// returns the exit code (0, 1, or 2 for bad input).
int compileModel(const CompileOptions &options);

} // namespace dpc::tools

#endif // DPC_TOOLS_DPC_COMPILE_H
