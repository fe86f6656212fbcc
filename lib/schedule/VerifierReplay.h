//===- VerifierReplay.h - The verifier's per-rank replay --------*- C++ -*-===//
//
// Private to lib/schedule. Phase 2 of the verifier (Verifier.cpp): each
// rank's stream replayed alone, in VerifierReplay.cpp, and what it shares
// with the other phases: how a violation is recorded and how a microbatch
// is named in a message.
//
//===----------------------------------------------------------------------===//

#ifndef DPC_LIB_SCHEDULE_VERIFIERREPLAY_H
#define DPC_LIB_SCHEDULE_VERIFIERREPLAY_H

#include "dpc/schedule/Verifier.h"

#include <string>

namespace dpc::schedule::detail {

inline std::string mbText(int mb) { return "mb " + std::to_string(mb); }

/// Appends a violation to `result`; at an instruction (rank and index both
/// >= 0) it records the instruction's text and microbatch too.
void reportViolation(VerifyResult &result, const Schedule &s,
                     ViolationKind kind, int rank, int index,
                     std::string message);

/// Replays rank r's stream alone, after the shape check passed: dataflow
/// (inputs loaded or received before use), stash discipline, update counts
/// and memory. Fills result.ranks[r] and appends what it finds; it stops at
/// the first violation in the stream, and then checks nothing at the end.
void replayRank(const Schedule &s, const VerifyOptions &options, int r,
                VerifyResult &result);

} // namespace dpc::schedule::detail

#endif // DPC_LIB_SCHEDULE_VERIFIERREPLAY_H
