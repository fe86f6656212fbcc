//===- TargetDevice.cpp - The CUDA target's tensors live on the GPU -------===//
//
// The rank main asks the libraries it was linked with for the memory the
// kernels work on (dpc/runtime/Device.h): on the CUDA target, the rank's GPU,
// whose transfers to other ranks go through NCCL (or its host staging where
// ranks share a GPU). Part of dpc_cuda_nccl, so that the kernel library
// itself does not need NCCL.
//
//===----------------------------------------------------------------------===//

#include "dpc/runtime/CudaDevice.h"
#include "dpc/runtime/NcclCommunicator.h"

std::unique_ptr<dpc::runtime::Device> dpc::runtime::createTargetDevice() {
  return createCudaDevice(
      [](Communicator &host,
         Transport transport) -> std::unique_ptr<Communicator> {
        return NcclCommunicator::create(host, transport);
      });
}
