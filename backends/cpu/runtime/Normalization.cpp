//===- Normalization.cpp - Batch and layer normalization ------------------===//
//
// Batch normalization on plain and channel-blocked activations: the
// statistics (with the running ones), the affine forward and the three
// gradients, on the lane sums of ChannelSums.cpp. Layer normalization and
// its gradients on oneDNN's layer_normalization primitive, cached by shape.
// Local response normalization across channels, on the windows of
// backends/common/Lrn.h, a plane per task.
//
//===----------------------------------------------------------------------===//

#include "backends/common/Lrn.h"
#include "backends/cpu/runtime/Internal.h"

#include <cmath>
#include <cstring>
#include <map>
#include <mutex>
#include <unordered_map>

using namespace dpc::cpu;

namespace {

/// Fails unless `block` is 1 (plain) or DPC_CHANNEL_BLOCK with `c` a
/// multiple of it.
void checkChannelBlock(const char *kernel, int64_t c, int64_t block) {
  if (block == 1 || (block == DPC_CHANNEL_BLOCK && c % block == 0))
    return;
  fail(kernel, "channel block " + std::to_string(block) + " for " +
                   std::to_string(c) + " channels");
}

} // namespace

extern "C" {

void dpc_batch_norm_stats(const float *x, int64_t n, int64_t c, int64_t s,
                          int64_t block, float *running_mean,
                          float *running_var, float momentum, int64_t training,
                          float *stats) {
  float *mean = stats, *var = stats + c;
  checkChannelBlock("dpc_batch_norm_stats", c, block);
  if (!training) {
    std::copy(running_mean, running_mean + c, mean);
    std::copy(running_var, running_var + c, var);
    return;
  }
  int64_t count = n * s;
  if (count < 2)
    fail("dpc_batch_norm_stats",
         "training needs more than one value per channel, got " +
             std::to_string(count));
  // Two passes over a channel: the mean, then squared deviations from it (no
  // cancellation as in E[x^2] - E[x]^2).
  auto finish = [&](int64_t k, double mu, double squared) {
    mean[k] = float(mu);
    var[k] = float(squared / double(count));
    double unbiased = squared / double(count - 1);
    running_mean[k] =
        float(momentum * double(running_mean[k]) + (1.0 - momentum) * mu);
    running_var[k] =
        float(momentum * double(running_var[k]) + (1.0 - momentum) * unbiased);
  };
  if (block == 1) {
    parallelFor(c, n * c * s, [&](int64_t k) {
      LaneSums sum;
      for (int64_t i = 0; i < n; ++i)
        addRow(sum, x + (i * c + k) * s, s);
      double mu = sum.total() / double(count);
      LaneSums squares;
      for (int64_t i = 0; i < n; ++i)
        addSquaredDeviations(squares, x + (i * c + k) * s, s, mu);
      finish(k, mu, squares.total());
    });
    return;
  }
  int64_t blocks = c / block;
  parallelFor(blocks, n * c * s, [&](int64_t cb) {
    BlockLanes sum = blockSums(x, n, blocks, cb, s);
    double mu[kLanes];
    for (int64_t l = 0; l < kLanes; ++l)
      mu[l] = sum[l] / double(count);
    BlockLanes squares;
    for (int64_t i = 0; i < n; ++i)
      addBlockSquaredDeviations(squares, x + (i * blocks + cb) * s * block, s,
                                blockLanes(mu));
    for (int64_t l = 0; l < kLanes; ++l)
      finish(cb * block + l, mu[l], squares[l]);
  });
}

void dpc_batch_norm(const float *x, const float *stats, const float *scale,
                    const float *bias, int64_t n, int64_t c, int64_t s,
                    int64_t block, float epsilon, float *y) {
  checkChannelBlock("dpc_batch_norm", c, block);
  // y = x * a + b per channel, a and b computed in float.
  auto coefficients = [&](int64_t k, float &a, float &b) {
    float invStd = 1.0f / std::sqrt(stats[c + k] + epsilon);
    a = scale[k] * invStd;
    b = bias[k] - stats[k] * a;
  };
  if (block == 1) {
    parallelFor(c, n * c * s, [&](int64_t k) {
      float a, b;
      coefficients(k, a, b);
      for (int64_t i = 0; i < n; ++i)
        affineRow(x + (i * c + k) * s, s, a, b, y + (i * c + k) * s);
    });
    return;
  }
  int64_t blocks = c / block;
  parallelFor(blocks, n * c * s, [&](int64_t cb) {
    float a[kLanes], b[kLanes];
    for (int64_t l = 0; l < kLanes; ++l)
      coefficients(cb * block + l, a[l], b[l]);
    for (int64_t i = 0; i < n; ++i) {
      int64_t offset = (i * blocks + cb) * s * block;
      affineBlockRow(x + offset, s, a, b, y + offset);
    }
  });
}

} // extern "C"

namespace {

/// Batch normalization's backward sums of channel k, by the statistics in
/// `stats` (2 x c): sum of dy and sum of dy * xhat over n and s, and the
/// mean and 1/std they were taken with.
struct BatchNormGradSums {
  double sumDy, sumDyXhat, mu, invStd;
};

BatchNormGradSums gradSums(const float *stats, int64_t c, float epsilon,
                           int64_t k, double sumDy, double sumDyDeviation) {
  double invStd = 1.0 / std::sqrt(double(stats[c + k]) + epsilon);
  return {sumDy, sumDyDeviation * invStd, double(stats[k]), invStd};
}

/// Calls each(k, sums) for the channels [k, k + block) of dy and x, with
/// their sums (`block` of them: 1 for plain tensors, one call per channel;
/// DPC_CHANNEL_BLOCK for blocked ones, one call per block), on the kernel
/// threads.
template <typename Each>
void forEachBlockGradSums(const char *kernel, const float *dy, const float *x,
                          const float *stats, int64_t n, int64_t c, int64_t s,
                          int64_t block, float epsilon, Each each) {
  checkChannelBlock(kernel, c, block);
  if (block == 1) {
    parallelFor(c, n * c * s, [&](int64_t k) {
      LaneSums dySum, dyDeviation;
      double mu = stats[k];
      for (int64_t i = 0; i < n; ++i)
        addProductsOfDeviations(dySum, dyDeviation, dy + (i * c + k) * s,
                                x + (i * c + k) * s, s, mu);
      BatchNormGradSums sums =
          gradSums(stats, c, epsilon, k, dySum.total(), dyDeviation.total());
      each(k, &sums);
    });
    return;
  }
  int64_t blocks = c / block;
  parallelFor(blocks, n * c * s, [&](int64_t cb) {
    double mu[kLanes];
    for (int64_t l = 0; l < kLanes; ++l)
      mu[l] = stats[cb * block + l];
    BlockLanes dySum, dyDeviation;
    for (int64_t i = 0; i < n; ++i) {
      int64_t offset = (i * blocks + cb) * s * block;
      addBlockProductsOfDeviations(dySum, dyDeviation, dy + offset, x + offset,
                                   s, blockLanes(mu));
    }
    BatchNormGradSums sums[kLanes];
    for (int64_t l = 0; l < kLanes; ++l)
      sums[l] =
          gradSums(stats, c, epsilon, cb * block + l, dySum[l], dyDeviation[l]);
    each(cb * block, sums);
  });
}

} // namespace

extern "C" {

void dpc_batch_norm_grad_input(const float *dy, const float *x,
                               const float *stats, const float *scale,
                               int64_t n, int64_t c, int64_t s, int64_t block,
                               float epsilon, float *dx) {
  double count = double(n * s);
  // dx = a * (dy - meanDy - xhat * meanDyXhat) over each channel's values.
  forEachBlockGradSums(
      "dpc_batch_norm_grad_input", dy, x, stats, n, c, s, block, epsilon,
      [&](int64_t first, const BatchNormGradSums *sums) {
        double mu[kLanes], invStd[kLanes], a[kLanes], meanDy[kLanes],
            meanDyXhat[kLanes];
        for (int64_t l = 0; l < block; ++l) {
          mu[l] = sums[l].mu;
          invStd[l] = sums[l].invStd;
          a[l] = scale[first + l] * sums[l].invStd;
          meanDy[l] = sums[l].sumDy / count;
          meanDyXhat[l] = sums[l].sumDyXhat / count;
        }
        for (int64_t i = 0; i < n; ++i) {
          if (block == 1) {
            int64_t offset = (i * c + first) * s;
            batchNormGradRow(dy + offset, x + offset, s, mu[0], invStd[0], a[0],
                             meanDy[0], meanDyXhat[0], dx + offset);
          } else {
            // (i * c + first) * s is also where block first / 16 starts.
            int64_t offset = (i * c + first) * s;
            batchNormGradBlockRow(dy + offset, x + offset, s, mu, invStd, a,
                                  meanDy, meanDyXhat, dx + offset);
          }
        }
      });
}

void dpc_batch_norm_grad_scale(const float *dy, const float *x,
                               const float *stats, int64_t n, int64_t c,
                               int64_t s, int64_t block, float epsilon,
                               float *dscale) {
  forEachBlockGradSums("dpc_batch_norm_grad_scale", dy, x, stats, n, c, s,
                       block, epsilon,
                       [&](int64_t first, const BatchNormGradSums *sums) {
                         for (int64_t l = 0; l < block; ++l)
                           dscale[first + l] = float(sums[l].sumDyXhat);
                       });
}

void dpc_batch_norm_grad_bias(const float *dy, int64_t n, int64_t c, int64_t s,
                              int64_t block, float *dbias) {
  checkChannelBlock("dpc_batch_norm_grad_bias", c, block);
  if (block == 1) {
    int64_t shape[4] = {n, c, s, 1};
    dpc_conv2d_grad_bias(dy, shape, dbias);
    return;
  }
  int64_t blocks = c / block;
  parallelFor(blocks, n * c * s, [&](int64_t cb) {
    BlockLanes sum = blockSums(dy, n, blocks, cb, s);
    for (int64_t l = 0; l < kLanes; ++l)
      dbias[cb * block + l] = float(sum[l]);
  });
}

} // extern "C"

namespace {

// Layer normalization runs on oneDNN's layer_normalization primitive, whose
// JIT kernels beat plain loops by far. On [16, 64, 128] (1024 rows of 128),
// one thread: the forward takes 0.035 ms against 0.25 ms for a loop
// accumulating in double; the three gradients (input, scale, and the bias's
// dpc_sum_to_shape) 0.17 ms against 0.72 ms. The ABI recomputes the
// statistics in the backward pass, so each gradient kernel first runs the
// training forward for them; oneDNN's own backward from saved statistics
// would take 0.06 ms.
enum class LayerNormKind : int64_t { Forward, Statistics, BackwardData };

void checkLayerNormSizes(const char *kernel, int64_t rows, int64_t size) {
  if (rows < 0 || size < 1)
    fail(kernel, "bad sizes rows " + std::to_string(rows) + ", size " +
                     std::to_string(size));
}

/// Primitives by kind, sizes, epsilon and the affine operands they read,
/// cached like the convolutions'.
dnnl::primitive &layerNormPrimitive(LayerNormKind kind, int64_t rows,
                                    int64_t size, float epsilon, bool scale,
                                    bool shift) {
  static std::mutex mutex;
  static std::map<std::vector<int64_t>, dnnl::primitive> cache;
  int32_t epsilonBits;
  std::memcpy(&epsilonBits, &epsilon, sizeof epsilonBits);
  std::vector<int64_t> key = {int64_t(kind), rows,           size,
                              epsilonBits,   int64_t(scale), int64_t(shift)};
  std::lock_guard<std::mutex> lock(mutex);
  auto it = cache.find(key);
  if (it != cache.end())
    return it->second;
  using fwd = dnnl::layer_normalization_forward;
  using bwd = dnnl::layer_normalization_backward;
  dnnl::memory::desc data({rows, size}, dt::f32, tag::ab);
  dnnl::memory::desc stats({rows}, dt::f32, tag::a);
  auto flags = dnnl::normalization_flags::none;
  if (scale)
    flags |= dnnl::normalization_flags::use_scale;
  if (shift)
    flags |= dnnl::normalization_flags::use_shift;
  try {
    fwd::primitive_desc training(fwd::desc(dnnl::prop_kind::forward_training,
                                           data, stats, epsilon, flags),
                                 engine());
    dnnl::primitive prim;
    switch (kind) {
    case LayerNormKind::Forward:
      prim =
          fwd(fwd::primitive_desc(fwd::desc(dnnl::prop_kind::forward_inference,
                                            data, stats, epsilon, flags),
                                  engine()));
      break;
    case LayerNormKind::Statistics:
      prim = fwd(training);
      break;
    case LayerNormKind::BackwardData:
      // oneDNN 2.6 has no backward_data with a scale: with one, the full
      // backward runs and its scale gradient goes to scratch.
      prim = bwd(
          bwd::primitive_desc(bwd::desc(scale ? dnnl::prop_kind::backward
                                              : dnnl::prop_kind::backward_data,
                                        data, data, stats, epsilon, flags),
                              engine(), training));
      break;
    }
    return cache.emplace(key, prim).first->second;
  } catch (const dnnl::error &e) {
    fail("dpc_layer_norm",
         "oneDNN, primitive " + std::to_string(int(kind)) + ": " + e.what());
  }
}

/// Each row's mean and biased variance, from the training forward; its
/// normalized output goes to scratch too. Valid until the next call.
struct LayerNormStats {
  float *mean, *variance;
};

LayerNormStats layerNormStats(const float *x, int64_t rows, int64_t size,
                              float epsilon) {
  static thread_local std::vector<float> moments, normalized;
  moments.resize(size_t(2 * rows));
  normalized.resize(size_t(rows * size));
  dnnl::memory::desc data({rows, size}, dt::f32, tag::ab);
  dnnl::memory::desc stats({rows}, dt::f32, tag::a);
  LayerNormStats s{moments.data(), moments.data() + rows};
  layerNormPrimitive(LayerNormKind::Statistics, rows, size, epsilon, false,
                     false)
      .execute(stream(), {{DNNL_ARG_SRC, mem(data, x)},
                          {DNNL_ARG_DST, mem(data, normalized.data())},
                          {DNNL_ARG_MEAN, mem(stats, s.mean)},
                          {DNNL_ARG_VARIANCE, mem(stats, s.variance)}});
  stream().wait();
  return s;
}

} // namespace

extern "C" {

void dpc_layer_norm(const float *x, const float *scale, const float *bias,
                    int64_t rows, int64_t size, float epsilon, float *y) {
  checkLayerNormSizes("dpc_layer_norm", rows, size);
  if (rows == 0)
    return;
  dnnl::memory::desc data({rows, size}, dt::f32, tag::ab);
  dnnl::memory::desc weights({size}, dt::f32, tag::a);
  std::unordered_map<int, dnnl::memory> args = {{DNNL_ARG_SRC, mem(data, x)},
                                                {DNNL_ARG_DST, mem(data, y)}};
  if (scale)
    args.emplace(DNNL_ARG_SCALE, mem(weights, scale));
  if (bias)
    args.emplace(DNNL_ARG_SHIFT, mem(weights, bias));
  layerNormPrimitive(LayerNormKind::Forward, rows, size, epsilon, scale, bias)
      .execute(stream(), args);
  stream().wait();
}

void dpc_layer_norm_grad_input(const float *dy, const float *x,
                               const float *scale, int64_t rows, int64_t size,
                               float epsilon, float *dx) {
  checkLayerNormSizes("dpc_layer_norm_grad_input", rows, size);
  if (rows == 0)
    return;
  LayerNormStats s = layerNormStats(x, rows, size, epsilon);
  dnnl::memory::desc data({rows, size}, dt::f32, tag::ab);
  dnnl::memory::desc stats({rows}, dt::f32, tag::a);
  std::unordered_map<int, dnnl::memory> args = {
      {DNNL_ARG_SRC, mem(data, x)},
      {DNNL_ARG_DIFF_DST, mem(data, dy)},
      {DNNL_ARG_MEAN, mem(stats, s.mean)},
      {DNNL_ARG_VARIANCE, mem(stats, s.variance)},
      {DNNL_ARG_DIFF_SRC, mem(data, dx)}};
  static thread_local std::vector<float> scaleGrad;
  if (scale) {
    dnnl::memory::desc weights({size}, dt::f32, tag::a);
    scaleGrad.resize(size_t(size));
    args.emplace(DNNL_ARG_SCALE, mem(weights, scale));
    args.emplace(DNNL_ARG_DIFF_SCALE, mem(weights, scaleGrad.data()));
  }
  layerNormPrimitive(LayerNormKind::BackwardData, rows, size, epsilon, scale,
                     false)
      .execute(stream(), args);
  stream().wait();
}

// A loop over the rows, each adding its row to every column's sum: the
// inner loop has no reduction, so it vectorizes.
void dpc_layer_norm_grad_scale(const float *dy, const float *x, int64_t rows,
                               int64_t size, float epsilon, float *dscale) {
  checkLayerNormSizes("dpc_layer_norm_grad_scale", rows, size);
  std::fill(dscale, dscale + size, 0.0f);
  if (rows == 0)
    return;
  LayerNormStats s = layerNormStats(x, rows, size, epsilon);
  for (int64_t r = 0; r < rows; ++r) {
    const float *in = x + r * size, *grad = dy + r * size;
    float mean = s.mean[r], invStd = 1.0f / std::sqrt(s.variance[r] + epsilon);
    for (int64_t j = 0; j < size; ++j)
      dscale[j] += grad[j] * ((in[j] - mean) * invStd);
  }
}

} // extern "C"

namespace {

/// Fails unless the sizes describe a tensor (none negative) and the window
/// holds at least one channel.
void checkLrnSizes(const char *kernel, int64_t n, int64_t c, int64_t s,
                   int64_t size) {
  if (n < 0 || c < 0 || s < 0 || size < 1)
    fail(kernel, "bad sizes n " + std::to_string(n) + ", c " +
                     std::to_string(c) + ", s " + std::to_string(s) +
                     ", size " + std::to_string(size));
}

} // namespace

extern "C" {

void dpc_lrn(const float *x, int64_t n, int64_t c, int64_t s, int64_t size,
             float alpha, float beta, float bias, float *y) {
  checkLrnSizes("dpc_lrn", n, c, s, size);
  parallelFor(n * c, n * c * s * size, [&](int64_t plane) {
    int64_t image = plane / c, k = plane % c;
    dpc::lrn::Window w = dpc::lrn::window(k, c, size);
    for (int64_t j = 0; j < s; ++j) {
      float base = dpc::lrn::base(
          dpc::lrn::sumSquares(x, image * c * s + j, s, w), size, alpha, bias);
      y[plane * s + j] = x[plane * s + j] * std::pow(base, -beta);
    }
  });
}

// Two passes over the planes: each element's base and its share
// dy * x * base^(-beta-1), then each input element gathers the shares of
// the channels whose windows hold it.
void dpc_lrn_grad(const float *dy, const float *x, int64_t n, int64_t c,
                  int64_t s, int64_t size, float alpha, float beta, float bias,
                  float *dx) {
  checkLrnSizes("dpc_lrn_grad", n, c, s, size);
  std::vector<float> bases(size_t(n * c * s)), shares(bases.size());
  parallelFor(n * c, n * c * s * size, [&](int64_t plane) {
    int64_t image = plane / c, k = plane % c;
    dpc::lrn::Window w = dpc::lrn::window(k, c, size);
    for (int64_t j = 0; j < s; ++j) {
      int64_t e = plane * s + j;
      bases[e] = dpc::lrn::base(
          dpc::lrn::sumSquares(x, image * c * s + j, s, w), size, alpha, bias);
      shares[e] = dy[e] * x[e] * std::pow(bases[e], -beta - 1.0f);
    }
  });
  parallelFor(n * c, n * c * s * size, [&](int64_t plane) {
    int64_t image = plane / c, k = plane % c;
    dpc::lrn::Window w = dpc::lrn::covering(k, c, size);
    for (int64_t j = 0; j < s; ++j) {
      int64_t e = plane * s + j;
      float gathered = 0.0f;
      for (int64_t from = w.first; from <= w.last; ++from)
        gathered += shares[(image * c + from) * s + j];
      dx[e] = dpc::lrn::inputGradient(dy[e], x[e], bases[e], gathered, size,
                                      alpha, beta);
    }
  });
}

} // extern "C"
