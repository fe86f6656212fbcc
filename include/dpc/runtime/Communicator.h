//===- Communicator.h - Point-to-point and collective messaging -*- C++ -*-===//
//
// The executor moves activations and gradients between stages with
// non-blocking sends and receives, and sums gradients across the replicas of
// a stage. It sees only this interface: MPI implements it for host memory
// (MpiCommunicator.h), NCCL for the CUDA target's device memory
// (NcclCommunicator.h, made by Device::connect).
//
// Matching. MPI matches a receive to the send with the same peer and tag.
// NCCL has no tags: the transfers between two ranks match in the order they
// were started, and a send holds its stream until the peer's receive is
// posted. matchesByTag() tells the two apart; the executor hands an
// order-matched communicator only schedules the verifier proved free of
// deadlock under rendezvous transfers (schedule::CommModel::Blocking), which
// is what makes start order and tag agree and the streams' waiting harmless.
//
// Failure model. A pipeline job must never hang: every blocking call (wait,
// allreduceSum, barrier) gives up after timeout() and throws Error naming the
// operation, the peer rank and the tag. The caller then calls abort(), which
// prints the message and takes the whole job down, so the other ranks stop
// within seconds instead of waiting for a rank that will never answer. A rank
// that dies outright is handled by the launcher (mpirun kills the job when
// one process exits non-zero). After a timeout, the communicator is only good
// for abort().
//
//===----------------------------------------------------------------------===//

#ifndef DPC_RUNTIME_COMMUNICATOR_H
#define DPC_RUNTIME_COMMUNICATOR_H

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace dpc::runtime {

/// Handle of a pending isend/irecv. Default-constructed and completed
/// requests are inactive; waiting on them returns at once.
struct Request {
  int64_t id = -1;
  bool active() const { return id >= 0; }
};

class Communicator {
public:
  virtual ~Communicator() = default;

  virtual int rank() const = 0;
  virtual int size() const = 0;

  /// Starts sending `bytes` bytes at `data` to `peer` with `tag`. The buffer
  /// must stay untouched until the request completes.
  virtual Request isend(const void *data, size_t bytes, int peer, int tag) = 0;
  /// Starts receiving exactly `bytes` bytes from `peer` with `tag` into
  /// `data`; a message of another size is an error on completion.
  virtual Request irecv(void *data, size_t bytes, int peer, int tag) = 0;
  /// Blocks until `request` completes and marks it inactive; throws Error on
  /// timeout or a failed transfer.
  virtual void wait(Request &request) = 0;
  /// Returns whether `request` has completed (and then marks it inactive).
  virtual bool test(Request &request) = 0;

  /// Sums `count` floats elementwise over all ranks, in place.
  virtual void allreduceSum(float *data, size_t count) = 0;
  /// The collectives of a sharded optimizer (ZeRO stage 1). `data` holds
  /// one range per rank, back to back, of `counts[r]` floats each (every
  /// rank passes the same counts).
  /// reduceScatterSum: afterwards rank r's own range holds the elementwise
  /// sum over the ranks; the other ranges hold anything. The default sums
  /// everything with allreduceSum.
  virtual void reduceScatterSum(float *data,
                                const std::vector<size_t> &counts) {
    allreduceSum(data, total(counts));
  }
  /// allgatherRanges: afterwards every range holds what its rank had there. The
  /// caller zeroes the ranges of the other ranks first, which lets the
  /// default gather by summing with allreduceSum (adding zeros is exact).
  virtual void allgatherRanges(float *data, const std::vector<size_t> &counts) {
    allreduceSum(data, total(counts));
  }
  virtual void barrier() = 0;
  /// Collective over this communicator: ranks with the same `color` form a
  /// new communicator, ordered by `key` (e.g. the replicas of one stage).
  virtual std::unique_ptr<Communicator> split(int color, int key) = 0;

  /// Prints "rank R: error: message" and terminates every rank of the job
  /// with `exitCode`. Never returns.
  [[noreturn]] virtual void abort(const std::string &message,
                                  int exitCode = 1) = 0;

  /// False when transfers between two ranks match in start order and tags
  /// are ignored (see the file comment).
  virtual bool matchesByTag() const { return true; }
  /// For the run log: how the messages travel, e.g. "mpi", "nccl",
  /// "host-staging (ranks 0 and 1 share GPU-...)".
  virtual std::string transportDescription() const { return "mpi"; }

  void setTimeout(std::chrono::milliseconds t) { timeoutValue = t; }
  std::chrono::milliseconds timeout() const { return timeoutValue; }

protected:
  static size_t total(const std::vector<size_t> &counts) {
    size_t sum = 0;
    for (size_t n : counts)
      sum += n;
    return sum;
  }
  /// Long enough for the slowest stage's compute between two messages (the
  /// last stage evaluating while the others wait); DPC_COMM_TIMEOUT (seconds)
  /// or setTimeout overrides it.
  std::chrono::milliseconds timeoutValue{std::chrono::minutes(10)};
};

} // namespace dpc::runtime

#endif // DPC_RUNTIME_COMMUNICATOR_H
