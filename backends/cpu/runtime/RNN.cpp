//===- RNN.cpp - LSTM -----------------------------------------------------===//
//
// The LSTM forward over all steps and its gradient: the input projection of
// every step is one sgemm, the recurrence an sgemm per step, and the gate
// loops run in place on the state rows.
//
//===----------------------------------------------------------------------===//

#include "backends/cpu/runtime/Internal.h"

#include <cmath>

using namespace dpc::cpu;

namespace {

// y (m x n, leading dimension ldy) = beta * y + a (m x k) b^T (b: n x k),
// row-major with leading dimensions; one dnnl_sgemm.
void gemmTransB(const char *kernel, int64_t m, int64_t n, int64_t k,
                const float *a, int64_t lda, const float *b, int64_t ldb,
                float beta, float *y, int64_t ldy) {
  dnnl_status_t status =
      dnnl_sgemm('N', 'T', m, n, k, 1.0f, a, lda, b, ldb, beta, y, ldy);
  if (status != dnnl_success)
    fail(kernel,
         "dnnl_sgemm failed with status " + std::to_string(int(status)));
}

void gemm(const char *kernel, int64_t m, int64_t n, int64_t k, const float *a,
          int64_t lda, const float *b, int64_t ldb, float beta, float *y,
          int64_t ldy) {
  dnnl_status_t status =
      dnnl_sgemm('N', 'N', m, n, k, 1.0f, a, lda, b, ldb, beta, y, ldy);
  if (status != dnnl_success)
    fail(kernel,
         "dnnl_sgemm failed with status " + std::to_string(int(status)));
}

float sigmoid(float z) { return 1.0f / (1.0f + std::exp(-z)); }

void checkLstmSizes(const char *kernel, int64_t steps, int64_t batch,
                    int64_t input, int64_t hidden) {
  if (steps < 1 || batch < 1 || input < 0 || hidden < 1)
    fail(kernel, "bad sizes steps " + std::to_string(steps) + ", batch " +
                     std::to_string(batch) + ", input " +
                     std::to_string(input) + ", hidden " +
                     std::to_string(hidden));
}

} // namespace

extern "C" {

// The input projection of every step is one GEMM; the recurrence is a GEMM
// per step into the pre-activations, which the gate loop then overwrites
// in place with the activations.
void dpc_lstm(const float *x, const float *w, const float *r, const float *bias,
              const float *h0, const float *c0, int64_t steps, int64_t batch,
              int64_t input, int64_t hidden, float *states) {
  checkLstmSizes("dpc_lstm", steps, batch, input, hidden);
  const int64_t H = hidden, G = 4 * H, S = 6 * H;
  // The pre-activations go where the gates will be, at column 2H of each
  // state row.
  float *z = states + 2 * H;
  if (input > 0)
    gemmTransB("dpc_lstm", steps * batch, G, input, x, input, w, input, 0.0f, z,
               S);
  for (int64_t t = 0; t < steps; ++t) {
    float *row = states + t * batch * S;
    if (input == 0)
      for (int64_t b = 0; b < batch; ++b)
        std::fill(row + b * S + 2 * H, row + b * S + S, 0.0f);
    const float *hPrev = t == 0 ? h0 : states + (t - 1) * batch * S;
    int64_t ldh = t == 0 ? H : S;
    gemmTransB("dpc_lstm", batch, G, H, hPrev, ldh, r, H, 1.0f, row + 2 * H, S);
    for (int64_t b = 0; b < batch; ++b) {
      float *s = row + b * S;
      float *gates = s + 2 * H;
      const float *cPrev =
          t == 0 ? c0 + b * H : states + ((t - 1) * batch + b) * S + H;
      for (int64_t j = 0; j < H; ++j) {
        float zi = gates[j], zo = gates[H + j], zf = gates[2 * H + j],
              zc = gates[3 * H + j];
        if (bias) {
          zi += bias[j] + bias[G + j];
          zo += bias[H + j] + bias[G + H + j];
          zf += bias[2 * H + j] + bias[G + 2 * H + j];
          zc += bias[3 * H + j] + bias[G + 3 * H + j];
        }
        float i = sigmoid(zi), o = sigmoid(zo), f = sigmoid(zf),
              g = std::tanh(zc);
        float c = f * cPrev[j] + i * g;
        gates[j] = i;
        gates[H + j] = o;
        gates[2 * H + j] = f;
        gates[3 * H + j] = g;
        s[H + j] = c;
        s[j] = o * std::tanh(c);
      }
    }
  }
}

void dpc_lstm_grad(const float *dstates, const float *states, const float *r,
                   const float *c0, int64_t steps, int64_t batch,
                   int64_t hidden, float *out) {
  checkLstmSizes("dpc_lstm_grad", steps, batch, 0, hidden);
  const int64_t H = hidden, S = 6 * H, O = 5 * H;
  // dh and dc carried from step t + 1 into step t.
  std::vector<float> dhNext(size_t(batch * H), 0.0f),
      dcNext(size_t(batch * H), 0.0f);
  for (int64_t t = steps - 1; t >= 0; --t) {
    for (int64_t b = 0; b < batch; ++b) {
      const float *s = states + (t * batch + b) * S;
      const float *ds = dstates + (t * batch + b) * S;
      const float *cPrev =
          t == 0 ? c0 + b * H : states + ((t - 1) * batch + b) * S + H;
      float *o5 = out + (t * batch + b) * O;
      float *dhCarry = dhNext.data() + b * H, *dcCarry = dcNext.data() + b * H;
      for (int64_t j = 0; j < H; ++j) {
        float i = s[2 * H + j], o = s[3 * H + j], f = s[4 * H + j],
              g = s[5 * H + j];
        float tc = std::tanh(s[H + j]);
        float dh = ds[j] + dhCarry[j];
        float dc = ds[H + j] + dcCarry[j] + dh * o * (1.0f - tc * tc);
        o5[j] = dc * g * i * (1.0f - i);
        o5[H + j] = dh * tc * o * (1.0f - o);
        o5[2 * H + j] = dc * cPrev[j] * f * (1.0f - f);
        o5[3 * H + j] = dc * i * (1.0f - g * g);
        o5[4 * H + j] = dc;
        dcCarry[j] = dc * f;
      }
    }
    // dh[t-1] = z_grad[t] r.
    if (t > 0)
      gemm("dpc_lstm_grad", batch, H, 4 * H, out + t * batch * O, O, r, H, 0.0f,
           dhNext.data(), H);
  }
}

} // extern "C"
