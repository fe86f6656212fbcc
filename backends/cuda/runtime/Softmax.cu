//===- Softmax.cu - Softmax and the losses --------------------------------===//
//
// Softmax and log-softmax along one axis (a warp per row, strided for an
// inner axis) with their gradients, the softmax cross-entropies (plain, with
// an ignored label, label-smoothed: a warp per row, then one block sums the
// rows in a fixed order) and the mean squared error, with their gradients.
//
//===----------------------------------------------------------------------===//

#include "backends/cuda/runtime/Kernels.cuh"

#include <cmath>

using namespace dpc::cuda;

//===----------------------------------------------------------------------===//
// Softmax: one warp per row
//===----------------------------------------------------------------------===//

namespace dpc::cuda {
namespace {

struct RowStats {
  float max, sum; // sum of exp(logit - max)
};

/// The statistics of the `c` values row[0], row[stride], ... over a warp.
__device__ RowStats rowStats(const float *row, int64_t c, int lane,
                             int64_t stride = 1) {
  float m = -INFINITY;
  for (int64_t j = lane; j < c; j += 32)
    m = fmaxf(m, row[j * stride]);
  m = warpMax(m);
  float s = 0.0f;
  for (int64_t j = lane; j < c; j += 32)
    s += expf(row[j * stride] - m);
  return {m, warpSum(s)};
}
// softmax along n strided values: row r of outer x inner starts at
// (r / inner) * n * inner + r % inner and steps by inner.
__global__ void softmaxRows(const float *x, float *y, int64_t rows, int64_t n,
                            int64_t inner, bool log) {
  int lane = threadIdx.x & 31;
  WARP_STRIDE(r, rows) {
    int64_t base = (r / inner) * n * inner + r % inner;
    RowStats stats = rowStats(x + base, n, lane, inner);
    float lse = stats.max + logf(stats.sum), inverse = 1.0f / stats.sum;
    for (int64_t j = lane; j < n; j += 32) {
      int64_t k = base + j * inner;
      y[k] = log ? x[k] - lse : expf(x[k] - stats.max) * inverse;
    }
  }
}

__global__ void softmaxGradRows(const float *dy, const float *y, float *dx,
                                int64_t rows, int64_t n, int64_t inner,
                                bool log) {
  int lane = threadIdx.x & 31;
  WARP_STRIDE(r, rows) {
    int64_t base = (r / inner) * n * inner + r % inner;
    float sum = 0.0f;
    for (int64_t j = lane; j < n; j += 32) {
      int64_t k = base + j * inner;
      sum += log ? dy[k] : dy[k] * y[k];
    }
    sum = warpSum(sum);
    for (int64_t j = lane; j < n; j += 32) {
      int64_t k = base + j * inner;
      dx[k] = log ? dy[k] - expf(y[k]) * sum : y[k] * (dy[k] - sum);
    }
  }
}

} // namespace
} // namespace dpc::cuda

extern "C" {

static void checkSoftmaxSizes(const char *kernel, int64_t outer, int64_t n,
                              int64_t inner) {
  if (outer < 0 || n < 1 || inner < 0)
    fail(std::string(kernel) + ": bad sizes outer " + std::to_string(outer) +
         ", n " + std::to_string(n) + ", inner " + std::to_string(inner));
}

void dpc_softmax(const float *x, float *y, int64_t outer, int64_t n,
                 int64_t inner, int64_t log) {
  checkSoftmaxSizes("dpc_softmax", outer, n, inner);
  int64_t rows = outer * inner;
  if (rows == 0)
    return;
  softmaxRows<<<rowBlocks(rows), kThreads, 0, stream()>>>(x, y, rows, n, inner,
                                                          log != 0);
  checkLaunch("softmax");
}

void dpc_softmax_grad(const float *dy, const float *y, float *dx, int64_t outer,
                      int64_t n, int64_t inner, int64_t log) {
  checkSoftmaxSizes("dpc_softmax_grad", outer, n, inner);
  int64_t rows = outer * inner;
  if (rows == 0)
    return;
  softmaxGradRows<<<rowBlocks(rows), kThreads, 0, stream()>>>(
      dy, y, dx, rows, n, inner, log != 0);
  checkLaunch("softmax_grad");
}

} // extern "C"

//===----------------------------------------------------------------------===//
// Softmax cross-entropy and mean squared error
//===----------------------------------------------------------------------===//

namespace dpc::cuda {
namespace {

// `ignoring`: rows labelled `ignoreIndex` add 0 to the loss and get a 0
// gradient (torch's ignore_index). `smoothing`: torch's label_smoothing, a
// row's loss (1 - e) * nll + e * mean_j -log p[j].
__global__ void crossEntropyRows(const float *logits, const int64_t *labels,
                                 int64_t n, int64_t c, bool ignoring,
                                 int64_t ignoreIndex, float smoothing,
                                 float *rowLoss) {
  int lane = threadIdx.x & 31;
  int64_t warps = int64_t(gridDim.x) * (blockDim.x >> 5);
  for (int64_t r = int64_t(blockIdx.x) * (blockDim.x >> 5) + (threadIdx.x >> 5);
       r < n; r += warps) {
    const float *row = logits + r * c;
    RowStats stats = rowStats(row, c, lane);
    int64_t label = labels[r];
    if (ignoring && label == ignoreIndex) {
      if (lane == 0)
        rowLoss[r] = 0.0f;
      continue;
    }
    float mean = 0.0f;
    if (smoothing != 0.0f) {
      float s = 0.0f;
      for (int64_t j = lane; j < c; j += 32)
        s += row[j];
      mean = warpSum(s) / float(c);
    }
    float lse = logf(stats.sum) + stats.max;
    if (lane == 0)
      // An out-of-range label poisons the loss instead of reading past the
      // row; the executor reports a NaN loss.
      rowLoss[r] =
          label >= 0 && label < c
              ? (smoothing == 0.0f ? lse - row[label]
                                   : (1.0f - smoothing) * (lse - row[label]) +
                                         smoothing * (lse - mean))
              : NAN;
  }
}

__global__ void sumScaled(const float *values, int64_t n, float scale,
                          float *out) {
  float sum = 0.0f;
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x)
    sum += values[i];
  sum = blockSum(sum);
  if (threadIdx.x == 0)
    *out = scale * sum;
}

// One block, so the sum is taken in the same order on every run.
__global__ void squaredErrorSum(const float *prediction, const float *target,
                                int64_t n, float scale, float *out) {
  float sum = 0.0f;
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
    float d = prediction[i] - target[i];
    sum += d * d;
  }
  sum = blockSum(sum);
  if (threadIdx.x == 0)
    *out = scale * sum;
}

__global__ void squaredErrorGrad(const float *prediction, const float *target,
                                 int64_t n, float twiceScale,
                                 float *dprediction) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    dprediction[i] = twiceScale * (prediction[i] - target[i]);
}

__global__ void crossEntropyGrad(const float *logits, const int64_t *labels,
                                 int64_t n, int64_t c, bool ignoring,
                                 int64_t ignoreIndex, float smoothing,
                                 float scale, float *dlogits) {
  int lane = threadIdx.x & 31;
  int64_t warps = int64_t(gridDim.x) * (blockDim.x >> 5);
  for (int64_t r = int64_t(blockIdx.x) * (blockDim.x >> 5) + (threadIdx.x >> 5);
       r < n; r += warps) {
    const float *row = logits + r * c;
    float *out = dlogits + r * c;
    int64_t label = labels[r];
    if (ignoring && label == ignoreIndex) {
      for (int64_t j = lane; j < c; j += 32)
        out[j] = 0.0f;
      continue;
    }
    RowStats stats = rowStats(row, c, lane);
    bool valid = label >= 0 && label < c;
    float inverse = 1.0f / stats.sum;
    float hit = 1.0f - smoothing, spread = smoothing / float(c);
    for (int64_t j = lane; j < c; j += 32) {
      float p = expf(row[j] - stats.max) * inverse;
      out[j] = valid ? scale * (p - ((j == label ? hit : 0.0f) + spread)) : NAN;
    }
  }
}

} // namespace
} // namespace dpc::cuda

extern "C" {

static void crossEntropy(const char *name, const float *logits,
                         const int64_t *labels, int64_t n, int64_t c,
                         bool ignoring, int64_t ignoreIndex, float scale,
                         float *loss, float smoothing = 0.0f) {
  if (n <= 0 || c <= 0) {
    check(cudaMemsetAsync(loss, 0, sizeof(float), stream()), name);
    return;
  }
  // Per-row losses, then one block sums them in a fixed order.
  float *rowLoss =
      static_cast<float *>(scratch(Scratch::Reduce, size_t(n) * sizeof(float)));
  crossEntropyRows<<<rowBlocks(n), kThreads, 0, stream()>>>(
      logits, labels, n, c, ignoring, ignoreIndex, smoothing, rowLoss);
  checkLaunch("softmax_cross_entropy rows");
  sumScaled<<<1, 1024, 0, stream()>>>(rowLoss, n, scale, loss);
  checkLaunch("softmax_cross_entropy sum");
}

static void crossEntropyGradient(const float *logits, const int64_t *labels,
                                 int64_t n, int64_t c, bool ignoring,
                                 int64_t ignoreIndex, float scale,
                                 float *dlogits, float smoothing = 0.0f) {
  if (n <= 0 || c <= 0)
    return;
  crossEntropyGrad<<<rowBlocks(n), kThreads, 0, stream()>>>(
      logits, labels, n, c, ignoring, ignoreIndex, smoothing, scale, dlogits);
  checkLaunch("softmax_cross_entropy_grad");
}

void dpc_softmax_cross_entropy(const float *logits, const int64_t *labels,
                               int64_t n, int64_t c, float scale, float *loss) {
  crossEntropy("dpc_softmax_cross_entropy", logits, labels, n, c, false, 0,
               scale, loss);
}

void dpc_softmax_cross_entropy_grad(const float *logits, const int64_t *labels,
                                    int64_t n, int64_t c, float scale,
                                    float *dlogits) {
  crossEntropyGradient(logits, labels, n, c, false, 0, scale, dlogits);
}

void dpc_softmax_cross_entropy_ignore(const float *logits,
                                      const int64_t *labels, int64_t n,
                                      int64_t c, int64_t ignore_index,
                                      float scale, float *loss) {
  crossEntropy("dpc_softmax_cross_entropy_ignore", logits, labels, n, c, true,
               ignore_index, scale, loss);
}

void dpc_softmax_cross_entropy_ignore_grad(const float *logits,
                                           const int64_t *labels, int64_t n,
                                           int64_t c, int64_t ignore_index,
                                           float scale, float *dlogits) {
  crossEntropyGradient(logits, labels, n, c, true, ignore_index, scale,
                       dlogits);
}

void dpc_softmax_cross_entropy_smoothed(const float *logits,
                                        const int64_t *labels, int64_t n,
                                        int64_t c, int64_t has_ignore,
                                        int64_t ignore_index, float smoothing,
                                        float scale, float *loss) {
  crossEntropy("dpc_softmax_cross_entropy_smoothed", logits, labels, n, c,
               has_ignore != 0, ignore_index, scale, loss, smoothing);
}

void dpc_softmax_cross_entropy_smoothed_grad(const float *logits,
                                             const int64_t *labels, int64_t n,
                                             int64_t c, int64_t has_ignore,
                                             int64_t ignore_index,
                                             float smoothing, float scale,
                                             float *dlogits) {
  crossEntropyGradient(logits, labels, n, c, has_ignore != 0, ignore_index,
                       scale, dlogits, smoothing);
}

void dpc_mse_loss(const float *prediction, const float *target, int64_t n,
                  float scale, float *loss) {
  if (n <= 0) {
    check(cudaMemsetAsync(loss, 0, sizeof(float), stream()), "dpc_mse_loss");
    return;
  }
  squaredErrorSum<<<1, 1024, 0, stream()>>>(prediction, target, n, scale, loss);
  checkLaunch("mse_loss");
}

void dpc_mse_loss_grad(const float *prediction, const float *target, int64_t n,
                       float scale, float *dprediction) {
  if (n <= 0)
    return;
  squaredErrorGrad<<<blocksFor(n), kThreads, 0, stream()>>>(
      prediction, target, n, 2.0f * scale, dprediction);
  checkLaunch("mse_loss_grad");
}

} // extern "C"
