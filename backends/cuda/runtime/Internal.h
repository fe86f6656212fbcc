//===- Internal.h - Shared state of the CUDA kernel library -----*- C++ -*-===//
//
// The pieces of the kernel library talk to each other through this header:
// the current stream, the library handles, scratch buffers, error reporting,
// and the few launchers that the cuDNN and cuBLAS wrappers borrow from the
// hand-written kernels (padding, reductions). Not installed; only the
// library's own sources and its unit tests include it.
//
//===----------------------------------------------------------------------===//

#ifndef DPC_BACKENDS_CUDA_RUNTIME_INTERNAL_H
#define DPC_BACKENDS_CUDA_RUNTIME_INTERNAL_H

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

typedef struct cublasContext *cublasHandle_t;
typedef struct cudnnContext *cudnnHandle_t;

namespace dpc::cuda {

/// Reports through the installed error handler; never returns.
[[noreturn]] void fail(const std::string &message);
void check(cudaError_t code, const char *what);
/// Catches launch-configuration errors right after a kernel launch, without
/// synchronizing.
void checkLaunch(const char *kernel);

cudaStream_t stream();
/// The handles, bound to the current stream on every call.
cublasHandle_t cublas();
cudnnHandle_t cudnn();

/// Device scratch that lives across calls and is reused in stream order.
/// Each slot grows on demand; one kernel may hold several slots at once.
enum class Scratch { Workspace, Input, Output, Reduce, Count };
void *scratch(Scratch slot, size_t bytes);

/// Frees the cuDNN descriptor cache (Conv.cpp) on dpc_cuda_release.
void releaseConvCache();

//===----------------------------------------------------------------------===//
// Shape helpers (plain C++, unit-tested without a device)
//===----------------------------------------------------------------------===//

/// A broadcast binary op after merging adjacent dimensions that broadcast
/// the same way and dropping dimensions of size 1: strides are in elements,
/// 0 where an operand is broadcast.
struct BroadcastPlan {
  std::vector<int64_t> shape, aStrides, bStrides;
  int64_t count = 1;
};
/// Fails (through fail()) when a or b does not broadcast to y.
BroadcastPlan planBroadcast(const int64_t *aShape, const int64_t *bShape,
                            const int64_t *yShape, int64_t rank);

/// A reduction of x onto the dimensions where y keeps x's size: the kept
/// dimensions index outputs, the reduced ones are summed; adjacent
/// dimensions of the same kind are merged.
struct ReducePlan {
  std::vector<int64_t> keptSizes, keptStrides, reducedSizes, reducedStrides;
  int64_t outputs = 1, reduced = 1;
};
ReducePlan planReduce(const int64_t *xShape, const int64_t *yShape,
                      int64_t rank);

/// A transpose after dropping dimensions of size 1 and merging adjacent
/// result dimensions that are adjacent in the input too: the result's
/// sizes and, for each, the input's element stride.
struct TransposePlan {
  std::vector<int64_t> sizes, strides;
  int64_t count = 1;
};
/// Fails (through fail()) when perm is not a permutation of rank dimensions.
TransposePlan planTranspose(const int64_t *xShape, const int64_t *perm,
                            int64_t rank);

/// How dpc_matmul runs: one GEMM, a strided-batched GEMM, or for
/// `accumulate` either one GEMM over the batch folded into K, one GEMM
/// scaled by the batch, a chain of GEMMs with beta = 1, or a batched GEMM
/// into scratch summed afterwards.
enum class GemmStrategy {
  Batched,
  FoldBatchIntoK,
  ScaleByBatch,
  Chain,
  BatchedThenSum
};
GemmStrategy planGemm(int64_t batch, int64_t m, int64_t n, int64_t k,
                      bool transposeA, bool transposeB, int64_t aStride,
                      int64_t bStride, bool accumulate);

//===----------------------------------------------------------------------===//
// Launchers defined in Tensor.cu and Elementwise.cu
//===----------------------------------------------------------------------===//

/// dst (n, c, dh, dw) = src (n, c, sh, sw) shifted by (offH, offW):
/// dst[.., h, w] = src[.., h + offH, w + offW], zero outside src. Pads with
/// negative offsets, crops with positive ones.
void launchWindowCopy(const float *src, int64_t n, int64_t c, int64_t sh,
                      int64_t sw, float *dst, int64_t dh, int64_t dw,
                      int64_t offH, int64_t offW);
/// y = scale * (sum of x over the plan's reduced dimensions).
void launchReduce(const float *x, const ReducePlan &plan, float *y,
                  float scale);

} // namespace dpc::cuda

#endif // DPC_BACKENDS_CUDA_RUNTIME_INTERNAL_H
