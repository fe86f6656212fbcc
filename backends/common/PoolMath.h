//===- PoolMath.h - Host and device windows of the 2-d poolings -*- C++ -*-===//
//
// The windows of dpc_max_pool2d and dpc_avg_pool2d and their gradients,
// compiled for the host and for the GPU alike, so that the CPU and CUDA
// kernels pick the same maximum and divide by the same count by
// construction: the geometry of a pooling, the element a max-pooling
// window selects (PyTorch's rule, NaN propagating) and the span and divisor
// of an average-pooling window.
//
//===----------------------------------------------------------------------===//

#ifndef DPC_BACKENDS_COMMON_POOLMATH_H
#define DPC_BACKENDS_COMMON_POOLMATH_H

#include "dpc/runtime/Abi.h"

#include <math.h>
#include <stdint.h>

#if defined(__CUDACC__)
#define DPC_POOL_MATH __host__ __device__ inline
#else
#define DPC_POOL_MATH inline
#endif

namespace dpc::pool {

/// A pooling over `planes` NCHW planes of h x w into oh x ow: kernel kh x kw,
/// strides sh, sw, pads top, left, bottom, right.
struct Geometry {
  int64_t planes, h, w, oh, ow, kh, kw, sh, sw, pt, pl, pb, pr;
};

/// The geometry of input shape x and output shape y (NCHW) under the
/// window `p`.
inline Geometry geometry(const int64_t *x, const int64_t *y,
                         const dpc_pool_params &p) {
  return {x[0] * x[1], x[2],         x[3],       y[2],       y[3],
          p.kernel_h,  p.kernel_w,   p.stride_h, p.stride_w, p.pad_top,
          p.pad_left,  p.pad_bottom, p.pad_right};
}

/// What is wrong with a pooling of shapes x and y and geometry g, or null.
inline const char *problem(const Geometry &g, const int64_t *x,
                           const int64_t *y) {
  if (x[0] != y[0] || x[1] != y[1])
    return "input and output differ in batch or channels";
  if (g.kh < 1 || g.kw < 1 || g.sh < 1 || g.sw < 1 || g.pt < 0 || g.pl < 0 ||
      g.pb < 0 || g.pr < 0)
    return "bad kernel, strides or pads";
  return nullptr;
}

template <typename T> DPC_POOL_MATH T lesser(T a, T b) { return b < a ? b : a; }
template <typename T> DPC_POOL_MATH T greater(T a, T b) {
  return a < b ? b : a;
}

/// The in-plane index of the element max-pooling window (oh, ow) selects,
/// and its value in `value`, by PyTorch's rule (`v > max || isnan(v)` in
/// row-major order): the first maximum, except that a NaN propagates, the
/// last NaN of the window being selected. Padding never wins; a window of
/// -inf values selects its first element. -1 (value -inf) when the window
/// holds no input element.
DPC_POOL_MATH int64_t maxWindow(const float *plane, const Geometry &g,
                                int64_t oh, int64_t ow, float *value) {
  int64_t h0 = oh * g.sh - g.pt, w0 = ow * g.sw - g.pl;
  int64_t h1 = lesser(h0 + g.kh, g.h), w1 = lesser(w0 + g.kw, g.w);
  h0 = greater<int64_t>(h0, 0);
  w0 = greater<int64_t>(w0, 0);
  float bestValue = -INFINITY;
  if (h0 >= h1 || w0 >= w1) {
    *value = bestValue;
    return -1;
  }
  int64_t best = h0 * g.w + w0;
  for (int64_t i = h0; i < h1; ++i)
    for (int64_t j = w0; j < w1; ++j) {
      float v = plane[i * g.w + j];
      if (v > bestValue || v != v) {
        best = i * g.w + j;
        bestValue = v;
      }
    }
  *value = bestValue;
  return best;
}

/// The input rows [h0, h1) and columns [w0, w1) average-pooling window
/// (oh, ow) covers, and its divisor by PyTorch's rule: the window clipped to
/// the padded input with count_include_pad, to the input itself without.
struct AvgWindow {
  int64_t h0, h1, w0, w1, divisor;
};

DPC_POOL_MATH AvgWindow avgWindow(const Geometry &g, int64_t oh, int64_t ow,
                                  bool includePad) {
  int64_t h0 = oh * g.sh - g.pt, w0 = ow * g.sw - g.pl;
  int64_t h1 = lesser(h0 + g.kh, g.h + g.pb);
  int64_t w1 = lesser(w0 + g.kw, g.w + g.pr);
  int64_t padded = (h1 - h0) * (w1 - w0);
  h0 = greater<int64_t>(h0, 0);
  w0 = greater<int64_t>(w0, 0);
  h1 = lesser(h1, g.h);
  w1 = lesser(w1, g.w);
  int64_t inside = greater<int64_t>(h1 - h0, 0) * greater<int64_t>(w1 - w0, 0);
  return {h0, h1, w0, w1, includePad ? padded : inside};
}

} // namespace dpc::pool

#undef DPC_POOL_MATH

#endif // DPC_BACKENDS_COMMON_POOLMATH_H
