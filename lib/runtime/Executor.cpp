//===- Executor.cpp - Interpreting a rank's instruction stream ------------===//
//
// Transfers. All tensors one schedule message carries (every manifest send of
// this rank with the message's payload kind and peer) travel as one MPI
// message, packed in ascending transfer-tag order at 64-byte aligned offsets.
// Both ends compute the same layout from their manifests, so the MPI tag is
// exactly the schedule's tag, which docs/SCHEDULES.md makes unique per
// message within a step; the generated code's dpc_send copies straight into
// the pack and dpc_recv returns a pointer into the received one.
//
// Lifetimes, per microbatch: loaded inputs and labels, received buffers and
// stash slots live until the microbatch's backward (Backward, or
// BackwardWeight for zero-bubble schedules) has finished, so the backward can
// still read labels and received activations; a send pack lives from the
// first dpc_send into it until its SendFinish. The end of a step checks that
// nothing is left over.
//
//===----------------------------------------------------------------------===//

#include "dpc/runtime/Executor.h"

#include "dpc/runtime/StepPlanner.h"

#include "dpc/runtime/Bf16.h"
#include "dpc/runtime/Error.h"
#include "dpc/runtime/Heartbeat.h"
#include "dpc/schedule/Verifier.h"
#include "dpc/support/CommandLine.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <map>
#include <numeric>
#include <optional>
#include <thread>
#include <tuple>
#include <utility>

#include <nlohmann/json.hpp>

using dpc::schedule::Instruction;
using dpc::schedule::Op;
using dpc::schedule::Payload;

// The context handed to generated code is the executor's state.
struct dpc_context {};

namespace dpc::runtime {

namespace {

constexpr size_t kAlign = 64;

size_t roundUp(size_t n) { return (n + kAlign - 1) / kAlign * kAlign; }

int64_t product(const std::vector<int64_t> &shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

/// Buffers of recurring sizes (transfer packs, stash slots, microbatch data)
/// are recycled: every microbatch of every step asks for the same sizes.
class BufferPool {
public:
  explicit BufferPool(Device &device) : device(device) {}
  ~BufferPool() {
    for (auto &[size, p] : freeList)
      device.deallocate(p);
  }
  void *get(size_t bytes) {
    bytes = roundUp(std::max<size_t>(bytes, 1));
    auto it = freeList.find(bytes);
    if (it == freeList.end())
      return device.allocate(bytes);
    void *p = it->second;
    freeList.erase(it);
    return p;
  }
  void put(void *p, size_t bytes) {
    freeList.emplace(roundUp(std::max<size_t>(bytes, 1)), p);
  }

private:
  Device &device;
  std::multimap<size_t, void *> freeList;
};

class Buffer {
public:
  Buffer() = default;
  Buffer(BufferPool &pool, size_t bytes)
      : pool(&pool), ptr(static_cast<uint8_t *>(pool.get(bytes))),
        bytes(bytes) {}
  Buffer(Buffer &&other) noexcept { *this = std::move(other); }
  Buffer &operator=(Buffer &&other) noexcept {
    release();
    pool = other.pool;
    ptr = other.ptr;
    bytes = other.bytes;
    other.ptr = nullptr;
    return *this;
  }
  ~Buffer() { release(); }
  uint8_t *data() const { return ptr; }
  float *floats() const { return reinterpret_cast<float *>(ptr); }
  size_t size() const { return bytes; }
  explicit operator bool() const { return ptr != nullptr; }

private:
  void release() {
    if (ptr)
      pool->put(ptr, bytes);
    ptr = nullptr;
  }
  BufferPool *pool = nullptr;
  uint8_t *ptr = nullptr;
  size_t bytes = 0;
};

/// dpc_alloc memory: a bump allocator reset after every segment. When a
/// segment overflows the first block, the next reset merges the blocks into
/// one, so from the second microbatch on a segment allocates nothing.
class Scratch {
public:
  explicit Scratch(Device &device) : device(device) {}
  ~Scratch() {
    for (auto &b : blocks)
      device.deallocate(b.first);
  }
  void *alloc(size_t bytes) {
    bytes = roundUp(std::max<size_t>(bytes, 1));
    if (blocks.empty() || used + bytes > blocks.back().second) {
      size_t size = std::max(bytes, size_t(1) << 20);
      blocks.emplace_back(device.allocate(size), size);
      used = 0;
    }
    void *p = static_cast<uint8_t *>(blocks.back().first) + used;
    used += bytes;
    return p;
  }
  void reset() {
    if (blocks.size() > 1) {
      size_t total = 0;
      for (auto &b : blocks) {
        total += b.second;
        device.deallocate(b.first);
      }
      blocks.clear();
      blocks.emplace_back(device.allocate(total), total);
    }
    used = 0;
  }

private:
  Device &device;
  std::vector<std::pair<void *, size_t>> blocks;
  size_t used = 0;
};

/// Where each tensor of one schedule message sits in its pack. On the wire
/// a bf16 entry (ManifestTransfer::bf16) takes half its bytes: `wireOffset`
/// and `wireTotal` lay out the message as sent, `offset` and `total` the
/// f32 buffers the generated code reads after the receive widened them.
struct PackLayout {
  struct Entry {
    int64_t tag;
    size_t offset;
    int64_t bytes;
    bool bf16;
    size_t wireOffset;
  };
  std::vector<Entry> entries; // ascending tag
  size_t total = 0;
  size_t wireTotal = 0;
  bool anyBf16 = false;
};

/// The boundary a message crosses, seen from this rank: the (virtual) stage
/// of this rank it belongs to, the stage at the other end and what it
/// carries. With one stage per rank the stages are ranks.
struct Boundary {
  int stage = 0;
  int peer = 0;
  TransferKind what = TransferKind::Activation;
  bool operator<(const Boundary &o) const {
    return std::tie(stage, peer, what) < std::tie(o.stage, o.peer, o.what);
  }
  bool operator==(const Boundary &o) const {
    return stage == o.stage && peer == o.peer && what == o.what;
  }
};

TransferKind kindOf(Payload p) {
  return p == Payload::Gradient ? TransferKind::Gradient
                                : TransferKind::Activation;
}

std::map<Boundary, PackLayout>
makeLayouts(const std::vector<ManifestTransfer> &transfers) {
  std::map<Boundary, PackLayout> layouts;
  std::vector<ManifestTransfer> sorted = transfers;
  std::sort(sorted.begin(), sorted.end(),
            [](auto &a, auto &b) { return a.tag < b.tag; });
  for (const ManifestTransfer &t : sorted) {
    PackLayout &layout = layouts[{int(t.stage), int(t.peerStage), t.what}];
    layout.entries.push_back(
        {t.tag, layout.total, t.bytes, t.bf16, layout.wireTotal});
    layout.total += roundUp(size_t(t.bytes));
    layout.wireTotal += roundUp(size_t(t.wireBytes()));
    layout.anyBf16 |= t.bf16;
  }
  return layouts;
}

/// The sizes of one shape the generated code runs in: the manifest's own
/// (a fixed-shape build) or one of its buckets. The pointers are into the
/// executor's manifest.
struct Shapes {
  int64_t batch = 1;
  int64_t length = 0;
  const std::vector<ManifestTensor> *inputs = nullptr;
  const std::optional<std::vector<int64_t>> *labels = nullptr;
  const std::optional<std::vector<int64_t>> *output = nullptr;
  std::map<Boundary, PackLayout> sendLayouts, recvLayouts;
  std::map<int64_t, int64_t> stashBytes; // key -> bytes per microbatch

  Shapes(int64_t batch, int64_t length,
         const std::vector<ManifestTensor> &inputs,
         const std::optional<std::vector<int64_t>> &labels,
         const std::optional<std::vector<int64_t>> &output,
         const std::vector<ManifestTransfer> &sends,
         const std::vector<ManifestTransfer> &recvs,
         const std::vector<ManifestStash> &stashes)
      : batch(batch), length(length), inputs(&inputs), labels(&labels),
        output(&output), sendLayouts(makeLayouts(sends)),
        recvLayouts(makeLayouts(recvs)) {
    for (const ManifestStash &stash : stashes)
      stashBytes[stash.key] = stash.bytes;
  }
};

struct Pending {
  Request request;
  /// The pack in device memory, and its host copy that the communicator
  /// moves when the device is not host-accessible.
  Buffer buffer, staging;
  Boundary boundary;
  double startMs = 0;
  std::string name;
};

struct Staged {
  Buffer buffer;
  std::vector<bool> filled;
};

/// A parameter's value, gradient accumulator and optimizer state (SGD's
/// momentum, Adam's two moments: optimizerStateNames), in device memory.
struct ParamState {
  const ManifestParam *spec = nullptr;
  size_t count = 0;
  Buffer value, grad;
  std::vector<Buffer> state;
  size_t bytes() const { return count * sizeof(float); }
};

enum class Phase {
  Idle,
  Forward,
  Backward,
  BackwardInput,
  BackwardWeight,
  Optimizer
};

const char *phaseName(Phase p) {
  switch (p) {
  case Phase::Idle:
    return "outside any segment";
  case Phase::Forward:
    return "Forward";
  case Phase::Backward:
    return "Backward";
  case Phase::BackwardInput:
    return "BackwardInput";
  case Phase::BackwardWeight:
    return "BackwardWeight";
  case Phase::Optimizer:
    return "OptimizerStep";
  }
  return "?";
}

} // namespace

struct Executor::Impl : dpc_context {
  RankManifest manifest;
  /// The running step's schedule: schedule.json's (`fixedSched`), or the
  /// one planned for the step.
  schedule::Schedule sched;
  schedule::Schedule fixedSched;
  Communicator &comm;
  /// This process's rank in the job (the stage's rank, or one of its
  /// replicas' ranks).
  int rank;
  /// The ranks of this stage when it has replicas: the gradient all-reduce
  /// and the step's losses go over it.
  std::unique_ptr<Communicator> replicaComm;
  std::vector<float> reduceBuffer;
  /// What carries the schedule's transfers: `comm` itself until connect(),
  /// then the device's communicator when it has one (it takes device
  /// pointers, so nothing is staged), with its replica group for the
  /// gradient sum.
  Communicator *transfers = &comm;
  std::unique_ptr<Communicator> deviceComm, replicaDeviceComm;
  /// Whether the verifier proved the schedule free of deadlock under
  /// rendezvous transfers, which an order-matched communicator needs.
  bool rendezvousProven = false;
  /// Why connect() did not take the device's first offer, for the log.
  std::string transportNote;
  SegmentFunctions segments;
  std::function<void(const std::string &)> fatalHandler;

  // Every buffer the generated code sees comes from `device`; `host` is the
  // staging memory for transfers and data when the device is not
  // host-accessible.
  std::unique_ptr<Device> ownedDevice;
  Device &device;
  std::unique_ptr<Device> host;
  BufferPool pool{device}, hostPool{*host};
  Scratch scratch{device};
  std::vector<uint8_t> upStaging, downStaging, labelStaging;
  std::vector<ParamState> params;
  std::map<int64_t, size_t> paramIndex; // manifest id -> params index
  /// One entry per manifest bucket, or one for a fixed-shape build;
  /// evaluation and unplanned steps run in `topShapes`.
  std::vector<Shapes> shapes;
  size_t topShapes = 0;

  // Per-step state. A planned step (runStep with a StepPlan) gives each
  // microbatch its bucket and samples.
  bool planned = false;
  std::vector<int> mbBucket;
  std::vector<std::vector<int64_t>> mbSamples;
  std::map<std::pair<Boundary, int>, Staged> staged;                 // + mb
  std::map<std::pair<int, int>, Pending> pendingSends, pendingRecvs; // tag, mb
  std::map<std::pair<Boundary, int>, Buffer> received;               // + mb
  std::map<std::pair<int64_t, int>, Buffer> stash;                   // key, mb
  struct Loaded {
    Buffer inputs, labels;
  };
  std::map<std::pair<int, int>, Loaded> loaded; // mb, chunk
  std::vector<std::optional<double>> losses;

  // PipeDream weight versions, numbered within the step (a window of
  // microbatches that starts from the live weights): version v is the
  // weights after v updates. The live weights are `liveVersion`; older ones
  // a later Forward/Backward still needs were copied by StashWeights.
  int liveVersion = 0;
  std::map<int, std::vector<Buffer>> weightVersions;
  /// OptimizerStep instructions run since training began (Adam's step
  /// number), kept in checkpoints.
  int64_t optimizerUpdates = 0;
  /// Set by RestoreWeights for the next Forward/Backward.
  std::optional<int> restoredVersion;
  /// What dpc_param reads while a segment runs (nullptr: the live weights).
  const std::vector<Buffer> *servedVersion = nullptr;

  // What the schedule promised, measured: microbatches whose forward ran and
  // whose backward has not finished, stash bytes, weight versions.
  std::map<std::pair<int, int>, bool> inFlight; // mb, chunk
  int64_t stashBytes = 0;
  MemoryStats memory;
  /// This rank's peaks as the verifier computed them at start-up.
  schedule::RankStats promised;

  // Data.
  const Dataset *trainData = nullptr;
  std::unique_ptr<Sampler> trainSampler;
  const Dataset *currentData = nullptr;
  Sampler *currentSampler = nullptr;
  int64_t currentStep = 0;
  uint64_t seed = 0; // the run's, for dropout's masks
  // A loss that ignores a label (manifest "ignore_index") is scaled by 1 /
  // the labels it counts: per microbatch of the step while training (the
  // step's total for synchronous schedules), the loaded microbatch's while
  // evaluating.
  std::vector<float> lossScales;
  float evalLossScale = 0;

  // The running segment.
  Phase phase = Phase::Idle;
  int currentMb = -1;
  int currentChunk = 0;
  bool evaluating = false;
  // Evaluation keeps every reported output (predictions).
  bool keepingOutputs = false;
  EvalResult eval;

  bool tracing = false;
  double traceOrigin = 0;
  std::vector<schedule::TimelineEvent> events;
  // The current (or last) training step's compute and wait (StepMonitor.h).
  StepTimes stepTimes;
  double forwardDelayMs = 0;

  Impl(RankManifest m, schedule::Schedule s, Communicator &c,
       SegmentFunctions f, Device *d)
      : manifest(std::move(m)), sched(std::move(s)), fixedSched(sched), comm(c),
        rank(c.rank()), segments(f),
        ownedDevice(d ? nullptr : createHostDevice()),
        device(d ? *d : *ownedDevice), host(createHostDevice()) {}

  //===--------------------------------------------------------------------===//
  // Moving values between the device and the host
  //===--------------------------------------------------------------------===//

  /// Whether messages go through host copies: the device is not
  /// host-accessible and no device communicator carries them.
  bool stagesTransfers() const {
    return transfers == &comm && !device.hostAccessible();
  }

  /// Fills `bytes` bytes of device memory at `dst` by calling `fill` with
  /// host memory to write: `dst` itself when the host can write it, else a
  /// staging buffer that is copied up afterwards.
  template <typename Fill> void upload(void *dst, size_t bytes, Fill fill) {
    if (device.hostAccessible()) {
      fill(dst);
      return;
    }
    upStaging.resize(bytes);
    fill(upStaging.data());
    device.copyFromHost(dst, upStaging.data(), bytes);
  }

  /// `bytes` bytes of device memory at `src`, readable by the host until the
  /// next download into the same `staging`.
  const void *download(const void *src, size_t bytes,
                       std::vector<uint8_t> &staging) {
    if (device.hostAccessible())
      return src;
    staging.resize(bytes);
    device.copyToHost(staging.data(), src, bytes);
    return staging.data();
  }

  //===--------------------------------------------------------------------===//
  // Errors inside ABI calls
  //===--------------------------------------------------------------------===//

  [[noreturn]] void fatal(const std::string &function,
                          const std::string &message) {
    std::string where = phaseName(phase);
    if (currentMb >= 0)
      where += " mb " + std::to_string(currentMb);
    if (evaluating)
      where += " (evaluation)";
    std::string text = where + ": " + function + ": " + message;
    if (fatalHandler)
      fatalHandler(text);
    throw Error(text);
  }

  void requireSegment(const char *function) {
    if (phase == Phase::Idle)
      fatal(function, "called outside a segment function");
  }

  //===--------------------------------------------------------------------===//
  // Setup checks
  //===--------------------------------------------------------------------===//

  void validate() {
    const std::string s = manifest.schedule;
    if (std::string problem = sched.checkLayout(); !problem.empty())
      throw Error(s + ": " + problem);
    if (sched.numStages() != manifest.stages)
      throw Error(s + ": " + std::to_string(sched.numStages()) +
                  " stages but the manifest says " +
                  std::to_string(manifest.stages));
    if (comm.size() != sched.ranks)
      throw Error("the job has " + std::to_string(comm.size()) +
                  " ranks but the schedule has " + std::to_string(sched.ranks) +
                  " (launch one rank per line of the appfile)");
    if (sched.stageOf(rank) != manifest.stage)
      throw Error("this executable runs stage " +
                  std::to_string(manifest.stage) + " but was started as rank " +
                  std::to_string(rank) + ", which runs stage " +
                  std::to_string(sched.stageOf(rank)) +
                  " (launch the ranks in appfile order)");
    if (sched.chunks != manifest.chunks)
      throw Error(s + ": " + std::to_string(sched.chunks) +
                  " chunks per rank but the rank's object holds " +
                  std::to_string(manifest.chunks));
    if (int(sched.programs.size()) != sched.ranks)
      throw Error(s + ": " + std::to_string(sched.programs.size()) +
                  " programs for " + std::to_string(sched.ranks) + " ranks");
    if (int64_t(sched.microbatches) * 2 * sched.numVirtualStages() >=
        kFirstControlTag)
      throw Error(s + ": " + std::to_string(sched.microbatches) +
                  " microbatches need message tags beyond the executor's "
                  "range (below " +
                  std::to_string(kFirstControlTag) + ")");
    schedule::VerifyOptions options;
    options.checkBlocking = false;
    schedule::VerifyResult result = schedule::verifySchedule(sched, options);
    if (!result.ok())
      throw Error(s + ": " + result.violations.front().format());
    promised = result.ranks.at(rank);
    rendezvousProven = result.blockingDeadlockFree;

    // The segments the program calls must exist.
    auto need = [&](const char *segment, SegmentFn fn, const Instruction &i) {
      if (!manifest.hasSegment(segment) || !fn)
        throw Error(s + ": rank " + std::to_string(rank) + " runs " +
                    schedule::describe(i) + " but the rank's object has no " +
                    segment + " segment");
    };
    std::map<Boundary, bool> sendsUsed, recvsUsed;
    for (const Instruction &i : sched.programs[rank]) {
      switch (i.op) {
      case Op::Forward:
        need("forward", segments.forward, i);
        break;
      case Op::Backward:
        need("backward", segments.backward, i);
        break;
      case Op::BackwardInput:
        need("backward_input", segments.backwardInput, i);
        break;
      case Op::BackwardWeight:
        need("backward_weight", segments.backwardWeight, i);
        break;
      case Op::OptimizerStep:
        need("optimizer", segments.optimizer, i);
        break;
      case Op::AllReduce:
        if (sched.replicasOf(manifest.stage) < 2)
          throw Error(s + ": rank " + std::to_string(rank) + " runs " +
                      schedule::describe(i) + " but stage " +
                      std::to_string(manifest.stage) + " has no replicas");
        break;
      case Op::SendStart:
      case Op::RecvStart: {
        bool send = i.op == Op::SendStart;
        Boundary b = boundaryOf(i);
        if (b.peer < 0 || b.peer >= manifest.numVirtualStages() ||
            sched.rankOf(b.peer, i.mb) != i.peer)
          throw Error(s + ": rank " + std::to_string(rank) + " runs " +
                      schedule::describe(i, sched.chunks) +
                      ", which crosses no boundary of stage " +
                      std::to_string(b.stage));
        // A boundary the IR moves nothing across in this direction (no
        // gradient flows back into a stage without parameters, say) still
        // gets its message, empty, so both ranks keep the schedule's order.
        for (Shapes &shape : shapes)
          (send ? shape.sendLayouts : shape.recvLayouts).try_emplace(b);
        (send ? sendsUsed : recvsUsed)[b] = true;
        break;
      }
      default:
        break;
      }
    }
    for (auto [list, used, verb] :
         {std::tuple(&shapes[topShapes].sendLayouts, &sendsUsed, "sends"),
          std::tuple(&shapes[topShapes].recvLayouts, &recvsUsed, "recvs")})
      for (auto &[b, layout] : *list)
        if (!used->count(b))
          throw Error("manifest: " + std::string(verb) + " tag " +
                      std::to_string(layout.entries.front().tag) + " (" +
                      transferKindName(b.what) + ", peer_stage " +
                      std::to_string(b.peer) + ") is never moved by " + s +
                      ", which only transfers between neighbouring stages");
  }

  //===--------------------------------------------------------------------===//
  // Running instructions
  //===--------------------------------------------------------------------===//

  int lastStage() const { return manifest.numVirtualStages() - 1; }

  /// The index into `shapes` (and the manifest's buckets) of microbatch mb
  /// of the running step, or of evaluation.
  size_t shapeIndex(int mb) const {
    if (!planned || evaluating || mb < 0)
      return topShapes;
    return size_t(mbBucket.at(size_t(mb)));
  }
  const Shapes &shapesOf(int mb) const { return shapes[shapeIndex(mb)]; }

  /// " 8x32" for a planned microbatch of a bucketed build, for span names.
  std::string shapeSuffix(int mb) const {
    if (!planned || manifest.buckets.empty() || mb < 0)
      return "";
    const Shapes &shape = shapesOf(mb);
    return " " + std::to_string(shape.batch) + "x" +
           std::to_string(shape.length);
  }

  /// The boundary a transfer instruction crosses: activations go from a
  /// stage to the next, gradients back.
  Boundary boundaryOf(const Instruction &i) const {
    bool send = i.op == Op::SendStart || i.op == Op::SendFinish;
    bool act = i.what != Payload::Gradient;
    int stage = manifest.virtualStage(i.chunk);
    return {stage, stage + (send == act ? 1 : -1), kindOf(i.what)};
  }

  /// Whether the chunk's stage reads inputs or labels.
  bool loadsData(int chunk) const {
    int stage = manifest.virtualStage(chunk);
    return stage == 0 || (stage == lastStage() && manifest.labelsShape);
  }

  void trace(schedule::EventKind kind, std::string name, double start, int mb,
             int chunk = 0) {
    if (!tracing)
      return;
    schedule::TimelineEvent e;
    e.rank = rank;
    e.kind = kind;
    e.name = std::move(name);
    e.start = start - traceOrigin;
    e.end = nowMs() - traceOrigin;
    e.mb = mb;
    e.chunk = chunk;
    events.push_back(std::move(e));
  }

  void callSegment(Phase p, SegmentFn fn, int mb, int chunk) {
    phase = p;
    currentMb = mb;
    currentChunk = chunk;
    fn(this);
    scratch.reset();
    phase = Phase::Idle;
    currentMb = -1;
    currentChunk = 0;
  }

  /// The backward of the microbatch's chunk is over: what it kept can go.
  void releaseMicrobatch(int mb, int chunk) {
    int stage = manifest.virtualStage(chunk);
    for (auto it = stash.begin(); it != stash.end();) {
      const ManifestStash *spec = manifest.findStash(it->first.first);
      if (it->first.second != mb || spec->stage != stage) {
        ++it;
        continue;
      }
      stashBytes -= int64_t(it->second.size());
      it = stash.erase(it);
    }
    inFlight.erase({mb, chunk});
    for (auto it = received.begin(); it != received.end();)
      it = it->first.second == mb && it->first.first.stage == stage
               ? received.erase(it)
               : std::next(it);
    loaded.erase({mb, chunk});
  }

  /// Loads microbatch `microbatch` of sampler step `step` for the chunk,
  /// kept under `mb` (evaluation's sampler has one microbatch per step).
  /// dpc_random_key: (seed, step, microbatch, op) mixed by splitmix64's
  /// finalizer, 63 bits; -1 outside training.
  int64_t randomKey(int64_t op) const {
    if (evaluating)
      return -1;
    uint64_t h = seed;
    for (uint64_t part :
         {uint64_t(currentStep), uint64_t(currentMb), uint64_t(op)}) {
      h += 0x9E3779B97F4A7C15ull + part;
      h = (h ^ (h >> 30)) * 0xBF58476D1CE4E5B9ull;
      h = (h ^ (h >> 27)) * 0x94D049BB133111EBull;
      h ^= h >> 31;
    }
    return int64_t(h >> 1);
  }

  /// The labels of `indices` as a microbatch of `shape` holds them: padded
  /// to the shape's rows and length with the ignored label when the data's
  /// sequences vary in length.
  void gatherLabels(const std::vector<int64_t> &indices, const Shapes &shape,
                    int64_t *out) const {
    if (currentData->variableLength())
      currentData->gatherLabelsPadded(indices, shape.batch, shape.length,
                                      manifest.ignoreIndex.value_or(-1), out);
    else
      currentData->gatherLabels(indices, out);
  }

  void load(int mb, int chunk, int64_t step, int microbatch) {
    Loaded &l = loaded[{mb, chunk}];
    const Shapes &shape = shapesOf(mb);
    std::vector<int64_t> indices =
        planned && !evaluating
            ? mbSamples.at(size_t(mb))
            : currentSampler->microbatchIndices(step, microbatch);
    if (manifest.virtualStage(chunk) == 0) {
      const ManifestTensor &input = (*shape.inputs)[0];
      size_t bytes = size_t(input.bytes());
      if (!l.inputs)
        l.inputs = Buffer(pool, bytes);
      upload(l.inputs.data(), bytes, [&](void *host) {
        if (input.integer && currentData->variableLength())
          currentData->gatherIntInputsPadded(indices, shape.batch, shape.length,
                                             static_cast<int64_t *>(host));
        else if (input.integer)
          currentData->gatherIntInputs(indices, static_cast<int64_t *>(host));
        else
          currentData->gatherInputs(indices, static_cast<float *>(host));
      });
    }
    if (manifest.virtualStage(chunk) == lastStage() && manifest.labelsShape) {
      // Class ids, or float targets of the output's shape (--loss mse).
      int64_t count = product(**shape.labels);
      size_t bytes = size_t(count) *
                     (manifest.floatLabels ? sizeof(float) : sizeof(int64_t));
      if (!l.labels)
        l.labels = Buffer(pool, bytes);
      upload(l.labels.data(), bytes, [&](void *host) {
        if (manifest.floatLabels) {
          currentData->gatherFloatLabels(indices, static_cast<float *>(host));
          return;
        }
        auto *labels = static_cast<int64_t *>(host);
        gatherLabels(indices, shape, labels);
        if (evaluating && manifest.ignoreIndex)
          evalLossScale = 1.0f / float(countKept(labels, count));
      });
    }
  }

  std::string where(int64_t step, size_t index, const Instruction &i) {
    return "step " + std::to_string(step + 1) + ": instruction " +
           std::to_string(index) + " (" + schedule::describe(i, sched.chunks) +
           "): ";
  }

  void sendStart(const Instruction &i, const std::string &at) {
    Boundary b = boundaryOf(i);
    const PackLayout &layout = shapesOf(i.mb).sendLayouts.at(b);
    if (layout.entries.empty()) {
      postSend(i, at, b, Buffer(pool, 0), 0);
      return;
    }
    auto it = staged.find({b, i.mb});
    if (it == staged.end())
      throw Error(at + "no value for transfer tag " +
                  std::to_string(layout.entries.front().tag) +
                  " (the segment did not call dpc_send for this microbatch)");
    for (size_t e = 0; e < layout.entries.size(); ++e)
      if (!it->second.filled[e])
        throw Error(at + "no value for transfer tag " +
                    std::to_string(layout.entries[e].tag) +
                    " (the segment did not call dpc_send for this "
                    "microbatch)");
    Buffer buffer = std::move(it->second.buffer);
    staged.erase(it);
    postSend(i, at, b, std::move(buffer), layout.wireTotal);
  }

  void postSend(const Instruction &i, const std::string &at, Boundary b,
                Buffer buffer, size_t bytes) {
    if (pendingSends.count({i.tag, i.mb}))
      throw Error(at + "a send with tag " + std::to_string(i.tag) +
                  " is already in flight");
    Pending p;
    p.buffer = std::move(buffer);
    p.boundary = b;
    p.startMs = nowMs();
    p.name = std::string("send ") + transferKindName(b.what) + " mb" +
             std::to_string(i.mb);
    const void *data = p.buffer.data();
    if (stagesTransfers()) {
      // Waits for the segment that produced the values.
      p.staging = Buffer(hostPool, bytes);
      device.copyToHost(p.staging.data(), p.buffer.data(), bytes);
      data = p.staging.data();
    }
    p.request = transfers->isend(data, bytes, i.peer, i.tag);
    pendingSends.emplace(std::make_pair(i.tag, i.mb), std::move(p));
  }

  void sendFinish(const Instruction &i, const std::string &at) {
    auto it = pendingSends.find({i.tag, i.mb});
    if (it == pendingSends.end())
      throw Error(at + "no send with tag " + std::to_string(i.tag) +
                  " was started");
    transfers->wait(it->second.request);
    trace(schedule::EventKind::Send, it->second.name, it->second.startMs, i.mb,
          i.chunk);
    pendingSends.erase(it);
  }

  void recvStart(const Instruction &i, const std::string &at) {
    Boundary b = boundaryOf(i);
    auto key = std::make_pair(i.tag, i.mb);
    if (pendingRecvs.count(key))
      throw Error(at + "a receive with tag " + std::to_string(i.tag) +
                  " is already in flight");
    if (received.count({b, i.mb}))
      throw Error(at + "microbatch " + std::to_string(i.mb) +
                  " was already received from rank " + std::to_string(i.peer));
    const PackLayout &layout = shapesOf(i.mb).recvLayouts.at(b);
    Pending p;
    p.buffer = Buffer(pool, layout.wireTotal);
    p.boundary = b;
    p.startMs = nowMs();
    p.name = std::string("recv ") + transferKindName(b.what) + " mb" +
             std::to_string(i.mb);
    void *data = p.buffer.data();
    if (stagesTransfers()) {
      p.staging = Buffer(hostPool, layout.wireTotal);
      data = p.staging.data();
    }
    p.request = transfers->irecv(data, layout.wireTotal, i.peer, i.tag);
    pendingRecvs.emplace(key, std::move(p));
  }

  void recvFinish(const Instruction &i, const std::string &at) {
    auto it = pendingRecvs.find({i.tag, i.mb});
    if (it == pendingRecvs.end())
      throw Error(at + "no receive with tag " + std::to_string(i.tag) +
                  " was started");
    transfers->wait(it->second.request);
    const PackLayout &layout =
        shapesOf(i.mb).recvLayouts.at(it->second.boundary);
    if (it->second.staging)
      device.copyFromHost(it->second.buffer.data(), it->second.staging.data(),
                          layout.wireTotal);
    if (layout.anyBf16)
      it->second.buffer = widen(layout, it->second.buffer);
    trace(schedule::EventKind::Recv, it->second.name, it->second.startMs, i.mb,
          i.chunk);
    received[{it->second.boundary, i.mb}] = std::move(it->second.buffer);
    pendingRecvs.erase(it);
  }

  /// The f32 buffers of a received message with bf16 entries (host memory:
  /// bf16 transfers are built for the CPU target only).
  Buffer widen(const PackLayout &layout, const Buffer &wire) {
    Buffer plain(pool, layout.total);
    for (const PackLayout::Entry &e : layout.entries) {
      if (e.bf16)
        bf16ToFloats(
            reinterpret_cast<const uint16_t *>(wire.data() + e.wireOffset),
            reinterpret_cast<float *>(plain.data() + e.offset), e.bytes / 4);
      else
        device.copy(plain.data() + e.offset, wire.data() + e.wireOffset,
                    size_t(e.bytes));
    }
    return plain;
  }

  void checkLossReported(int mb, int chunk, const std::string &at) {
    if (manifest.virtualStage(chunk) == lastStage() && manifest.labelsShape &&
        !losses[mb])
      throw Error(at + "the last stage's forward did not call "
                       "dpc_report_loss");
  }

  /// The weights a Forward or Backward reads: the version it names must be
  /// the live one, or the one the RestoreWeights before it selected.
  void selectWeights(const Instruction &i, const std::string &at) {
    std::optional<int> restored = std::exchange(restoredVersion, std::nullopt);
    servedVersion = nullptr;
    if (i.version < 0) {
      if (restored)
        throw Error(at + "RestoreWeights selected weight version " +
                    std::to_string(*restored) +
                    " but this instruction names no version");
      return;
    }
    if (restored) {
      if (*restored != i.version)
        throw Error(at + "uses weight version " + std::to_string(i.version) +
                    " but RestoreWeights selected version " +
                    std::to_string(*restored));
      servedVersion = &weightVersions.at(*restored);
      return;
    }
    if (i.version != liveVersion)
      throw Error(at + "uses weight version " + std::to_string(i.version) +
                  " but the live weights are version " +
                  std::to_string(liveVersion) +
                  " and no RestoreWeights selected it");
  }

  void stashWeights(const Instruction &i, const std::string &at) {
    if (i.version != liveVersion)
      throw Error(at + "copies the live weights as version " +
                  std::to_string(i.version) + " but they are version " +
                  std::to_string(liveVersion));
    auto [it, fresh] = weightVersions.try_emplace(i.version);
    if (!fresh)
      throw Error(at + "weight version " + std::to_string(i.version) +
                  " is already stashed");
    it->second.reserve(params.size());
    for (const ParamState &p : params) {
      it->second.emplace_back(pool, p.bytes());
      device.copy(it->second.back().data(), p.value.data(), p.bytes());
    }
    memory.peakWeightVersions =
        std::max(memory.peakWeightVersions,
                 int(weightVersions.size()) + manifest.chunks);
  }

  void run(int64_t step, size_t index, const Instruction &i) {
    std::string at = where(step, index, i);
    double start = nowMs();
    auto compute = [&](schedule::EventKind kind, Phase p, SegmentFn fn) {
      if (p == Phase::Forward || p == Phase::Backward)
        selectWeights(i, at);
      if (p == Phase::Forward && forwardDelayMs > 0)
        std::this_thread::sleep_for(
            std::chrono::duration<double, std::milli>(forwardDelayMs));
      callSegment(p, fn, i.mb, i.chunk);
      servedVersion = nullptr;
      trace(kind,
            schedule::eventName(kind, i.mb, i.chunk, sched.chunks > 1) +
                shapeSuffix(i.mb),
            start, i.mb, i.chunk);
    };
    switch (i.op) {
    case Op::LoadMicrobatch:
      if (loadsData(i.chunk)) {
        load(i.mb, i.chunk, currentStep, i.mb);
        trace(schedule::EventKind::Load,
              "load mb" + std::to_string(i.mb) + shapeSuffix(i.mb), start, i.mb,
              i.chunk);
      }
      break;
    case Op::Forward:
      if (loadsData(i.chunk) && !loaded.count({i.mb, i.chunk}))
        throw Error(at + "microbatch " + std::to_string(i.mb) +
                    " was not loaded (no LoadMicrobatch before it)");
      compute(schedule::EventKind::Forward, Phase::Forward, segments.forward);
      checkLossReported(i.mb, i.chunk, at);
      inFlight[{i.mb, i.chunk}] = true;
      memory.peakStashes = std::max(memory.peakStashes, int(inFlight.size()));
      break;
    case Op::Backward:
      compute(schedule::EventKind::Backward, Phase::Backward,
              segments.backward);
      releaseMicrobatch(i.mb, i.chunk);
      break;
    case Op::BackwardInput:
      compute(schedule::EventKind::BackwardInput, Phase::BackwardInput,
              segments.backwardInput);
      break;
    case Op::BackwardWeight:
      compute(schedule::EventKind::BackwardWeight, Phase::BackwardWeight,
              segments.backwardWeight);
      releaseMicrobatch(i.mb, i.chunk);
      break;
    case Op::OptimizerStep:
      if (restoredVersion)
        throw Error(at + "RestoreWeights selected weight version " +
                    std::to_string(*restoredVersion) +
                    " but no Forward or Backward used it");
      // One step updates every chunk of the rank.
      ++optimizerUpdates;
      for (int chunk = 0; chunk < manifest.chunks; ++chunk)
        callSegment(Phase::Optimizer, segments.optimizer, -1, chunk);
      ++liveVersion;
      trace(schedule::EventKind::Optimizer, "opt", start, -1);
      break;
    case Op::AllReduce:
      allReduceGradients();
      trace(schedule::EventKind::AllReduce, "allreduce", start, -1);
      break;
    case Op::StashWeights:
      stashWeights(i, at);
      break;
    case Op::RestoreWeights:
      if (!weightVersions.count(i.version))
        throw Error(at + "weight version " + std::to_string(i.version) +
                    " was never stashed, or was already freed");
      restoredVersion = i.version;
      break;
    case Op::FreeWeights:
      if (!weightVersions.erase(i.version))
        throw Error(at + "weight version " + std::to_string(i.version) +
                    " is not stashed");
      break;
    case Op::SendStart:
      sendStart(i, at);
      break;
    case Op::SendFinish:
      sendFinish(i, at);
      break;
    case Op::RecvStart:
      recvStart(i, at);
      break;
    case Op::RecvFinish:
      recvFinish(i, at);
      break;
    // The generated code stashes and restores by itself (dpc_stash and
    // dpc_restore); the schedule's stash instructions are the verifier's
    // memory bookkeeping, and slots go when the backward is done.
    case Op::Stash:
    case Op::Restore:
    case Op::Free:
      break;
    default:
      throw Error(at + "not supported by the executor");
    }
    // Compute is what the schedule's stage costs predict; waits are the
    // time blocked on other ranks (and the copies that finish a message).
    switch (i.op) {
    case Op::Forward:
    case Op::Backward:
    case Op::BackwardInput:
    case Op::BackwardWeight:
      stepTimes.computeMs += nowMs() - start;
      break;
    case Op::SendFinish:
    case Op::RecvFinish:
    case Op::AllReduce:
      stepTimes.waitMs += nowMs() - start;
      break;
    default:
      break;
    }
  }

  /// Sums the weight gradients over the stage's replicas, in one message:
  /// each replica accumulated its share of the microbatches, so the sum is
  /// the minibatch's gradient, as one rank would have accumulated it.
  void allReduceGradients() {
    size_t total = 0;
    for (const ParamState &p : params)
      total += p.count;
    // One buffer, one collective: in device memory when the device's
    // communicator sums (nothing goes through the host), else in host memory
    // for the host communicator.
    bool onDevice = replicaDeviceComm != nullptr;
    Buffer deviceSum;
    float *sum;
    if (onDevice) {
      deviceSum = Buffer(pool, total * sizeof(float));
      sum = deviceSum.floats();
    } else {
      reduceBuffer.resize(total);
      sum = reduceBuffer.data();
    }
    size_t offset = 0;
    for (const ParamState &p : params) {
      if (onDevice)
        device.copy(sum + offset, p.grad.floats(), p.bytes());
      else
        device.copyToHost(sum + offset, p.grad.floats(), p.bytes());
      offset += p.count;
    }
    (onDevice ? *replicaDeviceComm : *replicaComm).allreduceSum(sum, total);
    offset = 0;
    for (ParamState &p : params) {
      if (onDevice)
        device.copy(p.grad.floats(), sum + offset, p.bytes());
      else
        device.copyFromHost(p.grad.floats(), sum + offset, p.bytes());
      offset += p.count;
    }
  }

  /// The step's per-microbatch losses on every replica of the last stage:
  /// each loss is reported by exactly one replica and is a float, so adding
  /// the others' zeros keeps it exact.
  void gatherLosses() {
    std::vector<float> all(losses.size(), 0.0f);
    for (size_t mb = 0; mb < losses.size(); ++mb)
      if (losses[mb])
        all[mb] = float(*losses[mb]);
    replicaComm->allreduceSum(all.data(), all.size());
    for (size_t mb = 0; mb < losses.size(); ++mb)
      losses[mb] = double(all[mb]);
  }

  /// Runs the rank's program of `sched` as training step `step`.
  double trainStep(int64_t step);

  void checkStepEnd(const std::string &what) {
    std::string at = what + ": at the end: ";
    if (!pendingSends.empty())
      throw Error(at + "send with tag " +
                  std::to_string(pendingSends.begin()->first.first) +
                  " was never finished");
    if (!pendingRecvs.empty())
      throw Error(at + "receive with tag " +
                  std::to_string(pendingRecvs.begin()->first.first) +
                  " was never finished");
    if (!staged.empty()) {
      auto &[key, s] = *staged.begin();
      throw Error(at + "dpc_send stored " + transferKindName(key.first.what) +
                  " for mb " + std::to_string(key.second) + " to stage " +
                  std::to_string(key.first.peer) +
                  " but the schedule never sent it");
    }
    if (!stash.empty())
      throw Error(at + "stash key " +
                  std::to_string(stash.begin()->first.first) + " of mb " +
                  std::to_string(stash.begin()->first.second) +
                  " is still live (its backward never ran)");
    if (!received.empty())
      throw Error(at + "a received value of mb " +
                  std::to_string(received.begin()->first.second) +
                  " is still live (its backward never ran)");
    if (!weightVersions.empty())
      throw Error(at + "weight version " +
                  std::to_string(weightVersions.begin()->first) +
                  " is still stashed (no FreeWeights)");
    if (restoredVersion)
      throw Error(at + "RestoreWeights selected weight version " +
                  std::to_string(*restoredVersion) +
                  " but no Forward or Backward used it");
  }

  //===--------------------------------------------------------------------===//
  // The C ABI
  //===--------------------------------------------------------------------===//

  const void *input(int64_t index) {
    requireSegment("dpc_input");
    if (index < 0 || index >= int64_t(manifest.inputs.size()))
      fatal("dpc_input",
            "input " + std::to_string(index) + " is not in the manifest's " +
                std::to_string(manifest.inputs.size()) + " inputs");
    auto it = loaded.find({currentMb, currentChunk});
    if (it == loaded.end() || !it->second.inputs)
      fatal("dpc_input",
            "microbatch " + std::to_string(currentMb) + " has not been loaded");
    return it->second.inputs.data();
  }

  int64_t countKept(const int64_t *labels, int64_t n) const {
    return n - std::count(labels, labels + n, *manifest.ignoreIndex);
  }

  /// When a step starts, the last stage reads every label of it (the
  /// Sampler's indices, without the device) to count those the loss keeps:
  /// torch's mean over the minibatch's non-ignored positions.
  void countStepLabels(int64_t step) {
    int mbs = sched.microbatches;
    std::vector<int64_t> labels, kept(static_cast<size_t>(mbs));
    for (int mb = 0; mb < mbs; ++mb) {
      const Shapes &shape = shapesOf(mb);
      int64_t perMb = product(**shape.labels);
      labels.resize(size_t(perMb));
      gatherLabels(planned ? mbSamples.at(size_t(mb))
                           : currentSampler->microbatchIndices(step, mb),
                   shape, labels.data());
      kept[size_t(mb)] = countKept(labels.data(), perMb);
    }
    int64_t total = std::accumulate(kept.begin(), kept.end(), int64_t(0));
    // Pipedream's updates each train on one microbatch, its own mean. A
    // step without a kept label gets inf: torch's loss is then NaN too.
    bool synchronous = schedule::isSynchronous(sched.kind);
    lossScales.assign(size_t(mbs), 0.0f);
    for (int mb = 0; mb < mbs; ++mb)
      lossScales[size_t(mb)] =
          1.0f / float(synchronous ? total : kept[size_t(mb)]);
  }

  float lossScale() {
    requireSegment("dpc_loss_scale");
    if (!manifest.ignoreIndex)
      fatal("dpc_loss_scale",
            "the manifest's labels declare no ignore_index for this stage");
    if (evaluating)
      return evalLossScale;
    return lossScales.at(size_t(currentMb));
  }

  const int64_t *labels() {
    requireSegment("dpc_labels");
    if (!manifest.labelsShape)
      fatal("dpc_labels", "the manifest declares no labels for this stage");
    auto it = loaded.find({currentMb, currentChunk});
    if (it == loaded.end() || !it->second.labels)
      fatal("dpc_labels",
            "microbatch " + std::to_string(currentMb) + " has not been loaded");
    return reinterpret_cast<const int64_t *>(it->second.labels.data());
  }

  void *alloc(int64_t bytes) {
    requireSegment("dpc_alloc");
    if (bytes < 0)
      fatal("dpc_alloc", "negative size " + std::to_string(bytes));
    return scratch.alloc(size_t(bytes));
  }

  ParamState &paramState(const char *function, int64_t id) {
    auto it = paramIndex.find(id);
    if (it == paramIndex.end())
      fatal(function,
            "parameter id " + std::to_string(id) + " is not in the manifest");
    return params[it->second];
  }

  const float *param(int64_t id) {
    ParamState &p = paramState("dpc_param", id);
    if (servedVersion)
      return (*servedVersion)[&p - params.data()].floats();
    return p.value.floats();
  }

  float *paramStateBuffer(int64_t id) {
    if (phase != Phase::Forward)
      fatal("dpc_param_state", "called outside the forward segment");
    return paramState("dpc_param_state", id).value.floats();
  }

  void gradAccumulate(int64_t id, const float *grad) {
    requireSegment("dpc_grad_accumulate");
    ParamState &p = paramState("dpc_grad_accumulate", id);
    if (evaluating)
      fatal("dpc_grad_accumulate", "called during a forward-only pass");
    device.accumulate(p.grad.floats(), grad, p.count);
  }

  /// The parameter an optimizer update of `kind` (called as `fn`) writes,
  /// once its call is checked against the phase and the manifest.
  ParamState &updatedParam(const char *fn, Optimizer kind, int64_t id) {
    if (phase != Phase::Optimizer)
      fatal(fn, "called outside the optimizer segment");
    if (manifest.optimizer != kind)
      fatal(fn, std::string("the manifest's optimizer is ") +
                    optimizerName(manifest.optimizer));
    return paramState(fn, id);
  }

  void sgdStep(int64_t id, float lr, float momentum, float weightDecay) {
    ParamState &p = updatedParam("dpc_sgd_step", Optimizer::Sgd, id);
    device.sgdStep(p.value.floats(), p.state[0].floats(), p.grad.floats(),
                   p.count, lr, momentum, weightDecay);
  }

  void adamStep(int64_t id, float lr, float beta1, float beta2, float eps,
                float weightDecay) {
    ParamState &p = updatedParam("dpc_adam_step", Optimizer::Adam, id);
    device.adamStep(
        p.value.floats(), p.state[0].floats(), p.state[1].floats(),
        p.grad.floats(), p.count,
        AdamStep(lr, beta1, beta2, eps, weightDecay, optimizerUpdates));
  }

  void send(int64_t tag, const void *data) {
    requireSegment("dpc_send");
    const ManifestTransfer *t = manifest.findSend(tag);
    if (!t)
      fatal("dpc_send", "transfer tag " + std::to_string(tag) +
                            " is not in the manifest's "
                            "sends");
    Boundary b{int(t->stage), int(t->peerStage), t->what};
    if (b.stage != manifest.virtualStage(currentChunk))
      fatal("dpc_send", "transfer tag " + std::to_string(tag) +
                            " belongs to stage " + std::to_string(b.stage) +
                            ", not to the running chunk's");
    const PackLayout &layout = shapesOf(currentMb).sendLayouts.at(b);
    Staged &s = staged[{b, currentMb}];
    if (!s.buffer) {
      s.buffer = Buffer(pool, layout.wireTotal);
      s.filled.assign(layout.entries.size(), false);
    }
    for (size_t e = 0; e < layout.entries.size(); ++e)
      if (layout.entries[e].tag == tag) {
        if (s.filled[e])
          fatal("dpc_send", "transfer tag " + std::to_string(tag) +
                                " was already sent for this microbatch");
        uint8_t *to = s.buffer.data() + layout.entries[e].wireOffset;
        int64_t bytes = layout.entries[e].bytes;
        if (layout.entries[e].bf16)
          floatsToBf16(static_cast<const float *>(data),
                       reinterpret_cast<uint16_t *>(to), bytes / 4);
        else
          device.copy(to, data, size_t(bytes));
        s.filled[e] = true;
      }
  }

  const void *recv(int64_t tag) {
    requireSegment("dpc_recv");
    const ManifestTransfer *t = manifest.findRecv(tag);
    if (!t)
      fatal("dpc_recv", "transfer tag " + std::to_string(tag) +
                            " is not in the manifest's "
                            "recvs");
    Boundary b{int(t->stage), int(t->peerStage), t->what};
    auto it = received.find({b, currentMb});
    if (it == received.end()) {
      for (auto &[key, p] : pendingRecvs)
        if (key.second == currentMb && p.boundary == b)
          fatal("dpc_recv", "transfer tag " + std::to_string(tag) +
                                " is still in flight (no RecvFinish before "
                                "this segment)");
      fatal("dpc_recv", "transfer tag " + std::to_string(tag) +
                            " was never received for this microbatch");
    }
    for (const PackLayout::Entry &e :
         shapesOf(currentMb).recvLayouts.at(b).entries)
      if (e.tag == tag)
        return it->second.data() + e.offset;
    fatal("dpc_recv", "internal error: tag missing from its pack");
  }

  const ManifestStash &stashSpec(const char *function, int64_t key) {
    const ManifestStash *s = manifest.findStash(key);
    if (!s)
      fatal(function,
            "stash key " + std::to_string(key) + " is not in the manifest");
    return *s;
  }

  static std::string stashName(const ManifestStash &s) {
    return "stash key " + std::to_string(s.key) +
           (s.name.empty() ? "" : " ('" + s.name + "')");
  }

  void stashValue(int64_t key, const void *data) {
    requireSegment("dpc_stash");
    const ManifestStash &s = stashSpec("dpc_stash", key);
    if (evaluating)
      return; // nothing runs backward
    Buffer &slot = stash[{key, currentMb}];
    if (slot)
      fatal("dpc_stash", stashName(s) + " was already stashed for this "
                                        "microbatch");
    int64_t bytes = shapesOf(currentMb).stashBytes.at(key);
    slot = Buffer(pool, size_t(bytes));
    device.copy(slot.data(), data, size_t(bytes));
    stashBytes += bytes;
    memory.peakStashBytes = std::max(memory.peakStashBytes, stashBytes);
  }

  const void *restore(int64_t key) {
    requireSegment("dpc_restore");
    const ManifestStash &s = stashSpec("dpc_restore", key);
    if (evaluating)
      fatal("dpc_restore", "called during a forward-only pass");
    auto it = stash.find({key, currentMb});
    if (it == stash.end())
      fatal("dpc_restore", stashName(s) +
                               " holds nothing for this microbatch (never "
                               "stashed, or already released)");
    return it->second.data();
  }

  void reportLoss(const float *loss) {
    requireSegment("dpc_report_loss");
    if (!manifest.isLastStage())
      fatal("dpc_report_loss", "only the last stage reports the loss");
    float value = 0;
    device.copyToHost(&value, loss, sizeof value);
    if (evaluating) {
      eval.reportedLoss += value;
      return;
    }
    if (losses[currentMb])
      fatal("dpc_report_loss", "the loss of this microbatch was already "
                               "reported");
    losses[currentMb] = value;
  }

  // Profiling: time per op id, summed over calls (the ids are the
  // manifest's "profile" entries).
  struct OpTime {
    double startMs = -1;
    double totalMs = 0;
    int64_t calls = 0;
    /// Every call's milliseconds, for the median: a call the OS preempted
    /// moves the mean, not the median.
    std::vector<float> callMs;
  };
  std::vector<OpTime> opTimes;
  /// Training steps run so far: the first one's op times (oneDNN's
  /// primitive creation, cold caches) are left out once a second one runs.
  int64_t trainingStepsRun = 0;

  OpTime &opTime(const char *function, int64_t op) {
    if (op < 0 || op >= static_cast<int64_t>(manifest.profile.size()))
      fatal(function,
            "op " + std::to_string(op) + " is not in the manifest's profile");
    if (opTimes.size() != manifest.profile.size())
      opTimes.resize(manifest.profile.size());
    return opTimes[op];
  }
  void profileBegin(int64_t op) {
    opTime("dpc_profile_begin", op).startMs = nowMs();
  }
  void profileEnd(int64_t op) {
    OpTime &t = opTime("dpc_profile_end", op);
    if (t.startMs < 0)
      fatal("dpc_profile_end", "op " + std::to_string(op) + " was not begun");
    double ms = nowMs() - t.startMs;
    t.totalMs += ms;
    t.callMs.push_back(float(ms));
    t.startMs = -1;
    ++t.calls;
  }

  /// The squared error of an output against its float targets (--loss mse),
  /// summed as MSELoss sums it before its mean.
  void reportRegression(const float *output) {
    const std::vector<int64_t> &shape = **shapesOf(currentMb).output;
    int64_t n = product(shape);
    int64_t targetCount = product(**shapesOf(currentMb).labels);
    if (targetCount != n)
      fatal("dpc_report_output", "the output has " + std::to_string(n) +
                                     " elements but the float targets have " +
                                     std::to_string(targetCount));
    const auto *values = static_cast<const float *>(
        download(output, size_t(n) * sizeof(float), downStaging));
    if (keepingOutputs)
      eval.outputs.insert(eval.outputs.end(), values, values + n);
    const auto *targets = static_cast<const float *>(
        download(labels(), size_t(n) * sizeof(float), labelStaging));
    for (int64_t i = 0; i < n; ++i) {
      double d = double(values[i]) - double(targets[i]);
      eval.squaredError += d * d;
    }
    eval.targets += n;
    eval.samples += shape[0];
  }

  void reportOutput(const float *output) {
    requireSegment("dpc_report_output");
    if (!manifest.outputShape)
      fatal("dpc_report_output",
            "the manifest declares no output for this stage");
    bool scoring = manifest.labelsShape.has_value();
    if (!evaluating || !(keepingOutputs || scoring))
      return;
    if (scoring && manifest.floatLabels) {
      reportRegression(output);
      return;
    }
    // A row per label: a sample of a classifier, a position of a
    // token-level loss; without labels, a sample.
    const std::vector<int64_t> &shape = **shapesOf(currentMb).output;
    int64_t rows = scoring ? product(**shapesOf(currentMb).labels) : shape[0];
    int64_t cols = product(shape) / rows;
    const auto *values = static_cast<const float *>(
        download(output, size_t(rows * cols) * sizeof(float), downStaging));
    if (keepingOutputs)
      eval.outputs.insert(eval.outputs.end(), values, values + rows * cols);
    if (!scoring)
      return;
    const auto *y = static_cast<const int64_t *>(
        download(labels(), size_t(rows) * sizeof(int64_t), labelStaging));
    if (manifest.ignoreIndex) {
      // Ignored positions are no predictions to score.
      for (int64_t r = 0; r < rows; ++r) {
        if (y[r] == *manifest.ignoreIndex)
          continue;
        eval.correct += countArgmaxHits(values + r * cols, 1, cols, y + r);
        ++eval.samples;
      }
      return;
    }
    eval.correct += countArgmaxHits(values, rows, cols, y);
    eval.samples += rows;
  }
};

//===----------------------------------------------------------------------===//
// Executor
//===----------------------------------------------------------------------===//

int64_t countArgmaxHits(const float *scores, int64_t rows, int64_t classes,
                        const int64_t *labels) {
  int64_t hits = 0;
  for (int64_t r = 0; r < rows; ++r) {
    const float *row = scores + r * classes;
    // The first maximum, as torch.argmax picks.
    hits += std::max_element(row, row + classes) - row == labels[r];
  }
  return hits;
}

Executor::Executor(RankManifest manifest, schedule::Schedule schedule,
                   Communicator &comm, SegmentFunctions segments)
    : Executor(std::move(manifest), std::move(schedule), comm, segments,
               nullptr) {}

Executor::Executor(RankManifest manifest, schedule::Schedule schedule,
                   Communicator &comm, SegmentFunctions segments,
                   Device &device)
    : Executor(std::move(manifest), std::move(schedule), comm, segments,
               &device) {}

Executor::Executor(RankManifest manifest, schedule::Schedule schedule,
                   Communicator &comm, SegmentFunctions segments,
                   Device *device)
    : impl(std::make_unique<Impl>(std::move(manifest), std::move(schedule),
                                  comm, segments, device)) {
  Impl &s = *impl;
  s.memory.peakWeightVersions = s.manifest.chunks;
  const RankManifest &m = s.manifest;
  if (m.buckets.empty()) {
    s.shapes.emplace_back(m.microbatchSize, 0, m.inputs, m.labelsShape,
                          m.outputShape, m.sends, m.recvs, m.stashes);
  } else {
    for (const ManifestBucket &b : m.buckets)
      s.shapes.emplace_back(b.batch, b.length, b.inputs, b.labelsShape,
                            b.outputShape, b.sends, b.recvs, b.stashes);
    s.topShapes = size_t(m.topBucket);
  }
  // bf16 packing converts in place on the host.
  for (const Shapes &shape : s.shapes)
    for (const auto *layouts : {&shape.sendLayouts, &shape.recvLayouts})
      for (const auto &[b, layout] : *layouts)
        if (layout.anyBf16 && !s.device.hostAccessible())
          throw Error("manifest: bf16 transfers need host memory, but the "
                      "tensors live on " +
                      s.device.description());
  s.validate();
  // Collective over the job: every rank takes part, replicated or not.
  if (s.sched.hasReplicas()) {
    std::unique_ptr<Communicator> group =
        comm.split(s.sched.stageOf(s.rank), s.rank);
    if (s.sched.replicasOf(s.manifest.stage) > 1)
      s.replicaComm = std::move(group);
  }
  s.params.resize(s.manifest.params.size());
  for (size_t k = 0; k < s.params.size(); ++k) {
    ParamState &p = s.params[k];
    p.spec = &s.manifest.params[k];
    p.count = size_t(p.spec->elements());
    // An inference build keeps no optimizer state.
    size_t states = s.manifest.inference
                        ? 0
                        : optimizerStateNames(s.manifest.optimizer).size();
    p.state.resize(states);
    std::vector<Buffer *> buffers = {&p.value, &p.grad};
    for (Buffer &b : p.state)
      buffers.push_back(&b);
    for (Buffer *b : buffers) {
      *b = Buffer(s.pool, p.bytes());
      s.device.memset(b->data(), 0, p.bytes());
    }
    s.paramIndex[p.spec->id] = k;
  }
}

Executor::~Executor() = default;

const RankManifest &Executor::manifest() const { return impl->manifest; }

std::string Executor::profileJson() const {
  nlohmann::ordered_json ops = nlohmann::ordered_json::array();
  for (size_t i = 0; i < impl->manifest.profile.size(); ++i) {
    const ManifestProfileOp &op = impl->manifest.profile[i];
    int64_t calls = i < impl->opTimes.size() ? impl->opTimes[i].calls : 0;
    double total = i < impl->opTimes.size() ? impl->opTimes[i].totalMs : 0;
    std::vector<float> callMs = i < impl->opTimes.size()
                                    ? impl->opTimes[i].callMs
                                    : std::vector<float>();
    double median = 0;
    if (!callMs.empty()) {
      auto middle = callMs.begin() + callMs.size() / 2;
      std::nth_element(callMs.begin(), middle, callMs.end());
      median = *middle;
    }
    ops.push_back({{"id", op.id},
                   {"node", op.node},
                   {"phase", op.phase},
                   {"calls", calls},
                   {"total_ms", total},
                   {"median_ms", median}});
  }
  nlohmann::ordered_json root = {{"format", "dpc-op-times"},
                                 {"version", 1},
                                 {"rank", impl->rank},
                                 {"ops", ops}};
  return root.dump(1) + "\n";
}
const schedule::Schedule &Executor::schedule() const { return impl->sched; }

void Executor::setFatalHandler(
    std::function<void(const std::string &)> handler) {
  impl->device.setErrorHandler(handler);
  impl->fatalHandler = std::move(handler);
}

/// The F32 tensor `name` of `shape` in `file`, copied to `out`.
static void copyTensor(const TensorFile &file, const std::string &fileName,
                       const std::string &name,
                       const std::vector<int64_t> &shape, Device &device,
                       void *out) {
  auto it = file.tensors.find(name);
  if (it == file.tensors.end())
    throw Error(fileName + ": no tensor '" + name + "'");
  const Tensor &t = it->second;
  if (t.dtype != DType::F32)
    throw Error(fileName + ": tensor '" + name + "' is " + dtypeName(t.dtype) +
                ", expected F32");
  if (t.shape != shape) {
    auto text = [](const std::vector<int64_t> &s) {
      std::string r = "[";
      for (size_t k = 0; k < s.size(); ++k)
        r += (k ? "," : "") + std::to_string(s[k]);
      return r + "]";
    };
    throw Error(fileName + ": tensor '" + name + "' has shape " +
                text(t.shape) + ", the model expects " + text(shape));
  }
  size_t elements = 1;
  for (int64_t d : shape)
    elements *= size_t(d);
  device.copyFromHost(out, t.bytes.data(), elements * sizeof(float));
}

/// The non-negative count a checkpoint's metadata `key` holds, if present.
static std::optional<int64_t> metadataCount(const TensorFile &file,
                                            const std::string &fileName,
                                            const std::string &key) {
  auto it = file.metadata.find(key);
  if (it == file.metadata.end())
    return std::nullopt;
  int64_t count = 0;
  if (!cli::parseInteger(it->second, count) || count < 0)
    throw Error(fileName + ": bad \"" + key + "\" metadata '" + it->second +
                "'");
  return count;
}

void Executor::loadParams(const TensorFile &file, const std::string &fileName,
                          bool optimizerState) {
  Device &device = impl->device;
  const std::vector<std::string> &states =
      optimizerStateNames(impl->manifest.optimizer);
  if (optimizerState) {
    // Checkpoints from before Adam carry no optimizer name: SGD's.
    auto it = file.metadata.find("optimizer");
    std::string written = it == file.metadata.end() ? "sgd" : it->second;
    std::string expected = optimizerName(impl->manifest.optimizer);
    if (written != expected)
      throw Error(fileName + ": written by a run with the " + written +
                  " optimizer; this build trains with " + expected);
    std::optional<int64_t> updates =
        metadataCount(file, fileName, "optimizer_updates");
    if (!updates && impl->manifest.optimizer == Optimizer::Adam)
      throw Error(fileName + ": no \"optimizer_updates\" metadata, which "
                             "Adam's bias correction needs");
    impl->optimizerUpdates = updates.value_or(0);
  }
  for (ParamState &p : impl->params) {
    copyTensor(file, fileName, p.spec->name, p.spec->shape, device,
               p.value.data());
    for (size_t k = 0; k < p.state.size(); ++k) {
      if (optimizerState)
        copyTensor(file, fileName, states[k] + "." + p.spec->name,
                   p.spec->shape, device, p.state[k].data());
      else
        device.memset(p.state[k].data(), 0, p.bytes());
    }
    device.memset(p.grad.data(), 0, p.bytes());
  }
}

TensorFile Executor::checkpoint(int64_t stepsDone) const {
  TensorFile file;
  std::vector<float> host;
  const std::vector<std::string> &states =
      optimizerStateNames(impl->manifest.optimizer);
  for (const ParamState &p : impl->params) {
    host.resize(p.count);
    impl->device.copyToHost(host.data(), p.value.data(), p.bytes());
    file.tensors[p.spec->name] = Tensor::fromF32(p.spec->shape, host.data());
    for (size_t k = 0; k < p.state.size(); ++k) {
      impl->device.copyToHost(host.data(), p.state[k].data(), p.bytes());
      file.tensors[states[k] + "." + p.spec->name] =
          Tensor::fromF32(p.spec->shape, host.data());
    }
  }
  file.metadata["format"] = "dpc-checkpoint";
  file.metadata["stage"] = std::to_string(impl->manifest.stage);
  file.metadata["stages"] = std::to_string(impl->manifest.stages);
  file.metadata["step"] = std::to_string(stepsDone);
  file.metadata["optimizer"] = optimizerName(impl->manifest.optimizer);
  file.metadata["optimizer_updates"] = std::to_string(impl->optimizerUpdates);
  return file;
}

int64_t Executor::checkpointStep(const TensorFile &file,
                                 const std::string &fileName) {
  std::optional<int64_t> step = metadataCount(file, fileName, "step");
  if (!step)
    throw Error(fileName + ": not a dpc checkpoint (no \"step\" metadata)");
  return *step;
}

std::vector<float> Executor::param(int64_t id) const {
  auto it = impl->paramIndex.find(id);
  if (it == impl->paramIndex.end())
    throw Error("no parameter with id " + std::to_string(id));
  const ParamState &p = impl->params[it->second];
  std::vector<float> value(p.count);
  impl->device.copyToHost(value.data(), p.value.data(), p.bytes());
  return value;
}

void Executor::setTrainData(const Dataset *data, bool shuffle, uint64_t seed) {
  impl->trainData = data;
  impl->seed = seed;
  impl->trainSampler.reset();
  if (!data)
    return;
  SamplerConfig config;
  config.numSamples = data->size();
  config.microbatches = impl->sched.microbatches;
  config.microbatchSize = impl->manifest.microbatchSize;
  config.shuffle = shuffle;
  config.seed = seed;
  impl->trainSampler = std::make_unique<Sampler>(config);
}

Sampler *Executor::trainSampler() {
  return impl->trainSampler.get();
}

double Executor::runStep(int64_t step) {
  Impl &s = *impl;
  if (s.planned) {
    s.sched = s.fixedSched;
    s.planned = false;
  }
  return s.trainStep(step);
}

double Executor::runStep(int64_t step, const StepPlan &plan) {
  Impl &s = *impl;
  const schedule::Schedule &p = plan.schedule;
  const schedule::Schedule &fixed = s.fixedSched;
  std::string at = "step " + std::to_string(step + 1) + ": planned schedule: ";
  if (p.ranks != fixed.ranks || p.chunks != fixed.chunks ||
      p.kind != fixed.kind || p.replicas != fixed.replicas)
    throw Error(at + "its kind or rank layout differs from " +
                s.manifest.schedule + "'s");
  if (std::string problem = p.checkLayout(); !problem.empty())
    throw Error(at + problem);
  if (int64_t(p.microbatches) * 2 * p.numVirtualStages() >=
      schedule::kScheduleTagLimit)
    throw Error(at + std::to_string(p.microbatches) +
                " microbatches need more message tags than the schedule's " +
                std::to_string(schedule::kScheduleTagLimit));
  if (plan.microbatches.size() != size_t(p.microbatches))
    throw Error(at + "it runs " + std::to_string(p.microbatches) +
                " microbatches but the plan has " +
                std::to_string(plan.microbatches.size()));
  s.mbBucket.clear();
  s.mbSamples.clear();
  for (size_t mb = 0; mb < plan.microbatches.size(); ++mb) {
    const PlannedMicrobatch &planned = plan.microbatches[mb];
    if (planned.bucket < 0 || size_t(planned.bucket) >= s.shapes.size())
      throw Error(at + "microbatch " + std::to_string(mb) + " names bucket " +
                  std::to_string(planned.bucket) + " of " +
                  std::to_string(s.shapes.size()));
    int64_t rows = s.shapes[size_t(planned.bucket)].batch;
    if (planned.samples.empty() || int64_t(planned.samples.size()) > rows)
      throw Error(at + "microbatch " + std::to_string(mb) + " has " +
                  std::to_string(planned.samples.size()) +
                  " samples; its bucket holds 1 to " + std::to_string(rows));
    s.mbBucket.push_back(planned.bucket);
    s.mbSamples.push_back(planned.samples);
  }
  s.sched = p;
  s.planned = true;
  return s.trainStep(step);
}

double Executor::Impl::trainStep(int64_t step) {
  Impl &s = *this;
  bool needsData = s.manifest.isFirstStage() || s.manifest.labelsShape;
  if (needsData && !s.trainSampler)
    throw Error("stage " + std::to_string(s.manifest.stage) +
                " reads data but has no training dataset");
  s.evaluating = false;
  s.currentData = s.trainData;
  s.currentSampler = s.trainSampler.get();
  s.currentStep = step;
  if (s.trainingStepsRun++ == 1)
    s.opTimes.clear();
  if (s.manifest.ignoreIndex && s.manifest.labelsShape)
    s.countStepLabels(step);
  s.losses.assign(size_t(s.sched.microbatches), std::nullopt);
  s.liveVersion = 0;
  s.stepTimes = StepTimes();
  double stepStart = nowMs();
  const std::vector<Instruction> &program = s.sched.programs[s.rank];
  for (size_t k = 0; k < program.size(); ++k) {
    setActivity(step, program[k], s.sched.chunks);
    s.run(step, k, program[k]);
  }
  s.checkStepEnd("step " + std::to_string(step + 1));
  // The step's time includes its device work, and a device fault is
  // reported at the step it happened in.
  s.device.synchronize();
  s.stepTimes.stepMs = nowMs() - stepStart;
  if (s.replicaComm && s.manifest.isLastStage())
    s.gatherLosses();
  double loss = 0;
  for (const std::optional<double> &l : s.losses)
    loss += l.value_or(0.0);
  // Each pipedream update trains on one microbatch, whose loss is its own
  // mean; the window's loss is the mean of those.
  if (!schedule::isSynchronous(s.sched.kind))
    loss /= double(s.sched.microbatches);
  return loss;
}

const StepTimes &Executor::stepTimes() const { return impl->stepTimes; }

double Executor::predictedComputeMs() const {
  const Impl &s = *impl;
  const schedule::Schedule &sched = s.sched;
  double total = 0;
  for (const Instruction &i : sched.programs[s.rank]) {
    int stage = sched.virtualStage(s.rank, i.chunk);
    if (s.planned && !s.manifest.buckets.empty() && i.mb >= 0)
      total +=
          stageInfo(
              s.manifest.buckets[s.shapeIndex(i.mb)].stageCosts[size_t(stage)])
              .computeMs(i.op);
    else
      total += sched.stages[size_t(stage)].computeMs(i.op);
  }
  return total;
}

void Executor::setForwardDelay(double ms) { impl->forwardDelayMs = ms; }

const MemoryStats &Executor::memoryStats() const { return impl->memory; }
const schedule::RankStats &Executor::promisedMemory() const {
  return impl->promised;
}

EvalResult Executor::evaluate(const Dataset *data, int64_t microbatches,
                              bool keepOutputs) {
  Impl &s = *impl;
  const RankManifest &m = s.manifest;
  // The first replica of every stage evaluates; the others have the same
  // weights and nothing to add.
  if (s.sched.replicaOf(s.rank) != 0)
    return EvalResult();
  bool needsData = m.isFirstStage() || m.labelsShape;
  std::unique_ptr<Sampler> sampler;
  if (needsData) {
    if (!data)
      throw Error("stage " + std::to_string(m.stage) +
                  " reads data but has no evaluation dataset");
    SamplerConfig config;
    config.numSamples = data->size();
    config.microbatches = 1;
    config.microbatchSize = m.microbatchSize;
    config.shuffle = false;
    config.padLast = keepOutputs;
    sampler = std::make_unique<Sampler>(config);
    if (sampler->stepsPerEpoch() < microbatches)
      throw Error("evaluation wants " + std::to_string(microbatches) +
                  " microbatches but the dataset has " +
                  std::to_string(sampler->stepsPerEpoch()));
  }
  s.evaluating = true;
  s.keepingOutputs = keepOutputs;
  s.eval = EvalResult();
  s.currentData = data;
  s.currentSampler = sampler.get();

  // Forward only, microbatch by microbatch and chunk by chunk: every
  // activation message of the training program, one per boundary and
  // microbatch, with one control tag per sending chunk (MPI keeps the
  // messages between two ranks with one tag in order, and every rank walks
  // (microbatch, chunk) in the same order). The sends of a microbatch stay
  // in flight while the next one computes.
  auto transfer = [&](Op op, int chunk, int mb) {
    Instruction i =
        Instruction::transfer(op, Payload::Activation, mb, chunk, -1, -1, 0);
    Boundary b = s.boundaryOf(i);
    i.peer = s.sched.rankOf(b.peer, 0);
    i.tag = kFirstControlTag + 16 + s.sched.chunkOf(std::min(b.stage, b.peer));
    return i;
  };
  auto at = [&](int64_t mb) {
    return "evaluation mb " + std::to_string(mb) + ": ";
  };
  std::vector<Instruction> sending;
  for (int64_t k = 0; k < microbatches; ++k) {
    int mb = int(k);
    std::vector<Instruction> started;
    for (int chunk = 0; chunk < m.chunks; ++chunk) {
      int stage = m.virtualStage(chunk);
      if (stage > 0) {
        s.recvStart(transfer(Op::RecvStart, chunk, mb), at(k));
        s.recvFinish(transfer(Op::RecvFinish, chunk, mb), at(k));
      }
      if (s.loadsData(chunk))
        s.load(mb, chunk, k, 0);
      s.callSegment(Phase::Forward, s.segments.forward, mb, chunk);
      if (stage < s.lastStage()) {
        if (chunk == 0)
          for (const Instruction &send : std::exchange(sending, {}))
            s.sendFinish(send, at(k - 1));
        s.sendStart(transfer(Op::SendStart, chunk, mb), at(k));
        started.push_back(transfer(Op::SendFinish, chunk, mb));
      }
    }
    for (int chunk = 0; chunk < m.chunks; ++chunk)
      s.releaseMicrobatch(mb, chunk);
    for (Instruction &send : started)
      sending.push_back(send);
  }
  for (const Instruction &send : sending)
    s.sendFinish(send, at(microbatches - 1));
  s.checkStepEnd("evaluation");
  s.device.synchronize();
  s.evaluating = false;
  return s.eval;
}

void Executor::connect(Transport transport) {
  Impl &s = *impl;
  if (s.transfers != &s.comm)
    throw Error("the executor is connected already");
  std::unique_ptr<Communicator> c = s.device.connect(s.comm, transport);
  if (c && !c->matchesByTag() && !s.rendezvousProven) {
    // The verifier's decision, so the same on every rank.
    std::string why = s.manifest.schedule +
                      " is not proven free of deadlock under rendezvous "
                      "transfers, which transport '" +
                      c->transportDescription() +
                      "' needs (it matches transfers in start order)";
    if (transport != Transport::Auto)
      throw Error(std::string("transport ") + transportName(transport) + ": " +
                  why + " (use auto or host-staging)");
    c.reset();
    c = s.device.connect(s.comm, Transport::HostStaging);
    s.transportNote = " (" + why + ")";
  }
  if (!c)
    return;
  c->setTimeout(s.comm.timeout());
  // Collective over the job, as the constructor's split of `comm`.
  if (s.sched.hasReplicas()) {
    std::unique_ptr<Communicator> group =
        c->split(s.sched.stageOf(s.rank), s.rank);
    if (s.sched.replicasOf(s.manifest.stage) > 1)
      s.replicaDeviceComm = std::move(group);
  }
  s.deviceComm = std::move(c);
  s.transfers = s.deviceComm.get();
}

std::string Executor::transportDescription() const {
  const Impl &s = *impl;
  std::string text = s.deviceComm ? s.deviceComm->transportDescription()
                     : s.stagesTransfers()
                         ? "mpi, staged through host memory by the executor"
                         : "mpi";
  return text + s.transportNote;
}

void Executor::enableTrace(double originMs) {
  impl->tracing = true;
  impl->traceOrigin = originMs;
}

const std::vector<schedule::TimelineEvent> &Executor::traceEvents() const {
  return impl->events;
}

double Executor::nowMs() {
  using namespace std::chrono;
  return duration<double, std::milli>(steady_clock::now().time_since_epoch())
      .count();
}

void broadcastInts(Communicator &comm, int root, std::vector<int64_t> &values) {
  const int tag = kFirstControlTag + 2;
  size_t bytes = values.size() * sizeof(int64_t);
  if (comm.rank() == root) {
    std::vector<Request> requests;
    for (int r = 0; r < comm.size(); ++r)
      if (r != root)
        requests.push_back(comm.isend(values.data(), bytes, r, tag));
    for (Request &r : requests)
      comm.wait(r);
  } else {
    Request r = comm.irecv(values.data(), bytes, root, tag);
    comm.wait(r);
  }
}

std::vector<std::vector<int64_t>>
gatherInts(Communicator &comm, int root, const std::vector<int64_t> &values) {
  const int tag = kFirstControlTag + 3;
  size_t bytes = values.size() * sizeof(int64_t);
  std::vector<std::vector<int64_t>> all;
  if (comm.rank() != root) {
    Request r = comm.isend(values.data(), bytes, root, tag);
    comm.wait(r);
    return all;
  }
  all.assign(comm.size(), std::vector<int64_t>(values.size()));
  std::vector<Request> requests;
  for (int r = 0; r < comm.size(); ++r)
    if (r != root)
      requests.push_back(comm.irecv(all[r].data(), bytes, r, tag));
  all[root] = values;
  for (Request &r : requests)
    comm.wait(r);
  return all;
}

} // namespace dpc::runtime

//===----------------------------------------------------------------------===//
// The C ABI functions of the context
//===----------------------------------------------------------------------===//

using dpc::runtime::Executor;

static Executor::Impl &state(dpc_context *ctx) {
  return *static_cast<Executor::Impl *>(ctx);
}

extern "C" {

int64_t dpc_chunk(dpc_context *ctx) { return state(ctx).currentChunk; }
int64_t dpc_bucket(dpc_context *ctx) {
  Executor::Impl &s = state(ctx);
  return int64_t(s.shapeIndex(s.currentMb));
}
const void *dpc_input(dpc_context *ctx, int64_t index) {
  return state(ctx).input(index);
}
const int64_t *dpc_labels(dpc_context *ctx) { return state(ctx).labels(); }
float dpc_loss_scale(dpc_context *ctx) { return state(ctx).lossScale(); }
void *dpc_alloc(dpc_context *ctx, int64_t bytes) {
  return state(ctx).alloc(bytes);
}
const float *dpc_param(dpc_context *ctx, int64_t param) {
  return state(ctx).param(param);
}
int64_t dpc_training(dpc_context *ctx) { return !state(ctx).evaluating; }
int64_t dpc_random_key(dpc_context *ctx, int64_t op) {
  return state(ctx).randomKey(op);
}
float *dpc_param_state(dpc_context *ctx, int64_t param) {
  return state(ctx).paramStateBuffer(param);
}
void dpc_grad_accumulate(dpc_context *ctx, int64_t param, const float *grad) {
  state(ctx).gradAccumulate(param, grad);
}
void dpc_sgd_step(dpc_context *ctx, int64_t param, float lr, float momentum,
                  float weight_decay) {
  state(ctx).sgdStep(param, lr, momentum, weight_decay);
}
void dpc_adam_step(dpc_context *ctx, int64_t param, float lr, float beta1,
                   float beta2, float eps, float weight_decay) {
  state(ctx).adamStep(param, lr, beta1, beta2, eps, weight_decay);
}
void dpc_send(dpc_context *ctx, int64_t tag, const void *data) {
  state(ctx).send(tag, data);
}
const void *dpc_recv(dpc_context *ctx, int64_t tag) {
  return state(ctx).recv(tag);
}
void dpc_stash(dpc_context *ctx, int64_t key, const void *data) {
  state(ctx).stashValue(key, data);
}
const void *dpc_restore(dpc_context *ctx, int64_t key) {
  return state(ctx).restore(key);
}
void dpc_report_loss(dpc_context *ctx, const float *loss) {
  state(ctx).reportLoss(loss);
}
void dpc_report_output(dpc_context *ctx, const float *output) {
  state(ctx).reportOutput(output);
}
void dpc_profile_begin(dpc_context *ctx, int64_t op) {
  state(ctx).profileBegin(op);
}
void dpc_profile_end(dpc_context *ctx, int64_t op) {
  state(ctx).profileEnd(op);
}

} // extern "C"
