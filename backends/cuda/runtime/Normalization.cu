//===- Normalization.cu - Batch and layer normalization -------------------===//
//
// Batch normalization on plain NCHW activations: the statistics with the
// running update, the forward pass, and the input, scale and bias gradients,
// a block per channel for the sums. Layer normalization: forward and input
// gradient a warp per row, recomputing the row's mean and inverse standard
// deviation; the scale gradient a thread per column over the rows. Local
// response normalization a thread per element, on the windows of
// backends/common/Lrn.h; its gradient recomputes the bases it gathers.
//
//===----------------------------------------------------------------------===//

#include "backends/common/Lrn.h"
#include "backends/cuda/runtime/Kernels.cuh"

using namespace dpc::cuda;

//===----------------------------------------------------------------------===//
// Batch normalization: one block per channel for the statistics
//===----------------------------------------------------------------------===//

namespace dpc::cuda {
namespace {

struct ChannelArgs {
  int64_t n, c, s;
};

/// Sum over channel k of f(value index) for all n and s, valid in thread 0.
template <typename F>
__device__ float channelSum(const ChannelArgs &a, int64_t k, F f) {
  float sum = 0.0f;
  for (int64_t r = threadIdx.x; r < a.n * a.s; r += blockDim.x) {
    int64_t index = ((r / a.s) * a.c + k) * a.s + r % a.s;
    sum += f(index);
  }
  return blockSum(sum);
}

__global__ void batchNormStatsKernel(const float *x, ChannelArgs a,
                                     float *runningMean, float *runningVar,
                                     float momentum, float *stats) {
  __shared__ float mean;
  float count = float(a.n * a.s);
  for (int64_t k = blockIdx.x; k < a.c; k += gridDim.x) {
    // The mean first, then squared deviations from it.
    float sum = channelSum(a, k, [&](int64_t i) { return x[i]; });
    if (threadIdx.x == 0)
      mean = sum / count;
    __syncthreads();
    float mu = mean;
    float squares = channelSum(a, k, [&](int64_t i) {
      float d = x[i] - mu;
      return d * d;
    });
    if (threadIdx.x == 0) {
      stats[k] = mu;
      stats[a.c + k] = squares / count;
      runningMean[k] = momentum * runningMean[k] + (1.0f - momentum) * mu;
      runningVar[k] = momentum * runningVar[k] +
                      (1.0f - momentum) * squares / (count - 1.0f);
    }
    __syncthreads();
  }
}

__global__ void batchNormKernel(const float *x, const float *stats,
                                const float *scale, const float *bias,
                                ChannelArgs a, float epsilon, float *y) {
  GRID_STRIDE(i, a.n * a.c * a.s) {
    int64_t k = (i / a.s) % a.c;
    float invStd = rsqrtf(stats[a.c + k] + epsilon);
    y[i] = (x[i] - stats[k]) * invStd * scale[k] + bias[k];
  }
}

/// sums[k] = sum of dy, sums[c + k] = sum of dy * xhat over channel k.
__global__ void batchNormGradSums(const float *dy, const float *x,
                                  const float *stats, ChannelArgs a,
                                  float epsilon, float *sums) {
  for (int64_t k = blockIdx.x; k < a.c; k += gridDim.x) {
    float mu = stats[k], invStd = rsqrtf(stats[a.c + k] + epsilon);
    float sumDy = channelSum(a, k, [&](int64_t i) { return dy[i]; });
    float sumDyXhat = channelSum(
        a, k, [&](int64_t i) { return dy[i] * (x[i] - mu) * invStd; });
    if (threadIdx.x == 0) {
      sums[k] = sumDy;
      sums[a.c + k] = sumDyXhat;
    }
  }
}

__global__ void batchNormGradInputKernel(const float *dy, const float *x,
                                         const float *stats, const float *scale,
                                         const float *sums, ChannelArgs a,
                                         float epsilon, float *dx) {
  float count = float(a.n * a.s);
  GRID_STRIDE(i, a.n * a.c * a.s) {
    int64_t k = (i / a.s) % a.c;
    float invStd = rsqrtf(stats[a.c + k] + epsilon);
    float xhat = (x[i] - stats[k]) * invStd;
    dx[i] = scale[k] * invStd *
            (dy[i] - sums[k] / count - xhat * sums[a.c + k] / count);
  }
}

} // namespace
} // namespace dpc::cuda

extern "C" {

static unsigned channelBlocks(int64_t c) {
  return unsigned(std::max<int64_t>(1, std::min<int64_t>(c, 1 << 16)));
}

// The CUDA kernels keep activations plain: propagate-layouts blocks them on
// the CPU only.
static void checkPlain(const char *kernel, int64_t block) {
  if (block != 1)
    fail(std::string(kernel) + ": channel block " + std::to_string(block) +
         " (CUDA activations are plain)");
}

void dpc_batch_norm_stats(const float *x, int64_t n, int64_t c, int64_t s,
                          int64_t block, float *running_mean,
                          float *running_var, float momentum, int64_t training,
                          float *stats) {
  checkPlain("dpc_batch_norm_stats", block);
  if (c <= 0)
    return;
  if (!training) {
    size_t bytes = size_t(c) * sizeof(float);
    check(cudaMemcpyAsync(stats, running_mean, bytes, cudaMemcpyDeviceToDevice,
                          stream()),
          "dpc_batch_norm_stats: copying the running mean");
    check(cudaMemcpyAsync(stats + c, running_var, bytes,
                          cudaMemcpyDeviceToDevice, stream()),
          "dpc_batch_norm_stats: copying the running variance");
    return;
  }
  if (n * s < 2)
    fail("dpc_batch_norm_stats: training needs more than one value per "
         "channel, got " +
         std::to_string(n * s));
  batchNormStatsKernel<<<channelBlocks(c), kThreads, 0, stream()>>>(
      x, ChannelArgs{n, c, s}, running_mean, running_var, momentum, stats);
  checkLaunch("batch_norm_stats");
}

void dpc_batch_norm(const float *x, const float *stats, const float *scale,
                    const float *bias, int64_t n, int64_t c, int64_t s,
                    int64_t block, float epsilon, float *y) {
  checkPlain("dpc_batch_norm", block);
  int64_t count = n * c * s;
  if (count <= 0)
    return;
  batchNormKernel<<<blocksFor(count), kThreads, 0, stream()>>>(
      x, stats, scale, bias, ChannelArgs{n, c, s}, epsilon, y);
  checkLaunch("batch_norm");
}

void dpc_batch_norm_grad_input(const float *dy, const float *x,
                               const float *stats, const float *scale,
                               int64_t n, int64_t c, int64_t s, int64_t block,
                               float epsilon, float *dx) {
  checkPlain("dpc_batch_norm_grad_input", block);
  int64_t count = n * c * s;
  if (count <= 0)
    return;
  ChannelArgs a{n, c, s};
  float *sums = static_cast<float *>(
      scratch(Scratch::Reduce, size_t(2 * c) * sizeof(float)));
  batchNormGradSums<<<channelBlocks(c), kThreads, 0, stream()>>>(
      dy, x, stats, a, epsilon, sums);
  checkLaunch("batch_norm_grad_input sums");
  batchNormGradInputKernel<<<blocksFor(count), kThreads, 0, stream()>>>(
      dy, x, stats, scale, sums, a, epsilon, dx);
  checkLaunch("batch_norm_grad_input");
}

void dpc_batch_norm_grad_scale(const float *dy, const float *x,
                               const float *stats, int64_t n, int64_t c,
                               int64_t s, int64_t block, float epsilon,
                               float *dscale) {
  checkPlain("dpc_batch_norm_grad_scale", block);
  if (c <= 0)
    return;
  float *sums = static_cast<float *>(
      scratch(Scratch::Reduce, size_t(2 * c) * sizeof(float)));
  batchNormGradSums<<<channelBlocks(c), kThreads, 0, stream()>>>(
      dy, x, stats, ChannelArgs{n, c, s}, epsilon, sums);
  checkLaunch("batch_norm_grad_scale");
  check(cudaMemcpyAsync(dscale, sums + c, size_t(c) * sizeof(float),
                        cudaMemcpyDeviceToDevice, stream()),
        "dpc_batch_norm_grad_scale: copying the sums");
}

void dpc_batch_norm_grad_bias(const float *dy, int64_t n, int64_t c, int64_t s,
                              int64_t block, float *dbias) {
  checkPlain("dpc_batch_norm_grad_bias", block);
  int64_t shape[4] = {n, c, s, 1};
  dpc_conv2d_grad_bias(dy, shape, dbias);
}

} // extern "C"

//===----------------------------------------------------------------------===//
// Layer normalization: one warp per row
//===----------------------------------------------------------------------===//

namespace dpc::cuda {
namespace {

/// A row's mean and 1 / sqrt(biased variance + epsilon) over a warp, valid
/// in every lane; the variance from deviations, not E[x^2] - E[x]^2.
__device__ float2 rowMoments(const float *row, int64_t size, int lane,
                             float epsilon) {
  float sum = 0.0f;
  for (int64_t j = lane; j < size; j += 32)
    sum += row[j];
  float mean = warpSum(sum) / float(size);
  float squares = 0.0f;
  for (int64_t j = lane; j < size; j += 32) {
    float d = row[j] - mean;
    squares += d * d;
  }
  return make_float2(mean, rsqrtf(warpSum(squares) / float(size) + epsilon));
}

__global__ void layerNormRows(const float *x, const float *scale,
                              const float *bias, int64_t rows, int64_t size,
                              float epsilon, float *y) {
  int lane = threadIdx.x & 31;
  WARP_STRIDE(r, rows) {
    const float *in = x + r * size;
    float2 m = rowMoments(in, size, lane, epsilon);
    for (int64_t j = lane; j < size; j += 32) {
      float xhat = (in[j] - m.x) * m.y;
      y[r * size + j] =
          (scale ? xhat * scale[j] : xhat) + (bias ? bias[j] : 0.0f);
    }
  }
}

__global__ void layerNormGradInputRows(const float *dy, const float *x,
                                       const float *scale, int64_t rows,
                                       int64_t size, float epsilon, float *dx) {
  int lane = threadIdx.x & 31;
  WARP_STRIDE(r, rows) {
    const float *in = x + r * size, *grad = dy + r * size;
    float2 m = rowMoments(in, size, lane, epsilon);
    float sumG = 0.0f, sumGXhat = 0.0f;
    for (int64_t j = lane; j < size; j += 32) {
      float g = scale ? grad[j] * scale[j] : grad[j];
      sumG += g;
      sumGXhat += g * (in[j] - m.x) * m.y;
    }
    float meanG = warpSum(sumG) / float(size);
    float meanGXhat = warpSum(sumGXhat) / float(size);
    for (int64_t j = lane; j < size; j += 32) {
      float g = scale ? grad[j] * scale[j] : grad[j];
      float xhat = (in[j] - m.x) * m.y;
      dx[r * size + j] = m.y * (g - meanG - xhat * meanGXhat);
    }
  }
}

__global__ void layerNormMomentRows(const float *x, int64_t rows, int64_t size,
                                    float epsilon, float2 *moments) {
  int lane = threadIdx.x & 31;
  WARP_STRIDE(r, rows) {
    float2 m = rowMoments(x + r * size, size, lane, epsilon);
    if (lane == 0)
      moments[r] = m;
  }
}

/// dscale[j] = sum over the rows of dy * xhat: a thread per column, the rows
/// in order, so adjacent threads read adjacent elements.
__global__ void layerNormGradScaleColumns(const float *dy, const float *x,
                                          const float2 *moments, int64_t rows,
                                          int64_t size, float *dscale) {
  GRID_STRIDE(j, size) {
    float sum = 0.0f;
    for (int64_t r = 0; r < rows; ++r) {
      int64_t i = r * size + j;
      sum += dy[i] * (x[i] - moments[r].x) * moments[r].y;
    }
    dscale[j] = sum;
  }
}

} // namespace
} // namespace dpc::cuda

extern "C" {

static void checkLayerNormSizes(const char *kernel, int64_t rows,
                                int64_t size) {
  if (rows < 0 || size < 1)
    fail(std::string(kernel) + ": bad sizes rows " + std::to_string(rows) +
         ", size " + std::to_string(size));
}

void dpc_layer_norm(const float *x, const float *scale, const float *bias,
                    int64_t rows, int64_t size, float epsilon, float *y) {
  checkLayerNormSizes("dpc_layer_norm", rows, size);
  if (rows == 0)
    return;
  layerNormRows<<<rowBlocks(rows), kThreads, 0, stream()>>>(
      x, scale, bias, rows, size, epsilon, y);
  checkLaunch("layer_norm");
}

void dpc_layer_norm_grad_input(const float *dy, const float *x,
                               const float *scale, int64_t rows, int64_t size,
                               float epsilon, float *dx) {
  checkLayerNormSizes("dpc_layer_norm_grad_input", rows, size);
  if (rows == 0)
    return;
  layerNormGradInputRows<<<rowBlocks(rows), kThreads, 0, stream()>>>(
      dy, x, scale, rows, size, epsilon, dx);
  checkLaunch("layer_norm_grad_input");
}

void dpc_layer_norm_grad_scale(const float *dy, const float *x, int64_t rows,
                               int64_t size, float epsilon, float *dscale) {
  checkLayerNormSizes("dpc_layer_norm_grad_scale", rows, size);
  if (rows == 0) {
    check(cudaMemsetAsync(dscale, 0, size_t(size) * sizeof(float), stream()),
          "dpc_layer_norm_grad_scale: clearing an empty sum");
    return;
  }
  float2 *moments = static_cast<float2 *>(
      scratch(Scratch::Reduce, size_t(rows) * sizeof(float2)));
  layerNormMomentRows<<<rowBlocks(rows), kThreads, 0, stream()>>>(
      x, rows, size, epsilon, moments);
  checkLaunch("layer_norm_grad_scale moments");
  layerNormGradScaleColumns<<<blocksFor(size), kThreads, 0, stream()>>>(
      dy, x, moments, rows, size, dscale);
  checkLaunch("layer_norm_grad_scale");
}

} // extern "C"

//===----------------------------------------------------------------------===//
// Local response normalization: a thread per element
//===----------------------------------------------------------------------===//

namespace dpc::cuda {
namespace {

struct LrnArgs {
  int64_t n, c, s, size;
  float alpha, beta, bias;
};

/// The base of element (image, k, j): its window's sum of squares.
__device__ float lrnBase(const float *x, const LrnArgs &a, int64_t image,
                         int64_t k, int64_t j) {
  dpc::lrn::Window w = dpc::lrn::window(k, a.c, a.size);
  return dpc::lrn::base(dpc::lrn::sumSquares(x, image * a.c * a.s + j, a.s, w),
                        a.size, a.alpha, a.bias);
}

__global__ void lrnKernel(const float *x, LrnArgs a, float *y) {
  GRID_STRIDE(e, a.n * a.c * a.s) {
    int64_t j = e % a.s, k = e / a.s % a.c, image = e / (a.s * a.c);
    y[e] = x[e] * powf(lrnBase(x, a, image, k, j), -a.beta);
  }
}

__global__ void lrnGradKernel(const float *dy, const float *x, LrnArgs a,
                              float *dx) {
  GRID_STRIDE(e, a.n * a.c * a.s) {
    int64_t j = e % a.s, k = e / a.s % a.c, image = e / (a.s * a.c);
    dpc::lrn::Window w = dpc::lrn::covering(k, a.c, a.size);
    float gathered = 0.0f;
    for (int64_t from = w.first; from <= w.last; ++from) {
      int64_t f = (image * a.c + from) * a.s + j;
      gathered +=
          dy[f] * x[f] * powf(lrnBase(x, a, image, from, j), -a.beta - 1.0f);
    }
    dx[e] = dpc::lrn::inputGradient(dy[e], x[e], lrnBase(x, a, image, k, j),
                                    gathered, a.size, a.alpha, a.beta);
  }
}

void checkLrnSizes(const char *kernel, const LrnArgs &a) {
  if (a.n < 0 || a.c < 0 || a.s < 0 || a.size < 1)
    fail(std::string(kernel) + ": bad sizes n " + std::to_string(a.n) + ", c " +
         std::to_string(a.c) + ", s " + std::to_string(a.s) + ", size " +
         std::to_string(a.size));
}

} // namespace
} // namespace dpc::cuda

extern "C" {

void dpc_lrn(const float *x, int64_t n, int64_t c, int64_t s, int64_t size,
             float alpha, float beta, float bias, float *y) {
  LrnArgs a{n, c, s, size, alpha, beta, bias};
  checkLrnSizes("dpc_lrn", a);
  if (n * c * s == 0)
    return;
  lrnKernel<<<blocksFor(n * c * s), kThreads, 0, stream()>>>(x, a, y);
  checkLaunch("lrn");
}

void dpc_lrn_grad(const float *dy, const float *x, int64_t n, int64_t c,
                  int64_t s, int64_t size, float alpha, float beta, float bias,
                  float *dx) {
  LrnArgs a{n, c, s, size, alpha, beta, bias};
  checkLrnSizes("dpc_lrn_grad", a);
  if (n * c * s == 0)
    return;
  lrnGradKernel<<<blocksFor(n * c * s), kThreads, 0, stream()>>>(dy, x, a, dx);
  checkLaunch("lrn_grad");
}

} // extern "C"
