/*===- CudaKernels.h - CUDA-only entry points of the kernel library -*- C -*-===
 *
 * On the CUDA target the generated code calls the kernels of Abi.h with
 * device pointers for tensors and host pointers for shapes and params. The
 * kernels enqueue on the library's current compute stream and never
 * synchronize; the executor orders everything else (transfers, copies to the
 * host, the optimizer step) against that stream.
 *
 * This header adds what only the CUDA executor needs: choosing the compute
 * stream, the optimizer updates on device buffers, and how errors surface.
 *
 *===----------------------------------------------------------------------===*/

#ifndef DPC_RUNTIME_CUDAKERNELS_H
#define DPC_RUNTIME_CUDAKERNELS_H

#include "dpc/runtime/Abi.h"

#include <cuda_runtime_api.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The stream every kernel enqueues on; 0 (the legacy default stream) until
 * set. Switching streams waits for the work already queued on the old one,
 * because the library's scratch buffers are reused in stream order. */
void dpc_cuda_set_stream(cudaStream_t stream);
cudaStream_t dpc_cuda_stream(void);

/* acc += g, `n` floats (the gradient accumulator of a parameter). */
void dpc_cuda_accumulate(float *acc, const float *g, int64_t n);

/* One torch.optim.SGD step (dampening 0, no Nesterov) from the accumulated
 * gradient: g = acc + weight_decay * p; v = momentum * v + g; p -= lr * v;
 * then acc = 0. The momentum buffer `v` starts at zero, which makes the first
 * step v = g as torch does; with momentum 0, `v` may be null. */
void dpc_cuda_sgd_step(float *p, float *v, float *acc, int64_t n, float lr,
                       float momentum, float weight_decay);

/* One torch.optim.Adam step (no AMSGrad) from the accumulated gradient, with
 * the bias corrections of the step number folded into `step_size` (lr / (1 -
 * beta1^t)) and `correction2_sqrt` (sqrt(1 - beta2^t)): p *= decay (AdamW's
 * 1 - lr * weight_decay; 1 for Adam); g = acc +
 * weight_decay * p; m += (1 - beta1) * (g - m); v = beta2 * v + (1 - beta2)
 * * g * g; p -= step_size * m / (sqrt(v) / correction2_sqrt + eps); then
 * acc = 0. */
void dpc_cuda_adam_step(float *p, float *m, float *v, float *acc, int64_t n,
                        float beta1, float beta2, float eps, float weight_decay,
                        float step_size, float correction2_sqrt, float decay);

/* A failed CUDA, cuDNN or cuBLAS call, or an unsupported shape, calls the
 * handler with a message ("cuda: ..."). The default prints
 * "error: <message>" and aborts the process, which takes an MPI job down;
 * the executor installs one that aborts through its communicator. The
 * handler must not return (throwing is fine from C++ callers); if it does,
 * the process aborts. */
typedef void (*dpc_cuda_error_handler)(const char *message);
void dpc_cuda_set_error_handler(dpc_cuda_error_handler handler);

/* Waits for the current stream and reports any asynchronous error. */
void dpc_cuda_synchronize(void);

/* Frees the cuDNN/cuBLAS handles, descriptor caches and scratch buffers
 * (after waiting for the stream). Otherwise they live until the process
 * exits: destroying them from static destructors races with the CUDA
 * runtime's own teardown. */
void dpc_cuda_release(void);

#ifdef __cplusplus
}
#endif

#endif /* DPC_RUNTIME_CUDAKERNELS_H */
