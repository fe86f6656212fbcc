//===- CudaDevice.h - Tensors in the memory of this rank's GPU --*- C++ -*-===//
//
// The CUDA target's Device (dpc/runtime/Device.h), in dpc_cuda_kernels: the
// executor's buffers are cudaMalloc'ed on the rank's GPU, and its copies,
// gradient accumulation and SGD steps run on the kernel library's compute
// stream, in order with the kernels the generated code launches.
//
//===----------------------------------------------------------------------===//

#ifndef DPC_RUNTIME_CUDADEVICE_H
#define DPC_RUNTIME_CUDADEVICE_H

#include "dpc/runtime/Device.h"

#include <functional>
#include <memory>

namespace dpc::runtime {

/// Makes the device of this rank current (cudaSetDevice) and returns it:
/// the launcher's local rank (OMPI_COMM_WORLD_LOCAL_RANK, MPI_LOCALRANKID,
/// SLURM_LOCALID, LOCAL_RANK) modulo the number of devices. Throws Error
/// "no CUDA device (...)" when there is none or the driver is unusable.
int selectLocalDevice();

/// What the device's connect() calls for every transport but Mpi. The CUDA
/// target's createTargetDevice (dpc_cuda_nccl) passes NcclCommunicator's
/// create, which keeps NCCL out of the kernel library.
using DeviceConnector = std::function<std::unique_ptr<Communicator>(
    Communicator &host, Transport transport)>;

/// selectLocalDevice's GPU, with a compute stream of its own that becomes
/// the kernel library's (dpc_cuda_set_stream). Errors after creation go to
/// the kernel library's error handler (dpc_cuda_set_error_handler), which
/// setErrorHandler replaces. Without a connector, connect() is the host
/// device's (the executor stages transfers through host memory). One per
/// process.
std::unique_ptr<Device> createCudaDevice(DeviceConnector connector = {});

} // namespace dpc::runtime

#endif // DPC_RUNTIME_CUDADEVICE_H
