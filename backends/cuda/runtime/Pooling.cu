//===- Pooling.cu - Max, average and global average pooling ---------------===//
//
// Pooling over NCHW planes, a thread per output element: max pooling with
// PyTorch's first-maximum rule (NaN wins), average pooling with or without
// the pad in the divisor, global average pooling (a block per plane), and
// their gradients, which gather from the windows that cover each input
// element instead of scattering with atomics.
//
//===----------------------------------------------------------------------===//

#include "backends/cuda/runtime/Kernels.cuh"

#include <cmath>

using namespace dpc::cuda;

namespace dpc::cuda {
namespace {

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

} // namespace
} // namespace dpc::cuda

extern "C" {

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

} // extern "C"
