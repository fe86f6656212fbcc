//===- HostDevice.cpp - Tensors in host memory ----------------------------===//
//
// The CPU target's device: aligned host allocations, memcpy, and the
// optimizer loops the executor has always run, unchanged, so that CPU
// results stay the same bit for bit. Everything completes before it
// returns, so synchronize has nothing to wait for.
//
//===----------------------------------------------------------------------===//

#include "dpc/runtime/Device.h"

#include "dpc/runtime/Communicator.h"
#include "dpc/runtime/Error.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>

namespace dpc::runtime {

namespace {

constexpr size_t kAlign = 64;

class HostDevice final : public Device {
public:
  std::string description() const override { return "host"; }
  bool hostAccessible() const override { return true; }

  void *allocate(size_t bytes) override {
    size_t rounded =
        (std::max<size_t>(bytes, 1) + kAlign - 1) / kAlign * kAlign;
    void *p = std::aligned_alloc(kAlign, rounded);
    if (!p)
      throw Error("out of memory allocating " + std::to_string(bytes) +
                  " bytes");
    return p;
  }
  void deallocate(void *ptr) override { std::free(ptr); }

  void memset(void *dst, int value, size_t bytes) override {
    if (bytes)
      std::memset(dst, value, bytes);
  }
  void copyFromHost(void *dst, const void *src, size_t bytes) override {
    copy(dst, src, bytes);
  }
  void copyToHost(void *dst, const void *src, size_t bytes) override {
    copy(dst, src, bytes);
  }
  void copy(void *dst, const void *src, size_t bytes) override {
    if (bytes)
      std::memcpy(dst, src, bytes);
  }

  void accumulate(float *acc, const float *x, size_t n) override {
    for (size_t k = 0; k < n; ++k)
      acc[k] += x[k];
  }

  void sgdStep(float *p, float *v, float *acc, size_t n, float lr,
               float momentum, float weightDecay) override {
    // The momentum buffer starts as the first gradient, which is what
    // v = momentum * 0 + g gives.
    for (size_t k = 0; k < n; ++k) {
      float d = acc[k];
      if (weightDecay != 0)
        d += weightDecay * p[k];
      if (momentum != 0) {
        v[k] = momentum * v[k] + d;
        d = v[k];
      }
      p[k] -= lr * d;
      acc[k] = 0;
    }
  }

  void adamStep(float *p, float *m, float *v, float *acc, size_t n,
                const AdamStep &step) override {
    for (size_t k = 0; k < n; ++k) {
      if (step.decay != 1.0f)
        p[k] *= step.decay;
      float g = acc[k];
      if (step.weightDecay != 0)
        g += step.weightDecay * p[k];
      m[k] += (1 - step.beta1) * (g - m[k]);
      v[k] = step.beta2 * v[k] + (1 - step.beta2) * g * g;
      float denom = std::sqrt(v[k]) / step.correction2Sqrt + step.eps;
      p[k] -= step.stepSize * (m[k] / denom);
      acc[k] = 0;
    }
  }

  void synchronize() override {}

  // Host failures are thrown as Error, like the rest of the runtime's.
  void setErrorHandler(std::function<void(const std::string &)>) override {}
};

} // namespace

AdamStep::AdamStep(double lr, float beta1, float beta2, float eps,
                   float weightDecay, int64_t step, bool decoupled)
    : beta1(beta1), beta2(beta2), eps(eps), weightDecay(weightDecay) {
  double t = double(step);
  // torch.optim.AdamW: param.mul_(1 - lr * weight_decay), in double.
  if (decoupled) {
    decay = float(1.0 - lr * double(weightDecay));
    this->weightDecay = 0.0f;
  }
  stepSize = float(lr / (1.0 - std::pow(double(beta1), t)));
  correction2Sqrt = float(std::sqrt(1.0 - std::pow(double(beta2), t)));
}

const char *transportName(Transport transport) {
  switch (transport) {
  case Transport::Auto:
    return "auto";
  case Transport::Nccl:
    return "nccl";
  case Transport::HostStaging:
    return "host-staging";
  case Transport::Mpi:
    return "mpi";
  }
  return "unknown";
}

std::optional<Transport> parseTransport(std::string_view text) {
  for (Transport t : {Transport::Auto, Transport::Nccl, Transport::HostStaging,
                      Transport::Mpi})
    if (text == transportName(t))
      return t;
  return std::nullopt;
}

std::unique_ptr<Communicator> Device::connect(Communicator &,
                                              Transport transport) {
  if (transport == Transport::Auto || transport == Transport::Mpi)
    return nullptr;
  throw Error(std::string("transport ") + transportName(transport) +
              ": this rank's tensors are on the " + description() +
              ", which has no device communicator (use auto or mpi)");
}

std::unique_ptr<Device> createHostDevice() {
  return std::make_unique<HostDevice>();
}

} // namespace dpc::runtime
