//===- TargetDevice.cpp - The CPU target's tensors live in host memory ----===//
//
// The rank main asks the kernel library it was linked with for the memory
// the kernels work on (dpc/runtime/Device.h); the CPU kernels take host
// pointers.
//
//===----------------------------------------------------------------------===//

#include "dpc/runtime/Device.h"

std::unique_ptr<dpc::runtime::Device> dpc::runtime::createTargetDevice() {
  return createHostDevice();
}
