//===- Gemm.cpp - dpc_matmul on cuBLAS ------------------------------------===//
//
// cuBLAS is column-major and dpc tensors are row-major. A row-major M x N
// matrix is the same memory as a column-major N x M one, its transpose, so
// y = op(a) op(b) is computed as y^T = op(b)^T op(a)^T: the operands swap
// places and keep their transpose flags, and no data moves.
//
//===----------------------------------------------------------------------===//

#include "dpc/runtime/CudaKernels.h"

#include "backends/cuda/runtime/Internal.h"

#include <cublas_v2.h>

namespace dpc::cuda {
namespace {

struct Operand {
  const float *data;
  bool transpose;
  int64_t ld, stride;
};

/// y[b] = alpha * op(a[b]) op(b[b]) + beta * y[b] for `batch` row-major
/// products of M x K by K x N.
void gemm(int64_t m, int64_t n, int64_t k, float alpha, Operand a, Operand b,
          float beta, float *y, int64_t yStride, int64_t batch) {
  cublasStatus_t status = cublasSgemmStridedBatched_64(
      cublas(), b.transpose ? CUBLAS_OP_T : CUBLAS_OP_N,
      a.transpose ? CUBLAS_OP_T : CUBLAS_OP_N, n, m, k, &alpha, b.data, b.ld,
      b.stride, a.data, a.ld, a.stride, &beta, y, n, yStride, batch);
  if (status != CUBLAS_STATUS_SUCCESS)
    fail("dpc_matmul: cublasSgemmStridedBatched (m " + std::to_string(m) +
         ", n " + std::to_string(n) + ", k " + std::to_string(k) + ", batch " +
         std::to_string(batch) + "): " + cublasGetStatusString(status));
}

} // namespace
} // namespace dpc::cuda

using namespace dpc::cuda;

extern "C" void dpc_matmul(const float *a, const float *b, float *y,
                           int64_t batch, int64_t m, int64_t n, int64_t k,
                           int64_t transpose_a, int64_t transpose_b,
                           int64_t a_stride, int64_t b_stride,
                           int64_t accumulate) {
  if (batch < 0 || m < 0 || n < 0 || k < 0)
    fail("dpc_matmul: negative size");
  int64_t outputs = accumulate ? 1 : batch;
  if (m == 0 || n == 0 || outputs == 0)
    return;
  if (k == 0 || batch == 0) {
    check(cudaMemsetAsync(y, 0, size_t(outputs * m * n) * sizeof(float),
                          stream()),
          "dpc_matmul: clearing an empty product");
    return;
  }
  // Leading dimensions of the row-major operands as stored.
  Operand opA{a, transpose_a != 0, transpose_a ? m : k, a_stride};
  Operand opB{b, transpose_b != 0, transpose_b ? k : n, b_stride};
  switch (planGemm(batch, m, n, k, transpose_a, transpose_b, a_stride, b_stride,
                   accumulate)) {
  case GemmStrategy::Batched:
    gemm(m, n, k, 1.0f, opA, opB, 0.0f, y, m * n, accumulate ? 1 : batch);
    return;
  case GemmStrategy::FoldBatchIntoK:
    gemm(m, n, k * batch, 1.0f, opA, opB, 0.0f, y, m * n, 1);
    return;
  case GemmStrategy::ScaleByBatch:
    gemm(m, n, k, float(batch), opA, opB, 0.0f, y, m * n, 1);
    return;
  case GemmStrategy::Chain:
    for (int64_t i = 0; i < batch; ++i) {
      Operand ai = opA, bi = opB;
      ai.data += i * a_stride;
      bi.data += i * b_stride;
      gemm(m, n, k, 1.0f, ai, bi, i ? 1.0f : 0.0f, y, m * n, 1);
    }
    return;
  case GemmStrategy::BatchedThenSum: {
    float *products = static_cast<float *>(
        scratch(Scratch::Output, size_t(batch * m * n) * sizeof(float)));
    gemm(m, n, k, 1.0f, opA, opB, 0.0f, products, m * n, batch);
    int64_t xShape[2] = {batch, m * n}, yShape[2] = {1, m * n};
    launchReduce(products, planReduce(xShape, yShape, 2), y, 1.0f);
    return;
  }
  }
}

// dpc compile refuses --precision bf16 for --target cuda; a rank that got
// one anyway computes the f32 kernels.
extern "C" int64_t dpc_bf16_native(void) { return 0; }
