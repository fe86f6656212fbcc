//===- MpiCommunicator.h - Communicator over MPI ----------------*- C++ -*-===//
//
// Host-memory messaging for the CPU target. mpi.h stays out of this header
// so that code using the runtime does not need MPI's include paths.
//
//===----------------------------------------------------------------------===//

#ifndef DPC_RUNTIME_MPICOMMUNICATOR_H
#define DPC_RUNTIME_MPICOMMUNICATOR_H

#include "dpc/runtime/Communicator.h"

#include <memory>
#include <string>

namespace dpc::runtime {

/// Owns MPI's lifetime in a rank: initializes it on construction (MPI errors
/// are made to return codes so that they become Error exceptions) and
/// finalizes it on destruction. One per process.
class MpiEnvironment {
public:
  MpiEnvironment(int *argc, char ***argv);
  ~MpiEnvironment();
  MpiEnvironment(const MpiEnvironment &) = delete;
  MpiEnvironment &operator=(const MpiEnvironment &) = delete;

  /// A communicator over all ranks (MPI_COMM_WORLD). Its timeout comes from
  /// DPC_COMM_TIMEOUT (seconds) when that is set.
  std::unique_ptr<Communicator> world();
};

class MpiCommunicator : public Communicator {
public:
  ~MpiCommunicator() override;

  int rank() const override;
  int size() const override;
  Request isend(const void *data, size_t bytes, int peer, int tag) override;
  Request irecv(void *data, size_t bytes, int peer, int tag) override;
  void wait(Request &request) override;
  bool test(Request &request) override;
  void allreduceSum(float *data, size_t count) override;
  /// MPI_Reduce_scatter and MPI_Allgatherv (each range under 2^31
  /// floats; larger ones go through allreduceSum).
  void reduceScatterSum(float *data,
                        const std::vector<size_t> &counts) override;
  void allgatherRanges(float *data, const std::vector<size_t> &counts) override;
  void barrier() override;
  std::unique_ptr<Communicator> split(int color, int key) override;
  [[noreturn]] void abort(const std::string &message,
                          int exitCode = 1) override;

  struct Impl;

private:
  friend class MpiEnvironment;
  explicit MpiCommunicator(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl;
};

} // namespace dpc::runtime

#endif // DPC_RUNTIME_MPICOMMUNICATOR_H
