//===- Device.h - Memory of the generated code's tensors -------*- C++ -*-===//
//
// The generated code hands the runtime pointers to tensors (dpc_send,
// dpc_stash, dpc_grad_accumulate, dpc_report_loss) and gets pointers back
// (dpc_param, dpc_input, dpc_recv, dpc_alloc). On the CPU target those are
// host memory; on the CUDA target they are device memory that the host
// cannot dereference. The executor therefore allocates every buffer it shows
// the generated code from a Device and touches it only through the
// operations below: copies in and out, the gradient accumulation and the SGD
// step. Which Device a rank uses is chosen at link time: every target's
// kernel library defines createTargetDevice(), so the executor and the rank
// main never name a target.
//
// Ordering. Device operations and the target's kernels run in one order, the
// order they are called in (on CUDA: one stream), so the executor needs no
// synchronization between them. Only copyToHost waits: it returns with the
// data, after everything called before it has finished.
//
// Errors. Failures the user can cause at start-up (no GPU) throw Error from
// createTargetDevice. Failures later (out of memory, a device fault) may
// happen inside a C ABI call from generated code, which cannot unwind, so a
// device reports them to the handler given to setErrorHandler, which must
// not return; the host device throws Error as the rest of the runtime does.
//
// Transfers. Activations, gradients and the replicas' gradient sums leave
// the device through the communicator connect() returns, which takes this
// device's pointers (NCCL on CUDA). A device without one (the host, whose
// memory MPI reads directly) returns nullptr, and the executor sends over
// the host communicator, staging through host memory when it must.
//
//===----------------------------------------------------------------------===//

#ifndef DPC_RUNTIME_DEVICE_H
#define DPC_RUNTIME_DEVICE_H

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace dpc::runtime {

class Communicator;

/// How a rank's device memory travels to other ranks (the ranks' --transport
/// option).
enum class Transport {
  /// The device's choice: on CUDA, NCCL between GPUs of their own, its
  /// pinned host staging where ranks share a GPU.
  Auto,
  /// NCCL send/recv and all-reduce, GPU to GPU; an error where it cannot run.
  Nccl,
  /// The device's communicator, copying through pinned host memory and MPI.
  HostStaging,
  /// No device communicator: the executor copies every message to host
  /// memory and sends it over the host communicator.
  Mpi,
};

/// "auto", "nccl", "host-staging", "mpi".
const char *transportName(Transport transport);
std::optional<Transport> parseTransport(std::string_view text);

/// One Adam update's settings, with the learning rate and the bias
/// corrections of its step number folded together once per call (in
/// double) rather than per element. A decoupled step (AdamW) keeps no L2
/// weight decay: it scales the parameter by `decay` = 1 - lr * weight_decay
/// before the update instead (1 for Adam).
struct AdamStep {
  float beta1 = 0.9f, beta2 = 0.999f, eps = 1e-8f, weightDecay = 0.0f;
  /// lr / (1 - beta1^step) and sqrt(1 - beta2^step).
  float stepSize = 0.0f, correction2Sqrt = 1.0f;
  float decay = 1.0f;

  AdamStep(double lr, float beta1, float beta2, float eps, float weightDecay,
           int64_t step, bool decoupled = false);
};

class Device {
public:
  virtual ~Device() = default;

  /// For the run log, e.g. "host" or "cuda device 0 (NVIDIA H100, 80 GiB)".
  virtual std::string description() const = 0;
  /// Whether the host may read and write the memory directly. When it may,
  /// the executor reads outputs and hands transfer buffers to the
  /// communicator in place; otherwise it stages them through host memory.
  virtual bool hostAccessible() const = 0;

  /// `bytes` bytes (0 is allowed), aligned to at least 64 bytes, contents
  /// undefined.
  virtual void *allocate(size_t bytes) = 0;
  /// Frees what allocate returned; nullptr is ignored.
  virtual void deallocate(void *ptr) = 0;

  /// Sets `bytes` bytes at `dst` to the byte `value`.
  virtual void memset(void *dst, int value, size_t bytes) = 0;
  /// Host to device. `src` may be reused as soon as the call returns.
  virtual void copyFromHost(void *dst, const void *src, size_t bytes) = 0;
  /// Device to host; returns when the data is in `dst`, which includes
  /// everything called on the device before.
  virtual void copyToHost(void *dst, const void *src, size_t bytes) = 0;
  /// Device to device; the ranges do not overlap.
  virtual void copy(void *dst, const void *src, size_t bytes) = 0;

  /// acc += x, `n` floats: a parameter's gradient accumulator.
  virtual void accumulate(float *acc, const float *x, size_t n) = 0;
  /// torch.optim.SGD without dampening or Nesterov on `n` floats from the
  /// accumulated gradient: g = acc + weight_decay * p; v = momentum * v + g;
  /// p -= lr * v (with momentum 0: p -= lr * g, v untouched); then acc = 0.
  /// The momentum buffer starts at zero, so the first step uses v = g.
  virtual void sgdStep(float *p, float *v, float *acc, size_t n, float lr,
                       float momentum, float weightDecay) = 0;
  /// torch.optim.Adam (no AMSGrad) on `n` floats from the accumulated
  /// gradient, as update number `step` (1 for the first): p *= step.decay
  /// (AdamW's decoupled weight decay; 1 for Adam); g = acc +
  /// weight_decay * p; m += (1 - beta1) * (g - m); v = beta2 * v + (1 -
  /// beta2) * g * g; p -= lr / (1 - beta1^step) * m / (sqrt(v) /
  /// sqrt(1 - beta2^step) + eps); then acc = 0. The moments start at zero.
  virtual void adamStep(float *p, float *m, float *v, float *acc, size_t n,
                        const AdamStep &step) = 0;

  /// Waits for everything called on the device so far and reports a fault
  /// that happened meanwhile.
  virtual void synchronize() = 0;

  /// Collective over `host`: a communicator over its ranks that takes this
  /// device's pointers, made as `transport` asks, or nullptr when the
  /// executor should use `host` itself (Auto and Mpi on the host device).
  /// `host` must outlive the result. Throws Error when `transport` cannot be
  /// had here, the same on every rank.
  virtual std::unique_ptr<Communicator> connect(Communicator &host,
                                                Transport transport);

  /// Where later failures go (see the file comment). The handler must not
  /// return; the default prints the message and aborts the process.
  virtual void
  setErrorHandler(std::function<void(const std::string &)> handler) = 0;
};

/// Host memory and plain loops: the CPU target's device, and the staging
/// memory of the others.
std::unique_ptr<Device> createHostDevice();

/// The device of the target this rank executable was linked for: defined by
/// the target's kernel library (dpc_cpu_kernels: the host; dpc_cuda_kernels:
/// the GPU of this rank, picked by the launcher's local rank). Throws Error
/// when the target cannot run on this machine (for CUDA: "no CUDA device").
std::unique_ptr<Device> createTargetDevice();

} // namespace dpc::runtime

#endif // DPC_RUNTIME_DEVICE_H
