//===- RNN.cpp - LSTM and GRU ---------------------------------------------===//
//
// The LSTM and GRU forwards over all steps and their gradients: the input
// projection of every step is one sgemm, the recurrence an sgemm per step,
// and the gate loops run in place on the state rows. A reverse layer (the
// second direction of a bidirectional one) walks the steps from the last;
// its states stay indexed by time.
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

// The time index of the k-th step a layer runs.
int64_t stepAt(int64_t k, int64_t steps, int64_t reverse) {
  return reverse ? steps - 1 - k : k;
}

void checkRnnSizes(const char *kernel, int64_t steps, int64_t batch,
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
              int64_t input, int64_t hidden, int64_t reverse, float *states) {
  checkRnnSizes("dpc_lstm", steps, batch, input, hidden);
  const int64_t H = hidden, G = 4 * H, S = 6 * H;
  // The pre-activations go where the gates will be, at column 2H of each
  // state row.
  float *z = states + 2 * H;
  if (input > 0)
    gemmTransB("dpc_lstm", steps * batch, G, input, x, input, w, input, 0.0f, z,
               S);
  const int64_t back = reverse ? -1 : 1;
  for (int64_t k = 0; k < steps; ++k) {
    int64_t t = stepAt(k, steps, reverse);
    float *row = states + t * batch * S;
    if (input == 0)
      for (int64_t b = 0; b < batch; ++b)
        std::fill(row + b * S + 2 * H, row + b * S + S, 0.0f);
    const float *hPrev = k == 0 ? h0 : row - back * batch * S;
    int64_t ldh = k == 0 ? H : S;
    gemmTransB("dpc_lstm", batch, G, H, hPrev, ldh, r, H, 1.0f, row + 2 * H, S);
    for (int64_t b = 0; b < batch; ++b) {
      float *s = row + b * S;
      float *gates = s + 2 * H;
      const float *cPrev = k == 0 ? c0 + b * H : hPrev + b * S + H;
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
                   int64_t hidden, int64_t reverse, float *out) {
  checkRnnSizes("dpc_lstm_grad", steps, batch, 0, hidden);
  const int64_t H = hidden, S = 6 * H, O = 5 * H;
  const int64_t back = reverse ? -1 : 1;
  // dh and dc carried from the step run after this one.
  std::vector<float> dhNext(size_t(batch * H), 0.0f),
      dcNext(size_t(batch * H), 0.0f);
  for (int64_t k = steps - 1; k >= 0; --k) {
    int64_t t = stepAt(k, steps, reverse);
    for (int64_t b = 0; b < batch; ++b) {
      const float *s = states + (t * batch + b) * S;
      const float *ds = dstates + (t * batch + b) * S;
      const float *cPrev =
          k == 0 ? c0 + b * H : states + ((t - back) * batch + b) * S + H;
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
    // dh of the previous step = z_grad[t] r.
    if (k > 0)
      gemm("dpc_lstm_grad", batch, H, 4 * H, out + t * batch * O, O, r, H, 0.0f,
           dhNext.data(), H);
  }
}

// The input projection of every step is one GEMM into the z, r and n
// columns of the state rows, the recurrence a GEMM per step; without
// linear_before_reset the reset gate enters before Rh, a second GEMM per
// step over r * h[t-1].
void dpc_gru(const float *x, const float *w, const float *r, const float *bias,
             const float *h0, int64_t steps, int64_t batch, int64_t input,
             int64_t hidden, int64_t linear_before_reset, int64_t reverse,
             float *states) {
  checkRnnSizes("dpc_gru", steps, batch, input, hidden);
  const int64_t H = hidden, S = 5 * H, back = reverse ? -1 : 1;
  const bool lbr = linear_before_reset != 0;
  if (input > 0)
    gemmTransB("dpc_gru", steps * batch, 3 * H, input, x, input, w, input, 0.0f,
               states + H, S);
  else
    for (int64_t e = 0; e < steps * batch; ++e)
      std::fill(states + e * S + H, states + e * S + 4 * H, 0.0f);
  // h[t-1] r^T (batch x 3H; only z and r without linear_before_reset).
  std::vector<float> rec(size_t(batch * 3 * H));
  for (int64_t k = 0; k < steps; ++k) {
    int64_t t = stepAt(k, steps, reverse);
    float *row = states + t * batch * S;
    const float *hPrev = k == 0 ? h0 : row - back * batch * S;
    int64_t ldh = k == 0 ? H : S;
    gemmTransB("dpc_gru", batch, lbr ? 3 * H : 2 * H, H, hPrev, ldh, r, H, 0.0f,
               rec.data(), 3 * H);
    for (int64_t b = 0; b < batch; ++b) {
      float *s = row + b * S;
      const float *hp = hPrev + b * ldh, *rc = rec.data() + b * 3 * H;
      for (int64_t j = 0; j < H; ++j) {
        float xz = s[H + j], xr = s[2 * H + j], xn = s[3 * H + j];
        if (bias) {
          xz += bias[j] + bias[3 * H + j];
          xr += bias[H + j] + bias[4 * H + j];
          xn += bias[2 * H + j];
        }
        float z = sigmoid(xz + rc[j]), reset = sigmoid(xr + rc[H + j]);
        s[H + j] = z;
        s[2 * H + j] = reset;
        if (lbr) {
          float q = rc[2 * H + j] + (bias ? bias[5 * H + j] : 0.0f);
          float n = std::tanh(xn + reset * q);
          s[3 * H + j] = n;
          s[4 * H + j] = q;
          s[j] = (1.0f - z) * n + z * hp[j];
        } else {
          s[3 * H + j] = xn;
          s[4 * H + j] = reset * hp[j];
        }
      }
    }
    if (lbr)
      continue;
    gemmTransB("dpc_gru", batch, H, H, row + 4 * H, S, r + 2 * H * H, H, 0.0f,
               rec.data(), 3 * H);
    for (int64_t b = 0; b < batch; ++b) {
      float *s = row + b * S;
      const float *hp = hPrev + b * ldh, *rc = rec.data() + b * 3 * H;
      for (int64_t j = 0; j < H; ++j) {
        float q = rc[j] + (bias ? bias[5 * H + j] : 0.0f);
        float n = std::tanh(s[3 * H + j] + q), z = s[H + j];
        s[3 * H + j] = n;
        s[j] = (1.0f - z) * n + z * hp[j];
      }
    }
  }
}

// Per step, the gate loop writes the pre-activation gradients and the
// direct part of dh[t-1] (dh * z); the recurrence's GEMMs add the rest of
// dh[t-1], which the step run next reads back from its out row.
void dpc_gru_grad(const float *dstates, const float *states, const float *r,
                  const float *h0, int64_t steps, int64_t batch, int64_t hidden,
                  int64_t linear_before_reset, int64_t reverse, float *out) {
  checkRnnSizes("dpc_gru_grad", steps, batch, 0, hidden);
  const int64_t H = hidden, S = 5 * H, O = 5 * H, back = reverse ? -1 : 1;
  const bool lbr = linear_before_reset != 0;
  std::vector<float> du(size_t(batch * H));
  for (int64_t k = steps - 1; k >= 0; --k) {
    int64_t t = stepAt(k, steps, reverse);
    const float *row = states + t * batch * S;
    const float *hPrev = k == 0 ? h0 : row - back * batch * S;
    int64_t ldh = k == 0 ? H : S;
    float *orow = out + t * batch * O;
    const float *next = k == steps - 1 ? nullptr : orow + back * batch * O;
    for (int64_t b = 0; b < batch; ++b) {
      const float *s = row + b * S, *ds = dstates + (t * batch + b) * S;
      const float *hp = hPrev + b * ldh;
      float *o5 = orow + b * O;
      for (int64_t j = 0; j < H; ++j) {
        float dh = ds[j] + (next ? next[b * O + 4 * H + j] : 0.0f);
        float z = s[H + j], reset = s[2 * H + j], n = s[3 * H + j];
        float dn = dh * (1.0f - z) * (1.0f - n * n);
        o5[j] = dh * (hp[j] - n) * z * (1.0f - z);
        o5[2 * H + j] = dn;
        o5[4 * H + j] = dh * z;
        if (lbr) {
          o5[H + j] = dn * s[4 * H + j] * reset * (1.0f - reset);
          o5[3 * H + j] = dn * reset;
        } else {
          o5[3 * H + j] = dn;
        }
      }
    }
    if (lbr) {
      gemm("dpc_gru_grad", batch, H, H, orow + 3 * H, O, r + 2 * H * H, H, 1.0f,
           orow + 4 * H, O);
    } else {
      // d(r * h[t-1]) = dq Rh, then dr and the reset path into dh[t-1].
      gemm("dpc_gru_grad", batch, H, H, orow + 3 * H, O, r + 2 * H * H, H, 0.0f,
           du.data(), H);
      for (int64_t b = 0; b < batch; ++b) {
        const float *s = row + b * S, *hp = hPrev + b * ldh;
        float *o5 = orow + b * O;
        for (int64_t j = 0; j < H; ++j) {
          float d = du[size_t(b * H + j)], reset = s[2 * H + j];
          o5[H + j] = d * hp[j] * reset * (1.0f - reset);
          o5[4 * H + j] += d * reset;
        }
      }
    }
    gemm("dpc_gru_grad", batch, H, 2 * H, orow, O, r, H, 1.0f, orow + 4 * H, O);
  }
}

} // extern "C"
