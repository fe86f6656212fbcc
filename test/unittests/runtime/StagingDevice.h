//===- StagingDevice.h - Host memory the executor must treat as a device --===//
//
// A Device that keeps tensors in host memory, computes with the host
// device's loops (so results are the host's bit for bit), but tells the
// executor that the host cannot read it. The executor then takes every path
// the CUDA target takes: transfers staged through host buffers, data and
// parameters copied up, losses, outputs and checkpoints copied down. The
// copies are counted. Used by the executor's unit tests and by the e2e
// executor test's staged ranks (StagedTarget.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef DPC_TEST_UNITTESTS_RUNTIME_STAGINGDEVICE_H
#define DPC_TEST_UNITTESTS_RUNTIME_STAGINGDEVICE_H

#include "dpc/runtime/Device.h"

#include <cstdint>

namespace dpc::runtime {

class StagingDevice final : public Device {
public:
  std::string description() const override {
    return "staging device (host memory, test)";
  }
  bool hostAccessible() const override { return false; }
  void *allocate(size_t bytes) override { return host->allocate(bytes); }
  void deallocate(void *ptr) override { host->deallocate(ptr); }
  void memset(void *dst, int value, size_t bytes) override {
    host->memset(dst, value, bytes);
  }
  void copyFromHost(void *dst, const void *src, size_t bytes) override {
    ++uploads;
    host->copy(dst, src, bytes);
  }
  void copyToHost(void *dst, const void *src, size_t bytes) override {
    ++downloads;
    host->copy(dst, src, bytes);
  }
  void copy(void *dst, const void *src, size_t bytes) override {
    host->copy(dst, src, bytes);
  }
  void accumulate(float *acc, const float *x, size_t n) override {
    host->accumulate(acc, x, n);
  }
  void sgdStep(float *p, float *v, float *acc, size_t n, float lr,
               float momentum, float weightDecay) override {
    host->sgdStep(p, v, acc, n, lr, momentum, weightDecay);
  }
  void adamStep(float *p, float *m, float *v, float *acc, size_t n,
                const AdamStep &step) override {
    host->adamStep(p, m, v, acc, n, step);
  }
  void synchronize() override { ++synchronizations; }
  void setErrorHandler(std::function<void(const std::string &)>) override {}

  int64_t uploads = 0, downloads = 0, synchronizations = 0;

private:
  std::unique_ptr<Device> host = createHostDevice();
};

} // namespace dpc::runtime

#endif // DPC_TEST_UNITTESTS_RUNTIME_STAGINGDEVICE_H
