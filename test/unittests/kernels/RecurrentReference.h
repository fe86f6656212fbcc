//===- RecurrentReference.h - Double reference of the GRU -------*- C++ -*-===//
//
// The GRU of dpc_gru in double, written from ONNX's GRU formulas (gates z,
// r, h; linear_before_reset either way; a reverse layer runs its steps from
// the last), for RecurrentConformanceTest.cpp.
//
//===----------------------------------------------------------------------===//

#ifndef DPC_TEST_UNITTESTS_KERNELS_RECURRENTREFERENCE_H
#define DPC_TEST_UNITTESTS_KERNELS_RECURRENTREFERENCE_H

#include "test/unittests/kernels/Reference.h"

#include <cmath>

namespace dpc::testing {

struct GruSizes {
  int64_t steps = 3, batch = 2, input = 3, hidden = 2;
  bool linearBeforeReset = true, reverse = false;
};

/// The states of dpc_gru, T x B x 5H: h[t], z, r, n, and q = h[t-1] Rh^T +
/// Rbh (linear_before_reset) or r * h[t-1] (not).
inline Doubles gru(const GruSizes &n, const Doubles &x, const Doubles &w,
                   const Doubles &r, const Doubles &bias, const Doubles &h0) {
  int64_t H = n.hidden, B = n.batch, I = n.input, T = n.steps;
  Doubles states(size_t(T * B * 5 * H));
  Doubles h = h0;
  auto sigmoid = [](double v) { return 1 / (1 + std::exp(-v)); };
  // Row g of a matrix with `cols` columns times a vector.
  auto dotRow = [](const Doubles &m, int64_t g, int64_t cols, const double *v) {
    double sum = 0;
    for (int64_t k = 0; k < cols; ++k)
      sum += m[size_t(g * cols + k)] * v[k];
    return sum;
  };
  for (int64_t step = 0; step < T; ++step) {
    int64_t t = n.reverse ? T - 1 - step : step;
    Doubles next(static_cast<size_t>(B * H));
    for (int64_t b = 0; b < B; ++b) {
      double *s = &states[size_t((t * B + b) * 5 * H)];
      const double *xt = &x[size_t((t * B + b) * I)];
      const double *hp = &h[size_t(b * H)];
      Doubles reset(static_cast<size_t>(H));
      for (int64_t j = 0; j < H; ++j) {
        double z = sigmoid(dotRow(w, j, I, xt) + dotRow(r, j, H, hp) +
                           bias[size_t(j)] + bias[size_t(3 * H + j)]);
        double rj = sigmoid(dotRow(w, H + j, I, xt) + dotRow(r, H + j, H, hp) +
                            bias[size_t(H + j)] + bias[size_t(4 * H + j)]);
        s[H + j] = z;
        s[2 * H + j] = rj;
        reset[size_t(j)] = rj;
      }
      Doubles resetH(static_cast<size_t>(H));
      for (int64_t k = 0; k < H; ++k)
        resetH[size_t(k)] = reset[size_t(k)] * hp[k];
      for (int64_t j = 0; j < H; ++j) {
        double xn = dotRow(w, 2 * H + j, I, xt) + bias[size_t(2 * H + j)];
        double rbh = bias[size_t(5 * H + j)], nj;
        if (n.linearBeforeReset) {
          double q = dotRow(r, 2 * H + j, H, hp) + rbh;
          nj = std::tanh(xn + reset[size_t(j)] * q);
          s[4 * H + j] = q;
        } else {
          nj = std::tanh(xn + dotRow(r, 2 * H + j, H, resetH.data()) + rbh);
          s[4 * H + j] = resetH[size_t(j)];
        }
        double z = s[H + j];
        s[3 * H + j] = nj;
        s[j] = (1 - z) * nj + z * hp[j];
        next[size_t(b * H + j)] = s[j];
      }
    }
    h = next;
  }
  return states;
}

} // namespace dpc::testing

#endif // DPC_TEST_UNITTESTS_KERNELS_RECURRENTREFERENCE_H
