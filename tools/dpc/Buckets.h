//===- Buckets.h - Shape buckets of dpc compile --seq-buckets ---*- C++ -*-===//
//
// A bucketed build compiles the model at several (batch, length) shapes with
// one partition, and each rank's object holds every bucket's segments. This
// is the plain part of it: which buckets, and the one manifest per rank that
// describes them all.
//
//===----------------------------------------------------------------------===//

#ifndef DPC_TOOLS_DPC_BUCKETS_H
#define DPC_TOOLS_DPC_BUCKETS_H

#include "dpc/schedule/Schedule.h"

#include <cstdint>
#include <string>
#include <vector>

namespace dpc::tools {

struct ShapeBucket {
  int64_t batch = 0;
  int64_t length = 0;
  bool operator==(const ShapeBucket &other) const {
    return batch == other.batch && length == other.length;
  }
};

/// The buckets of `lengths` (ascending) under a budget of `tokens` per
/// microbatch: for each length L the powers of two below floor(tokens / L)
/// and floor(tokens / L) itself, plus `primary` (the batch of the longest
/// length that the step is planned for), sorted by (length, batch).
std::vector<ShapeBucket> shapeBuckets(const std::vector<int64_t> &lengths,
                                      int64_t tokens, ShapeBucket primary);

/// One rank's manifest for all buckets: `primary`'s manifest with a
/// "buckets" array (each bucket's shape, inputs, labels, output, transfers,
/// stashes and the schedule's stage costs, `stageCosts[k]`). Every bucket
/// must have the same parameters, transfer tags and stash keys; otherwise
/// a dpc::Error says where they differ.
std::string mergeBucketManifests(
    const std::vector<ShapeBucket> &buckets, size_t primary,
    const std::vector<std::string> &manifests,
    const std::vector<std::vector<schedule::StageInfo>> &costs);

/// "(batch B, length L)", as errors name a bucket.
std::string describe(const ShapeBucket &bucket);

} // namespace dpc::tools

#endif // DPC_TOOLS_DPC_BUCKETS_H
