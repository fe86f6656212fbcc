//===- Kernels.cu - The hand-written CUDA kernels -------------------------===//
//
// Everything of Abi.h that cuDNN and cuBLAS do not cover: broadcasting add,
// reductions, transposes, relu, max and average pooling, batch
// normalization, softmax and softmax cross-entropy, and the optimizer
// updates of CudaKernels.h. One translation unit, because nvcc's fixed cost
// per file dominates a build on two cores.
//
// Two rules hold throughout. Reductions never use atomics: each output is
// summed by one thread or one block in a fixed order, so a run reproduces
// bit for bit. Loops are grid-stride with 64-bit indices, so a launch is
// capped in size and tensors beyond 2^31 elements still work.
//
//===----------------------------------------------------------------------===//

#include "dpc/runtime/CudaKernels.h"

#include "backends/common/Box.h"
#include "backends/common/ElementwiseMath.h"
#include "backends/common/Random.h"
#include "backends/cuda/runtime/Internal.h"

#include <cublas_v2.h>

#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <type_traits>

namespace dpc::cuda {
namespace {

constexpr int kThreads = 256;
constexpr int kMaxRank = 8;

unsigned blocksFor(int64_t count, int threads = kThreads) {
  int64_t blocks = (count + threads - 1) / threads;
  return unsigned(std::max<int64_t>(1, std::min<int64_t>(blocks, 1 << 16)));
}

#define GRID_STRIDE(i, count)                                                  \
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;             \
       i < (count); i += int64_t(blockDim.x) * gridDim.x)

__device__ float warpSum(float v) {
  for (int offset = 16; offset > 0; offset >>= 1)
    v += __shfl_xor_sync(0xffffffffu, v, offset);
  return v;
}

__device__ float warpMax(float v) {
  for (int offset = 16; offset > 0; offset >>= 1)
    v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, offset));
  return v;
}

/// Sum over the block; the result is valid in thread 0. Safe to call in a
/// loop: the leading barrier keeps a slow warp's read of the previous round
/// from racing the next round's writes.
__device__ float blockSum(float v) {
  __shared__ float partial[32];
  int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  v = warpSum(v);
  __syncthreads();
  if (lane == 0)
    partial[warp] = v;
  __syncthreads();
  if (warp == 0) {
    v = lane < int(blockDim.x >> 5) ? partial[lane] : 0.0f;
    v = warpSum(v);
  }
  return v;
}

//===----------------------------------------------------------------------===//
// Broadcasting binary functions
//===----------------------------------------------------------------------===//

/// The offset of element `index` of a tensor of `sizes` read with `strides`.
__device__ int64_t offsetOf(int64_t index, const int64_t *sizes,
                            const int64_t *strides, int rank) {
  int64_t offset = 0;
  for (int d = rank - 1; d >= 0; --d) {
    offset += (index % sizes[d]) * strides[d];
    index /= sizes[d];
  }
  return offset;
}

struct BroadcastArgs {
  int rank;
  int64_t shape[kMaxRank], aStrides[kMaxRank], bStrides[kMaxRank];
};

// f(a, b) for dpc_binary's codes.
__device__ float binaryValue(int64_t fn, float a, float b) {
  switch (fn) {
  case DPC_BINARY_ADD:
    return a + b;
  case DPC_BINARY_SUB:
    return a - b;
  case DPC_BINARY_MUL:
    return a * b;
  default:
    return a / b;
  }
}

__global__ void binarySameShape(int64_t fn, const float *a, const float *b,
                                float *y, int64_t count) {
  GRID_STRIDE(i, count) { y[i] = binaryValue(fn, a[i], b[i]); }
}

__global__ void binaryBroadcast(int64_t fn, const float *a, const float *b,
                                float *y, int64_t count, BroadcastArgs args) {
  GRID_STRIDE(i, count) {
    int64_t rest = i, aOffset = 0, bOffset = 0;
    for (int d = args.rank - 1; d >= 0; --d) {
      int64_t index = rest % args.shape[d];
      rest /= args.shape[d];
      aOffset += index * args.aStrides[d];
      bOffset += index * args.bStrides[d];
    }
    y[i] = binaryValue(fn, a[aOffset], b[bOffset]);
  }
}

/// A plan's merged shape and strides for a kernel launch.
BroadcastArgs broadcastArgs(const BroadcastPlan &plan, const char *kernel) {
  if (plan.shape.size() > size_t(kMaxRank))
    fail(std::string(kernel) + ": more than " + std::to_string(kMaxRank) +
         " dimensions after merging");
  BroadcastArgs args{};
  args.rank = int(plan.shape.size());
  std::copy(plan.shape.begin(), plan.shape.end(), args.shape);
  std::copy(plan.aStrides.begin(), plan.aStrides.end(), args.aStrides);
  std::copy(plan.bStrides.begin(), plan.bStrides.end(), args.bStrides);
  return args;
}

// y = scale * x broadcast: x's strides are a plan's aStrides.
__global__ void broadcastKernel(const float *x, float *y, int64_t count,
                                BroadcastArgs args, float scale) {
  GRID_STRIDE(i, count) {
    y[i] = scale * x[offsetOf(i, args.shape, args.aStrides, args.rank)];
  }
}

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

struct ReduceArgs {
  int keptRank, reducedRank;
  int64_t keptSizes[kMaxRank], keptStrides[kMaxRank];
  int64_t reducedSizes[kMaxRank], reducedStrides[kMaxRank];
  int64_t outputs, reduced;
  float scale;
};

/// Few values per output: one thread sums each.
__global__ void reduceByThread(const float *x, float *y, ReduceArgs args) {
  GRID_STRIDE(o, args.outputs) {
    const float *base =
        x + offsetOf(o, args.keptSizes, args.keptStrides, args.keptRank);
    float sum = 0.0f;
    for (int64_t r = 0; r < args.reduced; ++r)
      sum += base[offsetOf(r, args.reducedSizes, args.reducedStrides,
                           args.reducedRank)];
    y[o] = args.scale * sum;
  }
}

/// Many values per output: one block sums each.
__global__ void reduceByBlock(const float *x, float *y, ReduceArgs args) {
  for (int64_t o = blockIdx.x; o < args.outputs; o += gridDim.x) {
    const float *base =
        x + offsetOf(o, args.keptSizes, args.keptStrides, args.keptRank);
    float sum = 0.0f;
    for (int64_t r = threadIdx.x; r < args.reduced; r += blockDim.x)
      sum += base[offsetOf(r, args.reducedSizes, args.reducedStrides,
                           args.reducedRank)];
    sum = blockSum(sum);
    if (threadIdx.x == 0)
      y[o] = args.scale * sum;
  }
}

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

// y[i] = x[offset of y's index i walked with x's permuted strides].
struct TransposeArgs {
  int rank;
  int64_t sizes[kMaxRank], strides[kMaxRank];
};

__global__ void transposeKernel(const float *x, float *y, int64_t count,
                                TransposeArgs args) {
  GRID_STRIDE(i, count) {
    y[i] = x[offsetOf(i, args.sizes, args.strides, args.rank)];
  }
}

// Element i of a strided box is element base + offsetOf(i, box sizes,
// whole strides times steps) of the whole tensor.
__global__ void sliceKernel(const float *whole, float *box, int64_t count,
                            int64_t base, TransposeArgs args) {
  GRID_STRIDE(i, count) {
    box[i] = whole[base + offsetOf(i, args.sizes, args.strides, args.rank)];
  }
}

__global__ void insertKernel(const float *box, float *whole, int64_t count,
                             int64_t base, TransposeArgs args) {
  GRID_STRIDE(i, count) {
    whole[base + offsetOf(i, args.sizes, args.strides, args.rank)] = box[i];
  }
}

__global__ void fillKernel(float *x, int64_t count, float value) {
  GRID_STRIDE(i, count) { x[i] = value; }
}

__global__ void dropoutKernel(const float *x, float *y, int64_t count,
                              float ratio, float scale, uint64_t key) {
  GRID_STRIDE(i, count) {
    y[i] = dpc::random::dropoutKeeps(key, uint64_t(i), ratio) ? x[i] * scale
                                                              : 0.0f;
  }
}

__global__ void clipKernel(const float *x, float *y, int64_t count, float lo,
                           float hi) {
  // NaN stays NaN, as on the CPU and in PyTorch (fmaxf would drop it).
  GRID_STRIDE(i, count) {
    y[i] = x[i] != x[i] ? x[i] : fminf(fmaxf(x[i], lo), hi);
  }
}

__global__ void clipGradKernel(const float *dy, const float *x, float *dx,
                               int64_t count, float lo, float hi) {
  GRID_STRIDE(i, count) { dx[i] = x[i] >= lo && x[i] <= hi ? dy[i] : 0.0f; }
}

__global__ void reluKernel(const float *x, float *y, int64_t count) {
  // NaN stays NaN, as on the CPU (std::max) and in torch.relu.
  GRID_STRIDE(i, count) { y[i] = x[i] < 0.0f ? 0.0f : x[i]; }
}

__global__ void reluGradKernel(const float *dy, const float *y, float *dx,
                               int64_t count) {
  GRID_STRIDE(i, count) { dx[i] = y[i] > 0.0f ? dy[i] : 0.0f; }
}

// One function of UnaryFunctions.def, its row's type as `F`.
template <typename F>
__global__ void unaryKernel(F, float a, float b, const float *x, float *y,
                            int64_t count) {
  GRID_STRIDE(i, count) { y[i] = F::value(x[i], a, b); }
}

template <typename F>
__global__ void unaryGradKernel(F, float a, float b, const float *dy,
                                const float *saved, float *dx, int64_t count) {
  GRID_STRIDE(i, count) { dx[i] = F::grad(dy[i], saved[i], a, b); }
}

__global__ void windowCopy(const float *src, int64_t planes, int64_t sh,
                           int64_t sw, float *dst, int64_t dh, int64_t dw,
                           int64_t offH, int64_t offW) {
  GRID_STRIDE(i, planes * dh * dw) {
    int64_t w = i % dw, h = (i / dw) % dh, plane = i / (dw * dh);
    int64_t hs = h + offH, ws = w + offW;
    dst[i] = hs >= 0 && hs < sh && ws >= 0 && ws < sw
                 ? src[(plane * sh + hs) * sw + ws]
                 : 0.0f;
  }
}

__global__ void accumulateKernel(float *acc, const float *g, int64_t n) {
  GRID_STRIDE(i, n) { acc[i] += g[i]; }
}

__global__ void sgdKernel(float *p, float *v, float *acc, int64_t n, float lr,
                          float momentum, float weightDecay) {
  GRID_STRIDE(i, n) {
    float g = acc[i] + weightDecay * p[i];
    if (v) {
      g = momentum * v[i] + g;
      v[i] = g;
    }
    p[i] -= lr * g;
    acc[i] = 0.0f;
  }
}

__global__ void adamKernel(float *p, float *m, float *v, float *acc, int64_t n,
                           float beta1, float beta2, float eps,
                           float weightDecay, float stepSize,
                           float correction2Sqrt, float decay) {
  GRID_STRIDE(i, n) {
    if (decay != 1.0f)
      p[i] *= decay;
    float g = acc[i] + weightDecay * p[i];
    float mi = m[i] + (1.0f - beta1) * (g - m[i]);
    float vi = beta2 * v[i] + (1.0f - beta2) * g * g;
    m[i] = mi;
    v[i] = vi;
    p[i] -= stepSize * (mi / (sqrtf(vi) / correction2Sqrt + eps));
    acc[i] = 0.0f;
  }
}

//===----------------------------------------------------------------------===//
// Max pooling
//===----------------------------------------------------------------------===//

struct PoolArgs {
  int64_t planes, h, w, oh, ow, kh, kw, sh, sw, padTop, padLeft, padBottom,
      padRight;
};

/// The flat in-plane index of the window's maximum, chosen as PyTorch does:
/// the first maximum in row-major order, except that a NaN always wins (the
/// last NaN, as `val > max || isnan(val)` gives). Padding never wins; an
/// all -inf window picks its first element.
__device__ int64_t windowArgmax(const float *plane, const PoolArgs &a,
                                int64_t oh, int64_t ow, float *value) {
  int64_t h0 = oh * a.sh - a.padTop, w0 = ow * a.sw - a.padLeft;
  int64_t h1 = min(h0 + a.kh, a.h), w1 = min(w0 + a.kw, a.w);
  h0 = max(h0, int64_t(0));
  w0 = max(w0, int64_t(0));
  int64_t best = h0 * a.w + w0;
  float bestValue = -INFINITY;
  for (int64_t ih = h0; ih < h1; ++ih)
    for (int64_t iw = w0; iw < w1; ++iw) {
      float v = plane[ih * a.w + iw];
      if (v > bestValue || isnan(v)) {
        bestValue = v;
        best = ih * a.w + iw;
      }
    }
  *value = bestValue;
  return best;
}

__global__ void maxPoolKernel(const float *x, float *y, PoolArgs a) {
  GRID_STRIDE(i, a.planes * a.oh * a.ow) {
    int64_t ow = i % a.ow, oh = (i / a.ow) % a.oh, plane = i / (a.ow * a.oh);
    float value;
    windowArgmax(x + plane * a.h * a.w, a, oh, ow, &value);
    y[i] = value;
  }
}

/// The output windows [ohLo, ohHi] x [owLo, owHi] whose span covers input
/// element (ih, iw): oh * sh - padTop <= ih < oh * sh - padTop + kh.
struct CoveringWindows {
  int64_t ohLo, ohHi, owLo, owHi;
};

__device__ CoveringWindows coveringWindows(const PoolArgs &a, int64_t ih,
                                           int64_t iw) {
  int64_t hFirst = ih + a.padTop - a.kh + 1, wFirst = iw + a.padLeft - a.kw + 1;
  return {hFirst <= 0 ? 0 : (hFirst + a.sh - 1) / a.sh,
          min((ih + a.padTop) / a.sh, a.oh - 1),
          wFirst <= 0 ? 0 : (wFirst + a.sw - 1) / a.sw,
          min((iw + a.padLeft) / a.sw, a.ow - 1)};
}

/// Gathers rather than scatters: each input element finds the windows that
/// contain it and adds the gradient of those whose maximum it is. Windows
/// that overlap would otherwise need atomics.
__global__ void maxPoolGradKernel(const float *dy, const float *x, float *dx,
                                  PoolArgs a) {
  GRID_STRIDE(i, a.planes * a.h * a.w) {
    int64_t iw = i % a.w, ih = (i / a.w) % a.h, plane = i / (a.w * a.h);
    const float *xPlane = x + plane * a.h * a.w;
    const float *dyPlane = dy + plane * a.oh * a.ow;
    CoveringWindows cover = coveringWindows(a, ih, iw);
    float sum = 0.0f;
    for (int64_t oh = cover.ohLo; oh <= cover.ohHi; ++oh)
      for (int64_t ow = cover.owLo; ow <= cover.owHi; ++ow) {
        float value;
        if (windowArgmax(xPlane, a, oh, ow, &value) == ih * a.w + iw)
          sum += dyPlane[oh * a.ow + ow];
      }
    dx[i] = sum;
  }
}

//===----------------------------------------------------------------------===//
// Average pooling
//===----------------------------------------------------------------------===//

/// The input rows [h0, h1) and columns [w0, w1) of window (oh, ow) and its
/// divisor, by PyTorch's rule (the Abi.h comment of dpc_avg_pool2d).
struct AvgWindow {
  int64_t h0, h1, w0, w1, divisor;
};

__device__ AvgWindow avgWindow(const PoolArgs &a, int64_t oh, int64_t ow,
                               bool includePad) {
  int64_t h0 = oh * a.sh - a.padTop, w0 = ow * a.sw - a.padLeft;
  int64_t h1 = min(h0 + a.kh, a.h + a.padBottom);
  int64_t w1 = min(w0 + a.kw, a.w + a.padRight);
  int64_t padded = (h1 - h0) * (w1 - w0);
  h0 = max(h0, int64_t(0));
  w0 = max(w0, int64_t(0));
  h1 = min(h1, a.h);
  w1 = min(w1, a.w);
  int64_t inside = max(h1 - h0, int64_t(0)) * max(w1 - w0, int64_t(0));
  return {h0, h1, w0, w1, includePad ? padded : inside};
}

__global__ void avgPoolKernel(const float *x, float *y, PoolArgs a,
                              bool includePad) {
  GRID_STRIDE(i, a.planes * a.oh * a.ow) {
    int64_t ow = i % a.ow, oh = (i / a.ow) % a.oh, plane = i / (a.ow * a.oh);
    const float *xPlane = x + plane * a.h * a.w;
    AvgWindow win = avgWindow(a, oh, ow, includePad);
    float sum = 0.0f;
    for (int64_t ih = win.h0; ih < win.h1; ++ih)
      for (int64_t iw = win.w0; iw < win.w1; ++iw)
        sum += xPlane[ih * a.w + iw];
    y[i] = win.divisor > 0 ? sum / float(win.divisor) : 0.0f;
  }
}

/// Gathers, as max pooling's gradient does: each input element adds its
/// share of every window that covers it.
__global__ void avgPoolGradKernel(const float *dy, float *dx, PoolArgs a,
                                  bool includePad) {
  GRID_STRIDE(i, a.planes * a.h * a.w) {
    int64_t iw = i % a.w, ih = (i / a.w) % a.h, plane = i / (a.w * a.h);
    const float *dyPlane = dy + plane * a.oh * a.ow;
    CoveringWindows cover = coveringWindows(a, ih, iw);
    float sum = 0.0f;
    for (int64_t oh = cover.ohLo; oh <= cover.ohHi; ++oh)
      for (int64_t ow = cover.owLo; ow <= cover.owHi; ++ow) {
        AvgWindow win = avgWindow(a, oh, ow, includePad);
        if (win.divisor > 0 && ih >= win.h0 && ih < win.h1 && iw >= win.w0 &&
            iw < win.w1)
          sum += dyPlane[oh * a.ow + ow] / float(win.divisor);
      }
    dx[i] = sum;
  }
}

/// One block per plane.
__global__ void globalAvgPoolKernel(const float *x, int64_t planes,
                                    int64_t size, float *y) {
  for (int64_t p = blockIdx.x; p < planes; p += gridDim.x) {
    float sum = 0.0f;
    for (int64_t i = threadIdx.x; i < size; i += blockDim.x)
      sum += x[p * size + i];
    sum = blockSum(sum);
    if (threadIdx.x == 0)
      y[p] = sum / float(size);
  }
}

__global__ void globalAvgPoolGradKernel(const float *dy, int64_t planes,
                                        int64_t size, float *dx) {
  GRID_STRIDE(i, planes * size) { dx[i] = dy[i / size] / float(size); }
}

//===----------------------------------------------------------------------===//
// Batch normalization: one block per channel for the statistics
//===----------------------------------------------------------------------===//

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

//===----------------------------------------------------------------------===//
// Softmax cross-entropy: one warp per row
//===----------------------------------------------------------------------===//

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

#define WARP_STRIDE(r, rows)                                                   \
  for (int64_t r =                                                             \
           int64_t(blockIdx.x) * (blockDim.x >> 5) + (threadIdx.x >> 5);       \
       r < (rows); r += int64_t(gridDim.x) * (blockDim.x >> 5))

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

//===----------------------------------------------------------------------===//
// Layer normalization: one warp per row
//===----------------------------------------------------------------------===//

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

// One thread per element of the result; a row read from outside the table
// is NaN, which the loss carries to the executor's non-finite check.
__global__ void gatherKernel(const float *table, const int64_t *indices,
                             int64_t rows, int64_t width, int64_t count,
                             float *out) {
  for (int64_t k = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; k < count;
       k += int64_t(gridDim.x) * blockDim.x) {
    int64_t index = indices[k / width];
    if (index < 0)
      index += rows;
    out[k] =
        index >= 0 && index < rows ? table[index * width + k % width] : NAN;
  }
}

// One thread per column walks the indices in order, so every row's sum is
// taken in the same order on every run.
__global__ void gatherGradColumns(const float *dy, const int64_t *indices,
                                  int64_t rows, int64_t width, int64_t n,
                                  float *dtable) {
  for (int64_t j = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; j < width;
       j += int64_t(gridDim.x) * blockDim.x)
    for (int64_t i = 0; i < n; ++i) {
      int64_t index = indices[i];
      if (index < 0)
        index += rows;
      if (index >= 0 && index < rows)
        dtable[index * width + j] += dy[i * width + j];
    }
}

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

unsigned rowBlocks(int64_t rows) { return blocksFor(rows * 32, kThreads); }

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

//===----------------------------------------------------------------------===//
// Masks: comparisons, casts and selection
//===----------------------------------------------------------------------===//

// Up to three operands broadcast to `shape`, each with its element strides
// (0 where broadcast), dimensions unmerged: masks are small.
struct MaskArgs {
  int rank;
  int64_t count;
  int64_t shape[kMaxRank], strides[3][kMaxRank];
};

MaskArgs maskArgs(const char *kernel, const int64_t *yShape, int64_t rank,
                  std::initializer_list<const int64_t *> shapes) {
  if (rank > kMaxRank)
    fail(std::string(kernel) + ": more than " + std::to_string(kMaxRank) +
         " dimensions");
  MaskArgs args{};
  args.rank = int(rank);
  args.count = 1;
  for (int64_t d = 0; d < rank; ++d) {
    args.shape[d] = yShape[d];
    args.count *= yShape[d];
  }
  int n = 0;
  for (const int64_t *shape : shapes) {
    int64_t s = 1;
    for (int64_t d = rank - 1; d >= 0; --d) {
      if (shape[d] != yShape[d] && shape[d] != 1)
        fail(std::string(kernel) + ": an operand does not broadcast to the "
                                   "result");
      args.strides[n][d] = shape[d] == 1 && yShape[d] != 1 ? 0 : s;
      s *= shape[d];
    }
    ++n;
  }
  return args;
}

__device__ void maskOffsets(const MaskArgs &args, int64_t i, int operands,
                            int64_t *offsets) {
  for (int n = 0; n < operands; ++n)
    offsets[n] = 0;
  for (int d = args.rank - 1; d >= 0; --d) {
    int64_t index = i % args.shape[d];
    i /= args.shape[d];
    for (int n = 0; n < operands; ++n)
      offsets[n] += index * args.strides[n][d];
  }
}

template <typename T>
__global__ void compareKernel(int64_t fn, const T *a, const T *b, uint8_t *y,
                              MaskArgs args) {
  GRID_STRIDE(i, args.count) {
    int64_t o[2];
    maskOffsets(args, i, 2, o);
    T u = a[o[0]], v = b[o[1]];
    bool r;
    switch (fn) {
    case DPC_COMPARE_EQ:
      r = u == v;
      break;
    case DPC_COMPARE_LT:
      r = u < v;
      break;
    case DPC_COMPARE_GT:
      r = u > v;
      break;
    case DPC_COMPARE_LE:
      r = u <= v;
      break;
    case DPC_COMPARE_GE:
      r = u >= v;
      break;
    case DPC_COMPARE_AND:
      r = u && v;
      break;
    case DPC_COMPARE_OR:
      r = u || v;
      break;
    default:
      r = bool(u) != bool(v);
      break;
    }
    y[i] = r ? 1 : 0;
  }
}

__global__ void notKernel(const uint8_t *x, uint8_t *y, int64_t count) {
  GRID_STRIDE(i, count) { y[i] = x[i] ? 0 : 1; }
}

template <typename From, typename To>
__global__ void castKernel(const From *x, To *y, int64_t count) {
  GRID_STRIDE(i, count) {
    if constexpr (std::is_same_v<To, uint8_t>)
      y[i] = x[i] != From(0) ? 1 : 0;
    else
      y[i] = static_cast<To>(x[i]);
  }
}

template <typename From>
void launchCast(int64_t to, const From *x, void *y, int64_t count) {
  unsigned blocks = blocksFor(count);
  switch (to) {
  case DPC_DTYPE_F32:
    castKernel<<<blocks, kThreads, 0, stream()>>>(x, static_cast<float *>(y),
                                                  count);
    break;
  case DPC_DTYPE_I64:
    castKernel<<<blocks, kThreads, 0, stream()>>>(x, static_cast<int64_t *>(y),
                                                  count);
    break;
  case DPC_DTYPE_BOOL:
    castKernel<<<blocks, kThreads, 0, stream()>>>(x, static_cast<uint8_t *>(y),
                                                  count);
    break;
  default:
    fail("dpc_cast: unknown element type " + std::to_string(to));
  }
  checkLaunch("cast");
}

__global__ void whereKernel(const uint8_t *c, const float *a, const float *b,
                            float *y, MaskArgs args) {
  GRID_STRIDE(i, args.count) {
    int64_t o[3];
    maskOffsets(args, i, 3, o);
    y[i] = c[o[0]] ? a[o[1]] : b[o[2]];
  }
}

__global__ void whereGradKernel(const uint8_t *c, const float *dy, float *dx,
                                bool keep, MaskArgs args) {
  GRID_STRIDE(i, args.count) {
    int64_t o[1];
    maskOffsets(args, i, 1, o);
    dx[i] = (c[o[0]] != 0) == keep ? dy[i] : 0.0f;
  }
}

} // namespace

void launchWindowCopy(const float *src, int64_t n, int64_t c, int64_t sh,
                      int64_t sw, float *dst, int64_t dh, int64_t dw,
                      int64_t offH, int64_t offW) {
  int64_t count = n * c * dh * dw;
  if (count == 0)
    return;
  windowCopy<<<blocksFor(count), kThreads, 0, stream()>>>(
      src, n * c, sh, sw, dst, dh, dw, offH, offW);
  checkLaunch("windowCopy");
}

void launchReduce(const float *x, const ReducePlan &plan, float *y,
                  float scale) {
  if (plan.outputs == 0)
    return;
  if (plan.reduced == 0) {
    check(cudaMemsetAsync(y, 0, size_t(plan.outputs) * sizeof(float), stream()),
          "clearing an empty sum");
    return;
  }
  if (plan.keptSizes.size() > size_t(kMaxRank) ||
      plan.reducedSizes.size() > size_t(kMaxRank))
    fail("sum: more than " + std::to_string(kMaxRank) +
         " alternating kept and reduced dimensions");
  ReduceArgs args{};
  args.keptRank = int(plan.keptSizes.size());
  args.reducedRank = int(plan.reducedSizes.size());
  std::copy(plan.keptSizes.begin(), plan.keptSizes.end(), args.keptSizes);
  std::copy(plan.keptStrides.begin(), plan.keptStrides.end(), args.keptStrides);
  std::copy(plan.reducedSizes.begin(), plan.reducedSizes.end(),
            args.reducedSizes);
  std::copy(plan.reducedStrides.begin(), plan.reducedStrides.end(),
            args.reducedStrides);
  args.outputs = plan.outputs;
  args.reduced = plan.reduced;
  args.scale = scale;
  // A block per output pays off once there is a block's worth to sum; below
  // that, one thread per output keeps the whole device busy.
  if (plan.reduced >= 128) {
    reduceByBlock<<<unsigned(std::min<int64_t>(plan.outputs, 1 << 16)),
                    kThreads, 0, stream()>>>(x, y, args);
    checkLaunch("reduceByBlock");
  } else {
    reduceByThread<<<blocksFor(plan.outputs), kThreads, 0, stream()>>>(x, y,
                                                                       args);
    checkLaunch("reduceByThread");
  }
}

} // namespace dpc::cuda

using namespace dpc::cuda;

extern "C" {

void dpc_binary(int64_t fn, const float *a, const int64_t *a_shape,
                const float *b, const int64_t *b_shape, float *y,
                const int64_t *y_shape, int64_t rank) {
  if (fn < DPC_BINARY_ADD || fn > DPC_BINARY_DIV)
    fail("dpc_binary: unknown function " + std::to_string(fn));
  BroadcastPlan plan = planBroadcast(a_shape, b_shape, y_shape, rank);
  if (plan.count == 0)
    return;
  bool same = true;
  for (size_t d = 0; d < plan.shape.size(); ++d)
    same = same && plan.aStrides[d] != 0 && plan.bStrides[d] != 0;
  if (same) {
    binarySameShape<<<blocksFor(plan.count), kThreads, 0, stream()>>>(
        fn, a, b, y, plan.count);
    checkLaunch("binarySameShape");
    return;
  }
  binaryBroadcast<<<blocksFor(plan.count), kThreads, 0, stream()>>>(
      fn, a, b, y, plan.count, broadcastArgs(plan, "dpc_binary"));
  checkLaunch("binaryBroadcast");
}

void dpc_compare(int64_t fn, int64_t dtype, const void *a,
                 const int64_t *a_shape, const void *b, const int64_t *b_shape,
                 uint8_t *y, const int64_t *y_shape, int64_t rank) {
  if (fn < DPC_COMPARE_EQ || fn > DPC_COMPARE_XOR)
    fail("dpc_compare: unknown function " + std::to_string(fn));
  MaskArgs args = maskArgs("dpc_compare", y_shape, rank, {a_shape, b_shape});
  if (args.count == 0)
    return;
  unsigned blocks = blocksFor(args.count);
  switch (dtype) {
  case DPC_DTYPE_F32:
    compareKernel<<<blocks, kThreads, 0, stream()>>>(
        fn, static_cast<const float *>(a), static_cast<const float *>(b), y,
        args);
    break;
  case DPC_DTYPE_I64:
    compareKernel<<<blocks, kThreads, 0, stream()>>>(
        fn, static_cast<const int64_t *>(a), static_cast<const int64_t *>(b), y,
        args);
    break;
  case DPC_DTYPE_BOOL:
    compareKernel<<<blocks, kThreads, 0, stream()>>>(
        fn, static_cast<const uint8_t *>(a), static_cast<const uint8_t *>(b), y,
        args);
    break;
  default:
    fail("dpc_compare: unknown element type " + std::to_string(dtype));
  }
  checkLaunch("compare");
}

void dpc_not(const uint8_t *x, uint8_t *y, int64_t count) {
  if (count <= 0)
    return;
  notKernel<<<blocksFor(count), kThreads, 0, stream()>>>(x, y, count);
  checkLaunch("not");
}

void dpc_cast(int64_t from, int64_t to, const void *x, void *y, int64_t count) {
  if (count <= 0)
    return;
  switch (from) {
  case DPC_DTYPE_F32:
    return launchCast(to, static_cast<const float *>(x), y, count);
  case DPC_DTYPE_I64:
    return launchCast(to, static_cast<const int64_t *>(x), y, count);
  case DPC_DTYPE_BOOL:
    return launchCast(to, static_cast<const uint8_t *>(x), y, count);
  }
  fail("dpc_cast: unknown element type " + std::to_string(from));
}

void dpc_where(const uint8_t *c, const int64_t *c_shape, const float *a,
               const int64_t *a_shape, const float *b, const int64_t *b_shape,
               float *y, const int64_t *y_shape, int64_t rank) {
  MaskArgs args =
      maskArgs("dpc_where", y_shape, rank, {c_shape, a_shape, b_shape});
  if (args.count == 0)
    return;
  whereKernel<<<blocksFor(args.count), kThreads, 0, stream()>>>(c, a, b, y,
                                                                args);
  checkLaunch("where");
}

void dpc_where_grad(const uint8_t *c, const int64_t *c_shape, const float *dy,
                    float *dx, const int64_t *dy_shape, int64_t rank,
                    int64_t branch) {
  MaskArgs args = maskArgs("dpc_where_grad", dy_shape, rank, {c_shape});
  if (args.count == 0)
    return;
  whereGradKernel<<<blocksFor(args.count), kThreads, 0, stream()>>>(
      c, dy, dx, branch != 0, args);
  checkLaunch("where_grad");
}

void dpc_sum_to_shape(const float *x, const int64_t *x_shape, float *y,
                      const int64_t *y_shape, int64_t rank, float scale) {
  launchReduce(x, planReduce(x_shape, y_shape, rank), y, scale);
}

void dpc_broadcast_to(const float *x, const int64_t *x_shape, float *y,
                      const int64_t *y_shape, int64_t rank, float scale) {
  BroadcastPlan plan = planBroadcast(x_shape, x_shape, y_shape, rank);
  if (plan.count == 0)
    return;
  broadcastKernel<<<blocksFor(plan.count), kThreads, 0, stream()>>>(
      x, y, plan.count, broadcastArgs(plan, "dpc_broadcast_to"), scale);
  checkLaunch("broadcast_to");
}

void dpc_transpose(const float *x, const int64_t *x_shape, float *y,
                   const int64_t *perm, int64_t rank) {
  TransposePlan plan = planTranspose(x_shape, perm, rank);
  if (plan.count == 0)
    return;
  if (plan.sizes.size() > size_t(kMaxRank))
    fail("dpc_transpose: more than " + std::to_string(kMaxRank) +
         " dimensions after merging");
  TransposeArgs args{};
  args.rank = int(plan.sizes.size());
  std::copy(plan.sizes.begin(), plan.sizes.end(), args.sizes);
  std::copy(plan.strides.begin(), plan.strides.end(), args.strides);
  transposeKernel<<<blocksFor(plan.count), kThreads, 0, stream()>>>(
      x, y, plan.count, args);
  checkLaunch("transpose");
}

// The launch arguments of a strided box (dpc_slice, dpc_insert; the layout
// from backends/common/Box.h); the box's element count in `count` and its
// first element's offset in `base`.
static TransposeArgs boxArgs(const char *kernel, const int64_t *whole,
                             const int64_t *box, int64_t rank,
                             const int64_t *offsets, const int64_t *steps,
                             int64_t &count, int64_t &base) {
  if (rank > kMaxRank)
    fail(std::string(kernel) + ": more than " + std::to_string(kMaxRank) +
         " dimensions");
  TransposeArgs args{};
  args.rank = int(rank);
  int64_t bad =
      dpc::box::layout(whole, box, rank, offsets, steps, args.strides, base);
  if (bad >= 0)
    fail(std::string(kernel) + ": the box leaves the tensor in dimension " +
         std::to_string(bad));
  std::copy(box, box + rank, args.sizes);
  count = dpc::box::elements(box, rank);
  return args;
}

void dpc_slice(const float *whole, const int64_t *whole_shape, float *box,
               const int64_t *box_shape, int64_t rank, const int64_t *offsets,
               const int64_t *steps) {
  int64_t count, base;
  TransposeArgs args = boxArgs("dpc_slice", whole_shape, box_shape, rank,
                               offsets, steps, count, base);
  if (count == 0)
    return;
  sliceKernel<<<blocksFor(count), kThreads, 0, stream()>>>(whole, box, count,
                                                           base, args);
  checkLaunch("slice");
}

void dpc_insert(const float *box, const int64_t *box_shape, float *whole,
                const int64_t *whole_shape, int64_t rank,
                const int64_t *offsets, const int64_t *steps, int64_t fill_rest,
                float fill_value) {
  int64_t count, base;
  TransposeArgs args = boxArgs("dpc_insert", whole_shape, box_shape, rank,
                               offsets, steps, count, base);
  if (fill_rest) {
    int64_t total = dpc::box::elements(whole_shape, rank);
    if (total > 0) {
      fillKernel<<<blocksFor(total), kThreads, 0, stream()>>>(whole, total,
                                                              fill_value);
      checkLaunch("insert fill");
    }
  }
  if (count == 0)
    return;
  insertKernel<<<blocksFor(count), kThreads, 0, stream()>>>(box, whole, count,
                                                            base, args);
  checkLaunch("insert");
}

void dpc_dropout(const float *x, float *y, int64_t count, float ratio,
                 int64_t key) {
  if (count <= 0)
    return;
  if (key < 0) {
    if (x != y)
      check(cudaMemcpyAsync(y, x, size_t(count) * sizeof(float),
                            cudaMemcpyDeviceToDevice, stream()),
            "dpc_dropout: cudaMemcpyAsync");
    return;
  }
  dropoutKernel<<<blocksFor(count), kThreads, 0, stream()>>>(
      x, y, count, ratio, 1.0f / (1.0f - ratio), uint64_t(key));
  checkLaunch("dropout");
}

void dpc_clip(const float *x, float *y, int64_t count, float lo, float hi) {
  if (count <= 0)
    return;
  clipKernel<<<blocksFor(count), kThreads, 0, stream()>>>(x, y, count, lo, hi);
  checkLaunch("clip");
}

void dpc_clip_grad(const float *dy, const float *x, float *dx, int64_t count,
                   float lo, float hi) {
  if (count <= 0)
    return;
  clipGradKernel<<<blocksFor(count), kThreads, 0, stream()>>>(dy, x, dx, count,
                                                              lo, hi);
  checkLaunch("clip_grad");
}

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

void dpc_conv2d_grad_bias(const float *dy, const int64_t *dy_shape, float *db) {
  int64_t bShape[4] = {1, dy_shape[1], 1, 1};
  launchReduce(dy, planReduce(dy_shape, bShape, 4), db, 1.0f);
}

void dpc_relu(const float *x, float *y, int64_t count) {
  if (count <= 0)
    return;
  reluKernel<<<blocksFor(count), kThreads, 0, stream()>>>(x, y, count);
  checkLaunch("relu");
}

void dpc_relu_grad(const float *dy, const float *y, float *dx, int64_t count) {
  if (count <= 0)
    return;
  reluGradKernel<<<blocksFor(count), kThreads, 0, stream()>>>(dy, y, dx, count);
  checkLaunch("relu_grad");
}

void dpc_unary(int64_t fn, float a, float b, const float *x, float *y,
               int64_t count) {
  bool known = dpc::elementwise::dispatchUnary(fn, [&](auto f) {
    if (count <= 0)
      return;
    unaryKernel<<<blocksFor(count), kThreads, 0, stream()>>>(f, a, b, x, y,
                                                             count);
    checkLaunch("unary");
  });
  if (!known)
    fail("dpc_unary: unknown function " + std::to_string(fn));
}

void dpc_unary_grad(int64_t fn, float a, float b, const float *dy,
                    const float *saved, float *dx, int64_t count) {
  bool known = dpc::elementwise::dispatchUnaryGrad(fn, [&](auto f) {
    if (count <= 0)
      return;
    unaryGradKernel<<<blocksFor(count), kThreads, 0, stream()>>>(
        f, a, b, dy, saved, dx, count);
    checkLaunch("unary_grad");
  });
  if (!known)
    fail("dpc_unary_grad: unknown function " + std::to_string(fn));
}

static PoolArgs poolArgs(const int64_t *x_shape, const int64_t *y_shape,
                         const int64_t *params, const char *what) {
  PoolArgs a{x_shape[0] * x_shape[1],
             x_shape[2],
             x_shape[3],
             y_shape[2],
             y_shape[3],
             params[0],
             params[1],
             params[2],
             params[3],
             params[4],
             params[5],
             params[6],
             params[7]};
  if (a.kh < 1 || a.kw < 1 || a.sh < 1 || a.sw < 1 || a.padTop < 0 ||
      a.padLeft < 0 || x_shape[0] != y_shape[0] || x_shape[1] != y_shape[1])
    fail(std::string(what) + ": bad window or shapes");
  return a;
}

void dpc_max_pool2d(const float *x, const int64_t *x_shape, float *y,
                    const int64_t *y_shape, const int64_t *params) {
  PoolArgs a = poolArgs(x_shape, y_shape, params, "dpc_max_pool2d");
  int64_t count = a.planes * a.oh * a.ow;
  if (count == 0)
    return;
  maxPoolKernel<<<blocksFor(count), kThreads, 0, stream()>>>(x, y, a);
  checkLaunch("max_pool2d");
}

void dpc_max_pool2d_grad(const float *dy, const int64_t *dy_shape,
                         const float *x, const int64_t *x_shape, float *dx,
                         const int64_t *params) {
  PoolArgs a = poolArgs(x_shape, dy_shape, params, "dpc_max_pool2d_grad");
  int64_t count = a.planes * a.h * a.w;
  if (count == 0)
    return;
  maxPoolGradKernel<<<blocksFor(count), kThreads, 0, stream()>>>(dy, x, dx, a);
  checkLaunch("max_pool2d_grad");
}

void dpc_avg_pool2d(const float *x, const int64_t *x_shape, float *y,
                    const int64_t *y_shape, const int64_t *params) {
  PoolArgs a = poolArgs(x_shape, y_shape, params, "dpc_avg_pool2d");
  int64_t count = a.planes * a.oh * a.ow;
  if (count == 0)
    return;
  avgPoolKernel<<<blocksFor(count), kThreads, 0, stream()>>>(x, y, a,
                                                             params[8] != 0);
  checkLaunch("avg_pool2d");
}

void dpc_avg_pool2d_grad(const float *dy, const int64_t *dy_shape, float *dx,
                         const int64_t *dx_shape, const int64_t *params) {
  PoolArgs a = poolArgs(dx_shape, dy_shape, params, "dpc_avg_pool2d_grad");
  int64_t count = a.planes * a.h * a.w;
  if (count == 0)
    return;
  avgPoolGradKernel<<<blocksFor(count), kThreads, 0, stream()>>>(
      dy, dx, a, params[8] != 0);
  checkLaunch("avg_pool2d_grad");
}

void dpc_global_avg_pool(const float *x, int64_t planes, int64_t size,
                         float *y) {
  if (planes <= 0 || size <= 0)
    return;
  globalAvgPoolKernel<<<unsigned(std::min<int64_t>(planes, 1 << 16)), kThreads,
                        0, stream()>>>(x, planes, size, y);
  checkLaunch("global_avg_pool");
}

void dpc_global_avg_pool_grad(const float *dy, int64_t planes, int64_t size,
                              float *dx) {
  if (planes <= 0 || size <= 0)
    return;
  globalAvgPoolGradKernel<<<blocksFor(planes * size), kThreads, 0, stream()>>>(
      dy, planes, size, dx);
  checkLaunch("global_avg_pool_grad");
}

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

void dpc_batch_norm_grad_bias(const float *dy, int64_t n, int64_t c,
                              int64_t s, int64_t block, float *dbias) {
  checkPlain("dpc_batch_norm_grad_bias", block);
  int64_t shape[4] = {n, c, s, 1};
  dpc_conv2d_grad_bias(dy, shape, dbias);
}

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

void dpc_gather(const float *table, const int64_t *indices, int64_t rows,
                int64_t width, int64_t n, float *out) {
  int64_t count = n * width;
  if (count <= 0)
    return;
  gatherKernel<<<blocksFor(count), kThreads, 0, stream()>>>(
      table, indices, rows, width, count, out);
  checkLaunch("gather");
}

void dpc_gather_grad(const float *dy, const int64_t *indices, int64_t rows,
                     int64_t width, int64_t n, float *dtable) {
  if (rows * width <= 0)
    return;
  check(cudaMemsetAsync(dtable, 0, size_t(rows * width) * sizeof(float),
                        stream()),
        "dpc_gather_grad: clearing the table gradient");
  if (n <= 0)
    return;
  gatherGradColumns<<<blocksFor(width), kThreads, 0, stream()>>>(
      dy, indices, rows, width, n, dtable);
  checkLaunch("gather_grad");
}

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
  squaredErrorSum<<<1, 1024, 0, stream()>>>(prediction, target, n, scale,
                                            loss);
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

void dpc_cuda_accumulate(float *acc, const float *g, int64_t n) {
  if (n <= 0)
    return;
  accumulateKernel<<<blocksFor(n), kThreads, 0, stream()>>>(acc, g, n);
  checkLaunch("accumulate");
}

void dpc_cuda_sgd_step(float *p, float *v, float *acc, int64_t n, float lr,
                       float momentum, float weight_decay) {
  if (n <= 0)
    return;
  if (momentum != 0.0f && !v)
    fail("dpc_cuda_sgd_step: momentum without a momentum buffer");
  sgdKernel<<<blocksFor(n), kThreads, 0, stream()>>>(
      p, momentum != 0.0f ? v : nullptr, acc, n, lr, momentum, weight_decay);
  checkLaunch("sgd_step");
}

void dpc_cuda_adam_step(float *p, float *m, float *v, float *acc, int64_t n,
                        float beta1, float beta2, float eps, float weight_decay,
                        float step_size, float correction2_sqrt, float decay) {
  if (n <= 0)
    return;
  if (!m || !v)
    fail("dpc_cuda_adam_step: Adam without its moment buffers");
  adamKernel<<<blocksFor(n), kThreads, 0, stream()>>>(
      p, m, v, acc, n, beta1, beta2, eps, weight_decay, step_size,
      correction2_sqrt, decay);
  checkLaunch("adam_step");
}

// dpc compile refuses --precision bf16 for --target cuda; a rank that got
// one anyway computes the f32 kernels.
int64_t dpc_bf16_native(void) { return 0; }

} // extern "C"
