//===- Pooling.cpp - Max, average and global average pooling --------------===//
//
// Pooling over NCHW planes, a plane per kernel thread: max pooling with
// PyTorch's first-maximum rule (NaN wins), average pooling with or without
// the pad in the divisor, global average pooling, and their gradients.
//
//===----------------------------------------------------------------------===//

#include "backends/cpu/runtime/Internal.h"

#include <cmath>
#include <limits>

using namespace dpc::cpu;

namespace {

struct PoolGeometry {
  int64_t planes, h, w, oh, ow, kh, kw, sh, sw, pt, pl, pb, pr;
};

PoolGeometry poolGeometry(const char *kernel, const int64_t *x,
                          const int64_t *y, const int64_t *p) {
  if (x[0] != y[0] || x[1] != y[1])
    fail(kernel, "input " + shapeText(x, 4) + " and output " + shapeText(y, 4) +
                     " differ in batch or channels");
  if (p[0] < 1 || p[1] < 1 || p[2] < 1 || p[3] < 1 || p[4] < 0 || p[5] < 0 ||
      p[6] < 0 || p[7] < 0)
    fail(kernel, "bad kernel, strides or pads");
  return {x[0] * x[1], x[2], x[3], y[2], y[3], p[0], p[1],
          p[2],        p[3], p[4], p[5], p[6], p[7]};
}

/// Index (into the plane) of the first maximum of window (oh, ow): a later
/// element replaces the maximum only when strictly greater or NaN, which is
/// PyTorch's rule. -1 when the window holds no input element.
inline int64_t windowArgmax(const float *plane, const PoolGeometry &g,
                            int64_t oh, int64_t ow) {
  int64_t h0 = oh * g.sh - g.pt, w0 = ow * g.sw - g.pl;
  int64_t h1 = std::min(h0 + g.kh, g.h), w1 = std::min(w0 + g.kw, g.w);
  h0 = std::max<int64_t>(h0, 0);
  w0 = std::max<int64_t>(w0, 0);
  if (h0 >= h1 || w0 >= w1)
    return -1;
  int64_t best = h0 * g.w + w0;
  float bestValue = plane[best];
  if (std::isnan(bestValue))
    return best;
  for (int64_t i = h0; i < h1; ++i)
    for (int64_t j = w0; j < w1; ++j) {
      // Not "v <= best": v is greater, or NaN (bestValue never is).
      float v = plane[i * g.w + j];
      if (!(v <= bestValue)) {
        best = i * g.w + j;
        bestValue = v;
        if (v != v)
          return best;
      }
    }
  return best;
}

/// The input rows [h0, h1) and columns [w0, w1) average window (oh, ow)
/// covers, and its divisor (PyTorch's rule).
struct PoolWindow {
  int64_t h0, h1, w0, w1, divisor;
};

inline PoolWindow poolWindow(const PoolGeometry &g, int64_t oh, int64_t ow,
                             bool includePad) {
  int64_t h0 = oh * g.sh - g.pt, w0 = ow * g.sw - g.pl;
  int64_t h1 = std::min(h0 + g.kh, g.h + g.pb);
  int64_t w1 = std::min(w0 + g.kw, g.w + g.pr);
  int64_t padded = (h1 - h0) * (w1 - w0);
  h0 = std::max<int64_t>(h0, 0);
  w0 = std::max<int64_t>(w0, 0);
  h1 = std::min(h1, g.h);
  w1 = std::min(w1, g.w);
  int64_t inside =
      std::max<int64_t>(h1 - h0, 0) * std::max<int64_t>(w1 - w0, 0);
  return {h0, h1, w0, w1, includePad ? padded : inside};
}

} // namespace

extern "C" {

void dpc_max_pool2d(const float *x, const int64_t *x_shape, float *y,
                    const int64_t *y_shape, const int64_t *params) {
  PoolGeometry g = poolGeometry("dpc_max_pool2d", x_shape, y_shape, params);
  parallelFor(g.planes, g.planes * g.oh * g.ow * g.kh * g.kw, [&](int64_t p) {
    const float *plane = x + p * g.h * g.w;
    float *out = y + p * g.oh * g.ow;
    for (int64_t i = 0; i < g.oh; ++i)
      for (int64_t j = 0; j < g.ow; ++j) {
        int64_t k = windowArgmax(plane, g, i, j);
        out[i * g.ow + j] =
            k < 0 ? -std::numeric_limits<float>::infinity() : plane[k];
      }
  });
}

void dpc_max_pool2d_grad(const float *dy, const int64_t *dy_shape,
                         const float *x, const int64_t *x_shape, float *dx,
                         const int64_t *params) {
  PoolGeometry g =
      poolGeometry("dpc_max_pool2d_grad", x_shape, dy_shape, params);
  parallelFor(g.planes, g.planes * g.oh * g.ow * g.kh * g.kw, [&](int64_t p) {
    const float *plane = x + p * g.h * g.w;
    const float *grad = dy + p * g.oh * g.ow;
    float *out = dx + p * g.h * g.w;
    std::fill(out, out + g.h * g.w, 0.0f);
    for (int64_t i = 0; i < g.oh; ++i)
      for (int64_t j = 0; j < g.ow; ++j) {
        int64_t k = windowArgmax(plane, g, i, j);
        if (k >= 0)
          out[k] += grad[i * g.ow + j];
      }
  });
}

void dpc_avg_pool2d(const float *x, const int64_t *x_shape, float *y,
                    const int64_t *y_shape, const int64_t *params) {
  PoolGeometry g = poolGeometry("dpc_avg_pool2d", x_shape, y_shape, params);
  bool includePad = params[8] != 0;
  parallelFor(g.planes, g.planes * g.oh * g.ow * g.kh * g.kw, [&](int64_t p) {
    const float *plane = x + p * g.h * g.w;
    float *out = y + p * g.oh * g.ow;
    for (int64_t i = 0; i < g.oh; ++i)
      for (int64_t j = 0; j < g.ow; ++j) {
        PoolWindow win = poolWindow(g, i, j, includePad);
        float sum = 0.0f;
        for (int64_t a = win.h0; a < win.h1; ++a)
          for (int64_t b = win.w0; b < win.w1; ++b)
            sum += plane[a * g.w + b];
        out[i * g.ow + j] = win.divisor > 0 ? sum / float(win.divisor) : 0.0f;
      }
  });
}

void dpc_avg_pool2d_grad(const float *dy, const int64_t *dy_shape, float *dx,
                         const int64_t *dx_shape, const int64_t *params) {
  PoolGeometry g =
      poolGeometry("dpc_avg_pool2d_grad", dx_shape, dy_shape, params);
  bool includePad = params[8] != 0;
  parallelFor(g.planes, g.planes * g.oh * g.ow * g.kh * g.kw, [&](int64_t p) {
    const float *grad = dy + p * g.oh * g.ow;
    float *out = dx + p * g.h * g.w;
    std::fill(out, out + g.h * g.w, 0.0f);
    for (int64_t i = 0; i < g.oh; ++i)
      for (int64_t j = 0; j < g.ow; ++j) {
        PoolWindow win = poolWindow(g, i, j, includePad);
        if (win.divisor <= 0)
          continue;
        float share = grad[i * g.ow + j] / float(win.divisor);
        for (int64_t a = win.h0; a < win.h1; ++a)
          for (int64_t b = win.w0; b < win.w1; ++b)
            out[a * g.w + b] += share;
      }
  });
}

void dpc_global_avg_pool(const float *x, int64_t planes, int64_t size,
                         float *y) {
  parallelFor(planes, planes * size, [&](int64_t p) {
    double sum = 0;
    for (int64_t i = 0; i < size; ++i)
      sum += x[p * size + i];
    y[p] = float(sum / double(size));
  });
}

void dpc_global_avg_pool_grad(const float *dy, int64_t planes, int64_t size,
                              float *dx) {
  parallelFor(planes, planes * size, [&](int64_t p) {
    float share = dy[p] / float(size);
    std::fill(dx + p * size, dx + (p + 1) * size, share);
  });
}

} // extern "C"
