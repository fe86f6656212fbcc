//===- Kernels.cuh - Shared pieces of the CUDA kernels ---------*- CUDA -*-===//
//
// Private to backends/cuda/runtime. The kernels of Abi.h that cuDNN and
// cuBLAS do not cover live in files by op family, each beside the ABI
// function that launches it: Elementwise.cu, Tensor.cu, Pooling.cu,
// Normalization.cu, Softmax.cu (with the losses), RNN.cu, and Optimizer.cu
// for the updates of CudaKernels.h. This header holds what more than one of
// them uses: the launch size, the grid- and warp-stride loops, the warp and
// block sums, the strided offset. Only those .cu files include it.
//
// Two rules hold throughout. Reductions never use atomics: each output is
// summed by one thread or one block in a fixed order, so a run reproduces
// bit for bit. Loops are grid-stride with 64-bit indices, so a launch is
// capped in size and tensors beyond 2^31 elements still work.
//
//===----------------------------------------------------------------------===//

#ifndef DPC_BACKENDS_CUDA_RUNTIME_KERNELS_CUH
#define DPC_BACKENDS_CUDA_RUNTIME_KERNELS_CUH

#include "dpc/runtime/CudaKernels.h"

#include "backends/cuda/runtime/Internal.h"

#include <algorithm>
#include <cstdint>

namespace dpc::cuda {

constexpr int kThreads = 256;
constexpr int kMaxRank = 8;

inline unsigned blocksFor(int64_t count, int threads = kThreads) {
  int64_t blocks = (count + threads - 1) / threads;
  return unsigned(std::max<int64_t>(1, std::min<int64_t>(blocks, 1 << 16)));
}

#define GRID_STRIDE(i, count)                                                  \
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;             \
       i < (count); i += int64_t(blockDim.x) * gridDim.x)

#define WARP_STRIDE(r, rows)                                                   \
  for (int64_t r =                                                             \
           int64_t(blockIdx.x) * (blockDim.x >> 5) + (threadIdx.x >> 5);       \
       r < (rows); r += int64_t(gridDim.x) * (blockDim.x >> 5))

__device__ inline float warpSum(float v) {
  for (int offset = 16; offset > 0; offset >>= 1)
    v += __shfl_xor_sync(0xffffffffu, v, offset);
  return v;
}

__device__ inline float warpMax(float v) {
  for (int offset = 16; offset > 0; offset >>= 1)
    v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, offset));
  return v;
}

/// Sum over the block; the result is valid in thread 0. Safe to call in a
/// loop: the leading barrier keeps a slow warp's read of the previous round
/// from racing the next round's writes.
__device__ inline float blockSum(float v) {
  __shared__ float partial[32];
  int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  v = warpSum(v);
  __syncthreads();
  if (lane == 0)
    partial[warp] = v;
  __syncthreads();
  if (warp == 0) {
    v = lane < int(blockDim.x >> 5) ? partial[lane] : 0.0f;
    v = warpSum(v);
  }
  return v;
}

/// The offset of element `index` of a tensor of `sizes` read with `strides`.
__device__ inline int64_t offsetOf(int64_t index, const int64_t *sizes,
                                   const int64_t *strides, int rank) {
  int64_t offset = 0;
  for (int d = rank - 1; d >= 0; --d) {
    offset += (index % sizes[d]) * strides[d];
    index /= sizes[d];
  }
  return offset;
}

inline unsigned rowBlocks(int64_t rows) {
  return blocksFor(rows * 32, kThreads);
}

} // namespace dpc::cuda

#endif // DPC_BACKENDS_CUDA_RUNTIME_KERNELS_CUH
