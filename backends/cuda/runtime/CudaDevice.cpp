//===- CudaDevice.cpp - Tensors in the memory of this rank's GPU ----------===//
//
// Everything is enqueued on the kernel library's compute stream, so the
// executor's copies and optimizer steps are ordered with the generated
// code's kernels without any synchronization; only copyToHost waits.
// Host-to-device copies come from pageable host memory (the executor's
// staging buffers), which CUDA copies out before cudaMemcpyAsync returns,
// so the host may reuse the source at once.
//
//===----------------------------------------------------------------------===//

#include "dpc/runtime/CudaDevice.h"

#include "dpc/runtime/Communicator.h"
#include "dpc/runtime/CudaKernels.h"
#include "dpc/runtime/Error.h"

#include "backends/cuda/runtime/Internal.h"

#include <cstdio>
#include <cstdlib>

namespace dpc::runtime {

namespace {

using dpc::cuda::check;

/// At start-up failures are thrown, so that the rank main names the rank.
void require(cudaError_t code, const char *what) {
  if (code != cudaSuccess)
    throw Error(std::string("cuda: ") + what + ": " + cudaGetErrorString(code));
}

/// What setErrorHandler installed; the kernel library takes a C function.
std::function<void(const std::string &)> &errorHandler() {
  static auto *handler = new std::function<void(const std::string &)>;
  return *handler;
}

void forwardError(const char *message) {
  if (errorHandler())
    errorHandler()(message);
  std::fprintf(stderr, "error: %s\n", message);
  std::fflush(stderr);
  std::abort();
}

class CudaDevice final : public Device {
public:
  explicit CudaDevice(DeviceConnector connector)
      : connector(std::move(connector)) {
    ordinal = selectLocalDevice();
    cudaDeviceProp prop;
    require(cudaGetDeviceProperties(&prop, ordinal), "cudaGetDeviceProperties");
    char text[320];
    std::snprintf(text, sizeof text, "cuda device %d (%s, %.0f GiB)", ordinal,
                  prop.name, double(prop.totalGlobalMem) / (1 << 30));
    name = text;
    require(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking),
            "creating the compute stream");
    dpc_cuda_set_stream(stream);
  }

  ~CudaDevice() override {
    // A device that already failed is left as it is: the rank is going
    // down, and the library's calls below would report the fault again.
    if (cudaStreamSynchronize(stream) != cudaSuccess)
      return;
    dpc_cuda_release();
    dpc_cuda_set_stream(nullptr);
    cudaStreamDestroy(stream);
  }

  std::string description() const override { return name; }
  bool hostAccessible() const override { return false; }

  void *allocate(size_t bytes) override {
    void *p = nullptr;
    cudaError_t code = cudaMalloc(&p, bytes ? bytes : 1);
    if (code != cudaSuccess) {
      // Out of memory is not sticky: clear it, or the next kernel launch
      // check would report it again.
      cudaGetLastError();
      check(code, ("allocating " + std::to_string(bytes) + " bytes on " + name)
                      .c_str());
    }
    return p;
  }
  void deallocate(void *ptr) override {
    if (ptr)
      check(cudaFree(ptr), "cudaFree");
  }

  void memset(void *dst, int value, size_t bytes) override {
    if (bytes)
      check(cudaMemsetAsync(dst, value, bytes, stream), "cudaMemsetAsync");
  }
  void copyFromHost(void *dst, const void *src, size_t bytes) override {
    if (bytes)
      check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, stream),
            "copying to the device");
  }
  void copyToHost(void *dst, const void *src, size_t bytes) override {
    if (!bytes)
      return;
    check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, stream),
          "copying to the host");
    check(cudaStreamSynchronize(stream), "copying to the host");
  }
  void copy(void *dst, const void *src, size_t bytes) override {
    if (bytes)
      check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, stream),
            "copying on the device");
  }

  void accumulate(float *acc, const float *x, size_t n) override {
    dpc_cuda_accumulate(acc, x, int64_t(n));
  }
  void sgdStep(float *p, float *v, float *acc, size_t n, float lr,
               float momentum, float weightDecay) override {
    dpc_cuda_sgd_step(p, v, acc, int64_t(n), lr, momentum, weightDecay);
  }
  void adamStep(float *p, float *m, float *v, float *acc, size_t n,
                const AdamStep &step) override {
    dpc_cuda_adam_step(p, m, v, acc, int64_t(n), step.beta1, step.beta2,
                       step.eps, step.weightDecay, step.stepSize,
                       step.correction2Sqrt, step.decay);
  }

  void synchronize() override { dpc_cuda_synchronize(); }

  void
  setErrorHandler(std::function<void(const std::string &)> handler) override {
    errorHandler() = std::move(handler);
    dpc_cuda_set_error_handler(forwardError);
  }

  std::unique_ptr<Communicator> connect(Communicator &host,
                                        Transport transport) override {
    if (!connector || transport == Transport::Mpi)
      return Device::connect(host, transport);
    return connector(host, transport);
  }

private:
  DeviceConnector connector;
  int ordinal = 0;
  std::string name;
  cudaStream_t stream = nullptr;
};

} // namespace

int selectLocalDevice() {
  int count = 0;
  cudaError_t code = cudaGetDeviceCount(&count);
  if (code != cudaSuccess || count == 0)
    throw Error(std::string("no CUDA device (") +
                (code != cudaSuccess ? std::string("cudaGetDeviceCount: ") +
                                           cudaGetErrorString(code)
                                     : std::string("the driver reports none")) +
                ")");
  int local = 0;
  for (const char *name : {"OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID",
                           "SLURM_LOCALID", "LOCAL_RANK"})
    if (const char *value = std::getenv(name)) {
      local = std::atoi(value);
      break;
    }
  int device = (local < 0 ? 0 : local) % count;
  code = cudaSetDevice(device);
  if (code != cudaSuccess)
    throw Error("no CUDA device (selecting device " + std::to_string(device) +
                ": " + cudaGetErrorString(code) + ")");
  return device;
}

std::unique_ptr<Device> createCudaDevice(DeviceConnector connector) {
  return std::make_unique<CudaDevice>(std::move(connector));
}

} // namespace dpc::runtime
