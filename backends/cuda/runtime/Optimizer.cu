//===- Optimizer.cu - Gradient accumulation, SGD and Adam -----------------===//
//
// The updates of CudaKernels.h on device buffers, a thread per element:
// accumulating a microbatch's gradient, and the SGD (with momentum and weight
// decay) and Adam steps, which also clear the accumulated gradient.
//
//===----------------------------------------------------------------------===//

#include "backends/cuda/runtime/Kernels.cuh"

#include <cmath>

using namespace dpc::cuda;

namespace dpc::cuda {
namespace {

__global__ void accumulateKernel(float *acc, const float *g, int64_t n) {
  GRID_STRIDE(i, n) { acc[i] += g[i]; }
}

__global__ void sgdKernel(float *p, float *v, float *acc, int64_t n, float lr,
                          float momentum, float weightDecay) {
  GRID_STRIDE(i, n) {
    float g = acc[i] + weightDecay * p[i];
    if (v) {
      g = momentum * v[i] + g;
      v[i] = g;
    }
    p[i] -= lr * g;
    acc[i] = 0.0f;
  }
}

__global__ void adamKernel(float *p, float *m, float *v, float *acc, int64_t n,
                           float beta1, float beta2, float eps,
                           float weightDecay, float stepSize,
                           float correction2Sqrt, float decay) {
  GRID_STRIDE(i, n) {
    if (decay != 1.0f)
      p[i] *= decay;
    float g = acc[i] + weightDecay * p[i];
    float mi = m[i] + (1.0f - beta1) * (g - m[i]);
    float vi = beta2 * v[i] + (1.0f - beta2) * g * g;
    m[i] = mi;
    v[i] = vi;
    p[i] -= stepSize * (mi / (sqrtf(vi) / correction2Sqrt + eps));
    acc[i] = 0.0f;
  }
}

} // namespace
} // namespace dpc::cuda

extern "C" {

void dpc_cuda_accumulate(float *acc, const float *g, int64_t n) {
  if (n <= 0)
    return;
  accumulateKernel<<<blocksFor(n), kThreads, 0, stream()>>>(acc, g, n);
  checkLaunch("accumulate");
}

void dpc_cuda_sgd_step(float *p, float *v, float *acc, int64_t n, float lr,
                       float momentum, float weight_decay) {
  if (n <= 0)
    return;
  if (momentum != 0.0f && !v)
    fail("dpc_cuda_sgd_step: momentum without a momentum buffer");
  sgdKernel<<<blocksFor(n), kThreads, 0, stream()>>>(
      p, momentum != 0.0f ? v : nullptr, acc, n, lr, momentum, weight_decay);
  checkLaunch("sgd_step");
}

void dpc_cuda_adam_step(float *p, float *m, float *v, float *acc, int64_t n,
                        float beta1, float beta2, float eps, float weight_decay,
                        float step_size, float correction2_sqrt, float decay) {
  if (n <= 0)
    return;
  if (!m || !v)
    fail("dpc_cuda_adam_step: Adam without its moment buffers");
  adamKernel<<<blocksFor(n), kThreads, 0, stream()>>>(
      p, m, v, acc, n, beta1, beta2, eps, weight_decay, step_size,
      correction2_sqrt, decay);
  checkLaunch("adam_step");
}

} // extern "C"
