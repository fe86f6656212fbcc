//===- Context.cpp - Stream, handles, scratch and errors ------------------===//
//
// One rank drives one device from one thread, so the library keeps a single
// process-wide state: the compute stream, a cuBLAS and a cuDNN handle created
// on first use (on the device current at that moment), and growable scratch
// buffers. Scratch is reused by every call without synchronizing, which is
// safe because all of them run in order on the one stream; that is why
// switching streams first waits for the old one.
//
//===----------------------------------------------------------------------===//

#include "dpc/runtime/CudaKernels.h"

#include "backends/cuda/runtime/Internal.h"

#include <cublas_v2.h>
#include <cudnn.h>

#include <cstdio>
#include <cstdlib>

namespace dpc::cuda {

namespace {

void defaultErrorHandler(const char *message) {
  std::fprintf(stderr, "error: %s\n", message);
  std::fflush(stderr);
  std::abort();
}

struct State {
  cudaStream_t stream = nullptr;
  cublasHandle_t cublas = nullptr;
  cudnnHandle_t cudnn = nullptr;
  void *scratch[size_t(Scratch::Count)] = {};
  size_t scratchBytes[size_t(Scratch::Count)] = {};
  dpc_cuda_error_handler handler = defaultErrorHandler;
};

// Never destroyed: see dpc_cuda_release.
State &state() {
  static State *s = new State;
  return *s;
}

} // namespace

void fail(const std::string &message) {
  state().handler(("cuda: " + message).c_str());
  std::abort();
}

void check(cudaError_t code, const char *what) {
  if (code != cudaSuccess)
    fail(std::string(what) + ": " + cudaGetErrorString(code));
}

void checkLaunch(const char *kernel) {
  cudaError_t code = cudaGetLastError();
  if (code != cudaSuccess)
    fail(std::string("launching ") + kernel + ": " + cudaGetErrorString(code));
}

cudaStream_t stream() { return state().stream; }

cublasHandle_t cublas() {
  State &s = state();
  if (!s.cublas) {
    cublasStatus_t status = cublasCreate(&s.cublas);
    if (status != CUBLAS_STATUS_SUCCESS)
      fail(std::string("cublasCreate: ") + cublasGetStatusString(status));
    // FP32 products stay FP32: no TF32 tensor cores, so that results match
    // the CPU backend and PyTorch with TF32 off.
    cublasSetMathMode(s.cublas, CUBLAS_DEFAULT_MATH);
  }
  cublasSetStream(s.cublas, s.stream);
  return s.cublas;
}

cudnnHandle_t cudnn() {
  State &s = state();
  if (!s.cudnn) {
    cudnnStatus_t status = cudnnCreate(&s.cudnn);
    if (status != CUDNN_STATUS_SUCCESS)
      fail(std::string("cudnnCreate: ") + cudnnGetErrorString(status));
  }
  cudnnSetStream(s.cudnn, s.stream);
  return s.cudnn;
}

void *scratch(Scratch slot, size_t bytes) {
  State &s = state();
  size_t i = size_t(slot);
  if (bytes <= s.scratchBytes[i])
    return s.scratch[i];
  // cudaFree waits for the device, so the old buffer is no longer in use by
  // queued work. Growth happens in the first iterations only.
  if (s.scratch[i])
    check(cudaFree(s.scratch[i]), "freeing scratch");
  s.scratch[i] = nullptr;
  s.scratchBytes[i] = 0;
  // Round up so that slowly growing requests do not reallocate every call.
  size_t rounded = (bytes + (size_t(1) << 20) - 1) & ~((size_t(1) << 20) - 1);
  check(
      cudaMalloc(&s.scratch[i], rounded),
      ("allocating " + std::to_string(rounded) + " bytes of scratch").c_str());
  s.scratchBytes[i] = rounded;
  return s.scratch[i];
}

} // namespace dpc::cuda

using namespace dpc::cuda;

extern "C" {

void dpc_cuda_set_stream(cudaStream_t newStream) {
  State &s = state();
  if (newStream == s.stream)
    return;
  check(cudaStreamSynchronize(s.stream), "waiting for the old stream");
  s.stream = newStream;
}

cudaStream_t dpc_cuda_stream(void) { return state().stream; }

void dpc_cuda_set_error_handler(dpc_cuda_error_handler handler) {
  state().handler = handler ? handler : defaultErrorHandler;
}

void dpc_cuda_synchronize(void) {
  check(cudaStreamSynchronize(state().stream), "synchronizing the stream");
}

void dpc_cuda_release(void) {
  State &s = state();
  check(cudaStreamSynchronize(s.stream), "synchronizing the stream");
  releaseConvCache();
  for (size_t i = 0; i < size_t(Scratch::Count); ++i) {
    if (s.scratch[i])
      cudaFree(s.scratch[i]);
    s.scratch[i] = nullptr;
    s.scratchBytes[i] = 0;
  }
  if (s.cublas)
    cublasDestroy(s.cublas);
  if (s.cudnn)
    cudnnDestroy(s.cudnn);
  s.cublas = nullptr;
  s.cudnn = nullptr;
}

void dpc_copy(const void *src, void *dst, int64_t bytes) {
  if (bytes <= 0)
    return;
  check(cudaMemcpyAsync(dst, src, size_t(bytes), cudaMemcpyDeviceToDevice,
                        state().stream),
        "dpc_copy");
}

} // extern "C"
