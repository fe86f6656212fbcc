//===- RNN.cu - LSTM forward and backward ---------------------------------===//
//
// dpc_lstm and dpc_lstm_grad: the input projection of every step in one
// cuBLAS GEMM, then per step the recurrence's GEMM and a gate kernel (a
// thread per sample and hidden unit), as the CPU kernel does; backward walks
// the steps in reverse with the cell gradient carried in scratch.
//
//===----------------------------------------------------------------------===//

#include "backends/cuda/runtime/Kernels.cuh"

#include <cublas_v2.h>

#include <cmath>

using namespace dpc::cuda;

namespace dpc::cuda {
namespace {

// LSTM steps (dpc_lstm, dpc_lstm_grad): a thread per sample and hidden
// unit; states rows are batch x 6H (h, c, i, o, f, g), grad rows batch x 5H.
__device__ float sigmoidOf(float z) { return 1.0f / (1.0f + expf(-z)); }

__global__ void lstmGates(float *row, const float *cPrev, int64_t cStride,
                          const float *bias, int64_t batch, int64_t hidden) {
  int64_t index = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (index >= batch * hidden)
    return;
  int64_t b = index / hidden, j = index % hidden, H = hidden;
  float *s = row + b * 6 * H, *gates = s + 2 * H;
  float z[4];
  for (int q = 0; q < 4; ++q)
    z[q] = gates[q * H + j] +
           (bias ? bias[q * H + j] + bias[4 * H + q * H + j] : 0.0f);
  float i = sigmoidOf(z[0]), o = sigmoidOf(z[1]), f = sigmoidOf(z[2]),
        g = tanhf(z[3]);
  float c = f * cPrev[b * cStride + j] + i * g;
  gates[j] = i;
  gates[H + j] = o;
  gates[2 * H + j] = f;
  gates[3 * H + j] = g;
  s[H + j] = c;
  s[j] = o * tanhf(c);
}

__global__ void lstmGradStep(const float *dstates, const float *states,
                             const float *cPrev, int64_t cStride,
                             const float *dhNext, float *dcCarry, float *out,
                             int64_t batch, int64_t hidden) {
  int64_t index = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (index >= batch * hidden)
    return;
  int64_t b = index / hidden, j = index % hidden, H = hidden;
  const float *s = states + b * 6 * H, *ds = dstates + b * 6 * H;
  float *o5 = out + b * 5 * H;
  float i = s[2 * H + j], o = s[3 * H + j], f = s[4 * H + j], g = s[5 * H + j];
  float tc = tanhf(s[H + j]);
  float dh = ds[j] + (dhNext ? dhNext[index] : 0.0f);
  float dc = ds[H + j] + dcCarry[index] + dh * o * (1.0f - tc * tc);
  o5[j] = dc * g * i * (1.0f - i);
  o5[H + j] = dh * tc * o * (1.0f - o);
  o5[2 * H + j] = dc * cPrev[b * cStride + j] * f * (1.0f - f);
  o5[3 * H + j] = dc * i * (1.0f - g * g);
  o5[4 * H + j] = dc;
  dcCarry[index] = dc * f;
}

// Row-major y (m x n, ldy) = beta y + a (m x k, lda) op(b), op(b) = b^T for
// b of n x k (transposeB) or b of k x n: cuBLAS sees the column-major
// transposes, so the operands swap places.
void lstmGemm(const char *kernel, int64_t m, int64_t n, int64_t k,
              const float *a, int64_t lda, const float *b, int64_t ldb,
              bool transposeB, float beta, float *y, int64_t ldy) {
  float one = 1.0f;
  cublasStatus_t status =
      cublasSgemm_64(cublas(), transposeB ? CUBLAS_OP_T : CUBLAS_OP_N,
                     CUBLAS_OP_N, n, m, k, &one, b, ldb, a, lda, &beta, y, ldy);
  if (status != CUBLAS_STATUS_SUCCESS)
    fail(std::string(kernel) +
         ": cublasSgemm: " + cublasGetStatusString(status));
}

} // namespace
} // namespace dpc::cuda

extern "C" {

// The input projection of every step in one GEMM, then per step the
// recurrence's GEMM and a gate kernel (as the CPU kernel does).
void dpc_lstm(const float *x, const float *w, const float *r, const float *bias,
              const float *h0, const float *c0, int64_t steps, int64_t batch,
              int64_t input, int64_t hidden, float *states) {
  if (steps < 1 || batch < 1 || input < 0 || hidden < 1)
    fail("dpc_lstm: bad sizes");
  const int64_t H = hidden, S = 6 * H;
  if (input > 0)
    lstmGemm("dpc_lstm", steps * batch, 4 * H, input, x, input, w, input, true,
             0.0f, states + 2 * H, S);
  else
    check(cudaMemsetAsync(states, 0, size_t(steps * batch * S) * sizeof(float),
                          stream()),
          "dpc_lstm: clearing the states");
  for (int64_t t = 0; t < steps; ++t) {
    float *row = states + t * batch * S;
    const float *hPrev = t == 0 ? h0 : row - batch * S;
    lstmGemm("dpc_lstm", batch, 4 * H, H, hPrev, t == 0 ? H : S, r, H, true,
             1.0f, row + 2 * H, S);
    lstmGates<<<blocksFor(batch * H), kThreads, 0, stream()>>>(
        row, t == 0 ? c0 : row - batch * S + H, t == 0 ? H : S, bias, batch, H);
    checkLaunch("lstm gates");
  }
}

void dpc_lstm_grad(const float *dstates, const float *states, const float *r,
                   const float *c0, int64_t steps, int64_t batch,
                   int64_t hidden, float *out) {
  if (steps < 1 || batch < 1 || hidden < 1)
    fail("dpc_lstm_grad: bad sizes");
  const int64_t H = hidden, S = 6 * H, O = 5 * H;
  float *carry = static_cast<float *>(
      scratch(Scratch::Reduce, size_t(2 * batch * H) * sizeof(float)));
  float *dcCarry = carry, *dhNext = carry + batch * H;
  check(
      cudaMemsetAsync(dcCarry, 0, size_t(batch * H) * sizeof(float), stream()),
      "dpc_lstm_grad: clearing the carry");
  for (int64_t t = steps - 1; t >= 0; --t) {
    const float *row = states + t * batch * S;
    lstmGradStep<<<blocksFor(batch * H), kThreads, 0, stream()>>>(
        dstates + t * batch * S, row, t == 0 ? c0 : row - batch * S + H,
        t == 0 ? H : S, t == steps - 1 ? nullptr : dhNext, dcCarry,
        out + t * batch * O, batch, H);
    checkLaunch("lstm_grad step");
    if (t > 0)
      lstmGemm("dpc_lstm_grad", batch, H, 4 * H, out + t * batch * O, O, r, H,
               false, 0.0f, dhNext, H);
  }
}

} // extern "C"
