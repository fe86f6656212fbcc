//===- VerifierReplay.cpp - Each rank's stream replayed alone -------------===//
//
// Phase 2 of the verifier (Verifier.cpp). A RankReplay walks one rank's
// stream in order and holds what has run, what is live and how much memory
// it takes. Each instruction family has a handler that checks dataflow and
// stash discipline before it changes the state; the first violation ends the
// replay. Memory counts each buffer from the instruction that fills it to the
// one that releases it, as the runtime keeps them. At the end of the stream:
// every microbatch trained, nothing left live, the updates the schedule kind
// promises, and the peak under the limit.
//
//===----------------------------------------------------------------------===//

#include "VerifierReplay.h"

#include "dpc/support/CommandLine.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <set>
#include <tuple>
#include <vector>

namespace dpc::schedule::detail {

namespace {

/// Bytes held by (chunk, mb).
using BytesByMb = std::map<std::pair<int, int>, double>;

class RankReplay {
public:
  RankReplay(const Schedule &s, const VerifyOptions &options, int r,
             VerifyResult &result);

  void run();

private:
  // One handler per instruction family; each returns false after reporting
  // a violation, which ends the replay.
  bool step(int i);
  bool loadMicrobatch(int i);
  bool runForward(int i);
  bool runBackward(int i);
  bool runBackwardWeight(int i);
  bool stash(int i);
  bool restore(int i);
  bool freeStash(int i);
  bool stashWeights(int i);
  bool restoreWeights(int i);
  bool freeWeights(int i);
  bool startTransfer(int i);
  bool finishTransfer(int i);
  bool allReduce(int i);
  bool optimizerStep(int i);

  // Dataflow checks shared by the handlers.
  bool checkVersion(int i);
  bool allWeightGrads(int chunk, int &missingMb) const;

  // Memory accounting.
  void planFills();
  void track(double delta, int i);
  void runScratch(int i);
  void fill(bool forward, int c, int mb, int i);
  void release(BytesByMb &bytes, int c, int mb, int i);

  // End of stream.
  bool checkAllTrained();
  void reportLeaks();
  void checkUpdateCount();
  void reportMemory();

  bool fail(ViolationKind kind, int i, std::string message) {
    reportViolation(result, s, kind, r, i, std::move(message));
    return false;
  }
  std::vector<std::vector<char>> grid(bool value) const {
    return std::vector<std::vector<char>>(v, std::vector<char>(m, value));
  }

  const Schedule &s;
  const VerifyOptions &options;
  VerifyResult &result;
  const int r;
  const std::vector<Instruction> &program;
  const int m, v, numVs;
  RankStats &stats;
  const bool replicated;
  const bool sync;
  const double limit;

  // What has run, by [chunk][mb].
  std::vector<std::vector<char>> forwardDone, inputGradDone, weightGradDone,
      restored;
  std::vector<char> loaded;
  std::set<std::tuple<int, int, int>> received; // (what, mb, chunk)
  // Live stashes: (chunk, mb) -> index of the Stash.
  std::map<std::pair<int, int>, int> stashes;
  // Live weight copies: (chunk, version) -> index of StashWeights.
  std::map<std::pair<int, int>, int> weightCopies;
  std::vector<int> updates;
  std::vector<int> restoredVersion;
  std::vector<char> reduced;
  // Outstanding transfers: (send?, peer, tag) -> Start indices.
  std::map<std::tuple<bool, int, int>, std::vector<int>> open;
  int optimizerSteps = 0;
  int backwardsSinceUpdate = 0;

  // Received buffers, by (chunk, mb): the runtime keeps what a microbatch
  // received until the compute that reads it has run (the forward its
  // activations; the backward its output gradient, which both halves of a
  // split backward read).
  BytesByMb held;
  // Loaded data, by (chunk, mb): the runtime keeps a microbatch's inputs or
  // labels until its backward (Backward, or BackwardWeight) has run.
  BytesByMb loadedBytes;
  // What each compute fills, by (forward?, c, mb); see planFills.
  std::map<std::tuple<bool, int, int>, double> filled;
  double memory = 0;
  double peak = 0;
  int overIndex = -1;
  double overMemory = 0;
};

RankReplay::RankReplay(const Schedule &s, const VerifyOptions &options, int r,
                       VerifyResult &result)
    : s(s), options(options), result(result), r(r), program(s.programs[r]),
      m(s.microbatches), v(s.chunks), numVs(s.numVirtualStages()),
      stats(result.ranks[r]), replicated(s.replicasOf(s.stageOf(r)) > 1),
      sync(isSynchronous(s.kind)), limit(options.memoryLimitOf(r)),
      forwardDone(grid(false)), inputGradDone(grid(false)),
      weightGradDone(grid(false)), restored(grid(false)), loaded(m, false),
      updates(v, 0), restoredVersion(v, -1), reduced(v, false) {
  for (int c = 0; c < v; ++c)
    memory += s.stage(r, c).paramBytes;
  peak = memory;
  planFills();
}

void RankReplay::run() {
  for (int i = 0; i < static_cast<int>(program.size()); ++i) {
    if (!step(i))
      return;
    stats.peakWeightVersions = std::max(
        stats.peakWeightVersions, v + static_cast<int>(weightCopies.size()));
  }

  stats.peakMemoryBytes = static_cast<int64_t>(peak);
  stats.optimizerSteps = optimizerSteps;
  if (stats.peakWeightVersions == 0)
    stats.peakWeightVersions = v;

  // End of stream: every microbatch trained, everything freed and finished.
  if (!checkAllTrained())
    return;
  reportLeaks();
  checkUpdateCount();
  reportMemory();
}

bool RankReplay::step(int i) {
  switch (program[i].op) {
  case Op::LoadMicrobatch:
    return loadMicrobatch(i);
  case Op::Forward:
    return runForward(i);
  case Op::Backward:
  case Op::BackwardInput:
    return runBackward(i);
  case Op::BackwardWeight:
    return runBackwardWeight(i);
  case Op::Stash:
    return stash(i);
  case Op::Restore:
    return restore(i);
  case Op::Free:
    return freeStash(i);
  case Op::StashWeights:
    return stashWeights(i);
  case Op::RestoreWeights:
    return restoreWeights(i);
  case Op::FreeWeights:
    return freeWeights(i);
  case Op::SendStart:
  case Op::RecvStart:
    return startTransfer(i);
  case Op::SendFinish:
  case Op::RecvFinish:
    return finishTransfer(i);
  case Op::AllReduce:
    return allReduce(i);
  case Op::OptimizerStep:
    return optimizerStep(i);
  }
  return true;
}

//===----------------------------------------------------------------------===//
// Compute
//===----------------------------------------------------------------------===//

bool RankReplay::loadMicrobatch(int i) {
  int c = program[i].chunk, mb = program[i].mb;
  loaded[mb] = true;
  if (double bytes = double(s.stage(r, c).inputBytes); bytes > 0) {
    loadedBytes[{c, mb}] = bytes;
    track(bytes, i);
  }
  return true;
}

bool RankReplay::runForward(int i) {
  int c = program[i].chunk, mb = program[i].mb;
  int vs = s.virtualStage(r, c);
  if (forwardDone[c][mb])
    return fail(ViolationKind::Duplicate, i, "forward runs twice");
  if ((vs == 0 || vs == numVs - 1) && !loaded[mb])
    return fail(ViolationKind::Dataflow, i,
                "forward of " + mbText(mb) +
                    " before its LoadMicrobatch (the first and last "
                    "stages read the data)");
  if (vs > 0) {
    int prevRank = s.rankOf(vs - 1, mb);
    bool ready = prevRank == r
                     ? forwardDone[s.chunkOf(vs - 1)][mb]
                     : received.count({int(Payload::Activation), mb, c});
    if (!ready)
      return fail(ViolationKind::Dataflow, i,
                  "forward of " + mbText(mb) +
                      " before its input activation arrived from rank " +
                      std::to_string(prevRank));
  }
  if (!checkVersion(i))
    return false;
  restoredVersion[c] = -1;
  forwardDone[c][mb] = true;
  fill(/*forward=*/true, c, mb, i);
  runScratch(i);
  release(held, c, mb, i);
  return true;
}

bool RankReplay::runBackward(int i) {
  const Instruction &inst = program[i];
  int c = inst.chunk, mb = inst.mb;
  int vs = s.virtualStage(r, c);
  if (inputGradDone[c][mb])
    return fail(ViolationKind::Duplicate, i, "backward runs twice");
  if (!forwardDone[c][mb])
    return fail(ViolationKind::Dataflow, i,
                "backward of " + mbText(mb) + " before its forward");
  if (!restored[c][mb])
    return fail(ViolationKind::RestoreNoStash, i,
                "backward of " + mbText(mb) +
                    " without a Restore of its stash");
  if (vs + 1 < numVs) {
    int nextRank = s.rankOf(vs + 1, mb);
    bool ready = nextRank == r
                     ? inputGradDone[s.chunkOf(vs + 1)][mb]
                     : received.count({int(Payload::Gradient), mb, c});
    if (!ready)
      return fail(ViolationKind::Dataflow, i,
                  "backward of " + mbText(mb) +
                      " before its output gradient arrived from rank " +
                      std::to_string(nextRank));
  }
  if (!checkVersion(i))
    return false;
  restoredVersion[c] = -1;
  inputGradDone[c][mb] = true;
  fill(/*forward=*/false, c, mb, i);
  runScratch(i);
  if (inst.op == Op::Backward) {
    weightGradDone[c][mb] = true;
    ++backwardsSinceUpdate;
    release(held, c, mb, i);
    release(loadedBytes, c, mb, i);
  }
  return true;
}

bool RankReplay::runBackwardWeight(int i) {
  int c = program[i].chunk, mb = program[i].mb;
  if (weightGradDone[c][mb])
    return fail(ViolationKind::Duplicate, i, "weight gradient runs twice");
  if (!inputGradDone[c][mb])
    return fail(ViolationKind::Dataflow, i,
                "weight gradient of " + mbText(mb) +
                    " before its BackwardInput");
  if (!stashes.count({c, mb}))
    return fail(ViolationKind::RestoreNoStash, i,
                "weight gradient of " + mbText(mb) +
                    " after its stash was freed");
  weightGradDone[c][mb] = true;
  ++backwardsSinceUpdate;
  runScratch(i);
  release(held, c, mb, i);
  release(loadedBytes, c, mb, i);
  return true;
}

//===----------------------------------------------------------------------===//
// Activation stashes
//===----------------------------------------------------------------------===//

bool RankReplay::stash(int i) {
  int c = program[i].chunk, mb = program[i].mb;
  if (!forwardDone[c][mb])
    return fail(ViolationKind::Dataflow, i,
                "stash of " + mbText(mb) + " before its forward");
  if (stashes.count({c, mb}))
    return fail(ViolationKind::Duplicate, i,
                "stash of " + mbText(mb) + " is already live");
  stashes[{c, mb}] = i;
  stats.peakStashes =
      std::max(stats.peakStashes, static_cast<int>(stashes.size()));
  // Its bytes counted from the forward that filled it.
  return true;
}

bool RankReplay::restore(int i) {
  int c = program[i].chunk, mb = program[i].mb;
  if (!stashes.count({c, mb}))
    return fail(ViolationKind::RestoreNoStash, i,
                "restore of " + mbText(mb) + " without a live stash");
  restored[c][mb] = true;
  return true;
}

bool RankReplay::freeStash(int i) {
  int c = program[i].chunk, mb = program[i].mb;
  auto it = stashes.find({c, mb});
  if (it == stashes.end())
    return fail(ViolationKind::RestoreNoStash, i,
                "free of " + mbText(mb) + " without a live stash");
  track(-static_cast<double>(program[it->second].bytes), i);
  stashes.erase(it);
  return true;
}

//===----------------------------------------------------------------------===//
// Weight versions
//===----------------------------------------------------------------------===//

// Versioned compute needs the current weights or a restored copy.
bool RankReplay::checkVersion(int i) {
  const Instruction &inst = program[i];
  int c = inst.chunk;
  if (inst.version < 0 || inst.version == updates[c])
    return true;
  if (inst.version > updates[c])
    return fail(ViolationKind::Dataflow, i,
                "uses weight version " + std::to_string(inst.version) +
                    " but only " + std::to_string(updates[c]) +
                    " updates ran before it");
  if (restoredVersion[c] != inst.version)
    return fail(ViolationKind::RestoreNoStash, i,
                "uses old weight version " + std::to_string(inst.version) +
                    " without a RestoreWeights of it");
  return true;
}

bool RankReplay::stashWeights(int i) {
  const Instruction &inst = program[i];
  int c = inst.chunk;
  if (inst.version != updates[c])
    return fail(ViolationKind::Dataflow, i,
                "stashes weight version " + std::to_string(inst.version) +
                    " but the current version is " +
                    std::to_string(updates[c]));
  if (weightCopies.count({c, inst.version}))
    return fail(ViolationKind::Duplicate, i,
                "weight version " + std::to_string(inst.version) +
                    " is already stashed");
  weightCopies[{c, inst.version}] = i;
  track(static_cast<double>(inst.bytes), i);
  return true;
}

bool RankReplay::restoreWeights(int i) {
  const Instruction &inst = program[i];
  if (!weightCopies.count({inst.chunk, inst.version}))
    return fail(ViolationKind::RestoreNoStash, i,
                "restore of weight version " + std::to_string(inst.version) +
                    " without a stash");
  restoredVersion[inst.chunk] = inst.version;
  return true;
}

bool RankReplay::freeWeights(int i) {
  const Instruction &inst = program[i];
  auto it = weightCopies.find({inst.chunk, inst.version});
  if (it == weightCopies.end())
    return fail(ViolationKind::RestoreNoStash, i,
                "free of weight version " + std::to_string(inst.version) +
                    " without a stash");
  track(-static_cast<double>(program[it->second].bytes), i);
  weightCopies.erase(it);
  return true;
}

//===----------------------------------------------------------------------===//
// Transfers
//===----------------------------------------------------------------------===//

bool RankReplay::startTransfer(int i) {
  const Instruction &inst = program[i];
  int c = inst.chunk, mb = inst.mb;
  int vs = s.virtualStage(r, c);
  bool send = inst.op == Op::SendStart;
  bool act = inst.what == Payload::Activation;
  // Activations flow to the next virtual stage, gradients to the
  // previous one; anything else is routed to the wrong rank.
  int otherVs = (act == send) ? vs + 1 : vs - 1;
  if (otherVs < 0 || otherVs >= numVs || s.rankOf(otherVs, mb) != inst.peer)
    return fail(ViolationKind::Malformed, i,
                std::string(send ? "sends " : "receives ") +
                    payloadName(inst.what) + " of " + mbText(mb) +
                    (send ? " to" : " from") + " rank " +
                    std::to_string(inst.peer) + ", which does not hold the " +
                    ((act == send) ? "next" : "previous") + " stage");
  if (send && act && !forwardDone[c][mb])
    return fail(ViolationKind::Dataflow, i,
                "sends the activation of " + mbText(mb) +
                    " before its forward");
  if (send && !act && !inputGradDone[c][mb])
    return fail(ViolationKind::Dataflow, i,
                "sends the gradient of " + mbText(mb) + " before its backward");
  open[{send, inst.peer, inst.tag}].push_back(i);
  if (!send) // A send's pack counts from the compute that filled it.
    track(static_cast<double>(inst.bytes), i);
  return true;
}

bool RankReplay::finishTransfer(int i) {
  const Instruction &inst = program[i];
  int c = inst.chunk, mb = inst.mb;
  bool send = inst.op == Op::SendFinish;
  auto it = open.find({send, inst.peer, inst.tag});
  if (it == open.end() || it->second.empty())
    return fail(ViolationKind::Unfinished, i,
                std::string("no earlier ") +
                    (send ? "SendStart" : "RecvStart") +
                    " with this peer and tag");
  int start = it->second.front();
  it->second.erase(it->second.begin());
  if (it->second.empty())
    open.erase(it);
  if (send) {
    track(-static_cast<double>(program[start].bytes), i);
  } else {
    received.insert({int(inst.what), mb, c});
    held[{c, mb}] += static_cast<double>(program[start].bytes);
  }
  return true;
}

//===----------------------------------------------------------------------===//
// All-reduce and optimizer step
//===----------------------------------------------------------------------===//

// A replica trains only its share of the microbatches.
bool RankReplay::allWeightGrads(int chunk, int &missingMb) const {
  for (int mb = 0; mb < m; ++mb) {
    if (s.runs(r, mb) && !weightGradDone[chunk][mb]) {
      missingMb = mb;
      return false;
    }
  }
  return true;
}

bool RankReplay::allReduce(int i) {
  int c = program[i].chunk;
  int missing = -1;
  if (!allWeightGrads(c, missing))
    return fail(ViolationKind::Dataflow, i,
                "all-reduce before the weight gradient of " + mbText(missing));
  if (reduced[c])
    return fail(ViolationKind::Duplicate, i,
                "the gradients are all-reduced twice before the update");
  reduced[c] = true;
  return true;
}

bool RankReplay::optimizerStep(int i) {
  ++optimizerSteps;
  runScratch(i);
  if (sync) {
    for (int chunk = 0; chunk < v; ++chunk) {
      int missing = -1;
      if (!allWeightGrads(chunk, missing))
        return fail(ViolationKind::OptimizerCount, i,
                    std::string(kindName(s.kind)) +
                        " updates once per minibatch, but this update "
                        "comes before the backward of " +
                        mbText(missing));
      if (replicated && !reduced[chunk])
        return fail(ViolationKind::OptimizerCount, i,
                    "stage " + std::to_string(s.stageOf(r)) + " has " +
                        std::to_string(s.replicasOf(s.stageOf(r))) +
                        " replicas, but this update comes before the "
                        "all-reduce of their gradients");
      reduced[chunk] = false;
    }
  } else if (s.kind == ScheduleKind::PipeDream && backwardsSinceUpdate != 1) {
    return fail(ViolationKind::OptimizerCount, i,
                "pipedream updates after every backward, but " +
                    std::to_string(backwardsSinceUpdate) +
                    " backwards ran since the last update");
  }
  backwardsSinceUpdate = 0;
  for (int chunk = 0; chunk < v; ++chunk)
    ++updates[chunk];
  return true;
}

//===----------------------------------------------------------------------===//
// Memory accounting
//===----------------------------------------------------------------------===//

// Buffers a compute fills count from that compute, alongside its scratch:
// the forward writes its activation's send packs (dpc_send) and its stash
// slot, the backward (or its input half) its gradient's send packs; a
// split backward's input half also writes what it saves for its weight
// half into the slot. A pack lives to its SendFinish, a slot to its Free.
void RankReplay::planFills() {
  std::set<std::pair<int, int>> splitBackward; // (c, mb)
  for (const Instruction &in : program)
    if (in.op == Op::BackwardInput)
      splitBackward.insert({in.chunk, in.mb});
  for (const Instruction &in : program) {
    if (in.op == Op::SendStart) {
      filled[{in.what == Payload::Activation, in.chunk, in.mb}] +=
          double(in.bytes);
    } else if (in.op == Op::Stash) {
      double later =
          splitBackward.count({in.chunk, in.mb})
              ? std::clamp(double(s.stage(r, in.chunk).backwardStashBytes), 0.0,
                           double(in.bytes))
              : 0.0;
      filled[{true, in.chunk, in.mb}] += double(in.bytes) - later;
      filled[{false, in.chunk, in.mb}] += later;
    }
  }
}

void RankReplay::track(double delta, int i) {
  memory += delta;
  if (memory > peak)
    peak = memory;
  if (limit > 0 && memory > limit && overIndex < 0) {
    overIndex = i;
    overMemory = memory;
  }
}

// A compute instruction's scratch, live while it runs.
void RankReplay::runScratch(int i) {
  if (!options.computeScratchBytes)
    return;
  double scratch = options.computeScratchBytes(
      s.virtualStage(r, program[i].chunk), program[i]);
  track(scratch, i);
  memory -= scratch;
}

void RankReplay::fill(bool forward, int c, int mb, int i) {
  auto it = filled.find({forward, c, mb});
  if (it != filled.end())
    track(it->second, i);
}

// Received or loaded bytes of (c, mb) that the runtime releases at i.
void RankReplay::release(BytesByMb &bytes, int c, int mb, int i) {
  auto it = bytes.find({c, mb});
  if (it == bytes.end())
    return;
  track(-it->second, i);
  bytes.erase(it);
}

//===----------------------------------------------------------------------===//
// End of stream
//===----------------------------------------------------------------------===//

// Reports the first microbatch some chunk never trained; false if there is.
bool RankReplay::checkAllTrained() {
  for (int c = 0; c < v; ++c) {
    for (int mb = 0; mb < m; ++mb) {
      if (!s.runs(r, mb))
        continue;
      const char *what = !forwardDone[c][mb]      ? "forward"
                         : !inputGradDone[c][mb]  ? "backward"
                         : !weightGradDone[c][mb] ? "weight gradient"
                                                  : nullptr;
      if (what) {
        std::string chunk =
            v > 1 ? " chunk " + std::to_string(c) : std::string();
        fail(ViolationKind::Missing, -1,
             std::string("the stream never runs the ") + what + " of " +
                 mbText(mb) + chunk);
        return false;
      }
    }
  }
  return true;
}

void RankReplay::reportLeaks() {
  for (const auto &[key, index] : stashes)
    fail(ViolationKind::StashLeak, index,
         "stash of " + mbText(key.second) + " is never freed");
  for (const auto &[key, index] : weightCopies)
    fail(ViolationKind::StashLeak, index,
         "weight version " + std::to_string(key.second) + " is never freed");
  for (const auto &[key, starts] : open)
    for (int index : starts)
      fail(ViolationKind::Unfinished, index,
           std::string("never finished (no ") +
               (std::get<0>(key) ? "SendFinish" : "RecvFinish") + ")");
}

void RankReplay::checkUpdateCount() {
  if (sync && optimizerSteps != 1)
    fail(ViolationKind::OptimizerCount, -1,
         std::string(kindName(s.kind)) +
             " updates once per minibatch, but the stream has " +
             std::to_string(optimizerSteps) + " optimizer steps");
  if (s.kind == ScheduleKind::PipeDream && optimizerSteps != m * v)
    fail(ViolationKind::OptimizerCount, -1,
         "pipedream updates after every backward (" + std::to_string(m * v) +
             "), but the stream has " + std::to_string(optimizerSteps) +
             " optimizer steps");
}

void RankReplay::reportMemory() {
  if (overIndex < 0)
    return;
  double params = 0;
  for (int c = 0; c < v; ++c)
    params += s.stage(r, c).paramBytes;
  fail(ViolationKind::MemoryLimit, overIndex,
       "memory reaches " + dpc::cli::formatByteCount(overMemory) + " (peak " +
           dpc::cli::formatByteCount(peak) + ", parameters " +
           dpc::cli::formatByteCount(params) + "), over the limit of " +
           dpc::cli::formatByteCount(limit));
}

} // namespace

void replayRank(const Schedule &s, const VerifyOptions &options, int r,
                VerifyResult &result) {
  RankReplay(s, options, r, result).run();
}

} // namespace dpc::schedule::detail
