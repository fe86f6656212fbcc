//===- OpProfile.h - Op times of a build for dpc profile --------*- C++ -*-===//
//
// A profiling build brackets each costed op with dpc_profile_begin and
// dpc_profile_end; the ids are the manifest's "profile" entries. OpProfile
// keeps every op's calls and milliseconds and writes them as the JSON that
// dpc profile reads, with each op's median call: a call the OS preempted
// moves the mean, not the median.
//
//===----------------------------------------------------------------------===//

#ifndef DPC_LIB_RUNTIME_OPPROFILE_H
#define DPC_LIB_RUNTIME_OPPROFILE_H

#include "dpc/runtime/Manifest.h"

#include <cstdint>
#include <string>
#include <vector>

namespace dpc::runtime {

class OpProfile {
public:
  /// `ops` (the manifest's profile) must outlive the OpProfile.
  explicit OpProfile(const std::vector<ManifestProfileOp> &ops) : ops(ops) {}

  /// Throw AbiError for an op not in the profile, or one ended before it
  /// began. `nowMs` is the time of the call.
  void begin(int64_t op, double nowMs);
  void end(int64_t op, double nowMs);
  /// Forgets every time so far (the first training step's: oneDNN's
  /// primitive creation, cold caches).
  void clear() { times.clear(); }

  /// {"format": "dpc-op-times", "version": 1, "rank": R, "ops": [{"id",
  /// "node", "phase", "calls", "total_ms", "median_ms"}, ...]}; the times
  /// of an entry with a share (a fused region's node) are that share of
  /// the call's, and the entry says "share".
  std::string json(int rank) const;

private:
  struct OpTime {
    double startMs = -1;
    double totalMs = 0;
    int64_t calls = 0;
    std::vector<float> callMs;
  };
  OpTime &time(int64_t op);

  const std::vector<ManifestProfileOp> &ops;
  std::vector<OpTime> times;
};

} // namespace dpc::runtime

#endif // DPC_LIB_RUNTIME_OPPROFILE_H
