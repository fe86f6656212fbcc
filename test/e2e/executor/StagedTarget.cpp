//===- StagedTarget.cpp - Tiny ranks whose memory the host may not read ---===//
//
// Linked into the dpc-tiny-staged-* ranks ahead of dpc_cpu_kernels, whose
// own createTargetDevice it replaces: the executor then stages every
// transfer, upload and download as it does on the CUDA target, while the
// kernels (the hand-written segments) still work on host memory. The
// staged runs must train exactly like the others (run_tiny.py --staged).
//
//===----------------------------------------------------------------------===//

#include "test/unittests/runtime/StagingDevice.h"

std::unique_ptr<dpc::runtime::Device> dpc::runtime::createTargetDevice() {
  return std::make_unique<StagingDevice>();
}
