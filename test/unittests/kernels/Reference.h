//===- Reference.h - Plain references of the kernels of Abi.h ---*- C++ -*-===//
//
// What each kernel of include/dpc/runtime/Abi.h should compute, written
// once as direct loops in double precision on host vectors, for the kernel
// conformance suite (ConformanceTest.cpp, run on every target) and the
// target-specific suites beside it. Nothing here calls a kernel; the
// elementwise functions' references are in UnaryReferences.h.
//
// Also the comparisons the suites use (Tolerance, expectClose) and their
// random inputs.
//
//===----------------------------------------------------------------------===//

#ifndef DPC_TEST_UNITTESTS_KERNELS_REFERENCE_H
#define DPC_TEST_UNITTESTS_KERNELS_REFERENCE_H

#include "dpc/runtime/Abi.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <ostream>
#include <random>
#include <utility>
#include <vector>

namespace dpc::testing {

using Shape = std::vector<int64_t>;
using Floats = std::vector<float>;
using Doubles = std::vector<double>;

inline size_t countOf(const Shape &shape) {
  size_t n = 1;
  for (int64_t d : shape)
    n *= size_t(d);
  return n;
}

/// `n` floats uniform in [lo, hi) from `seed`, the same on every standard
/// library.
inline Floats randomFloats(size_t n, uint32_t seed, float lo = -1.0f,
                           float hi = 1.0f) {
  std::mt19937 gen(seed);
  Floats v(n);
  for (float &x : v)
    x = lo + (hi - lo) * float(gen() >> 8) * 0x1p-24f;
  return v;
}

inline Doubles toDoubles(const Floats &v) { return {v.begin(), v.end()}; }

inline double dot(const Floats &a, const Floats &b) {
  double sum = 0;
  for (size_t i = 0; i < a.size(); ++i)
    sum += double(a[i]) * b[i];
  return sum;
}

/// The derivative of `loss()` by v[i], by central differences of step h.
template <typename Loss>
double centralDifference(Doubles &v, size_t i, Loss loss, double h = 1e-6) {
  double keep = v[i];
  v[i] = keep + h;
  double up = loss();
  v[i] = keep - h;
  double down = loss();
  v[i] = keep;
  return (up - down) / (2 * h);
}

//===----------------------------------------------------------------------===//
// Comparisons
//===----------------------------------------------------------------------===//

/// How far a kernel's result may be from its double reference e.
struct Tolerance {
  enum Kind {
    /// Bit for bit.
    Exact,
    /// |a - e| <= tol * max(1, |e|): relative for large values, absolute
    /// near zero (sums of mixed signs cancel).
    Relative,
    /// |a - e| <= tol * max(1, sum of the |terms| of e), the usual bound for
    /// a long float32 sum whose rounding depends on the order it is summed in
    /// (oneDNN's blocked layouts sum differently from a loop).
    RelativeToSums,
    /// |a - e| <= tol * (|e| + the RMS of all of e) + 1e-7: relative to the
    /// result's scale, for kernels whose reductions run in parallel.
    RelativeToRms,
  };
  Kind kind;
  double tol = 0;
};

inline std::ostream &operator<<(std::ostream &os, const Tolerance &t) {
  static const char *names[] = {"exact", "relative", "relative to the sums",
                                "relative to the RMS"};
  return os << names[t.kind] << " " << t.tol;
}

/// Checks every element of `actual` against `expected` (RelativeToSums needs
/// `absSums`, the sum of the |terms| of each element); reports the first five
/// that are off and how many.
inline void expectClose(const Floats &actual, const Doubles &expected,
                        Tolerance tolerance, const Doubles *absSums = nullptr) {
  ASSERT_EQ(actual.size(), expected.size());
  ASSERT_TRUE(tolerance.kind != Tolerance::RelativeToSums || absSums);
  double rms = 0;
  for (double e : expected)
    rms += e * e;
  rms = std::sqrt(rms / double(std::max<size_t>(1, expected.size())));
  size_t bad = 0;
  for (size_t i = 0; i < actual.size(); ++i) {
    double a = actual[i], e = expected[i], bound = 0;
    switch (tolerance.kind) {
    case Tolerance::Exact:
      break;
    case Tolerance::Relative:
      bound = tolerance.tol * std::max(1.0, std::abs(e));
      break;
    case Tolerance::RelativeToSums:
      bound = tolerance.tol * std::max(1.0, (*absSums)[i]);
      break;
    case Tolerance::RelativeToRms:
      bound = tolerance.tol * (std::abs(e) + rms) + 1e-7;
      break;
    }
    bool ok = tolerance.kind == Tolerance::Exact
                  ? a == e || (std::isnan(a) && std::isnan(e))
                  : std::abs(a - e) <= bound;
    if (!ok && ++bad <= 5)
      ADD_FAILURE() << "element " << i << ": got " << actual[i] << ", want "
                    << e << " (" << tolerance << ")";
  }
  EXPECT_EQ(bad, 0u) << "of " << actual.size() << " elements";
}

//===----------------------------------------------------------------------===//
// Convolution
//===----------------------------------------------------------------------===//

/// One conv2d: NCHW input, OIHW weight and Abi.h's dpc_conv_params (stride
/// h/w, pad top/left/bottom/right, dilation h/w, groups, layouts).
struct ConvConfig {
  const char *name;
  Shape x, w;
  dpc_conv_params params;

  int64_t groups() const { return params.groups; }
  Shape y() const {
    const dpc_conv_params &p = params;
    int64_t kh = (w[2] - 1) * p.dilation_h + 1;
    int64_t kw = (w[3] - 1) * p.dilation_w + 1;
    return {x[0], w[0], (x[2] + p.pad_top + p.pad_bottom - kh) / p.stride_h + 1,
            (x[3] + p.pad_left + p.pad_right - kw) / p.stride_w + 1};
  }

  /// Calls f(yIndex, xIndex, wIndex) for every product of a direct
  /// convolution whose input element lies inside the input.
  template <typename F> void forEachTap(F f) const {
    const dpc_conv_params &p = params;
    Shape ys = y();
    int64_t cPerGroup = w[1], oPerGroup = w[0] / groups();
    for (int64_t n = 0; n < ys[0]; ++n)
      for (int64_t o = 0; o < ys[1]; ++o)
        for (int64_t oh = 0; oh < ys[2]; ++oh)
          for (int64_t ow = 0; ow < ys[3]; ++ow)
            for (int64_t ci = 0; ci < cPerGroup; ++ci)
              for (int64_t i = 0; i < w[2]; ++i)
                for (int64_t j = 0; j < w[3]; ++j) {
                  int64_t ih = oh * p.stride_h - p.pad_top + i * p.dilation_h;
                  int64_t iw = ow * p.stride_w - p.pad_left + j * p.dilation_w;
                  if (ih < 0 || ih >= x[2] || iw < 0 || iw >= x[3])
                    continue;
                  int64_t c = o / oPerGroup * cPerGroup + ci;
                  f(size_t(((n * ys[1] + o) * ys[2] + oh) * ys[3] + ow),
                    size_t(((n * x[1] + c) * x[2] + ih) * x[3] + iw),
                    size_t(((o * cPerGroup + ci) * w[2] + i) * w[3] + j));
                }
  }
};
inline void PrintTo(const ConvConfig &c, std::ostream *os) { *os << c.name; }

/// The channel of element i of an NCHW tensor of `shape`.
inline size_t channelOf(size_t i, const Shape &shape) {
  return (i / size_t(shape[2] * shape[3])) % size_t(shape[1]);
}

/// y = conv(x, w) + bias (bias empty: none).
inline Doubles convForward(const ConvConfig &cfg, const Floats &x,
                           const Floats &w, const Floats &bias) {
  Shape ys = cfg.y();
  Doubles y(countOf(ys), 0.0);
  if (!bias.empty())
    for (size_t i = 0; i < y.size(); ++i)
      y[i] = bias[channelOf(i, ys)];
  cfg.forEachTap(
      [&](size_t yi, size_t xi, size_t wi) { y[yi] += double(x[xi]) * w[wi]; });
  return y;
}

inline Doubles convGradInput(const ConvConfig &cfg, const Floats &dy,
                             const Floats &w) {
  Doubles dx(countOf(cfg.x), 0.0);
  cfg.forEachTap([&](size_t yi, size_t xi, size_t wi) {
    dx[xi] += double(dy[yi]) * w[wi];
  });
  return dx;
}

/// Each filter tap sums over the batch and every output position; `absSums`
/// receives the sums of the terms' magnitudes.
inline Doubles convGradFilter(const ConvConfig &cfg, const Floats &dy,
                              const Floats &x, Doubles *absSums = nullptr) {
  Doubles dw(countOf(cfg.w), 0.0), sums(dw.size(), 0.0);
  cfg.forEachTap([&](size_t yi, size_t xi, size_t wi) {
    double term = double(dy[yi]) * x[xi];
    dw[wi] += term;
    sums[wi] += std::abs(term);
  });
  if (absSums)
    *absSums = std::move(sums);
  return dw;
}

/// dy (N, C, H, W) summed over N, H and W.
inline Doubles convGradBias(const Floats &dy, const Shape &shape) {
  Doubles db(size_t(shape[1]), 0.0);
  for (size_t i = 0; i < dy.size(); ++i)
    db[channelOf(i, shape)] += dy[i];
  return db;
}

//===----------------------------------------------------------------------===//
// Matmul
//===----------------------------------------------------------------------===//

struct MatmulConfig {
  const char *name;
  int64_t batch, m, n, k;
  bool ta, tb;
  bool sharedA, sharedB; // stride 0: one matrix for every batch
  bool accumulate;

  int64_t aStride() const { return sharedA ? 0 : m * k; }
  int64_t bStride() const { return sharedB ? 0 : k * n; }
  size_t aCount() const { return size_t(sharedA ? m * k : batch * m * k); }
  size_t bCount() const { return size_t(sharedB ? k * n : batch * k * n); }
  size_t yCount() const { return size_t((accumulate ? 1 : batch) * m * n); }
};
inline void PrintTo(const MatmulConfig &c, std::ostream *os) { *os << c.name; }

/// The cases every matmul suite runs.
inline const MatmulConfig kMatmulShapes[] = {
    // Gemm with transB, as ONNX exports LeNet-5's layers.
    MatmulConfig{"GemmTransB", 1, 16, 120, 400, false, true, false, false,
                 false},
    MatmulConfig{"Plain", 1, 17, 13, 29, false, false, false, false, false},
    MatmulConfig{"TransposeA", 1, 17, 13, 29, true, false, false, false, false},
    MatmulConfig{"TransposeB", 1, 17, 13, 29, false, true, false, false, false},
    MatmulConfig{"TransposeBoth", 1, 17, 13, 29, true, true, false, false,
                 false},
    MatmulConfig{"Small", 1, 7, 5, 3, false, false, false, false, false},
    MatmulConfig{"SmallTransposeA", 1, 7, 5, 3, true, false, false, false,
                 false},
    MatmulConfig{"SmallTransposeBoth", 1, 7, 5, 3, true, true, false, false,
                 false},
    MatmulConfig{"Batched", 5, 8, 12, 7, false, false, false, false, false},
    MatmulConfig{"BatchedSmall", 4, 6, 5, 9, false, false, false, false, false},
    // A linear layer over a batched input: the weight is shared.
    MatmulConfig{"SharedB", 5, 8, 12, 7, false, true, false, true, false},
    MatmulConfig{"SharedBTransposeBoth", 4, 6, 5, 9, true, true, false, true,
                 false},
    MatmulConfig{"SharedA", 5, 8, 12, 7, false, false, true, false, false},
    MatmulConfig{"SharedATransposeB", 3, 6, 5, 9, false, true, true, false,
                 false},
    // The weight gradient of a shared weight, by every strategy: fold
    // into K, scale, chain, batch + sum.
    MatmulConfig{"AccumulateFoldK", 6, 7, 12, 8, true, false, false, false,
                 true},
    MatmulConfig{"AccumulateFoldKSmall", 5, 6, 4, 7, true, false, false, false,
                 true},
    MatmulConfig{"AccumulateScale", 6, 7, 12, 8, false, false, true, true,
                 true},
    MatmulConfig{"AccumulateScaleSmall", 3, 2, 3, 4, false, false, true, true,
                 true},
    MatmulConfig{"AccumulateChain", 3, 7, 12, 8, false, true, false, false,
                 true},
    MatmulConfig{"AccumulateBatchedSum", 9, 7, 12, 8, false, true, false, false,
                 true},
    MatmulConfig{"AccumulateSharedA", 9, 7, 12, 8, false, false, true, false,
                 true},
    // k = 0: zeros.
    MatmulConfig{"ZeroInner", 2, 3, 3, 0, false, false, false, false, false},
};

/// y[b] = op(a[b]) x op(b[b]), or their sum with `accumulate`; `absSums`
/// receives the sums of the products' magnitudes.
inline Doubles matmul(const MatmulConfig &c, const Floats &a, const Floats &b,
                      Doubles *absSums = nullptr) {
  Doubles y(c.yCount(), 0.0), sums(y.size(), 0.0);
  int64_t as = c.aStride(), bs = c.bStride();
  for (int64_t bi = 0; bi < c.batch; ++bi)
    for (int64_t i = 0; i < c.m; ++i)
      for (int64_t j = 0; j < c.n; ++j) {
        size_t out = size_t((c.accumulate ? 0 : bi) * c.m * c.n + i * c.n + j);
        for (int64_t l = 0; l < c.k; ++l) {
          double term =
              double(a[size_t(bi * as + (c.ta ? l * c.m + i : i * c.k + l))]) *
              b[size_t(bi * bs + (c.tb ? j * c.k + l : l * c.n + j))];
          y[out] += term;
          sums[out] += std::abs(term);
        }
      }
  if (absSums)
    *absSums = std::move(sums);
  return y;
}

//===----------------------------------------------------------------------===//
// Broadcasting, transpose, softmax
//===----------------------------------------------------------------------===//

/// The element of `narrow` (the rank of `full`, each dimension 1 or
/// `full`'s) that element `flat` of `full` reads under numpy broadcasting.
inline size_t broadcastIndex(size_t flat, const Shape &full,
                             const Shape &narrow) {
  size_t index = 0, stride = 1;
  for (size_t d = full.size(); d-- > 0;) {
    size_t coordinate = flat % size_t(full[d]);
    flat /= size_t(full[d]);
    if (narrow[d] != 1)
      index += coordinate * stride;
    stride *= size_t(narrow[d]);
  }
  return index;
}

/// The broadcast shape of two shapes of one rank.
inline Shape broadcastShape(const Shape &a, const Shape &b) {
  Shape y(a.size());
  for (size_t d = 0; d < a.size(); ++d)
    y[d] = std::max(a[d], b[d]);
  return y;
}

inline double binary(int64_t fn, double u, double v) {
  switch (fn) {
  case DPC_BINARY_ADD:
    return u + v;
  case DPC_BINARY_SUB:
    return u - v;
  case DPC_BINARY_MUL:
    return u * v;
  default:
    return u / v;
  }
}

/// scale * x (of `full`) summed over the dimensions where `narrow` is 1.
inline Doubles sumToShape(const Floats &x, const Shape &full,
                          const Shape &narrow, double scale) {
  Doubles y(countOf(narrow), 0.0);
  for (size_t i = 0; i < x.size(); ++i)
    y[broadcastIndex(i, full, narrow)] += scale * x[i];
  return y;
}

/// scale * u (of `narrow`) stretched to `full`.
inline Doubles broadcastTo(const Floats &u, const Shape &narrow,
                           const Shape &full, double scale) {
  Doubles y(countOf(full));
  for (size_t i = 0; i < y.size(); ++i)
    y[i] = scale * u[broadcastIndex(i, full, narrow)];
  return y;
}

/// The shape of x permuted: dimension i is x's perm[i].
inline Shape permuted(const Shape &shape, const Shape &perm) {
  Shape y(shape.size());
  for (size_t d = 0; d < shape.size(); ++d)
    y[d] = shape[size_t(perm[d])];
  return y;
}

inline Doubles transpose(const Floats &x, const Shape &shape,
                         const Shape &perm) {
  size_t rank = shape.size();
  Shape y = permuted(shape, perm), strides(rank, 1);
  for (size_t d = rank - 1; d-- > 0;)
    strides[d] = strides[d + 1] * shape[d + 1];
  Doubles out(x.size());
  for (size_t i = 0; i < out.size(); ++i) {
    // y's multi-index, each coordinate a step along x's dimension perm[d].
    size_t rest = i, offset = 0;
    for (size_t d = rank; d-- > 0;) {
      offset += (rest % size_t(y[d])) * size_t(strides[size_t(perm[d])]);
      rest /= size_t(y[d]);
    }
    out[i] = x[offset];
  }
  return out;
}

/// softmax (log_softmax with `log`) of x viewed as outer x n x inner along
/// n, and the input gradient for dy.
inline void softmax(const Floats &x, const Floats &dy, int64_t outer, int64_t n,
                    int64_t inner, bool log, Doubles &y, Doubles &dx) {
  y.assign(x.size(), 0.0);
  dx.assign(x.size(), 0.0);
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      auto at = [&](int64_t j) { return size_t((o * n + j) * inner + i); };
      double max = -INFINITY, sum = 0, dot = 0;
      for (int64_t j = 0; j < n; ++j)
        max = std::max(max, double(x[at(j)]));
      for (int64_t j = 0; j < n; ++j)
        sum += std::exp(x[at(j)] - max);
      for (int64_t j = 0; j < n; ++j) {
        double p = std::exp(x[at(j)] - max) / sum;
        y[at(j)] = log ? x[at(j)] - max - std::log(sum) : p;
        dot += log ? dy[at(j)] : dy[at(j)] * p;
      }
      for (int64_t j = 0; j < n; ++j) {
        double p = std::exp(x[at(j)] - max) / sum;
        dx[at(j)] = log ? dy[at(j)] - p * dot : p * (dy[at(j)] - dot);
      }
    }
}

//===----------------------------------------------------------------------===//
// Pooling
//===----------------------------------------------------------------------===//

/// One 2-d pooling: NCHW input, the window of max_pool2d (dpc_pool_params:
/// kernel h/w, stride h/w, pad top/left/bottom/right), and PyTorch's
/// ceil_mode.
struct PoolConfig {
  const char *name;
  Shape x;
  dpc_pool_params params;
  bool ceil = false;

  static int64_t outSize(int64_t in, int64_t k, int64_t s, int64_t p0,
                         int64_t p1, bool ceil) {
    int64_t span = in + p0 + p1 - k;
    int64_t out = (ceil ? (span + s - 1) / s : span / s) + 1;
    // PyTorch's rule: the last window must start inside the input or the
    // leading pad.
    if (ceil && (out - 1) * s >= in + p0)
      --out;
    return out;
  }
  Shape y() const {
    const dpc_pool_params &p = params;
    return {
        x[0], x[1],
        outSize(x[2], p.kernel_h, p.stride_h, p.pad_top, p.pad_bottom, ceil),
        outSize(x[3], p.kernel_w, p.stride_w, p.pad_left, p.pad_right, ceil)};
  }
  /// The avg_pool2d params: this window and count_include_pad.
  dpc_avg_pool_params avgParams(bool includePad) const {
    return {params, includePad};
  }
};
inline void PrintTo(const PoolConfig &c, std::ostream *os) { *os << c.name; }

/// Calls f(yIndex, inside, padded) for every window of pooling `c`: the
/// input elements it covers (indices into x, in row-major window order) and
/// how many of its taps lie within the padded input.
template <typename F> void forEachWindow(const PoolConfig &c, F f) {
  Shape ys = c.y();
  const dpc_pool_params &p = c.params;
  std::vector<size_t> inside;
  for (int64_t plane = 0; plane < ys[0] * ys[1]; ++plane)
    for (int64_t oh = 0; oh < ys[2]; ++oh)
      for (int64_t ow = 0; ow < ys[3]; ++ow) {
        inside.clear();
        int64_t padded = 0;
        for (int64_t i = 0; i < p.kernel_h; ++i)
          for (int64_t j = 0; j < p.kernel_w; ++j) {
            int64_t ih = oh * p.stride_h - p.pad_top + i;
            int64_t iw = ow * p.stride_w - p.pad_left + j;
            if (ih >= c.x[2] + p.pad_bottom || iw >= c.x[3] + p.pad_right)
              continue;
            ++padded;
            if (ih >= 0 && ih < c.x[2] && iw >= 0 && iw < c.x[3])
              inside.push_back(size_t((plane * c.x[2] + ih) * c.x[3] + iw));
          }
        f(size_t((plane * ys[2] + oh) * ys[3] + ow), inside, padded);
      }
}

/// Max pooling and its gradient for dy, routed as PyTorch's max_pool2d
/// routes it: to the first maximum of each window, except that a NaN
/// propagates and the window's last NaN takes the gradient (its loop keeps
/// `v > max || isnan(v)`).
inline void maxPool(const PoolConfig &c, const Floats &x, const Floats &dy,
                    Doubles &y, Doubles &dx) {
  y.assign(countOf(c.y()), 0.0);
  dx.assign(x.size(), 0.0);
  forEachWindow(c, [&](size_t yi, const std::vector<size_t> &inside, int64_t) {
    ASSERT_FALSE(inside.empty()) << "an empty window";
    size_t best = inside[0];
    bool sawNaN = false;
    for (size_t xi : inside) {
      if (std::isnan(x[xi])) {
        best = xi;
        sawNaN = true;
      } else if (!sawNaN && x[xi] > x[best]) {
        best = xi;
      }
    }
    y[yi] = x[best];
    dx[best] += dy[yi];
  });
}

/// Average pooling and its gradient for dy, with PyTorch's divisor: the
/// window clipped to the padded input (count_include_pad) or to the input.
inline void avgPool(const PoolConfig &c, const Floats &x, const Floats &dy,
                    bool includePad, Doubles &y, Doubles &dx) {
  y.assign(countOf(c.y()), 0.0);
  dx.assign(x.size(), 0.0);
  forEachWindow(
      c, [&](size_t yi, const std::vector<size_t> &inside, int64_t padded) {
        double divisor = includePad ? double(padded) : double(inside.size());
        double sum = 0;
        for (size_t xi : inside) {
          sum += x[xi];
          dx[xi] += dy[yi] / divisor;
        }
        y[yi] = sum / divisor;
      });
}

//===----------------------------------------------------------------------===//
// Casts
//===----------------------------------------------------------------------===//

/// dpc_cast's float to int64: truncated toward zero, NaN 0, saturated beyond
/// int64's range.
inline int64_t castToInt64(float x) {
  if (std::isnan(x))
    return 0;
  double t = std::trunc(double(x));
  if (t >= 9223372036854775808.0)
    return std::numeric_limits<int64_t>::max();
  if (t < -9223372036854775808.0)
    return std::numeric_limits<int64_t>::min();
  return int64_t(t);
}

//===----------------------------------------------------------------------===//
// Normalization
//===----------------------------------------------------------------------===//

/// The mean of channel k of x viewed as (n, c, s) and the sum of squared
/// deviations from it.
template <typename T>
std::pair<double, double> channelMoments(const std::vector<T> &x, int64_t n,
                                         int64_t c, int64_t s, int64_t k) {
  double mean = 0, squares = 0;
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < s; ++j)
      mean += x[size_t((i * c + k) * s + j)];
  mean /= double(n * s);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < s; ++j)
      squares += std::pow(x[size_t((i * c + k) * s + j)] - mean, 2);
  return {mean, squares};
}

/// Training-mode batch normalization of x (n, c, s), the statistics taken
/// from x itself.
inline Doubles batchNorm(const Doubles &x, const Doubles &scale,
                         const Doubles &bias, int64_t n, int64_t c, int64_t s,
                         double epsilon) {
  Doubles y(x.size());
  for (int64_t k = 0; k < c; ++k) {
    auto [mean, squares] = channelMoments(x, n, c, s, k);
    double invStd = 1 / std::sqrt(squares / double(n * s) + epsilon);
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < s; ++j) {
        size_t at = size_t((i * c + k) * s + j);
        y[at] = scale[size_t(k)] * (x[at] - mean) * invStd + bias[size_t(k)];
      }
  }
  return y;
}

/// The gradients of training-mode batch normalization for dy, in closed
/// form: dx, dscale (sum of dy * xhat) and dbias (sum of dy) per channel.
inline void batchNormGrads(const Floats &x, const Floats &dy,
                           const Floats &scale, int64_t n, int64_t c, int64_t s,
                           double epsilon, Doubles &dx, Doubles &dscale,
                           Doubles &dbias) {
  double m = double(n * s);
  dx.assign(x.size(), 0.0);
  dscale.assign(size_t(c), 0.0);
  dbias.assign(size_t(c), 0.0);
  auto at = [&](int64_t i, int64_t k, int64_t j) {
    return size_t((i * c + k) * s + j);
  };
  for (int64_t k = 0; k < c; ++k) {
    auto [mean, squares] = channelMoments(x, n, c, s, k);
    double invStd = 1 / std::sqrt(squares / m + epsilon);
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < s; ++j) {
        double xhat = (x[at(i, k, j)] - mean) * invStd;
        dbias[size_t(k)] += dy[at(i, k, j)];
        dscale[size_t(k)] += dy[at(i, k, j)] * xhat;
      }
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < s; ++j) {
        double xhat = (x[at(i, k, j)] - mean) * invStd;
        dx[at(i, k, j)] = scale[size_t(k)] * invStd *
                          (dy[at(i, k, j)] - dbias[size_t(k)] / m -
                           xhat * dscale[size_t(k)] / m);
      }
  }
}

/// Layer normalization of x viewed as rows x size; an empty scale or bias
/// is absent (1 and 0).
inline Doubles layerNorm(const Doubles &x, const Doubles &scale,
                         const Doubles &bias, int64_t rows, int64_t size,
                         double epsilon) {
  Doubles y(x.size());
  for (int64_t r = 0; r < rows; ++r) {
    double mean = 0, squares = 0;
    for (int64_t j = 0; j < size; ++j)
      mean += x[size_t(r * size + j)];
    mean /= double(size);
    for (int64_t j = 0; j < size; ++j)
      squares += std::pow(x[size_t(r * size + j)] - mean, 2);
    double invStd = 1 / std::sqrt(squares / double(size) + epsilon);
    for (int64_t j = 0; j < size; ++j) {
      size_t at = size_t(r * size + j);
      y[at] = (x[at] - mean) * invStd;
      if (!scale.empty())
        y[at] *= scale[size_t(j)];
      if (!bias.empty())
        y[at] += bias[size_t(j)];
    }
  }
  return y;
}

//===----------------------------------------------------------------------===//
// LSTM
//===----------------------------------------------------------------------===//

struct LstmSizes {
  int64_t steps = 3, batch = 2, input = 3, hidden = 2;
};

/// The LSTM of dpc_lstm: the states T x B x 6H (h, c, i, o, f, g).
inline Doubles lstm(const LstmSizes &n, const Doubles &x, const Doubles &w,
                    const Doubles &r, const Doubles &bias, const Doubles &h0,
                    const Doubles &c0) {
  int64_t H = n.hidden, B = n.batch, I = n.input;
  Doubles states(size_t(n.steps * B * 6 * H));
  Doubles h = h0, c = c0;
  auto sigmoid = [](double v) { return 1 / (1 + std::exp(-v)); };
  for (int64_t t = 0; t < n.steps; ++t)
    for (int64_t b = 0; b < B; ++b) {
      double *s = &states[size_t((t * B + b) * 6 * H)];
      Doubles z(size_t(4 * H));
      for (int64_t g = 0; g < 4 * H; ++g) {
        double sum = bias[size_t(g)] + bias[size_t(4 * H + g)];
        for (int64_t k = 0; k < I; ++k)
          sum += x[size_t((t * B + b) * I + k)] * w[size_t(g * I + k)];
        for (int64_t k = 0; k < H; ++k)
          sum += h[size_t(b * H + k)] * r[size_t(g * H + k)];
        z[size_t(g)] = sum;
      }
      for (int64_t j = 0; j < H; ++j) {
        double i = sigmoid(z[size_t(j)]), o = sigmoid(z[size_t(H + j)]),
               f = sigmoid(z[size_t(2 * H + j)]),
               g = std::tanh(z[size_t(3 * H + j)]);
        double cell = f * c[size_t(b * H + j)] + i * g;
        s[j] = o * std::tanh(cell);
        s[H + j] = cell;
        s[2 * H + j] = i;
        s[3 * H + j] = o;
        s[4 * H + j] = f;
        s[5 * H + j] = g;
      }
      for (int64_t j = 0; j < H; ++j) {
        h[size_t(b * H + j)] = s[j];
        c[size_t(b * H + j)] = s[H + j];
      }
    }
  return states;
}

//===----------------------------------------------------------------------===//
// Losses, gather, optimizers
//===----------------------------------------------------------------------===//

/// No label is ignored.
constexpr int64_t kNoIgnoredLabel = std::numeric_limits<int64_t>::min();

/// scale * sum over the rows not labelled `ignore` of -log softmax(row)[label]
/// (logits n x c), and its gradient scale * (softmax - onehot) into `grad`
/// (0 on ignored rows). With `smoothing` e, the target of each row is
/// (1 - e) * onehot + e / c, whose cross-entropy with softmax(row) is the
/// loss (torch's label_smoothing).
inline double softmaxCrossEntropy(const Floats &logits,
                                  const std::vector<int64_t> &labels, int64_t n,
                                  int64_t c, int64_t ignore, double scale,
                                  Doubles &grad, double smoothing = 0) {
  double total = 0;
  grad.assign(logits.size(), 0.0);
  for (int64_t i = 0; i < n; ++i) {
    int64_t label = labels[size_t(i)];
    if (label == ignore)
      continue;
    const float *row = logits.data() + i * c;
    double m = *std::max_element(row, row + c), sum = 0;
    for (int64_t j = 0; j < c; ++j)
      sum += std::exp(double(row[j]) - m);
    for (int64_t j = 0; j < c; ++j) {
      double target = (1 - smoothing) * (j == label) + smoothing / double(c);
      double logP = double(row[j]) - m - std::log(sum);
      total -= target * logP;
      grad[size_t(i * c + j)] = scale * (std::exp(logP) - target);
    }
  }
  return scale * total;
}

/// scale * sum (prediction - target)^2 and its gradient into `grad`.
inline double mseLoss(const Floats &prediction, const Floats &target,
                      double scale, Doubles &grad) {
  double total = 0;
  grad.assign(prediction.size(), 0.0);
  for (size_t i = 0; i < prediction.size(); ++i) {
    double d = double(prediction[i]) - target[i];
    total += d * d;
    grad[i] = 2.0 * scale * d;
  }
  return scale * total;
}

/// The table row an embedding index reads (negative: from the end).
inline int64_t gatherRow(int64_t index, int64_t rows) {
  return index < 0 ? index + rows : index;
}

/// torch.optim.SGD (dampening 0, no Nesterov) on p and its momentum buffer
/// v from the gradient g.
inline void sgdStep(Doubles &p, Doubles &v, const Doubles &g, double lr,
                    double momentum, double weightDecay) {
  for (size_t i = 0; i < p.size(); ++i) {
    double d = g[i] + weightDecay * p[i];
    if (momentum != 0) {
      v[i] = momentum * v[i] + d;
      d = v[i];
    }
    p[i] -= lr * d;
  }
}

/// torch.optim.Adam (no AMSGrad) as update number t, in textbook form.
inline void adamStep(Doubles &p, Doubles &m, Doubles &v, const Doubles &g,
                     double lr, double beta1, double beta2, double eps,
                     double weightDecay, int t) {
  double c1 = 1 - std::pow(beta1, t), c2 = 1 - std::pow(beta2, t);
  for (size_t i = 0; i < p.size(); ++i) {
    double grad = g[i] + weightDecay * p[i];
    m[i] = beta1 * m[i] + (1 - beta1) * grad;
    v[i] = beta2 * v[i] + (1 - beta2) * grad * grad;
    p[i] -= lr * (m[i] / c1) / (std::sqrt(v[i] / c2) + eps);
  }
}

//===----------------------------------------------------------------------===//
// Resize
//===----------------------------------------------------------------------===//

/// A resize of x [N, C, spatial...] to y over the spatial axes, with the
/// codes of backends/common/Resize.h: mode 0 nearest, 1 linear;
/// coordinates 0 half_pixel, 1 pytorch_half_pixel, 2 align_corners,
/// 3 asymmetric, 4 tf_half_pixel_for_nn; rounding 0 round_prefer_floor,
/// 1 round_prefer_ceil, 2 floor, 3 ceil. A scale of 0: from the sizes.
struct ResizeConfig {
  const char *name;
  Shape x, y;
  int64_t mode, coordinates, rounding;
  std::vector<double> scales;
};
inline void PrintTo(const ResizeConfig &c, std::ostream *os) { *os << c.name; }

/// The input elements output o of one axis reads and their weights, by
/// ONNX's formulas in double (its reference: the coordinate, then nearest
/// rounding or the two neighbours, both clamped into the input).
inline std::vector<std::pair<int64_t, double>> resizeTaps(const ResizeConfig &c,
                                                          int64_t o, int64_t in,
                                                          int64_t out,
                                                          double scale) {
  double r = scale > 0 ? 1.0 / scale : double(in) / double(out), x;
  // ONNX's output length before rounding.
  double length = scale > 0 ? in * scale : double(out);
  switch (c.coordinates) {
  case 1:
    x = length > 1 ? (o + 0.5) * r - 0.5 : 0.0;
    break;
  case 2:
    x = length > 1 ? o * double(in - 1) / (length - 1) : 0.0;
    break;
  case 3:
    x = o * r;
    break;
  case 4:
    x = (o + 0.5) * r;
    break;
  default:
    x = (o + 0.5) * r - 0.5;
  }
  auto clampIndex = [&](double i) {
    return std::min<int64_t>(std::max<int64_t>(int64_t(i), 0), in - 1);
  };
  if (c.mode == 0) {
    double f = std::floor(x);
    double rounded[] = {x - f == 0.5 ? f : std::round(x), std::floor(x + 0.5),
                        f, std::ceil(x)};
    return {{clampIndex(rounded[c.rounding]), 1.0}};
  }
  double f = std::floor(x);
  double w = x - f;
  return {{clampIndex(f), 1.0 - w}, {clampIndex(f + 1), w}};
}

/// Calls f(yIndex, xIndex, weight) for every tap of every output of `c`.
template <typename F> void forEachResizeTap(const ResizeConfig &c, F f) {
  size_t axes = c.x.size() - 2;
  Shape in(3, 1), out(3, 1);
  std::vector<double> scales(3, 1.0);
  for (size_t a = 0; a < axes; ++a) {
    in[3 - axes + a] = c.x[2 + a];
    out[3 - axes + a] = c.y[2 + a];
    scales[3 - axes + a] = c.scales[a];
  }
  int64_t inPlane = in[0] * in[1] * in[2];
  int64_t outPlane = out[0] * out[1] * out[2];
  for (int64_t p = 0; p < c.x[0] * c.x[1]; ++p)
    for (int64_t od = 0; od < out[0]; ++od)
      for (auto [id, wd] : resizeTaps(c, od, in[0], out[0], scales[0]))
        for (int64_t oh = 0; oh < out[1]; ++oh)
          for (auto [ih, wh] : resizeTaps(c, oh, in[1], out[1], scales[1]))
            for (int64_t ow = 0; ow < out[2]; ++ow)
              for (auto [iw, ww] : resizeTaps(c, ow, in[2], out[2], scales[2]))
                f(size_t(p * outPlane + (od * out[1] + oh) * out[2] + ow),
                  size_t(p * inPlane + (id * in[1] + ih) * in[2] + iw),
                  wd * wh * ww);
}

inline Doubles resize(const ResizeConfig &c, const Doubles &x) {
  Doubles y(countOf(c.y), 0.0);
  forEachResizeTap(c,
                   [&](size_t yi, size_t xi, double w) { y[yi] += w * x[xi]; });
  return y;
}

/// The gradient: each dy scattered back to the elements its output read.
inline Doubles resizeGrad(const ResizeConfig &c, const Floats &dy) {
  Doubles dx(countOf(c.x), 0.0);
  forEachResizeTap(
      c, [&](size_t yi, size_t xi, double w) { dx[xi] += w * dy[yi]; });
  return dx;
}

} // namespace dpc::testing

#endif // DPC_TEST_UNITTESTS_KERNELS_REFERENCE_H
