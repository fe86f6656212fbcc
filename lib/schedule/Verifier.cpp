//===- Verifier.cpp - Compile-time checks of a pipeline schedule ----------===//
//
// Four phases, each over all ranks: (1) every instruction names a valid
// rank, chunk and microbatch; (2) each rank's stream is replayed alone for
// dataflow (inputs loaded or received before use), stash discipline, update
// counts and memory, in VerifierReplay.cpp; (3) sends and receives are
// matched per (sender, receiver, tag) in stream order, as MPI matches them;
// (4) the matched streams are run together under each communication model
// until every rank finishes or none can move, which is a deadlock. Phase 4
// needs no timing: whether a rank can move depends only on how far its peers
// got, so any order of advancing reaches the same final state.
//
//===----------------------------------------------------------------------===//

#include "dpc/schedule/Verifier.h"

#include "Matching.h"
#include "VerifierReplay.h"

#include <algorithm>
#include <sstream>

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

namespace detail {

void reportViolation(VerifyResult &result, const Schedule &s,
                     ViolationKind kind, int rank, int index,
                     std::string message) {
  Violation v;
  v.kind = kind;
  v.rank = rank;
  v.index = index;
  if (rank >= 0 && index >= 0) {
    v.instruction = describe(s.programs[rank][index], s.chunks);
    v.mb = s.programs[rank][index].mb;
  }
  v.message = std::move(message);
  result.violations.push_back(std::move(v));
}

} // namespace detail

namespace {

using detail::mbText;

struct JointRun;

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
  void matchTransfers();
  void runTogether(CommModel model);
  void reportDeadlock(const JointRun &joint);

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
  detail::reportViolation(result, s, kind, rank, index, std::move(message));
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

/// Phase 4 under one communication model: how far each rank got, and
/// whether it can move on.
struct JointRun {
  JointRun(const Schedule &s, const VerifyOptions &options, CommModel model,
           const std::vector<std::vector<int>> &partner,
           const std::vector<std::vector<int>> &startOf)
      : s(s), options(options), model(model), partner(partner),
        startOf(startOf), partial(s.reduce == ReduceMode::PartialReduce),
        pc(s.ranks, 0), reduces(s.ranks, 0), updates(s.ranks, 0) {}

  /// Moves the ranks until none can; true when all finished.
  bool run();

  int size(int r) const { return static_cast<int>(s.programs[r].size()); }
  int peerOf(int r, int i) const { return s.programs[r][i].peer; }
  // Whether rank q waits at an all-reduce of `chunk`.
  bool atAllReduce(int q, int chunk) const {
    return pc[q] < size(q) && s.programs[q][pc[q]].op == Op::AllReduce &&
           s.programs[q][pc[q]].chunk == chunk;
  }
  // Whether rank q waits at its update number k (options.updatesMeet).
  bool atUpdate(int q, int k) const {
    return pc[q] < size(q) && s.programs[q][pc[q]].op == Op::OptimizerStep &&
           updates[q] == k;
  }
  bool meet(int r);
  bool reduce(int r);
  bool step(int r);

  const Schedule &s;
  const VerifyOptions &options;
  const CommModel model;
  const std::vector<std::vector<int>> &partner;
  const std::vector<std::vector<int>> &startOf;
  const bool partial;
  /// Each rank's next instruction.
  std::vector<int> pc;
  // How many AllReduces and OptimizerSteps each rank has passed.
  std::vector<int> reduces, updates;
};

// With updatesMeet, the k-th update of every rank completes together.
bool JointRun::meet(int r) {
  for (int q = 0; q < s.ranks; ++q)
    if (!atUpdate(q, updates[r]))
      return false;
  for (int q = 0; q < s.ranks; ++q) {
    ++pc[q];
    ++updates[q];
  }
  return true;
}

// An all-reduce completes when every replica of the stage has reached
// one of the same chunk; it then moves them all past it. A partial reduce
// (docs/SCHEDULES.md) never waits on replica 0, which folds in whichever
// gradients are there (a late one belongs to an earlier step, which the
// one-step replay counts as done), and makes another replica wait only
// until replica 0 has passed the same reduce: its weights come back then.
bool JointRun::reduce(int r) {
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
}

// Whether rank r can execute its instruction i now; for a blocking
// rendezvous, executing it also moves the peer past its Start.
bool JointRun::step(int r) {
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
}

bool JointRun::run() {
  bool progress = true;
  while (progress) {
    progress = false;
    for (int r = 0; r < s.ranks; ++r)
      while (pc[r] < size(r) && step(r))
        progress = true;
  }
  bool free = true;
  for (int r = 0; r < s.ranks; ++r)
    free = free && pc[r] == size(r);
  return free;
}

void Verifier::runTogether(CommModel model) {
  JointRun joint(s, options, model, partner, startOf);
  bool free = joint.run();
  if (model == CommModel::Blocking)
    result.blockingDeadlockFree = free;
  else
    result.nonBlockingDeadlockFree = free;
  bool required = model == CommModel::Blocking ? options.checkBlocking
                                               : options.checkNonBlocking;
  if (free || !required)
    return;
  reportDeadlock(joint);
}

// Reports the first stuck rank and whom it waits for.
void Verifier::reportDeadlock(const JointRun &joint) {
  int p = s.ranks;
  CommModel model = joint.model;
  const std::vector<int> &pc = joint.pc;
  auto size = [&](int r) { return joint.size(r); };
  // Where rank q stands, for a message about a rank waiting for it.
  auto whereIs = [&](int q) {
    return pc[q] < size(q)
               ? "is blocked at instruction " + std::to_string(pc[q]) + " (" +
                     text(q, pc[q]) + ")"
               : std::string("has finished");
  };
  for (int r = 0; r < p; ++r) {
    if (pc[r] == size(r))
      continue;
    int i = pc[r];
    const Instruction &inst = s.programs[r][i];
    if (inst.op == Op::AllReduce && joint.partial) {
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
        if (joint.atAllReduce(q, inst.chunk))
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
        if (joint.atUpdate(q, joint.updates[r]))
          continue;
        report(ViolationKind::Deadlock, r, i,
               std::string("deadlock with ") + commModelName(model) +
                   " transfers: update " +
                   std::to_string(joint.updates[r] + 1) +
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
    detail::replayRank(s, options, r, result);
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
