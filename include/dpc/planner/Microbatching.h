//===- Microbatching.h - Variable-length microbatches per iteration -*- C++
//-*-===//
//
// Real corpora hold sequences of very different lengths. Padding every
// microbatch to the longest sequence of the minibatch wastes most of the
// compute; DynaPipe's answer is to split each iteration's minibatch into
// microbatches of similar lengths, by dynamic programming over a cost model,
// and to build the pipeline schedule for exactly those microbatches. This is
// that planner: plain C++, fast enough to run on the first stage's data
// loader every iteration, and checked against the schedule simulator.
//
//===----------------------------------------------------------------------===//

#ifndef DPC_PLANNER_MICROBATCHING_H
#define DPC_PLANNER_MICROBATCHING_H

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace dpc::planner {

/// What a microbatch of `samples` sequences, padded to `length` tokens,
/// costs on the slowest pipeline stage: its compute (forward and backward,
/// milliseconds) and the activation bytes it keeps there while in flight.
/// Both must grow with samples and with length.
struct SequenceCost {
  std::function<double(int64_t samples, int64_t length)> computeMs;
  std::function<double(int64_t samples, int64_t length)> activationBytes;
  /// The most sequences of `length` tokens one microbatch may hold (the
  /// largest compiled shape that fits them); no limit when empty. Must not
  /// grow with the length.
  std::function<int64_t(int64_t length)> capacity;
};

struct MicrobatchingOptions {
  /// Pipeline stages of the 1F1B schedule the microbatches run in.
  int stages = 1;
  /// Sequences per microbatch at most.
  int64_t maxSamples = 64;
  /// Activation bytes a stage may hold. Under 1F1B the first stage holds up
  /// to `stages` microbatches at once, so each microbatch may use a
  /// `stages`-th of it; 0 means no limit.
  double memoryLimitBytes = 0;
  /// Candidate bottleneck times the search tries; when the minibatch has
  /// no more distinct microbatch times than this, it tries them all and the
  /// result is exact for the model below.
  int bounds = 12;
  /// The splits (best by the model) timed as 1F1B schedules, each in both
  /// orders.
  int timed = 4;
};

/// Microbatches of one minibatch, each a run of sequences of similar length.
struct Microbatching {
  /// Indices into the minibatch's lengths, per microbatch, in the order
  /// the schedule runs the microbatches.
  std::vector<std::vector<int64_t>> microbatches;
  /// Per microbatch: the length its sequences are padded to and its cost.
  std::vector<int64_t> paddedLength;
  std::vector<double> computeMs;
  /// The planner's model of a 1F1B iteration: every microbatch's time once,
  /// plus (stages - 1) times the longest one (filling and draining the
  /// pipeline).
  double predictedMs = 0;
  /// What the schedule simulator gives for a 1F1B schedule of these
  /// microbatches in this order (simulateMicrobatching).
  double simulatedMs = 0;
  /// Padded tokens over real tokens, minus one.
  double paddingOverhead = 0;
};

/// Splits a minibatch (`lengths`, in tokens) into microbatches minimising
/// the simulated iteration time under the options' limits. Sorted by
/// length, a microbatch is a contiguous run; for each candidate bound on the
/// longest microbatch, a dynamic program over the runs minimises the sum of
/// their times; the splits the model ranks best are timed as 1F1B
/// schedules, run longest or shortest first, and the fastest wins.
/// Throws dpc::Error when one sequence alone breaks the memory limit or a
/// length is not positive.
Microbatching planMicrobatches(const std::vector<int64_t> &lengths,
                               const SequenceCost &cost,
                               const MicrobatchingOptions &options);

/// The usual way, for comparison: `count` microbatches of consecutive
/// sequences in the given order (sizes differing by at most one), each
/// padded to its longest.
Microbatching padMicrobatches(const std::vector<int64_t> &lengths, int count,
                              const SequenceCost &cost, int stages);

/// The iteration time the schedule simulator gives for `plan`: a 1F1B
/// schedule over `stages` ranks built for its microbatches, each stage's
/// forward taking a third of a microbatch's compute and its backward two
/// thirds, with no transfer costs. Returns a negative value if the
/// schedule cannot be built.
double simulateMicrobatching(const Microbatching &plan, int stages);

} // namespace dpc::planner

#endif // DPC_PLANNER_MICROBATCHING_H
