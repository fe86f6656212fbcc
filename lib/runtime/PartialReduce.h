//===- PartialReduce.h - Straggler-tolerant gradient reduction --*- C++ -*-===//
//
// The replicas of a stage compiled with --reduce preduce (one replicated
// stage: data parallelism over whole-model replicas) combine their
// gradients in rounds led by replica 0 instead of an all-reduce that waits
// for the slowest. docs/RUNTIME.md states the semantics; in short:
//
// - Round t is replica 0's step t. It folds in its own gradient and those of
//   the other replicas that have arrived within a grace period after it got
//   there; a replica whose gradient is older than kPartialReduceStaleness
//   rounds would become too stale, so the round waits for it, and the last
//   step's round waits for every replica. The round's gradient is the mean
//   of the gradients it took, a gradient tau rounds old weighted
//   1 / (1 + tau), scaled to R as an all-reduce's sum of R would be; the
//   loss is R / n times the sum of the n replicas' losses.
// - After the update, replica 0 sends its weights to the replicas whose
//   gradients the round took; each adopts them and goes on at step t + 1,
//   skipping the steps it fell behind by.
//
// Plain messages on the replicas' communicator, no collective, so a late
// replica is never waited for but when the staleness bound says so.
//
//===----------------------------------------------------------------------===//

#ifndef DPC_LIB_RUNTIME_PARTIALREDUCE_H
#define DPC_LIB_RUNTIME_PARTIALREDUCE_H

#include "dpc/runtime/Communicator.h"
#include "dpc/runtime/Executor.h"

#include <cstdint>
#include <vector>

namespace dpc::runtime {

class PartialReduce {
public:
  /// Over `group`, the stage's replicas in replica order. Every replica
  /// sends `gradientCount` floats of gradient and `lossCount` losses a
  /// step and receives `weightCount` floats of weights. `graceMs` is how
  /// long a round waits for gradients that are not due yet; the first
  /// round is step `firstStep`.
  PartialReduce(Communicator &group, size_t gradientCount, size_t lossCount,
                size_t weightCount, double graceMs, int64_t firstStep);
  ~PartialReduce();

  bool leads() const { return group.rank() == 0; }
  int replicas() const { return group.size(); }

  //===--- Replica 0 ------------------------------------------------------===//

  /// Round `step`: `gradient` and `losses` hold replica 0's own and become
  /// the round's (the file comment's weighted mean, added in replica
  /// order).
  /// `last` waits for every replica.
  ReduceRound reduce(int64_t step, std::vector<float> &gradient,
                     std::vector<float> &losses, const StepTimes &mine,
                     bool last);
  /// After the update: sends `weights` to the other replicas `round` took,
  /// and listens for their next gradient; after the `last` round (which
  /// took every replica), waits until the weights are sent instead.
  void sendWeights(const ReduceRound &round, const std::vector<float> &weights,
                   bool last);

  //===--- The other replicas ---------------------------------------------===//

  /// Sends this replica's gradient and losses of `step`.
  void sendGradient(int64_t step, const std::vector<float> &gradient,
                    const std::vector<float> &losses, const StepTimes &times);
  /// Waits for the weights of the round the gradient went into; returns
  /// that round's step (the replica goes on at the next one).
  int64_t receiveWeights(std::vector<float> &weights);

private:
  struct Peer;
  void listen(Peer &peer);
  void take(int replica, Peer &peer, ReduceRound &round,
            std::vector<float> &gradient, std::vector<float> &losses);

  Communicator &group;
  size_t gradientCount, lossCount, weightCount;
  double graceMs;
  /// The running round's weights of the other replicas' gradients.
  float roundWeight = 0;
  std::vector<Peer> peers; // replica 0: one per replica (0 unused)
  std::vector<uint8_t> message, weightMessage;
  Request pending, weightRecv;
};

} // namespace dpc::runtime

#endif // DPC_LIB_RUNTIME_PARTIALREDUCE_H
