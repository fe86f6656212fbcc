//===- Verifier.h - Compile-time checks of a pipeline schedule --*- C++ -*-===//
//
// Runs all ranks' instruction streams together, without timing, and proves
// that they cannot deadlock, that every restore has its stash and every stash
// is freed, that each rank runs the updates its schedule kind promises, and
// that each rank's peak memory fits the limit. The first violation found is
// reported with its rank, instruction index, instruction and microbatch.
//
//===----------------------------------------------------------------------===//

#ifndef DPC_SCHEDULE_VERIFIER_H
#define DPC_SCHEDULE_VERIFIER_H

#include "dpc/schedule/Schedule.h"

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace dpc::schedule {

/// How transfers behave when the verifier replays the streams.
enum class CommModel {
  /// Rendezvous: SendStart and RecvStart each block until the peer reaches
  /// the matching Start; Finish is then free. What a transport without
  /// asynchronous progress (synchronous sends) can run.
  Blocking,
  /// Starts never block; SendFinish waits until the peer has started the
  /// matching receive and RecvFinish until the matching send has started.
  /// What the runtime executes.
  NonBlocking,
};

const char *commModelName(CommModel model);

enum class ViolationKind {
  Malformed,      // bad rank/peer/chunk/mb numbers
  Dataflow,       // input not available (no load, no recv, no forward)
  Duplicate,      // work done twice
  Missing,        // work never done
  Unmatched,      // send without recv or the reverse
  Mismatch,       // matched transfer disagrees on size or payload
  Unfinished,     // Start without Finish or the reverse
  Deadlock,       // no rank can progress
  RestoreNoStash, // Restore/RestoreWeights without a live stash
  StashLeak,      // stash never freed
  OptimizerCount, // wrong number or placement of optimizer steps
  MemoryLimit,    // peak memory over the limit
};

const char *violationKindName(ViolationKind kind);

struct Violation {
  ViolationKind kind = ViolationKind::Malformed;
  int rank = -1;
  /// Index into the rank's stream, or -1 when the violation is not at one
  /// instruction (a missing one, a leak found at the end).
  int index = -1;
  /// describe() of the instruction, or "".
  std::string instruction;
  int mb = -1;
  std::string message;

  /// Another instruction the violation involves, for a note beside it.
  struct Related {
    int rank = -1;
    int index = -1;
    /// "rank 1 is blocked here".
    std::string message;
  };
  /// The peer's matching transfer of a deadlock or a mismatch, and where
  /// the deadlocked peer is blocked. format() leaves them out: the message
  /// already names them.
  std::vector<Related> related;

  /// "rank 1: instruction 7 (RecvFinish grad mb 3 from rank 2): <message>".
  std::string format() const;
};

struct VerifyOptions {
  /// Which communication models must be deadlock-free.
  bool checkBlocking = true;
  bool checkNonBlocking = true;
  /// Every rank's k-th OptimizerStep meets every other rank's k-th, as the
  /// all-reduce of the gradient norm does under dpc run --clip-grad-norm:
  /// none completes before all ranks have reached theirs.
  bool updatesMeet = false;
  /// Per-rank peak memory limit in bytes; 0 = none.
  double memoryLimit = 0;
  /// Each rank's own limit (its device's memory, dpc compile --cluster);
  /// absent or 0 = none. A rank is held to the smaller of both.
  std::vector<double> rankMemoryLimits;
  /// Scratch memory a compute instruction uses while it runs (plan-memory:
  /// its segment's arena), by the virtual stage it computes; absent = none.
  /// It counts toward the peak at that instruction only.
  std::function<double(int virtualStage, const Instruction &)>
      computeScratchBytes;
  double memoryLimitOf(int rank) const {
    double own = rank >= 0 && size_t(rank) < rankMemoryLimits.size()
                     ? rankMemoryLimits[size_t(rank)]
                     : 0;
    if (own > 0 && (memoryLimit <= 0 || own < memoryLimit))
      return own;
    return memoryLimit;
  }
};

struct RankStats {
  int64_t peakMemoryBytes = 0;
  /// Most activation stashes live at once.
  int peakStashes = 0;
  /// Most weight versions live at once, counting the current weights of
  /// each chunk (so 1 without PipeDream).
  int peakWeightVersions = 0;
  int optimizerSteps = 0;
};

struct VerifyResult {
  bool ok() const { return violations.empty(); }
  /// All violations found; checking stops at the first of each phase.
  std::vector<Violation> violations;
  bool blockingDeadlockFree = false;
  bool nonBlockingDeadlockFree = false;
  std::vector<RankStats> ranks;
};

VerifyResult verifySchedule(const Schedule &schedule,
                            const VerifyOptions &options = {});

} // namespace dpc::schedule

#endif // DPC_SCHEDULE_VERIFIER_H
