//===- Verifier.cpp - Compile-time checks of a pipeline schedule ----------===//
//
// Four phases, each over all ranks: (1) every instruction names a valid
// rank, chunk and microbatch; (2) each rank's stream is replayed alone for
// dataflow (inputs loaded or received before use), stash discipline, update
// counts and memory; (3) sends and receives are matched per (sender,
// receiver, tag) in stream order, as MPI matches them; (4) the matched streams
// are run together under each communication model until every rank finishes
// or none can move, which is a deadlock. Phase 4 needs no timing: whether a
// rank can move depends only on how far its peers got, so any order of
// advancing reaches the same final state.
//
//===----------------------------------------------------------------------===//

#include "dpc/schedule/Verifier.h"

#include "Matching.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <set>
#include <sstream>
#include <tuple>

namespace dpc::schedule {

const char *commModelName(CommModel model) {
  return model == CommModel::Blocking ? "blocking" : "non-blocking";
}

const char *violationKindName(ViolationKind kind) {
  switch (kind) {
  case ViolationKind::Malformed:
    return "malformed";
  case ViolationKind::Dataflow:
    return "dataflow";
  case ViolationKind::Duplicate:
    return "duplicate";
  case ViolationKind::Missing:
    return "missing";
  case ViolationKind::Unmatched:
    return "unmatched";
  case ViolationKind::Mismatch:
    return "mismatch";
  case ViolationKind::Unfinished:
    return "unfinished";
  case ViolationKind::Deadlock:
    return "deadlock";
  case ViolationKind::RestoreNoStash:
    return "restore-without-stash";
  case ViolationKind::StashLeak:
    return "stash-leak";
  case ViolationKind::OptimizerCount:
    return "optimizer";
  case ViolationKind::MemoryLimit:
    return "memory";
  }
  return "unknown";
}

std::string Violation::format() const {
  std::ostringstream os;
  if (rank >= 0)
    os << "rank " << rank << ": ";
  if (index >= 0)
    os << "instruction " << index << " (" << instruction << "): ";
  os << message;
  return os.str();
}

namespace {

std::string formatBytes(double bytes) {
  const char *units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int unit = 0;
  while (bytes >= 1024 && unit < 4) {
    bytes /= 1024;
    ++unit;
  }
  char buf[32];
  std::snprintf(buf, sizeof(buf), unit == 0 ? "%.0f %s" : "%.2f %s", bytes,
                units[unit]);
  return buf;
}

std::string mbText(int mb) { return "mb " + std::to_string(mb); }

class Verifier {
public:
  Verifier(const Schedule &s, const VerifyOptions &options)
      : s(s), options(options) {}

  VerifyResult run();

private:
  void report(ViolationKind kind, int rank, int index, std::string message);
  /// Adds an instruction the last reported violation involves.
  void relate(int rank, int index, std::string message);
  bool checkShape();
  void replayRank(int rank);
  void matchTransfers();
  void runTogether(CommModel model);

  std::string text(int rank, int index) const {
    return describe(s.programs[rank][index], s.chunks);
  }

  const Schedule &s;
  const VerifyOptions &options;
  VerifyResult result;

  /// Phase 3 output: for each transfer Start, the matching Start on the peer
  /// (-1 when unmatched), and for each Finish, its Start on the same rank.
  std::vector<std::vector<int>> partner;
  std::vector<std::vector<int>> startOf;
};

void Verifier::report(ViolationKind kind, int rank, int index,
                      std::string message) {
  Violation v;
  v.kind = kind;
  v.rank = rank;
  v.index = index;
  if (rank >= 0 && index >= 0) {
    v.instruction = text(rank, index);
    v.mb = s.programs[rank][index].mb;
  }
  v.message = std::move(message);
  result.violations.push_back(std::move(v));
}

void Verifier::relate(int rank, int index, std::string message) {
  result.violations.back().related.push_back({rank, index, std::move(message)});
}

//===----------------------------------------------------------------------===//
// Phase 1: shape
//===----------------------------------------------------------------------===//

bool Verifier::checkShape() {
  if (std::string problem = s.checkLayout(); !problem.empty()) {
    report(ViolationKind::Malformed, -1, -1, problem);
    return false;
  }
  if (static_cast<int>(s.programs.size()) != s.ranks ||
      static_cast<int>(s.stages.size()) != s.numVirtualStages()) {
    report(ViolationKind::Malformed, -1, -1,
           "expects " + std::to_string(s.ranks) + " programs and " +
               std::to_string(s.numVirtualStages()) + " stages, got " +
               std::to_string(s.programs.size()) + " and " +
               std::to_string(s.stages.size()));
    return false;
  }
  bool ok = true;
  for (int r = 0; r < s.ranks; ++r) {
    const auto &program = s.programs[r];
    for (int i = 0; i < static_cast<int>(program.size()); ++i) {
      const Instruction &inst = program[i];
      bool needsMb = inst.op == Op::LoadMicrobatch || isCompute(inst.op) ||
                     isTransfer(inst.op) || inst.op == Op::Stash ||
                     inst.op == Op::Restore || inst.op == Op::Free;
      bool needsVersion = inst.op == Op::StashWeights ||
                          inst.op == Op::RestoreWeights ||
                          inst.op == Op::FreeWeights;
      std::string problem;
      if (inst.chunk < 0 || inst.chunk >= s.chunks)
        problem = "chunk " + std::to_string(inst.chunk) + " out of range [0, " +
                  std::to_string(s.chunks) + ")";
      else if (needsMb && (inst.mb < 0 || inst.mb >= s.microbatches))
        problem = "microbatch " + std::to_string(inst.mb) +
                  " out of range [0, " + std::to_string(s.microbatches) + ")";
      else if (needsMb && !s.runs(r, inst.mb))
        problem = mbText(inst.mb) + " belongs to rank " +
                  std::to_string(s.rankOf(s.stageOf(r), inst.mb)) +
                  ", another replica of stage " + std::to_string(s.stageOf(r));
      else if (inst.op == Op::AllReduce &&
               s.replicasOf(s.stageOf(r)) == 1)
        problem = "all-reduce on stage " + std::to_string(s.stageOf(r)) +
                  ", which has no replicas";
      else if (needsVersion && inst.version < 0)
        problem = "expects a weight version";
      else if (isTransfer(inst.op) &&
               (inst.peer < 0 || inst.peer >= s.ranks || inst.peer == r))
        problem = "peer rank " + std::to_string(inst.peer) +
                  " is not another "
                  "rank of the " +
                  std::to_string(s.ranks);
      else if (isTransfer(inst.op) && inst.what == Payload::None)
        problem = "transfer without a payload";
      else if (inst.bytes < 0)
        problem = "negative size";
      if (!problem.empty()) {
        report(ViolationKind::Malformed, r, i, problem);
        ok = false;
        break;
      }
    }
  }
  return ok;
}

//===----------------------------------------------------------------------===//
// Phase 2: one rank alone
//===----------------------------------------------------------------------===//

void Verifier::replayRank(int r) {
  const auto &program = s.programs[r];
  int m = s.microbatches, v = s.chunks, numVs = s.numVirtualStages();
  RankStats &stats = result.ranks[r];
  auto grid = [&](bool value) {
    return std::vector<std::vector<char>>(v, std::vector<char>(m, value));
  };
  auto forwardDone = grid(false), inputGradDone = grid(false),
       weightGradDone = grid(false), restored = grid(false);
  std::vector<char> loaded(m, false);
  std::set<std::tuple<int, int, int>> received; // (what, mb, chunk)
  // Live stashes: (chunk, mb) -> index of the Stash.
  std::map<std::pair<int, int>, int> stashes;
  // Live weight copies: (chunk, version) -> index of StashWeights.
  std::map<std::pair<int, int>, int> weightCopies;
  std::vector<int> updates(v, 0);
  std::vector<int> restoredVersion(v, -1);
  std::vector<char> reduced(v, false);
  bool replicated = s.replicasOf(s.stageOf(r)) > 1;
  // Outstanding transfers: (send?, peer, tag) -> Start indices.
  std::map<std::tuple<bool, int, int>, std::vector<int>> open;
  // Received buffers, by (chunk, mb): the runtime keeps what a microbatch
  // received until the compute that reads it has run (the forward its
  // activations; the backward its output gradient, which both halves of a
  // split backward read).
  std::map<std::pair<int, int>, double> held;

  double memory = 0;
  for (int c = 0; c < v; ++c)
    memory += s.stage(r, c).paramBytes;
  double peak = memory;
  // Loaded data, by (chunk, mb): the runtime keeps a microbatch's inputs or
  // labels until its backward (Backward, or BackwardWeight) has run.
  std::map<std::pair<int, int>, double> loadedBytes;
  int overIndex = -1;
  double overMemory = 0;
  int optimizerSteps = 0;
  int backwardsSinceUpdate = 0;
  bool sync = isSynchronous(s.kind);

  auto fail = [&](ViolationKind kind, int i, std::string message) {
    report(kind, r, i, std::move(message));
  };
  // A replica trains only its share of the microbatches.
  auto allWeightGrads = [&](int chunk, int &missingMb) {
    for (int mb = 0; mb < m; ++mb) {
      if (s.runs(r, mb) && !weightGradDone[chunk][mb]) {
        missingMb = mb;
        return false;
      }
    }
    return true;
  };
  const double limit = options.memoryLimitOf(r);
  auto track = [&](double delta, int i) {
    memory += delta;
    if (memory > peak)
      peak = memory;
    if (limit > 0 && memory > limit && overIndex < 0) {
      overIndex = i;
      overMemory = memory;
    }
  };
  // A compute instruction's scratch, live while it runs.
  auto runScratch = [&](int i) {
    if (!options.computeScratchBytes)
      return;
    double scratch = options.computeScratchBytes(r, program[i]);
    track(scratch, i);
    memory -= scratch;
  };

  // Buffers a compute fills count from that compute, alongside its scratch:
  // the forward writes its activation's send packs (dpc_send) and its stash
  // slot, the backward (or its input half) its gradient's send packs; a
  // split backward's input half also writes what it saves for its weight
  // half into the slot. A pack lives to its SendFinish, a slot to its Free.
  std::map<std::tuple<bool, int, int>, double> filled; // (forward?, c, mb)
  std::set<std::pair<int, int>> splitBackward;         // (c, mb)
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
  auto fill = [&](bool forward, int c, int mb, int i) {
    auto it = filled.find({forward, c, mb});
    if (it != filled.end())
      track(it->second, i);
  };
  // Received or loaded bytes of (c, mb) that the runtime releases at i.
  auto release = [&](std::map<std::pair<int, int>, double> &bytes, int c,
                     int mb, int i) {
    auto it = bytes.find({c, mb});
    if (it == bytes.end())
      return;
    track(-it->second, i);
    bytes.erase(it);
  };

  for (int i = 0; i < static_cast<int>(program.size()); ++i) {
    const Instruction &inst = program[i];
    int c = inst.chunk, mb = inst.mb;
    int vs = s.virtualStage(r, c);
    // Versioned compute needs the current weights or a restored copy.
    auto checkVersion = [&]() {
      if (inst.version < 0 || inst.version == updates[c])
        return true;
      if (inst.version > updates[c]) {
        fail(ViolationKind::Dataflow, i,
             "uses weight version " + std::to_string(inst.version) +
                 " but only " + std::to_string(updates[c]) +
                 " updates ran before it");
        return false;
      }
      if (restoredVersion[c] != inst.version) {
        fail(ViolationKind::RestoreNoStash, i,
             "uses old weight version " + std::to_string(inst.version) +
                 " without a RestoreWeights of it");
        return false;
      }
      return true;
    };

    switch (inst.op) {
    case Op::LoadMicrobatch:
      loaded[mb] = true;
      if (double bytes = double(s.stage(r, c).inputBytes); bytes > 0) {
        loadedBytes[{c, mb}] = bytes;
        track(bytes, i);
      }
      break;
    case Op::Forward: {
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
      if (!checkVersion())
        return;
      restoredVersion[c] = -1;
      forwardDone[c][mb] = true;
      fill(/*forward=*/true, c, mb, i);
      runScratch(i);
      release(held, c, mb, i);
      break;
    }
    case Op::Backward:
    case Op::BackwardInput: {
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
      if (!checkVersion())
        return;
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
      break;
    }
    case Op::BackwardWeight:
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
      break;
    case Op::Stash:
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
      break;
    case Op::Restore:
      if (!stashes.count({c, mb}))
        return fail(ViolationKind::RestoreNoStash, i,
                    "restore of " + mbText(mb) + " without a live stash");
      restored[c][mb] = true;
      break;
    case Op::Free: {
      auto it = stashes.find({c, mb});
      if (it == stashes.end())
        return fail(ViolationKind::RestoreNoStash, i,
                    "free of " + mbText(mb) + " without a live stash");
      track(-static_cast<double>(program[it->second].bytes), i);
      stashes.erase(it);
      break;
    }
    case Op::StashWeights:
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
      break;
    case Op::RestoreWeights:
      if (!weightCopies.count({c, inst.version}))
        return fail(ViolationKind::RestoreNoStash, i,
                    "restore of weight version " +
                        std::to_string(inst.version) + " without a stash");
      restoredVersion[c] = inst.version;
      break;
    case Op::FreeWeights: {
      auto it = weightCopies.find({c, inst.version});
      if (it == weightCopies.end())
        return fail(ViolationKind::RestoreNoStash, i,
                    "free of weight version " + std::to_string(inst.version) +
                        " without a stash");
      track(-static_cast<double>(program[it->second].bytes), i);
      weightCopies.erase(it);
      break;
    }
    case Op::SendStart:
    case Op::RecvStart: {
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
                        std::to_string(inst.peer) +
                        ", which does not hold the " +
                        ((act == send) ? "next" : "previous") + " stage");
      if (send && act && !forwardDone[c][mb])
        return fail(ViolationKind::Dataflow, i,
                    "sends the activation of " + mbText(mb) +
                        " before its forward");
      if (send && !act && !inputGradDone[c][mb])
        return fail(ViolationKind::Dataflow, i,
                    "sends the gradient of " + mbText(mb) +
                        " before its backward");
      open[{send, inst.peer, inst.tag}].push_back(i);
      if (!send) // A send's pack counts from the compute that filled it.
        track(static_cast<double>(inst.bytes), i);
      break;
    }
    case Op::SendFinish:
    case Op::RecvFinish: {
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
      break;
    }
    case Op::AllReduce: {
      int missing = -1;
      if (!allWeightGrads(c, missing))
        return fail(ViolationKind::Dataflow, i,
                    "all-reduce before the weight gradient of " +
                        mbText(missing));
      if (reduced[c])
        return fail(ViolationKind::Duplicate, i,
                    "the gradients are all-reduced twice before the update");
      reduced[c] = true;
      break;
    }
    case Op::OptimizerStep: {
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
      } else if (s.kind == ScheduleKind::PipeDream &&
                 backwardsSinceUpdate != 1) {
        return fail(ViolationKind::OptimizerCount, i,
                    "pipedream updates after every backward, but " +
                        std::to_string(backwardsSinceUpdate) +
                        " backwards ran since the last update");
      }
      backwardsSinceUpdate = 0;
      for (int chunk = 0; chunk < v; ++chunk)
        ++updates[chunk];
      break;
    }
    }
    stats.peakWeightVersions = std::max(
        stats.peakWeightVersions, v + static_cast<int>(weightCopies.size()));
  }

  stats.peakMemoryBytes = static_cast<int64_t>(peak);
  stats.optimizerSteps = optimizerSteps;
  if (stats.peakWeightVersions == 0)
    stats.peakWeightVersions = v;

  // End of stream: every microbatch trained, everything freed and finished.
  int end = static_cast<int>(program.size());
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
        report(ViolationKind::Missing, r, -1,
               std::string("the stream never runs the ") + what + " of " +
                   mbText(mb) + chunk);
        return;
      }
    }
  }
  for (const auto &[key, index] : stashes)
    report(ViolationKind::StashLeak, r, index,
           "stash of " + mbText(key.second) + " is never freed");
  for (const auto &[key, index] : weightCopies)
    report(ViolationKind::StashLeak, r, index,
           "weight version " + std::to_string(key.second) + " is never freed");
  for (const auto &[key, starts] : open)
    for (int index : starts)
      report(ViolationKind::Unfinished, r, index,
             std::string("never finished (no ") +
                 (std::get<0>(key) ? "SendFinish" : "RecvFinish") + ")");
  if (sync && optimizerSteps != 1)
    report(ViolationKind::OptimizerCount, r, -1,
           std::string(kindName(s.kind)) +
               " updates once per minibatch, but the stream has " +
               std::to_string(optimizerSteps) + " optimizer steps");
  if (s.kind == ScheduleKind::PipeDream && optimizerSteps != m * v)
    report(ViolationKind::OptimizerCount, r, -1,
           "pipedream updates after every backward (" + std::to_string(m * v) +
               "), but the stream has " + std::to_string(optimizerSteps) +
               " optimizer steps");
  (void)end;
  if (overIndex >= 0) {
    double params = 0;
    for (int c = 0; c < v; ++c)
      params += s.stage(r, c).paramBytes;
    report(ViolationKind::MemoryLimit, r, overIndex,
           "memory reaches " + formatBytes(overMemory) + " (peak " +
               formatBytes(peak) + ", parameters " + formatBytes(params) +
               "), over the limit of " + formatBytes(limit));
  }
}

//===----------------------------------------------------------------------===//
// Phase 3: matching
//===----------------------------------------------------------------------===//

void Verifier::matchTransfers() {
  detail::TransferPairs pairs = detail::pairTransfers(s);
  partner = std::move(pairs.partner);
  startOf = std::move(pairs.startOf);
  for (int r = 0; r < s.ranks; ++r) {
    const auto &program = s.programs[r];
    for (int i = 0; i < static_cast<int>(program.size()); ++i) {
      const Instruction &inst = program[i];
      if (inst.op != Op::SendStart && inst.op != Op::RecvStart)
        continue;
      bool send = inst.op == Op::SendStart;
      int q = inst.peer;
      int j = partner[r][i];
      if (j < 0) {
        report(ViolationKind::Unmatched, r, i,
               "rank " + std::to_string(q) +
                   (send ? " never receives it (no RecvStart "
                         : " never sends it (no SendStart ") +
                   payloadName(inst.what) + " " + mbText(inst.mb) +
                   (send ? " from rank " : " to rank ") + std::to_string(r) +
                   " with tag " + std::to_string(inst.tag) + ")");
        continue;
      }
      const Instruction &other = s.programs[q][j];
      if (send && (inst.bytes != other.bytes || inst.what != other.what ||
                   inst.mb != other.mb)) {
        report(ViolationKind::Mismatch, r, i,
               "matches instruction " + std::to_string(j) + " (" + text(q, j) +
                   ") of rank " + std::to_string(q) + ", which expects " +
                   payloadName(other.what) + " of " + mbText(other.mb) +
                   " and " + std::to_string(other.bytes) + " bytes, not " +
                   payloadName(inst.what) + " of " + mbText(inst.mb) + " and " +
                   std::to_string(inst.bytes) + " bytes");
        relate(q, j, "the matching receive on rank " + std::to_string(q));
      }
    }
  }
}

//===----------------------------------------------------------------------===//
// Phase 4: all ranks together
//===----------------------------------------------------------------------===//

void Verifier::runTogether(CommModel model) {
  int p = s.ranks;
  std::vector<int> pc(p, 0);
  auto size = [&](int r) { return static_cast<int>(s.programs[r].size()); };
  auto peerOf = [&](int r, int i) { return s.programs[r][i].peer; };
  // Whether rank q waits at an all-reduce of `chunk`.
  auto atAllReduce = [&](int q, int chunk) {
    return pc[q] < size(q) && s.programs[q][pc[q]].op == Op::AllReduce &&
           s.programs[q][pc[q]].chunk == chunk;
  };
  // How many AllReduces and OptimizerSteps each rank has passed.
  std::vector<int> reduces(p, 0), updates(p, 0);
  // Whether rank q waits at its update number k (options.updatesMeet).
  auto atUpdate = [&](int q, int k) {
    return pc[q] < size(q) && s.programs[q][pc[q]].op == Op::OptimizerStep &&
           updates[q] == k;
  };
  // With updatesMeet, the k-th update of every rank completes together.
  auto meet = [&](int r) {
    for (int q = 0; q < p; ++q)
      if (!atUpdate(q, updates[r]))
        return false;
    for (int q = 0; q < p; ++q) {
      ++pc[q];
      ++updates[q];
    }
    return true;
  };
  bool partial = s.reduce == ReduceMode::PartialReduce;
  // An all-reduce completes when every replica of the stage has reached
  // one of the same chunk; it then moves them all past it. A partial reduce
  // (docs/SCHEDULES.md) never waits on replica 0, which folds in whichever
  // gradients are there (a late one belongs to an earlier step, which the
  // one-step replay counts as done), and makes another replica wait only
  // until replica 0 has passed the same reduce: its weights come back then.
  auto reduce = [&](int r) {
    int stage = s.stageOf(r), first = s.firstRankOf(stage);
    int chunk = s.programs[r][pc[r]].chunk;
    if (partial) {
      if (r != first && reduces[first] <= reduces[r])
        return false;
      ++reduces[r];
      ++pc[r];
      return true;
    }
    for (int q = first; q < first + s.replicasOf(stage); ++q)
      if (!atAllReduce(q, chunk))
        return false;
    for (int q = first; q < first + s.replicasOf(stage); ++q)
      ++pc[q];
    return true;
  };
  // Whether rank r can execute its instruction i now; for a blocking
  // rendezvous, executing it also moves the peer past its Start.
  auto step = [&](int r) {
    int i = pc[r];
    const Instruction &inst = s.programs[r][i];
    if (inst.op == Op::AllReduce)
      return reduce(r);
    if (inst.op == Op::OptimizerStep && options.updatesMeet)
      return meet(r);
    bool start = inst.op == Op::SendStart || inst.op == Op::RecvStart;
    bool finish = inst.op == Op::SendFinish || inst.op == Op::RecvFinish;
    if (model == CommModel::Blocking && start) {
      int j = partner[r][i];
      int q = peerOf(r, i);
      if (j < 0 || pc[q] != j)
        return false;
      ++pc[q];
    } else if (model == CommModel::NonBlocking && finish) {
      int st = startOf[r][i];
      int j = st < 0 ? -1 : partner[r][st];
      int q = peerOf(r, i);
      if (j < 0 || pc[q] <= j)
        return false;
    }
    ++pc[r];
    return true;
  };
  bool progress = true;
  while (progress) {
    progress = false;
    for (int r = 0; r < p; ++r)
      while (pc[r] < size(r) && step(r))
        progress = true;
  }
  bool free = true;
  for (int r = 0; r < p; ++r)
    free = free && pc[r] == size(r);
  if (model == CommModel::Blocking)
    result.blockingDeadlockFree = free;
  else
    result.nonBlockingDeadlockFree = free;
  bool required = model == CommModel::Blocking ? options.checkBlocking
                                               : options.checkNonBlocking;
  if (free || !required)
    return;

  // Where rank q stands, for a message about a rank waiting for it.
  auto whereIs = [&](int q) {
    return pc[q] < size(q)
               ? "is blocked at instruction " + std::to_string(pc[q]) + " (" +
                     text(q, pc[q]) + ")"
               : std::string("has finished");
  };
  // Report the first stuck rank and whom it waits for.
  for (int r = 0; r < p; ++r) {
    if (pc[r] == size(r))
      continue;
    int i = pc[r];
    const Instruction &inst = s.programs[r][i];
    if (inst.op == Op::AllReduce && partial) {
      int q = s.firstRankOf(s.stageOf(r));
      report(ViolationKind::Deadlock, r, i,
             std::string("deadlock with ") + commModelName(model) +
                 " transfers: the partial reduce waits for replica 0 (rank " +
                 std::to_string(q) + ") to send the weights of its round, " +
                 "but rank " + std::to_string(q) + " " + whereIs(q));
      if (pc[q] < size(q))
        relate(q, pc[q], "rank " + std::to_string(q) + " is blocked here");
      return;
    }
    if (inst.op == Op::AllReduce) {
      int stage = s.stageOf(r), first = s.firstRankOf(stage);
      for (int q = first; q < first + s.replicasOf(stage); ++q) {
        if (atAllReduce(q, inst.chunk))
          continue;
        report(ViolationKind::Deadlock, r, i,
               std::string("deadlock with ") + commModelName(model) +
                   " transfers: the all-reduce of stage " +
                   std::to_string(stage) + " waits for its replica on rank " +
                   std::to_string(q) + ", which " + whereIs(q));
        if (pc[q] < size(q))
          relate(q, pc[q], "rank " + std::to_string(q) + " is blocked here");
        return;
      }
    }
    if (inst.op == Op::OptimizerStep && options.updatesMeet) {
      for (int q = 0; q < p; ++q) {
        if (atUpdate(q, updates[r]))
          continue;
        report(ViolationKind::Deadlock, r, i,
               std::string("deadlock with ") + commModelName(model) +
                   " transfers: update " + std::to_string(updates[r] + 1) +
                   " waits for every rank's gradient norm, but rank " +
                   std::to_string(q) + " " + whereIs(q));
        if (pc[q] < size(q))
          relate(q, pc[q], "rank " + std::to_string(q) + " is blocked here");
        return;
      }
    }
    int q = inst.peer;
    int start = (inst.op == Op::SendFinish || inst.op == Op::RecvFinish)
                    ? startOf[r][i]
                    : i;
    int j = start < 0 ? -1 : partner[r][start];
    bool send = inst.op == Op::SendStart || inst.op == Op::SendFinish;
    std::string why;
    if (j < 0) {
      why = "rank " + std::to_string(q) + " has no matching " +
            (send ? "receive" : "send");
    } else {
      why = "waits for rank " + std::to_string(q) + " to reach instruction " +
            std::to_string(j) + " (" + text(q, j) + ")";
      if (pc[q] < size(q))
        why += ", but rank " + std::to_string(q) +
               " is blocked at instruction " + std::to_string(pc[q]) + " (" +
               text(q, pc[q]) + ")";
      else
        why += ", but rank " + std::to_string(q) + " has finished";
      if (pc[q] < size(q) && options.updatesMeet &&
          s.programs[q][pc[q]].op == Op::OptimizerStep)
        why += ", whose update waits for every rank's gradient norm";
    }
    report(ViolationKind::Deadlock, r, i,
           std::string("deadlock with ") + commModelName(model) +
               " transfers: " + why);
    std::string peer = "rank " + std::to_string(q);
    if (j >= 0)
      relate(q, j,
             std::string("the matching ") + (send ? "receive" : "send") +
                 " on " + peer);
    if (j >= 0 && pc[q] < size(q) && pc[q] != j)
      relate(q, pc[q], peer + " is blocked here");
    return;
  }
}

VerifyResult Verifier::run() {
  result.ranks.assign(std::max(s.ranks, 0), RankStats());
  if (!checkShape())
    return std::move(result);
  for (int r = 0; r < s.ranks; ++r)
    replayRank(r);
  matchTransfers();
  runTogether(CommModel::NonBlocking);
  runTogether(CommModel::Blocking);
  return std::move(result);
}

} // namespace

VerifyResult verifySchedule(const Schedule &schedule,
                            const VerifyOptions &options) {
  return Verifier(schedule, options).run();
}

} // namespace dpc::schedule
