//===- TargetDevice.h - Kernel tests on the target's memory -----*- C++ -*-===//
//
// The kernel suites call the kernels of Abi.h with tensors in the memory of
// the target the binary is linked for: createTargetDevice() (Device.h) of
// dpc_cpu_kernels gives host memory, that of dpc_cuda_nccl the GPU's. The
// device is made once per binary and destroyed after the last test, before
// static destructors run (the CUDA runtime tears itself down then).
//
// Where the target cannot run (no GPU), every test skips and says why.
//
//===----------------------------------------------------------------------===//

#ifndef DPC_TEST_UNITTESTS_KERNELS_TARGETDEVICE_H
#define DPC_TEST_UNITTESTS_KERNELS_TARGETDEVICE_H

#include "dpc/runtime/Device.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace dpc::testing {

/// The target's device, or nullptr where createTargetDevice failed, with
/// the reason in targetDeviceMissing().
runtime::Device *targetDevice();
const std::string &targetDeviceMissing();

/// A test of the target's kernels. After each test the device is
/// synchronized, so that an asynchronous fault fails the test that caused it.
class TargetKernelTest : public ::testing::Test {
protected:
  void SetUp() override {
    if (!targetDevice())
      GTEST_SKIP() << targetDeviceMissing();
  }
  void TearDown() override {
    if (targetDevice())
      targetDevice()->synchronize();
  }
};

/// A tensor in the target's memory, filled from host data; host() copies it
/// back (after everything called on the device before).
template <typename T> class Buffer {
public:
  explicit Buffer(const std::vector<T> &data)
      : count(data.size()),
        ptr(static_cast<T *>(targetDevice()->allocate(bytes()))) {
    targetDevice()->copyFromHost(ptr, data.data(), bytes());
  }
  /// An output: `n` elements of a value no kernel result has by chance, so
  /// that an element the kernel does not write shows.
  explicit Buffer(size_t n) : Buffer(std::vector<T>(n, T(123))) {}
  ~Buffer() { targetDevice()->deallocate(ptr); }
  Buffer(const Buffer &) = delete;
  Buffer &operator=(const Buffer &) = delete;

  T *get() const { return ptr; }
  size_t size() const { return count; }
  std::vector<T> host() const {
    std::vector<T> out(count);
    targetDevice()->copyToHost(out.data(), ptr, bytes());
    return out;
  }

private:
  size_t bytes() const { return count * sizeof(T); }
  size_t count;
  T *ptr;
};

} // namespace dpc::testing

#endif // DPC_TEST_UNITTESTS_KERNELS_TARGETDEVICE_H
