//===- Pooling.cu - Max, average and global average pooling ---------------===//
//
// Pooling over NCHW planes, a thread per output element: max pooling with
// PyTorch's first-maximum rule (NaN propagating), average pooling with or
// without the pad in the divisor, global average pooling (a block per plane),
// and their gradients, which gather from the windows that cover each input
// element instead of scattering with atomics.
//
//===----------------------------------------------------------------------===//

#include "backends/common/PoolMath.h"
#include "backends/cuda/runtime/Kernels.cuh"

#include <cmath>

using namespace dpc::cuda;

namespace dpc::cuda {
namespace {

//===----------------------------------------------------------------------===//
// Max pooling
//===----------------------------------------------------------------------===//

/// The windows (backends/common/PoolMath.h: PyTorch's rules, NaN
/// propagating).
using PoolArgs = dpc::pool::Geometry;

__global__ void maxPoolKernel(const float *x, float *y, PoolArgs a) {
  GRID_STRIDE(i, a.planes * a.oh * a.ow) {
    int64_t ow = i % a.ow, oh = (i / a.ow) % a.oh, plane = i / (a.ow * a.oh);
    float value;
    dpc::pool::maxWindow(x + plane * a.h * a.w, a, oh, ow, &value);
    y[i] = value;
  }
}

/// The output windows [ohLo, ohHi] x [owLo, owHi] whose span covers input
/// element (ih, iw): oh * sh - pt <= ih < oh * sh - pt + kh.
struct CoveringWindows {
  int64_t ohLo, ohHi, owLo, owHi;
};

__device__ CoveringWindows coveringWindows(const PoolArgs &a, int64_t ih,
                                           int64_t iw) {
  int64_t hFirst = ih + a.pt - a.kh + 1, wFirst = iw + a.pl - a.kw + 1;
  return {hFirst <= 0 ? 0 : (hFirst + a.sh - 1) / a.sh,
          min((ih + a.pt) / a.sh, a.oh - 1),
          wFirst <= 0 ? 0 : (wFirst + a.sw - 1) / a.sw,
          min((iw + a.pl) / a.sw, a.ow - 1)};
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
        if (dpc::pool::maxWindow(xPlane, a, oh, ow, &value) == ih * a.w + iw)
          sum += dyPlane[oh * a.ow + ow];
      }
    dx[i] = sum;
  }
}

//===----------------------------------------------------------------------===//
// Average pooling
//===----------------------------------------------------------------------===//

using dpc::pool::AvgWindow;
using dpc::pool::avgWindow;

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
                         const dpc_pool_params &params, const char *what) {
  PoolArgs a = dpc::pool::geometry(x_shape, y_shape, params);
  if (const char *problem = dpc::pool::problem(a, x_shape, y_shape))
    fail(std::string(what) + ": " + problem);
  return a;
}

void dpc_max_pool2d(const float *x, const int64_t *x_shape, float *y,
                    const int64_t *y_shape, const dpc_pool_params *params) {
  PoolArgs a = poolArgs(x_shape, y_shape, *params, "dpc_max_pool2d");
  int64_t count = a.planes * a.oh * a.ow;
  if (count == 0)
    return;
  maxPoolKernel<<<blocksFor(count), kThreads, 0, stream()>>>(x, y, a);
  checkLaunch("max_pool2d");
}

void dpc_max_pool2d_grad(const float *dy, const int64_t *dy_shape,
                         const float *x, const int64_t *x_shape, float *dx,
                         const dpc_pool_params *params) {
  PoolArgs a = poolArgs(x_shape, dy_shape, *params, "dpc_max_pool2d_grad");
  int64_t count = a.planes * a.h * a.w;
  if (count == 0)
    return;
  maxPoolGradKernel<<<blocksFor(count), kThreads, 0, stream()>>>(dy, x, dx, a);
  checkLaunch("max_pool2d_grad");
}

void dpc_avg_pool2d(const float *x, const int64_t *x_shape, float *y,
                    const int64_t *y_shape, const dpc_avg_pool_params *params) {
  PoolArgs a = poolArgs(x_shape, y_shape, params->window, "dpc_avg_pool2d");
  int64_t count = a.planes * a.oh * a.ow;
  if (count == 0)
    return;
  avgPoolKernel<<<blocksFor(count), kThreads, 0, stream()>>>(
      x, y, a, params->count_include_pad != 0);
  checkLaunch("avg_pool2d");
}

void dpc_avg_pool2d_grad(const float *dy, const int64_t *dy_shape, float *dx,
                         const int64_t *dx_shape,
                         const dpc_avg_pool_params *params) {
  PoolArgs a =
      poolArgs(dx_shape, dy_shape, params->window, "dpc_avg_pool2d_grad");
  int64_t count = a.planes * a.h * a.w;
  if (count == 0)
    return;
  avgPoolGradKernel<<<blocksFor(count), kThreads, 0, stream()>>>(
      dy, dx, a, params->count_include_pad != 0);
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
