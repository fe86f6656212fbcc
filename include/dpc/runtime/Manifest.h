//===- Manifest.h - What a rank's generated object declares -----*- C++ -*-===//
//
// The generated object of every rank carries `dpc_rank_manifest`, a JSON
// document (format "dpc-rank", docs/RUNTIME.md) saying which stage it is,
// where its schedule and weights are, and the ids and sizes behind every
// integer the segment functions pass to the runtime: parameters, transfers
// and stash keys. The executor sizes its buffers from it and checks every
// call of the generated code against it, so a compiler bug shows up as an
// error naming the id instead of as memory corruption.
//
// This is the manifest's one owner: the compiler (passes/LowerToRuntime.cpp,
// dpc compile --seq-buckets) fills a RankManifest and writes it with
// writeManifest, the runtime reads it back with parseManifest.
//
//===----------------------------------------------------------------------===//

#ifndef DPC_RUNTIME_MANIFEST_H
#define DPC_RUNTIME_MANIFEST_H

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace dpc::runtime {

struct ManifestTensor {
  std::string name;
  std::vector<int64_t> shape;
  /// int64 elements (token ids; "dtype": "i64") rather than float32
  /// ("f32", the default).
  bool integer = false;
  int64_t elements() const;
  int64_t bytes() const { return elements() * (integer ? 8 : 4); }
};

struct ManifestParam {
  int64_t id = 0;
  std::string name;
  std::vector<int64_t> shape;
  int64_t elements() const;
};

enum class TransferKind { Activation, Gradient };

/// One tensor crossing a stage boundary; `tag` is the compiler's transfer id,
/// the same on the sending and the receiving stage.
struct ManifestTransfer {
  int64_t tag = 0;
  /// The (virtual) stage of this rank the transfer belongs to, and the one
  /// at the other end.
  int64_t stage = 0;
  int64_t peerStage = 0;
  TransferKind what = TransferKind::Activation;
  /// The tensor's bytes in the generated code's buffers.
  int64_t bytes = 0;
  /// "wire": "bf16": an f32 tensor that travels as bf16 (half the bytes),
  /// packed on send and widened back to f32 on receive.
  bool bf16 = false;
  int64_t wireBytes() const { return bf16 ? bytes / 2 : bytes; }
};

struct ManifestStash {
  int64_t key = 0;
  std::string name;
  /// The (virtual) stage whose forward stashes it.
  int64_t stage = 0;
  int64_t bytes = 0;
};

/// An op a profiling build times: the model node it belongs to and whether
/// it is forward or backward work. A fused region (nn.fused) is one call for
/// the nodes of its ops: it has an entry per node, each timing the whole
/// call, and `share` is the part of the call's time that is that node's.
struct ManifestProfileOp {
  int64_t id = 0;
  std::string node;
  std::string phase;
  double share = 1;
};

/// The optimizer of a training build's updates, which decides the state the
/// runtime keeps beside each parameter. AdamW keeps Adam's state; its
/// weight decay is decoupled from the gradient (torch.optim.AdamW).
enum class Optimizer { Sgd, Adam, AdamW };

/// "sgd" / "adam" / "adamw".
const char *optimizerName(Optimizer optimizer);
/// The optimizer's per-parameter state tensors, each of the parameter's
/// shape, by the name a checkpoint stores them under ("NAME.param"): SGD's
/// "momentum", Adam's and AdamW's "exp_avg" and "exp_avg_sq".
const std::vector<std::string> &optimizerStateNames(Optimizer optimizer);
/// Whether `tensor` of a checkpoint is optimizer state of some optimizer
/// rather than a parameter.
bool isOptimizerState(const std::string &tensor);

/// What one microbatch of a bucket costs on one pipeline stage: the stage
/// info build-schedule computed for that bucket's shapes.
struct BucketStageCost {
  double forward = 0;
  double backwardInput = 0;
  double backwardWeight = 0;
  int64_t activationBytes = 0;
  int64_t outputBytes = 0;
};

/// One shape bucket of a variable-length build (`dpc compile
/// --seq-buckets`): the generated code specialised to microbatches of
/// `batch` sequences padded to `length` tokens, and every size that follows
/// from that shape. Transfer tags and stash keys are the top level's; only
/// their bytes differ.
struct ManifestBucket {
  int64_t batch = 1;
  int64_t length = 1;
  std::vector<ManifestTensor> inputs;
  std::optional<std::vector<int64_t>> labelsShape;
  std::optional<std::vector<int64_t>> outputShape;
  std::vector<ManifestTransfer> sends;
  std::vector<ManifestTransfer> recvs;
  std::vector<ManifestStash> stashes;
  /// One per virtual stage of the pipeline, the same on every rank.
  std::vector<BucketStageCost> stageCosts;
};

struct RankManifest {
  int rank = 0;
  /// The rank's stage and the pipeline's ranks. With model chunks
  /// (interleaved schedules) chunk c of the rank is virtual stage
  /// `stage + c * stages`.
  int stage = 0;
  int stages = 1;
  int chunks = 1;
  /// Relative to the directory of the executable.
  std::string schedule;
  std::string weights;
  int64_t microbatchSize = 1;
  std::vector<ManifestTensor> inputs;
  std::optional<std::vector<int64_t>> labelsShape;
  /// "labels": {"dtype": "f32"}: float targets of the output's shape (--loss
  /// mse) rather than int64 class ids ("i64", the default).
  bool floatLabels = false;
  /// "labels": {"ignore_index": N}: the loss leaves out labels N and takes
  /// its scale from the step's count of the others (dpc_loss_scale).
  std::optional<int64_t> ignoreIndex;
  std::vector<ManifestParam> params;
  std::vector<ManifestTransfer> sends;
  std::vector<ManifestTransfer> recvs;
  std::vector<ManifestStash> stashes;
  std::optional<std::vector<int64_t>> outputShape;
  /// A forward-only build (`dpc compile --inference`): the ranks write the
  /// model's outputs for their data instead of training.
  bool inference = false;
  /// "optimizer"; SGD when absent.
  Optimizer optimizer = Optimizer::Sgd;
  /// Whether "optimizer" is present: a stage that updates no parameter
  /// names none.
  bool namesOptimizer = false;
  /// "precision": "bf16" (dpc compile --precision bf16): the kernels read
  /// bf16 inputs; "fp32" or absent otherwise.
  bool bf16 = false;
  std::vector<std::string> segments;
  /// Empty unless the object was built for `dpc profile`.
  std::vector<ManifestProfileOp> profile;
  /// "buckets": every shape the generated code was specialised to, sorted
  /// by (length, batch); empty for a fixed-shape build. The top-level
  /// fields above describe bucket `topBucket` (microbatch_size sequences of
  /// the longest length), which fixed-size work (evaluation) runs in.
  std::vector<ManifestBucket> buckets;
  int topBucket = -1;

  int numVirtualStages() const { return stages * chunks; }
  int virtualStage(int chunk) const { return stage + chunk * stages; }
  /// The rank that holds virtual stage 0, and the one that holds the last.
  bool isFirstStage() const { return stage == 0; }
  bool isLastStage() const { return stage == stages - 1; }
  bool hasSegment(const std::string &name) const;
  /// nullptr when the id is not in the manifest.
  const ManifestParam *findParam(int64_t id) const;
  const ManifestTransfer *findSend(int64_t tag) const;
  const ManifestTransfer *findRecv(int64_t tag) const;
  const ManifestStash *findStash(int64_t key) const;
};

/// "act" / "grad".
const char *transferKindName(TransferKind kind);

/// Parses and validates a manifest; `name` (e.g. the executable's path) opens
/// every error message. Throws Error naming the offending field, e.g.
/// "rank0: manifest: params[2].shape: expected an array of positive integers".
RankManifest parseManifest(const std::string &text, const std::string &name);

/// The manifest as compact JSON with sorted keys, what parseManifest reads
/// back into an equal RankManifest. Fields that are absent by default stay
/// absent: "optimizer" unless namesOptimizer, "precision" unless bf16,
/// "inference" unless true, "profile" and "buckets" when empty; "weights"
/// is null when empty.
std::string writeManifest(const RankManifest &manifest);

} // namespace dpc::runtime

#endif // DPC_RUNTIME_MANIFEST_H
