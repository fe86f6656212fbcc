//===- TargetDevice.cpp - The CUDA target's tensors live on the GPU -------===//
//
// The rank main asks the kernel library it was linked with for the memory
// the kernels work on (dpc/runtime/Device.h); the CUDA kernels take device
// pointers on the rank's GPU.
//
//===----------------------------------------------------------------------===//

#include "dpc/runtime/CudaDevice.h"

std::unique_ptr<dpc::runtime::Device> dpc::runtime::createTargetDevice() {
  return createCudaDevice();
}
