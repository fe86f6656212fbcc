//===- Schedule.h - Per-rank pipeline instruction streams -------*- C++ -*-===//
//
// The data the schedule builder produces, the verifier checks, the simulator
// times and the runtime executor interprets: one instruction stream per rank.
// Everything here is plain data with no MLIR types so that the compiler pass,
// the runtime and the `dpc-schedule` tool share one definition. The JSON form
// (schedule.json) is described in docs/SCHEDULES.md.
//
//===----------------------------------------------------------------------===//

#ifndef DPC_SCHEDULE_SCHEDULE_H
#define DPC_SCHEDULE_SCHEDULE_H

#include <cstdint>
#include <string>
#include <vector>

namespace dpc::schedule {

enum class ScheduleKind {
  GPipe,
  OneFOneB,
  PipeDream,
  Interleaved,
  ZeroBubbleH1,
  /// Zero bubble with the activations of up to 2p microbatches per rank,
  /// ordered from the stages' costs (Builder.cpp).
  ZeroBubble2P,
  /// A hand-written or externally produced stream: only the structural,
  /// deadlock and memory checks apply, not the per-kind update counts.
  Custom,
};

/// "gpipe", "1f1b", "pipedream", "interleaved", "zb-h1", "zb-2p",
/// "custom".
const char *kindName(ScheduleKind kind);
/// Parses a kind name; returns false for an unknown one.
bool parseKind(const std::string &name, ScheduleKind &kind);
/// Synchronous kinds update once per minibatch; pipedream after every
/// backward.
bool isSynchronous(ScheduleKind kind);
/// Whether the kind splits each backward into BackwardInput and a deferred
/// BackwardWeight (zb-h1, zb-2p).
bool splitsBackward(ScheduleKind kind);

/// Who takes a kind by name, a column of the kinds' table (Schedule.cpp):
/// the builder builds every kind but custom (dpc compile, dpc-schedule
/// build); the planner prices gpipe, 1f1b and pipedream (dpc plan).
enum class KindUse { Build, Plan };
/// The kinds `use` takes, in the table's order.
std::vector<ScheduleKind> kindsFor(KindUse use);
/// Whether `use` takes `kind`.
bool takes(KindUse use, ScheduleKind kind);
/// The kinds' names for a message: "gpipe, 1f1b or pipedream".
std::string joinKindNames(const std::vector<ScheduleKind> &kinds);

/// How a replicated stage's AllReduce combines its replicas' gradients.
enum class ReduceMode {
  /// Every replica's gradient of the step, summed over all of them; the
  /// replicas wait for each other.
  AllReduce,
  /// Partial reduce (SD-Pipe's straggler tolerance): replica 0 sums the
  /// gradients that are ready, a late replica joins a later round with a
  /// gradient at most kPartialReduceStaleness steps old and adopts replica
  /// 0's weights. Only a job of one replicated stage (docs/RUNTIME.md).
  PartialReduce,
};

/// "allreduce", "preduce".
const char *reduceName(ReduceMode mode);
bool parseReduce(const std::string &name, ReduceMode &mode);

/// Partial reduce: how many rounds old a gradient may be when it is applied.
constexpr int kPartialReduceStaleness = 1;

enum class Op : uint8_t {
  /// Read microbatch `mb` (inputs on the first stage, labels on the last).
  LoadMicrobatch,
  Forward,
  /// Input gradient and weight gradient in one instruction: what every kind
  /// but zb-h1 emits, so that their streams stay short.
  Backward,
  /// Input gradient only (zero-bubble "B").
  BackwardInput,
  /// Weight gradient only (zero-bubble "W"); needs the stash and the output
  /// gradient kept by the matching BackwardInput.
  BackwardWeight,
  SendStart,
  SendFinish,
  RecvStart,
  RecvFinish,
  /// Gradient all-reduce across the replicas of a stage (hybrid data
  /// parallelism); emitted only when a stage has replicas.
  AllReduce,
  OptimizerStep,
  /// Keep the forward's saved tensors of (mb, chunk) for its backward.
  Stash,
  /// Make the stash of (mb, chunk) the backward's input.
  Restore,
  /// Release the stash of (mb, chunk).
  Free,
  /// PipeDream: copy the current weights of `chunk` as version `version`
  /// before an update overwrites them while a microbatch still needs them.
  StashWeights,
  /// PipeDream: run the next Forward/Backward with weight version `version`.
  RestoreWeights,
  FreeWeights,
};

/// What a transfer carries.
enum class Payload : uint8_t { None, Activation, Gradient };

const char *opName(Op op);     // "Forward"
const char *opJsonName(Op op); // "forward"
bool parseOpJsonName(const std::string &name, Op &op);
const char *payloadName(Payload p); // "act", "grad"
bool isCompute(Op op);
bool isTransfer(Op op);

struct Instruction {
  Op op = Op::Forward;
  /// Microbatch, or -1 (OptimizerStep, AllReduce, weight versions).
  int32_t mb = -1;
  /// Model chunk on this rank (interleaved has several; 0 otherwise).
  int32_t chunk = 0;
  /// Transfers: the other rank.
  int32_t peer = -1;
  /// Transfers: the message tag; a send and a recv match on (peer, tag).
  int32_t tag = -1;
  Payload what = Payload::None;
  /// Transfers: message size; Stash/StashWeights: bytes kept.
  int64_t bytes = 0;
  /// PipeDream: the weight version a Forward/Backward uses, or the version
  /// StashWeights/RestoreWeights/FreeWeights name; -1 when not versioned.
  int32_t version = -1;

  static Instruction compute(Op op, int mb, int chunk) {
    Instruction inst;
    inst.op = op;
    inst.mb = mb;
    inst.chunk = chunk;
    return inst;
  }
  static Instruction transfer(Op op, Payload what, int mb, int chunk, int peer,
                              int tag, int64_t bytes) {
    Instruction inst = compute(op, mb, chunk);
    inst.what = what;
    inst.peer = peer;
    inst.tag = tag;
    inst.bytes = bytes;
    return inst;
  }

  bool operator==(const Instruction &other) const;
  bool operator!=(const Instruction &other) const { return !(*this == other); }
};

/// "RecvFinish grad mb 3 from rank 2", "Forward mb 4 chunk 1", "OptimizerStep".
/// The chunk is shown only for schedules with more than one.
std::string describe(const Instruction &inst, int numChunks = 1);

/// One virtual stage (a rank's model chunk): its costs for the simulator and
/// its sizes for the verifier's memory model. Costs are in milliseconds.
struct StageInfo {
  double forward = 1.0;
  double backwardInput = 1.0;
  double backwardWeight = 1.0;
  /// Resident for the whole step: weights, gradients and optimizer state.
  int64_t paramBytes = 0;
  /// One extra weight version (PipeDream's StashWeights).
  int64_t weightBytes = 0;
  /// Saved tensors of one microbatch (its Stash slot, freed by Free).
  int64_t activationBytes = 0;
  /// Of activationBytes, what a split backward's input half saves for its
  /// weight half (zero-bubble kinds): filled by BackwardInput, not by the
  /// Forward.
  int64_t backwardStashBytes = 0;
  /// The activation sent to the next stage (and its gradient sent back).
  int64_t outputBytes = 0;
  /// The data one microbatch loads on this stage (the inputs on the first,
  /// the labels on the last), held from its LoadMicrobatch until its
  /// backward (Backward, or BackwardWeight) has run.
  int64_t inputBytes = 0;

  /// Milliseconds a compute op (Forward, Backward, BackwardInput,
  /// BackwardWeight) takes on this stage; 0 for any other op.
  double computeMs(Op op) const;
};

/// The per-rank instruction streams of one training step (a minibatch of
/// `microbatches` microbatches; for pipedream, a window of that many).
///
/// Without replicas rank r runs pipeline stage r. With replicas (hybrid data
/// parallelism) stage s runs on `replicas[s]` consecutive ranks, and replica
/// j of the stage trains the microbatches mb with mb % replicas[s] == j; the
/// replicas sum their weight gradients with an AllReduce before the update.
struct Schedule {
  ScheduleKind kind = ScheduleKind::Custom;
  int ranks = 1;
  int microbatches = 1;
  /// Model chunks per rank (interleaved's virtual stages); virtual stage
  /// `chunk * numStages() + stage` lives on the ranks of `stage` (Megatron's
  /// placement).
  int chunks = 1;
  /// Ranks per pipeline stage; empty when every stage has one rank.
  std::vector<int> replicas;
  /// How replicated stages reduce their gradients.
  ReduceMode reduce = ReduceMode::AllReduce;
  /// ZeRO stage 1 (`dpc compile --shard-optimizer`): the replicas of a
  /// replicated stage split its optimizer state and update, so that each
  /// keeps 1/R of the state (StageInfo::paramBytes counts that share);
  /// stages of one rank are not split.
  bool shardOptimizer = false;
  bool verticalSync = false;
  /// Milliseconds a message between ranks takes once both sides have
  /// started it, as `dpc profile` measured it (0: not measured); simulating
  /// the schedule charges it to every transfer (SimulateOptions::latency).
  double messageLatency = 0;
  /// The cores the build predicted the ranks to share on one machine
  /// (`dpc compile --cores`; 0: a core per rank), and the wake-up latency
  /// `dpc profile` measured for its ranks on them (0: not measured); see
  /// SimulateOptions.
  int cores = 0;
  double wakeLatency = 0;
  /// numVirtualStages() entries, indexed by virtual stage.
  std::vector<StageInfo> stages;
  /// Microbatches of different sizes (variable-length sequences, planned per
  /// iteration by planner::planMicrobatches): per microbatch, the factor on
  /// every stage's compute costs and the one on the bytes it sends. Empty
  /// means 1 for each. In-process only, not written to schedule.json.
  std::vector<double> microbatchCompute, microbatchBytes;
  std::vector<std::vector<Instruction>> programs;

  /// Pipeline stages: `ranks` without replicas.
  int numStages() const {
    return replicas.empty() ? ranks : static_cast<int>(replicas.size());
  }
  bool hasReplicas() const;
  int replicasOf(int stage) const {
    return replicas.empty() ? 1 : replicas[stage];
  }
  int firstRankOf(int stage) const;
  int stageOf(int rank) const;
  /// Which of its stage's replicas `rank` is (0 without replicas).
  int replicaOf(int rank) const { return rank - firstRankOf(stageOf(rank)); }
  /// Whether `rank` trains microbatch `mb` (its share of the minibatch).
  bool runs(int rank, int mb) const {
    return mb % replicasOf(stageOf(rank)) == replicaOf(rank);
  }

  int numVirtualStages() const { return numStages() * chunks; }
  int virtualStage(int rank, int chunk) const {
    return chunk * numStages() + stageOf(rank);
  }
  /// The rank that runs microbatch `mb` of virtual stage `vstage`.
  int rankOf(int vstage, int mb) const {
    int stage = vstage % numStages();
    return firstRankOf(stage) + mb % replicasOf(stage);
  }
  int chunkOf(int vstage) const { return vstage / numStages(); }
  const StageInfo &stage(int rank, int chunk) const {
    return stages[virtualStage(rank, chunk)];
  }
  size_t numInstructions() const;
  /// Checks `ranks`, `chunks` and `replicas` against each other; returns ""
  /// or what is wrong.
  std::string checkLayout() const;
};

/// The tag of the message crossing the boundary between virtual stages
/// `vstage` and `vstage + 1`, forward (activation) or backward (gradient).
/// Unique per message within a step, so matching never depends on order.
int32_t messageTag(Payload what, int mb, int vstage, int numVirtualStages);

/// Schedule message tags are below this; the executor keeps the tags from
/// here to 32767 (the largest MPI guarantees) for its own messages.
constexpr int32_t kScheduleTagLimit = 30000;

/// The most microbatches a schedule over `numVirtualStages` virtual stages
/// can tag: messageTag gives each microbatch two tags per virtual stage.
constexpr int maxMicrobatches(int numVirtualStages) {
  return (kScheduleTagLimit - 1) / (2 * numVirtualStages);
}

/// The largest message the runtime sends: MPI counts bytes in an int.
constexpr int64_t kMaxMessageBytes = 2147483647;

/// schedule.json text, and back. Parsing throws dpc::Error saying what is
/// wrong (the file's reader names the file).
std::string toJson(const Schedule &schedule, int indent = -1);
Schedule fromJson(const std::string &text);
Schedule readScheduleFile(const std::string &path);
/// The "stages" array of a JSON object, in order, with schedule.json's
/// stage fields (forward_ms, ..., input_bytes): a dpc-schedule cost file's.
/// Throws dpc::Error saying what is wrong.
std::vector<StageInfo> stagesFromJson(const std::string &text);

} // namespace dpc::schedule

#endif // DPC_SCHEDULE_SCHEDULE_H
