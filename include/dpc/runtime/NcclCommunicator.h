//===- NcclCommunicator.h - Communicator over NCCL for device memory -*- C++
//-*-===//
//
// The CUDA target's communicator: the buffers given to isend, irecv and
// allreduceSum are device pointers. Transfers run on a communication stream
// of their own, ordered after the work already queued on the kernel
// library's compute stream (dpc_cuda_stream) when they are started, so that
// sends carry the value the compute stream produced and receives do not
// overwrite a buffer it is still reading.
//
// wait() and test() keep the host-side meaning of Communicator: a completed
// request's data is on the device, visible to any stream. waitOnStream()
// and iallreduceSum() are the device-side additions: they let the compute
// stream wait for a transfer without blocking the host, which is what lets
// transfers overlap compute.
//
// NCCL refuses two ranks on one GPU (a 2-stage pipeline on a one-GPU
// machine). The constructor detects that and falls back to staging through
// pinned host memory over the host communicator; transport() says which
// path the run uses, and the executor prints it.
//
//===----------------------------------------------------------------------===//

#ifndef DPC_RUNTIME_NCCLCOMMUNICATOR_H
#define DPC_RUNTIME_NCCLCOMMUNICATOR_H

#include "dpc/runtime/Communicator.h"
// selectLocalDevice, which picks the GPU before create().
#include "dpc/runtime/CudaDevice.h"

#include <cuda_runtime_api.h>

#include <memory>
#include <string>

namespace dpc::runtime {

class NcclCommunicator : public Communicator {
public:
  /// Collective over `host`: every rank of it calls create together, with
  /// its device already current. `transport` is Auto, Nccl or HostStaging
  /// (Device.h). `host` bootstraps NCCL (rank 0 makes the
  /// unique id and sends it to the others), carries the staging fallback,
  /// barriers and abort, and must outlive the result. Throws Error when
  /// `transport` is Nccl but two ranks share a GPU, or NCCL fails to start.
  static std::unique_ptr<NcclCommunicator>
  create(Communicator &host, Transport transport = Transport::Auto);
  ~NcclCommunicator() override;

  /// Nccl or HostStaging, the same on every rank of the communicator.
  Transport transport() const;
  /// Under NCCL, transfers match in start order, not by tag.
  bool matchesByTag() const override;
  /// "nccl", or e.g. "host-staging (ranks 0 and 1 share GPU-...)".
  std::string transportDescription() const override;

  int rank() const override;
  int size() const override;
  /// Device buffers. Under NCCL, transfers between a pair of ranks match in
  /// the order they are started, not by tag (NCCL has no tags), and sizes
  /// are not checked: both sides must agree, as the verified schedule
  /// guarantees. Transfers started back to back are posted as one NCCL group
  /// at the next wait, test or flush, so that a rank may start its send and
  /// its receive with the same peer before waiting for either.
  Request isend(const void *data, size_t bytes, int peer, int tag) override;
  Request irecv(void *data, size_t bytes, int peer, int tag) override;
  void wait(Request &request) override;
  bool test(Request &request) override;
  /// `data` is a device buffer; returns when the sum is in it.
  void allreduceSum(float *data, size_t count) override;
  void barrier() override;
  std::unique_ptr<Communicator> split(int color, int key) override;
  /// Aborts the NCCL communicator (so that no kernel waits for a peer
  /// forever), then the job through the host communicator.
  [[noreturn]] void abort(const std::string &message,
                          int exitCode = 1) override;

  /// Posts the transfers started since the last flush.
  void flush();
  /// Starts an in-place sum over the ranks without blocking the host.
  Request iallreduceSum(float *data, size_t count);
  /// Completes `request` for `stream`: work queued on `stream` afterwards
  /// sees the transfer done. Under NCCL the host does not block; under host
  /// staging it waits as wait() does.
  void waitOnStream(Request &request, cudaStream_t stream);
  /// The stream the transfers run on.
  cudaStream_t commStream() const;

  struct Impl;

private:
  explicit NcclCommunicator(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl;
};

} // namespace dpc::runtime

#endif // DPC_RUNTIME_NCCLCOMMUNICATOR_H
