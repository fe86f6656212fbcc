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
// connect() gives the executor what the CUDA target's NCCL communicator
// gives it, over MPI: a communicator that refuses any buffer this device did
// not allocate (so staging copies would be caught) and, for Auto and Nccl,
// matches transfers between two ranks in start order with the tags ignored,
// as NCCL does. HostStaging keeps the tags; Mpi means no communicator.
//
//===----------------------------------------------------------------------===//

#ifndef DPC_TEST_UNITTESTS_RUNTIME_STAGINGDEVICE_H
#define DPC_TEST_UNITTESTS_RUNTIME_STAGINGDEVICE_H

#include "dpc/runtime/Communicator.h"
#include "dpc/runtime/Device.h"
#include "dpc/runtime/Error.h"

#include <cstdint>
#include <map>

namespace dpc::runtime {

class StagingDevice final : public Device {
public:
  std::string description() const override {
    return "staging device (host memory, test)";
  }
  bool hostAccessible() const override { return false; }
  void *allocate(size_t bytes) override {
    void *p = host->allocate(bytes);
    live[static_cast<const char *>(p)] = bytes;
    return p;
  }
  void deallocate(void *ptr) override {
    live.erase(static_cast<const char *>(ptr));
    host->deallocate(ptr);
  }
  /// Whether [p, p + bytes) lies in one live allocation.
  bool owns(const void *p, size_t bytes) const {
    const char *c = static_cast<const char *>(p);
    auto it = live.upper_bound(c);
    if (it == live.begin())
      return false;
    --it;
    return c + bytes <= it->first + it->second;
  }
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
  std::unique_ptr<Communicator> connect(Communicator &host,
                                        Transport transport) override;

  int64_t uploads = 0, downloads = 0, synchronizations = 0;
  /// Messages and sums that went through connect()'s communicators.
  int64_t deviceMessages = 0;

private:
  std::unique_ptr<Device> host = createHostDevice();
  std::map<const char *, size_t> live;
};

/// connect()'s communicator: device buffers only, over a private split of
/// the host communicator; in start order (one tag per pair, which MPI
/// delivers in order) or by the caller's tags.
class DeviceMemoryCommunicator final : public Communicator {
public:
  DeviceMemoryCommunicator(std::unique_ptr<Communicator> priv,
                           StagingDevice &device, bool inStartOrder)
      : priv(std::move(priv)), device(device), inStartOrder(inStartOrder) {
    setTimeout(this->priv->timeout());
  }
  int rank() const override { return priv->rank(); }
  int size() const override { return priv->size(); }
  Request isend(const void *data, size_t bytes, int peer, int tag) override {
    check(data, bytes, "isend");
    return priv->isend(data, bytes, peer, tagOf(tag));
  }
  Request irecv(void *data, size_t bytes, int peer, int tag) override {
    check(data, bytes, "irecv");
    return priv->irecv(data, bytes, peer, tagOf(tag));
  }
  void wait(Request &request) override {
    priv->setTimeout(timeout());
    priv->wait(request);
  }
  bool test(Request &request) override { return priv->test(request); }
  void allreduceSum(float *data, size_t count) override {
    check(data, count * sizeof(float), "allreduceSum");
    priv->setTimeout(timeout());
    priv->allreduceSum(data, count);
  }
  void barrier() override { priv->barrier(); }
  std::unique_ptr<Communicator> split(int color, int key) override {
    return std::make_unique<DeviceMemoryCommunicator>(priv->split(color, key),
                                                      device, inStartOrder);
  }
  [[noreturn]] void abort(const std::string &message, int exitCode) override {
    priv->abort(message, exitCode);
  }
  bool matchesByTag() const override { return !inStartOrder; }
  std::string transportDescription() const override {
    return inStartOrder ? "device memory in start order (test)"
                        : "device memory by tag (test)";
  }

private:
  void check(const void *data, size_t bytes, const char *what) {
    if (bytes && !device.owns(data, bytes))
      throw Error(std::string("device communicator: ") + what +
                  " of host memory, not a device buffer");
    ++device.deviceMessages;
  }
  int tagOf(int tag) const { return inStartOrder ? 0 : tag; }

  std::unique_ptr<Communicator> priv;
  StagingDevice &device;
  bool inStartOrder;
};

inline std::unique_ptr<Communicator>
StagingDevice::connect(Communicator &host, Transport transport) {
  if (transport == Transport::Mpi)
    return nullptr;
  return std::make_unique<DeviceMemoryCommunicator>(
      host.split(0, host.rank()), *this, transport != Transport::HostStaging);
}

} // namespace dpc::runtime

#endif // DPC_TEST_UNITTESTS_RUNTIME_STAGINGDEVICE_H
