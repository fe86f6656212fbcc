//===- RNN.cu - LSTM and GRU forward and backward -------------------------===//
//
// dpc_lstm, dpc_gru and their gradients: the input projection of every step
// in one cuBLAS GEMM, then per step the recurrence's GEMM and a gate kernel
// (a thread per sample and hidden unit), as the CPU kernels do; backward
// walks the steps in reverse with the carried gradients in scratch or in
// the out rows. A reverse layer runs its steps from the last.
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

// The time index of the k-th step a layer runs.
int64_t stepAt(int64_t k, int64_t steps, int64_t reverse) {
  return reverse ? steps - 1 - k : k;
}

// GRU steps (dpc_gru, dpc_gru_grad): states rows are batch x 5H (h, z, r,
// n, q or r * h[t-1]), grad rows batch x 5H (dz, dr, dxn, dq, dh[t-1]);
// rec is h[t-1] r^T (batch x 3H). Without linear_before_reset the step
// ends in gruNew, after the GEMM of r * h[t-1] by Rh into rec.
__global__ void gruGates(float *row, const float *hPrev, int64_t ldh,
                         const float *rec, const float *bias, int64_t batch,
                         int64_t hidden, bool lbr) {
  int64_t index = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (index >= batch * hidden)
    return;
  int64_t b = index / hidden, j = index % hidden, H = hidden;
  float *s = row + b * 5 * H;
  const float *rc = rec + b * 3 * H;
  float xz = s[H + j], xr = s[2 * H + j], xn = s[3 * H + j];
  if (bias) {
    xz += bias[j] + bias[3 * H + j];
    xr += bias[H + j] + bias[4 * H + j];
    xn += bias[2 * H + j];
  }
  float z = sigmoidOf(xz + rc[j]), reset = sigmoidOf(xr + rc[H + j]);
  float hp = hPrev[b * ldh + j];
  s[H + j] = z;
  s[2 * H + j] = reset;
  if (lbr) {
    float q = rc[2 * H + j] + (bias ? bias[5 * H + j] : 0.0f);
    float n = tanhf(xn + reset * q);
    s[3 * H + j] = n;
    s[4 * H + j] = q;
    s[j] = (1.0f - z) * n + z * hp;
  } else {
    s[3 * H + j] = xn;
    s[4 * H + j] = reset * hp;
  }
}

__global__ void gruNew(float *row, const float *hPrev, int64_t ldh,
                       const float *rec, const float *bias, int64_t batch,
                       int64_t hidden) {
  int64_t index = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (index >= batch * hidden)
    return;
  int64_t b = index / hidden, j = index % hidden, H = hidden;
  float *s = row + b * 5 * H;
  float q = rec[b * 3 * H + j] + (bias ? bias[5 * H + j] : 0.0f);
  float n = tanhf(s[3 * H + j] + q), z = s[H + j];
  s[3 * H + j] = n;
  s[j] = (1.0f - z) * n + z * hPrev[b * ldh + j];
}

__global__ void gruGradStep(const float *dstates, const float *row,
                            const float *next, float *orow, int64_t batch,
                            int64_t hidden, const float *hPrev, int64_t ldh,
                            bool lbr) {
  int64_t index = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (index >= batch * hidden)
    return;
  int64_t b = index / hidden, j = index % hidden, H = hidden;
  const float *s = row + b * 5 * H, *ds = dstates + b * 5 * H;
  float *o5 = orow + b * 5 * H;
  float dh = ds[j] + (next ? next[b * 5 * H + 4 * H + j] : 0.0f);
  float z = s[H + j], reset = s[2 * H + j], n = s[3 * H + j];
  float dn = dh * (1.0f - z) * (1.0f - n * n);
  o5[j] = dh * (hPrev[b * ldh + j] - n) * z * (1.0f - z);
  o5[2 * H + j] = dn;
  o5[4 * H + j] = dh * z;
  if (lbr) {
    o5[H + j] = dn * s[4 * H + j] * reset * (1.0f - reset);
    o5[3 * H + j] = dn * reset;
  } else {
    o5[3 * H + j] = dn;
  }
}

// Without linear_before_reset: du = d(r * h[t-1]) = dq Rh gives dr and the
// reset path into dh[t-1].
__global__ void gruGradReset(const float *row, const float *du, float *orow,
                             int64_t batch, int64_t hidden, const float *hPrev,
                             int64_t ldh) {
  int64_t index = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (index >= batch * hidden)
    return;
  int64_t b = index / hidden, j = index % hidden, H = hidden;
  float reset = row[b * 5 * H + 2 * H + j], d = du[index];
  float *o5 = orow + b * 5 * H;
  o5[H + j] = d * hPrev[b * ldh + j] * reset * (1.0f - reset);
  o5[4 * H + j] += d * reset;
}

} // namespace
} // namespace dpc::cuda

extern "C" {

// The input projection of every step in one GEMM, then per step the
// recurrence's GEMM and a gate kernel (as the CPU kernel does).
void dpc_lstm(const float *x, const float *w, const float *r, const float *bias,
              const float *h0, const float *c0, int64_t steps, int64_t batch,
              int64_t input, int64_t hidden, int64_t reverse, float *states) {
  if (steps < 1 || batch < 1 || input < 0 || hidden < 1)
    fail("dpc_lstm: bad sizes");
  const int64_t H = hidden, S = 6 * H, back = reverse ? -1 : 1;
  if (input > 0)
    lstmGemm("dpc_lstm", steps * batch, 4 * H, input, x, input, w, input, true,
             0.0f, states + 2 * H, S);
  else
    check(cudaMemsetAsync(states, 0, size_t(steps * batch * S) * sizeof(float),
                          stream()),
          "dpc_lstm: clearing the states");
  for (int64_t k = 0; k < steps; ++k) {
    float *row = states + stepAt(k, steps, reverse) * batch * S;
    const float *hPrev = k == 0 ? h0 : row - back * batch * S;
    lstmGemm("dpc_lstm", batch, 4 * H, H, hPrev, k == 0 ? H : S, r, H, true,
             1.0f, row + 2 * H, S);
    lstmGates<<<blocksFor(batch * H), kThreads, 0, stream()>>>(
        row, k == 0 ? c0 : hPrev + H, k == 0 ? H : S, bias, batch, H);
    checkLaunch("lstm gates");
  }
}

void dpc_lstm_grad(const float *dstates, const float *states, const float *r,
                   const float *c0, int64_t steps, int64_t batch,
                   int64_t hidden, int64_t reverse, float *out) {
  if (steps < 1 || batch < 1 || hidden < 1)
    fail("dpc_lstm_grad: bad sizes");
  const int64_t H = hidden, S = 6 * H, O = 5 * H, back = reverse ? -1 : 1;
  float *carry = static_cast<float *>(
      scratch(Scratch::Reduce, size_t(2 * batch * H) * sizeof(float)));
  float *dcCarry = carry, *dhNext = carry + batch * H;
  check(
      cudaMemsetAsync(dcCarry, 0, size_t(batch * H) * sizeof(float), stream()),
      "dpc_lstm_grad: clearing the carry");
  for (int64_t k = steps - 1; k >= 0; --k) {
    int64_t t = stepAt(k, steps, reverse);
    const float *row = states + t * batch * S;
    lstmGradStep<<<blocksFor(batch * H), kThreads, 0, stream()>>>(
        dstates + t * batch * S, row, k == 0 ? c0 : row - back * batch * S + H,
        k == 0 ? H : S, k == steps - 1 ? nullptr : dhNext, dcCarry,
        out + t * batch * O, batch, H);
    checkLaunch("lstm_grad step");
    if (k > 0)
      lstmGemm("dpc_lstm_grad", batch, H, 4 * H, out + t * batch * O, O, r, H,
               false, 0.0f, dhNext, H);
  }
}

void dpc_gru(const float *x, const float *w, const float *r, const float *bias,
             const float *h0, int64_t steps, int64_t batch, int64_t input,
             int64_t hidden, int64_t linear_before_reset, int64_t reverse,
             float *states) {
  if (steps < 1 || batch < 1 || input < 0 || hidden < 1)
    fail("dpc_gru: bad sizes");
  const int64_t H = hidden, S = 5 * H, back = reverse ? -1 : 1;
  const bool lbr = linear_before_reset != 0;
  if (input > 0)
    lstmGemm("dpc_gru", steps * batch, 3 * H, input, x, input, w, input, true,
             0.0f, states + H, S);
  else
    check(cudaMemsetAsync(states, 0, size_t(steps * batch * S) * sizeof(float),
                          stream()),
          "dpc_gru: clearing the states");
  float *rec = static_cast<float *>(
      scratch(Scratch::Reduce, size_t(batch * 3 * H) * sizeof(float)));
  for (int64_t k = 0; k < steps; ++k) {
    float *row = states + stepAt(k, steps, reverse) * batch * S;
    const float *hPrev = k == 0 ? h0 : row - back * batch * S;
    int64_t ldh = k == 0 ? H : S;
    lstmGemm("dpc_gru", batch, lbr ? 3 * H : 2 * H, H, hPrev, ldh, r, H, true,
             0.0f, rec, 3 * H);
    gruGates<<<blocksFor(batch * H), kThreads, 0, stream()>>>(
        row, hPrev, ldh, rec, bias, batch, H, lbr);
    checkLaunch("gru gates");
    if (lbr)
      continue;
    lstmGemm("dpc_gru", batch, H, H, row + 4 * H, S, r + 2 * H * H, H, true,
             0.0f, rec, 3 * H);
    gruNew<<<blocksFor(batch * H), kThreads, 0, stream()>>>(
        row, hPrev, ldh, rec, bias, batch, H);
    checkLaunch("gru new state");
  }
}

void dpc_gru_grad(const float *dstates, const float *states, const float *r,
                  const float *h0, int64_t steps, int64_t batch, int64_t hidden,
                  int64_t linear_before_reset, int64_t reverse, float *out) {
  if (steps < 1 || batch < 1 || hidden < 1)
    fail("dpc_gru_grad: bad sizes");
  const int64_t H = hidden, S = 5 * H, O = 5 * H, back = reverse ? -1 : 1;
  const bool lbr = linear_before_reset != 0;
  float *du = static_cast<float *>(
      scratch(Scratch::Reduce, size_t(batch * H) * sizeof(float)));
  for (int64_t k = steps - 1; k >= 0; --k) {
    int64_t t = stepAt(k, steps, reverse);
    const float *row = states + t * batch * S;
    const float *hPrev = k == 0 ? h0 : row - back * batch * S;
    int64_t ldh = k == 0 ? H : S;
    float *orow = out + t * batch * O;
    gruGradStep<<<blocksFor(batch * H), kThreads, 0, stream()>>>(
        dstates + t * batch * S, row,
        k == steps - 1 ? nullptr : orow + back * batch * O, orow, batch, H,
        hPrev, ldh, lbr);
    checkLaunch("gru_grad step");
    if (lbr) {
      lstmGemm("dpc_gru_grad", batch, H, H, orow + 3 * H, O, r + 2 * H * H, H,
               false, 1.0f, orow + 4 * H, O);
    } else {
      lstmGemm("dpc_gru_grad", batch, H, H, orow + 3 * H, O, r + 2 * H * H, H,
               false, 0.0f, du, H);
      gruGradReset<<<blocksFor(batch * H), kThreads, 0, stream()>>>(
          row, du, orow, batch, H, hPrev, ldh);
      checkLaunch("gru_grad reset");
    }
    lstmGemm("dpc_gru_grad", batch, H, 2 * H, orow, O, r, H, false, 1.0f,
             orow + 4 * H, O);
  }
}

} // extern "C"
