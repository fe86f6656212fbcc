//===- MemoryAdvice.cpp - What would make a plan fit its memory -----------===//

#include "dpc/schedule/MemoryAdvice.h"

#include "dpc/support/CommandLine.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace dpc::schedule {

std::string memoryAdvice(const Schedule &s, const VerifyOptions &options,
                         const VerifyResult &result,
                         const MemoryLevers &levers) {
  // The rank furthest over its limit, and each peak's resident part. With
  // more stages, a rank's activations shrink but the first ranks stash
  // more of them (1F1B's first rank holds one per stage): a rank's
  // transient bytes with as many stashes as there are stages now estimates
  // what the fullest rank of a deeper pipeline holds.
  int worst = -1;
  double worstOver = 0, totalResident = 0, deeperTransient = 0;
  double leastLimit = 0;
  int stages = s.numStages();
  for (int r = 0; r < s.ranks && size_t(r) < result.ranks.size(); ++r) {
    double resident = 0;
    for (int c = 0; c < s.chunks; ++c)
      resident += double(s.stage(r, c).paramBytes);
    const RankStats &stats = result.ranks[size_t(r)];
    double peak = double(stats.peakMemoryBytes);
    double limit = options.memoryLimitOf(r);
    totalResident += resident;
    double stash = 0;
    for (int c = 0; c < s.chunks; ++c)
      stash += double(s.stage(r, c).activationBytes);
    deeperTransient = std::max(
        deeperTransient,
        peak - resident + std::max(0, stages - stats.peakStashes) * stash);
    if (limit > 0 && (leastLimit == 0 || limit < leastLimit))
      leastLimit = limit;
    if (limit > 0 && peak - limit > worstOver) {
      worstOver = peak - limit;
      worst = r;
    }
  }
  if (worst < 0)
    return "";
  double resident = 0;
  for (int c = 0; c < s.chunks; ++c)
    resident += double(s.stage(worst, c).paramBytes);
  double peak = double(result.ranks[size_t(worst)].peakMemoryBytes);
  double transient = peak - resident;
  auto bytes = [](double b) { return dpc::cli::formatByteCount(b); };
  std::string text = "rank " + std::to_string(worst) +
                     " is over its limit by " + bytes(worstOver) + " (peak " +
                     bytes(peak) + ": weights, gradients and optimizer state " +
                     bytes(resident) + ", activations and buffers " +
                     bytes(transient) + ")";
  std::vector<std::string> levers_;
  double weights = 0;
  for (int c = 0; c < s.chunks; ++c)
    weights += double(s.stage(worst, c).weightBytes);
  // Bytes resident per byte of weights (gradients, optimizer state): no
  // split puts less than the largest parameter's share on one rank.
  double perWeight = weights > 0 ? resident / weights : 4;
  double room = leastLimit - deeperTransient;
  if (room > levers.largestParamBytes * perWeight) {
    // At least one more: the stages' split may be what leaves one rank
    // over while the average fits.
    int needed = std::max(stages + 1, int(std::ceil(totalResident / room)));
    levers_.push_back("about " + std::to_string(needed) + " stages (--stages " +
                      std::to_string(needed) +
                      ": the resident bytes spread thinner)");
  }
  // Recomputation keeps a stage's inputs instead of its activations: the
  // fullest moment then holds one microbatch's activations, not one per
  // microbatch in flight.
  double stashed = 0;
  for (int c = 0; c < s.chunks; ++c)
    stashed += double(s.stage(worst, c).activationBytes);
  double recomputeSaves =
      std::max(0, result.ranks[size_t(worst)].peakStashes - 1) * stashed;
  if (!levers.recompute && recomputeSaves >= worstOver)
    levers_.push_back("--recompute auto (recomputes activations in the "
                      "backward instead of stashing them)");
  if (!levers.bf16 && transient / 2 >= worstOver)
    levers_.push_back("--precision bf16 (stashes and transfers activations "
                      "in half the bytes)");
  bool replicated = std::any_of(s.replicas.begin(), s.replicas.end(),
                                [](int replicas) { return replicas > 1; });
  if (replicated && !s.shardOptimizer)
    levers_.push_back("--shard-optimizer (each replica of a replicated stage "
                      "keeps 1/R of its optimizer state)");
  if (levers_.empty())
    return text + "; no single lever of dpc compile closes the gap: raise "
                  "the limit or combine more stages with recomputation";
  text += "; it could fit with ";
  for (size_t i = 0; i < levers_.size(); ++i)
    text += (i == 0                    ? ""
             : i + 1 == levers_.size() ? ", or "
                                       : ", ") +
            levers_[i];
  return text;
}

} // namespace dpc::schedule
