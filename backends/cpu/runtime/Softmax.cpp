//===- Softmax.cpp - Softmax and the losses -------------------------------===//
//
// Softmax and log-softmax over one axis with their gradients, the softmax
// cross-entropies (plain, with an ignored label, and label-smoothed) and the
// mean squared error, with their gradients. Sums are taken in double.
//
//===----------------------------------------------------------------------===//

#include "backends/cpu/runtime/Internal.h"

#include <cmath>
#include <utility>

using namespace dpc::cpu;

namespace {

void checkSoftmaxSizes(const char *kernel, int64_t outer, int64_t n,
                       int64_t inner) {
  if (outer < 0 || n < 1 || inner < 0)
    fail(kernel, "bad sizes outer " + std::to_string(outer) + ", n " +
                     std::to_string(n) + ", inner " + std::to_string(inner));
}

} // namespace

extern "C" {

void dpc_softmax(const float *x, float *y, int64_t outer, int64_t n,
                 int64_t inner, int64_t log) {
  checkSoftmaxSizes("dpc_softmax", outer, n, inner);
  parallelFor(outer, outer * n * inner, [&](int64_t o) {
    for (int64_t i = 0; i < inner; ++i) {
      const float *px = x + o * n * inner + i;
      float *py = y + o * n * inner + i;
      float max = px[0];
      for (int64_t j = 1; j < n; ++j)
        max = std::max(max, px[j * inner]);
      // The exponentials go to y first, so each is computed once.
      double sum = 0;
      for (int64_t j = 0; j < n; ++j) {
        double e = std::exp(double(px[j * inner] - max));
        py[j * inner] = float(e);
        sum += e;
      }
      if (log) {
        float lse = max + float(std::log(sum));
        for (int64_t j = 0; j < n; ++j)
          py[j * inner] = px[j * inner] - lse;
      } else {
        double inverse = 1.0 / sum;
        for (int64_t j = 0; j < n; ++j)
          py[j * inner] = float(py[j * inner] * inverse);
      }
    }
  });
}

void dpc_softmax_grad(const float *dy, const float *y, float *dx, int64_t outer,
                      int64_t n, int64_t inner, int64_t log) {
  checkSoftmaxSizes("dpc_softmax_grad", outer, n, inner);
  parallelFor(outer, outer * n * inner, [&](int64_t o) {
    for (int64_t i = 0; i < inner; ++i) {
      int64_t base = o * n * inner + i;
      double sum = 0;
      for (int64_t j = 0; j < n; ++j) {
        int64_t k = base + j * inner;
        sum += log ? double(dy[k]) : double(dy[k]) * y[k];
      }
      for (int64_t j = 0; j < n; ++j) {
        int64_t k = base + j * inner;
        dx[k] = log ? dy[k] - std::exp(y[k]) * float(sum)
                    : y[k] * (dy[k] - float(sum));
      }
    }
  });
}

// Fails unless row `i`'s label is one of the `c` classes.
static void checkLabel(const char *name, const int64_t *labels, int64_t i,
                       int64_t c) {
  if (labels[i] < 0 || labels[i] >= c)
    fail(name, "label " + std::to_string(labels[i]) + " of row " +
                   std::to_string(i) + " is outside [0, " + std::to_string(c) +
                   ")");
}

// A row's maximum m and the sum over it of exp(x - m): subtracting the
// maximum keeps exp() finite.
static std::pair<float, double> expSumBelowMax(const float *row, int64_t c) {
  float m = *std::max_element(row, row + c);
  double sum = 0;
  for (int64_t j = 0; j < c; ++j)
    sum += std::exp(double(row[j]) - m);
  return {m, sum};
}

// `ignored` points at the label whose rows are left out, or is null.
static void crossEntropy(const char *name, const float *logits,
                         const int64_t *labels, int64_t n, int64_t c,
                         const int64_t *ignored, float scale, float *loss,
                         double smoothing = 0) {
  double total = 0;
  for (int64_t i = 0; i < n; ++i) {
    const float *row = logits + i * c;
    if (ignored && labels[i] == *ignored)
      continue;
    checkLabel(name, labels, i, c);
    auto [m, sum] = expSumBelowMax(row, c);
    double lse = double(m) + std::log(sum);
    if (smoothing == 0) {
      total += lse - double(row[labels[i]]);
      continue;
    }
    // mean_j -log p[j] = lse - mean_j logits[j].
    double rowSum = 0;
    for (int64_t j = 0; j < c; ++j)
      rowSum += double(row[j]);
    total += (1 - smoothing) * (lse - double(row[labels[i]])) +
             smoothing * (lse - rowSum / double(c));
  }
  *loss = float(double(scale) * total);
}

static void crossEntropyGrad(const char *name, const float *logits,
                             const int64_t *labels, int64_t n, int64_t c,
                             const int64_t *ignored, float scale,
                             float *dlogits, double smoothing = 0) {
  for (int64_t i = 0; i < n; ++i) {
    const float *row = logits + i * c;
    float *out = dlogits + i * c;
    if (ignored && labels[i] == *ignored) {
      std::fill(out, out + c, 0.0f);
      continue;
    }
    checkLabel(name, labels, i, c);
    auto [m, sum] = expSumBelowMax(row, c);
    double hit = 1 - smoothing, spread = smoothing / double(c);
    for (int64_t j = 0; j < c; ++j) {
      double p = std::exp(double(row[j]) - m) / sum;
      double target = (j == labels[i] ? hit : 0.0) + spread;
      out[j] = float(double(scale) * (p - target));
    }
  }
}

void dpc_softmax_cross_entropy(const float *logits, const int64_t *labels,
                               int64_t n, int64_t c, float scale, float *loss) {
  crossEntropy("dpc_softmax_cross_entropy", logits, labels, n, c, nullptr,
               scale, loss);
}

void dpc_softmax_cross_entropy_grad(const float *logits, const int64_t *labels,
                                    int64_t n, int64_t c, float scale,
                                    float *dlogits) {
  crossEntropyGrad("dpc_softmax_cross_entropy_grad", logits, labels, n, c,
                   nullptr, scale, dlogits);
}

void dpc_softmax_cross_entropy_ignore(const float *logits,
                                      const int64_t *labels, int64_t n,
                                      int64_t c, int64_t ignore_index,
                                      float scale, float *loss) {
  crossEntropy("dpc_softmax_cross_entropy_ignore", logits, labels, n, c,
               &ignore_index, scale, loss);
}

void dpc_softmax_cross_entropy_ignore_grad(const float *logits,
                                           const int64_t *labels, int64_t n,
                                           int64_t c, int64_t ignore_index,
                                           float scale, float *dlogits) {
  crossEntropyGrad("dpc_softmax_cross_entropy_ignore_grad", logits, labels, n,
                   c, &ignore_index, scale, dlogits);
}

void dpc_softmax_cross_entropy_smoothed(const float *logits,
                                        const int64_t *labels, int64_t n,
                                        int64_t c, int64_t has_ignore,
                                        int64_t ignore_index, float smoothing,
                                        float scale, float *loss) {
  crossEntropy("dpc_softmax_cross_entropy_smoothed", logits, labels, n, c,
               has_ignore ? &ignore_index : nullptr, scale, loss, smoothing);
}

void dpc_softmax_cross_entropy_smoothed_grad(const float *logits,
                                             const int64_t *labels, int64_t n,
                                             int64_t c, int64_t has_ignore,
                                             int64_t ignore_index,
                                             float smoothing, float scale,
                                             float *dlogits) {
  crossEntropyGrad("dpc_softmax_cross_entropy_smoothed_grad", logits, labels, n,
                   c, has_ignore ? &ignore_index : nullptr, scale, dlogits,
                   smoothing);
}

void dpc_mse_loss(const float *prediction, const float *target, int64_t n,
                  float scale, float *loss) {
  double total = 0;
  for (int64_t i = 0; i < n; ++i) {
    double d = double(prediction[i]) - double(target[i]);
    total += d * d;
  }
  *loss = float(double(scale) * total);
}

void dpc_mse_loss_grad(const float *prediction, const float *target, int64_t n,
                       float scale, float *dprediction) {
  float twice = 2.0f * scale;
  for (int64_t i = 0; i < n; ++i)
    dprediction[i] = twice * (prediction[i] - target[i]);
}

} // extern "C"
