//===- Matching.h - Pairing of transfers, shared by verifier and simulator ===//
//
// Private to lib/schedule. Sends and receives match per (sender, receiver,
// tag) in stream order, as MPI matches messages; a Finish pairs with the
// oldest unfinished Start of the same kind, peer and tag on its own rank.
//
//===----------------------------------------------------------------------===//

#ifndef DPC_LIB_SCHEDULE_MATCHING_H
#define DPC_LIB_SCHEDULE_MATCHING_H

#include "dpc/schedule/Schedule.h"

#include <vector>

namespace dpc::schedule::detail {

struct TransferPairs {
  /// For each SendStart/RecvStart, the index of the matching Start on the
  /// peer rank; -1 when unmatched or not a Start.
  std::vector<std::vector<int>> partner;
  /// For each SendFinish/RecvFinish, the index of its Start on the same
  /// rank; -1 when it has none or is not a Finish.
  std::vector<std::vector<int>> startOf;
};

/// Requires every transfer's peer to be a valid rank.
TransferPairs pairTransfers(const Schedule &schedule);

} // namespace dpc::schedule::detail

#endif // DPC_LIB_SCHEDULE_MATCHING_H
