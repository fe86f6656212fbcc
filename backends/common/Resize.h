//===- Resize.h - Host and device math of dpc_resize ------------*- C++ -*-===//
//
// The semantics of ONNX Resize (nn.resize) in one place, compiled for the
// host and for the GPU alike, so that the CPU and CUDA kernels read the same
// source elements with the same weights by construction: where an output
// position maps to in the input (the coordinate transformation modes), which
// one or two input elements of each axis it reads (nearest with its rounding
// rule, or linear) and with what weight, the value of one output element,
// and the gradient of one input element. The codes and the params struct
// are the ABI's (include/dpc/runtime/Abi.h).
//
// The gradient gathers: each input element finds, by binary search on each
// axis, the outputs that read it (the taps are monotone in the output
// index) and sums their shares in a fixed order, so neither target needs
// atomics and every run gives the same bits.
//
//===----------------------------------------------------------------------===//

#ifndef DPC_BACKENDS_COMMON_RESIZE_H
#define DPC_BACKENDS_COMMON_RESIZE_H

#include "dpc/runtime/Abi.h"

#include <math.h>
#include <stdint.h>

#if defined(__CUDACC__)
#define DPC_RESIZE __host__ __device__ inline
#else
#define DPC_RESIZE inline
#endif

namespace dpc::resize {

/// Spatial axes a resize handles; fewer are padded in front with axes of
/// length 1, which map every output to input 0 with weight 1.
constexpr int kMaxAxes = 3;

/// One resized axis: input and output lengths, the step in input
/// coordinates between neighbouring outputs, and whether the output is one
/// element long before rounding (pytorch_half_pixel then reads input 0).
struct Axis {
  int64_t in, out;
  float ratio;
  bool single;
};

/// A resize of `planes` (batch times channels) planes.
struct Geometry {
  int64_t planes;
  Axis axis[kMaxAxes];
  int64_t mode, coordinates, rounding;
};

/// An axis of `in` elements resized to `out`, by `scale` or, when it is 0,
/// to the size given. ONNX measures the output before rounding, in * scale,
/// where a scale was given; the step is 1 / scale (in / out for sizes), and
/// for align_corners (in - 1) / (length - 1), 0 for a length of one. That
/// is PyTorch's step too, which takes the scale when one was given.
DPC_RESIZE Axis makeAxis(int64_t in, int64_t out, double scale,
                         int64_t coordinates) {
  double length = scale > 0 ? double(in) * scale : double(out);
  bool single = length <= 1.0;
  float ratio = scale > 0 ? float(1.0 / scale) : float(in) / float(out);
  if (coordinates == DPC_RESIZE_ALIGN_CORNERS)
    ratio = single ? 0.0f : float(double(in - 1) / (length - 1.0));
  return {in, out, ratio, single};
}

/// The geometry of input x and output y, both [N, C, spatial...] of rank
/// `rank` (3 to 5), under params `p`. False when the ranks, the leading
/// dimensions, the sizes or the codes are not a resize's.
DPC_RESIZE bool makeGeometry(const int64_t *x, const int64_t *y, int64_t rank,
                             const dpc_resize_params &p, Geometry &g) {
  if (rank < 3 || rank > 2 + kMaxAxes || x[0] != y[0] || x[1] != y[1] ||
      p.mode < DPC_RESIZE_NEAREST || p.mode > DPC_RESIZE_LINEAR ||
      p.coordinates < DPC_RESIZE_HALF_PIXEL ||
      p.coordinates > DPC_RESIZE_TF_HALF_PIXEL_FOR_NN ||
      p.nearest_mode < DPC_RESIZE_ROUND_PREFER_FLOOR ||
      p.nearest_mode > DPC_RESIZE_CEIL)
    return false;
  g.planes = x[0] * x[1];
  g.mode = p.mode;
  g.coordinates = p.coordinates;
  g.rounding = p.nearest_mode;
  int64_t pad = kMaxAxes - (rank - 2);
  for (int64_t a = 0; a < kMaxAxes; ++a) {
    if (a < pad) {
      g.axis[a] = {1, 1, 1.0f, true};
      continue;
    }
    int64_t in = x[2 + a - pad], out = y[2 + a - pad];
    int64_t num = p.scale_num[a - pad], den = p.scale_den[a - pad];
    if (in < 1 || out < 1 || num < 0 || den < 1)
      return false;
    double scale = double(num) / double(den);
    g.axis[a] = makeAxis(in, out, scale, p.coordinates);
  }
  return true;
}

/// Where output `o` of an axis lies in input coordinates (ONNX's
/// coordinate_transformation_mode).
DPC_RESIZE float sourceCoordinate(const Axis &a, int64_t o,
                                  int64_t coordinates) {
  float x = float(o);
  switch (coordinates) {
  case DPC_RESIZE_PYTORCH_HALF_PIXEL:
    return a.single ? 0.0f : (x + 0.5f) * a.ratio - 0.5f;
  case DPC_RESIZE_ALIGN_CORNERS:
  case DPC_RESIZE_ASYMMETRIC:
    return x * a.ratio;
  case DPC_RESIZE_TF_HALF_PIXEL_FOR_NN:
    return (x + 0.5f) * a.ratio;
  default:
    return (x + 0.5f) * a.ratio - 0.5f;
  }
}

/// The input elements output `o` of an axis reads, first <= second, with
/// their weights (nearest: one element, second == first, w1 == 0).
struct Taps {
  int64_t first, second;
  float w0, w1;
};

DPC_RESIZE int64_t clampIndex(int64_t i, int64_t n) {
  return i < 0 ? 0 : (i >= n ? n - 1 : i);
}

DPC_RESIZE Taps taps(const Geometry &g, const Axis &a, int64_t o) {
  if (a.in == 1)
    return {0, 0, 1.0f, 0.0f};
  float x = sourceCoordinate(a, o, g.coordinates);
  if (g.mode == DPC_RESIZE_NEAREST) {
    float f = floorf(x), r;
    switch (g.rounding) {
    case DPC_RESIZE_FLOOR:
      r = f;
      break;
    case DPC_RESIZE_CEIL:
      r = ceilf(x);
      break;
    case DPC_RESIZE_ROUND_PREFER_CEIL:
      r = floorf(x + 0.5f);
      break;
    default:
      r = x - f == 0.5f ? f : floorf(x + 0.5f);
    }
    int64_t i = clampIndex(int64_t(r), a.in);
    return {i, i, 1.0f, 0.0f};
  }
  // Linear, as PyTorch's bilinear: the coordinate clamped into the input,
  // the element at or below it and the next one (itself at the last).
  x = x < 0.0f ? 0.0f : x;
  int64_t i = clampIndex(int64_t(x), a.in);
  int64_t next = i + 1 < a.in ? i + 1 : i;
  float w1 = x - float(i);
  w1 = w1 > 1.0f ? 1.0f : w1;
  return {i, next, 1.0f - w1, w1};
}

/// The value of an output element that reads taps td, th and tw on its
/// three axes.
DPC_RESIZE float combine(const float *plane, const Geometry &g, const Taps &td,
                         const Taps &th, const Taps &tw) {
  const Axis &ah = g.axis[1], &aw = g.axis[2];
  auto row = [&](int64_t d, int64_t h) {
    const float *p = plane + (d * ah.in + h) * aw.in;
    return tw.w1 == 0.0f ? p[tw.first]
                         : tw.w0 * p[tw.first] + tw.w1 * p[tw.second];
  };
  auto slab = [&](int64_t d) {
    return th.w1 == 0.0f ? row(d, th.first)
                         : th.w0 * row(d, th.first) + th.w1 * row(d, th.second);
  };
  return td.w1 == 0.0f ? slab(td.first)
                       : td.w0 * slab(td.first) + td.w1 * slab(td.second);
}

/// The value of output element `o` (row-major within its plane).
DPC_RESIZE float value(const float *plane, const Geometry &g, int64_t o) {
  const Axis &ad = g.axis[0], &ah = g.axis[1], &aw = g.axis[2];
  return combine(plane, g, taps(g, ad, o / (ah.out * aw.out)),
                 taps(g, ah, (o / aw.out) % ah.out), taps(g, aw, o % aw.out));
}

/// The weight with which taps `t` read input `i`.
DPC_RESIZE float weightOf(const Taps &t, int64_t i) {
  return (t.first == i ? t.w0 : 0.0f) + (t.second == i ? t.w1 : 0.0f);
}

/// The weight with which output `o` of an axis reads input `i`.
DPC_RESIZE float weight(const Geometry &g, const Axis &a, int64_t o,
                        int64_t i) {
  return weightOf(taps(g, a, o), i);
}

/// The outputs [lo, hi] of an axis whose taps can include input `i` (empty
/// when hi < lo): the first whose second tap reaches i and the last whose
/// first tap does not pass it, both by binary search.
DPC_RESIZE void readers(const Geometry &g, const Axis &a, int64_t i,
                        int64_t &lo, int64_t &hi) {
  int64_t l = 0, r = a.out;
  while (l < r) {
    int64_t m = l + (r - l) / 2;
    if (taps(g, a, m).second < i)
      l = m + 1;
    else
      r = m;
  }
  lo = l;
  l = 0;
  r = a.out;
  while (l < r) {
    int64_t m = l + (r - l) / 2;
    if (taps(g, a, m).first <= i)
      l = m + 1;
    else
      r = m;
  }
  hi = l - 1;
}

/// The taps and readers of every axis, computed where they are asked for.
/// The CPU kernel passes tables of them instead (the same values), which
/// spares every element its floors and binary searches.
struct ComputedTaps {
  const Geometry *g;
  DPC_RESIZE Taps at(int axis, int64_t o) const {
    return taps(*g, g->axis[axis], o);
  }
  DPC_RESIZE void readersOf(int axis, int64_t i, int64_t &lo,
                            int64_t &hi) const {
    readers(*g, g->axis[axis], i, lo, hi);
  }
};

/// The gradient of input element (id, ih, iw) of a plane: the sum of dy
/// over the outputs that read it, each times its weight, in the order of
/// the outputs. `source` gives the taps and readers (ComputedTaps or a
/// table of the same).
template <typename Source>
DPC_RESIZE float gradientAt(const float *dyPlane, const Geometry &g,
                            const Source &source, int64_t id, int64_t ih,
                            int64_t iw) {
  const Axis &ah = g.axis[1], &aw = g.axis[2];
  int64_t dLo, dHi, hLo, hHi, wLo, wHi;
  source.readersOf(0, id, dLo, dHi);
  source.readersOf(1, ih, hLo, hHi);
  source.readersOf(2, iw, wLo, wHi);
  float sum = 0.0f;
  for (int64_t od = dLo; od <= dHi; ++od) {
    float wd = weightOf(source.at(0, od), id);
    for (int64_t oh = hLo; oh <= hHi && wd != 0.0f; ++oh) {
      float wdh = wd * weightOf(source.at(1, oh), ih);
      const float *row = dyPlane + (od * ah.out + oh) * aw.out;
      for (int64_t ow = wLo; ow <= wHi && wdh != 0.0f; ++ow)
        sum += wdh * weightOf(source.at(2, ow), iw) * row[ow];
    }
  }
  return sum;
}

/// The gradient of input element `i` (row-major within its plane).
DPC_RESIZE float gradient(const float *dyPlane, const Geometry &g, int64_t i) {
  const Axis &ah = g.axis[1], &aw = g.axis[2];
  return gradientAt(dyPlane, g, ComputedTaps{&g}, i / (ah.in * aw.in),
                    (i / aw.in) % ah.in, i % aw.in);
}

/// Elements of one plane of the input and of the output.
DPC_RESIZE int64_t inputPlane(const Geometry &g) {
  return g.axis[0].in * g.axis[1].in * g.axis[2].in;
}
DPC_RESIZE int64_t outputPlane(const Geometry &g) {
  return g.axis[0].out * g.axis[1].out * g.axis[2].out;
}

} // namespace dpc::resize

#endif // DPC_BACKENDS_COMMON_RESIZE_H
