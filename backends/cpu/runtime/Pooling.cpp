//===- Pooling.cpp - Max, average and global average pooling --------------===//
//
// Pooling over NCHW planes, a plane per kernel thread: max pooling with
// PyTorch's first-maximum rule (NaN propagating), average pooling with or
// without the pad in the divisor, global average pooling, and their gradients.
//
//===----------------------------------------------------------------------===//

#include "backends/common/PoolMath.h"
#include "backends/cpu/runtime/Internal.h"

#include <cmath>
#include <limits>

using namespace dpc::cpu;

namespace {

using dpc::pool::Geometry;

Geometry poolGeometry(const char *kernel, const int64_t *x, const int64_t *y,
                      const dpc_pool_params &p) {
  Geometry g = dpc::pool::geometry(x, y, p);
  if (const char *problem = dpc::pool::problem(g, x, y))
    fail(kernel, std::string(problem) + ": input " + shapeText(x, 4) +
                     ", output " + shapeText(y, 4));
  return g;
}

/// The index (into the plane) of the element window (oh, ow) selects
/// (backends/common/PoolMath.h), -1 for none.
inline int64_t windowArgmax(const float *plane, const Geometry &g, int64_t oh,
                            int64_t ow) {
  float value;
  return dpc::pool::maxWindow(plane, g, oh, ow, &value);
}

} // namespace

extern "C" {

void dpc_max_pool2d(const float *x, const int64_t *x_shape, float *y,
                    const int64_t *y_shape, const dpc_pool_params *params) {
  Geometry g = poolGeometry("dpc_max_pool2d", x_shape, y_shape, *params);
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
                         const dpc_pool_params *params) {
  Geometry g = poolGeometry("dpc_max_pool2d_grad", x_shape, dy_shape, *params);
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
                    const int64_t *y_shape, const dpc_avg_pool_params *params) {
  Geometry g = poolGeometry("dpc_avg_pool2d", x_shape, y_shape, params->window);
  bool includePad = params->count_include_pad != 0;
  parallelFor(g.planes, g.planes * g.oh * g.ow * g.kh * g.kw, [&](int64_t p) {
    const float *plane = x + p * g.h * g.w;
    float *out = y + p * g.oh * g.ow;
    for (int64_t i = 0; i < g.oh; ++i)
      for (int64_t j = 0; j < g.ow; ++j) {
        dpc::pool::AvgWindow win = dpc::pool::avgWindow(g, i, j, includePad);
        float sum = 0.0f;
        for (int64_t a = win.h0; a < win.h1; ++a)
          for (int64_t b = win.w0; b < win.w1; ++b)
            sum += plane[a * g.w + b];
        out[i * g.ow + j] = win.divisor > 0 ? sum / float(win.divisor) : 0.0f;
      }
  });
}

void dpc_avg_pool2d_grad(const float *dy, const int64_t *dy_shape, float *dx,
                         const int64_t *dx_shape,
                         const dpc_avg_pool_params *params) {
  Geometry g =
      poolGeometry("dpc_avg_pool2d_grad", dx_shape, dy_shape, params->window);
  bool includePad = params->count_include_pad != 0;
  parallelFor(g.planes, g.planes * g.oh * g.ow * g.kh * g.kw, [&](int64_t p) {
    const float *grad = dy + p * g.oh * g.ow;
    float *out = dx + p * g.h * g.w;
    std::fill(out, out + g.h * g.w, 0.0f);
    for (int64_t i = 0; i < g.oh; ++i)
      for (int64_t j = 0; j < g.ow; ++j) {
        dpc::pool::AvgWindow win = dpc::pool::avgWindow(g, i, j, includePad);
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
