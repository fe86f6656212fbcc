//===- ChannelSums.cpp - Per-channel sums in lanes of double --------------===//
//
// The row loops of batch normalization and of the bias gradient
// (Normalization.cpp, Convolution.cpp), declared and documented in
// Internal.h: sums over a channel's rows in 16 lanes of double, the affine
// map y = x * a + b, and batch normalization's input gradient, on plain
// rows and on channel-blocked (nChw16c) ones. Each is built for AVX-512 and
// the baseline (DPC_AVX512_CLONES) and the loader picks, so callers reach
// them through the loader's choice and never inline them.
//
//===----------------------------------------------------------------------===//

#include "backends/cpu/runtime/Internal.h"

#include "dpc/support/TargetClones.h"

#include <cstring>

namespace dpc::cpu {
namespace {

inline __attribute__((always_inline)) Doubles8 widen8(const float *p) {
  Floats8 f;
  std::memcpy(&f, p, sizeof f);
  return __builtin_convertvector(f, Doubles8);
}

typedef float Floats16 __attribute__((vector_size(64)));

inline __attribute__((always_inline)) Floats16 load16(const float *p) {
  Floats16 v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

} // namespace

DPC_AVX512_CLONES void addRow(LaneSums &acc, const float *p, int64_t n) {
  Doubles8 a = acc.lane[0], b = acc.lane[1];
  int64_t j = 0;
  for (; j + kLanes <= n; j += kLanes) {
    a += widen8(p + j);
    b += widen8(p + j + 8);
  }
  acc.lane[0] = a;
  acc.lane[1] = b;
  for (int64_t l = 0; j + l < n; ++l)
    acc.add(l, p[j + l]);
}

DPC_AVX512_CLONES void addSquaredDeviations(LaneSums &acc, const float *p,
                                            int64_t n, double mu) {
  Doubles8 a = acc.lane[0], b = acc.lane[1];
  int64_t j = 0;
  for (; j + kLanes <= n; j += kLanes) {
    Doubles8 da = widen8(p + j) - mu, db = widen8(p + j + 8) - mu;
    a += da * da;
    b += db * db;
  }
  acc.lane[0] = a;
  acc.lane[1] = b;
  for (int64_t l = 0; j + l < n; ++l) {
    double d = double(p[j + l]) - mu;
    acc.add(l, d * d);
  }
}

DPC_AVX512_CLONES void addProductsOfDeviations(LaneSums &sumG, LaneSums &sumGD,
                                               const float *g, const float *x,
                                               int64_t n, double mu) {
  Doubles8 ga = sumG.lane[0], gb = sumG.lane[1];
  Doubles8 da = sumGD.lane[0], db = sumGD.lane[1];
  int64_t j = 0;
  for (; j + kLanes <= n; j += kLanes) {
    Doubles8 g0 = widen8(g + j), g1 = widen8(g + j + 8);
    ga += g0;
    gb += g1;
    da += g0 * (widen8(x + j) - mu);
    db += g1 * (widen8(x + j + 8) - mu);
  }
  sumG.lane[0] = ga;
  sumG.lane[1] = gb;
  sumGD.lane[0] = da;
  sumGD.lane[1] = db;
  for (int64_t l = 0; j + l < n; ++l) {
    double gv = g[j + l];
    sumG.add(l, gv);
    sumGD.add(l, gv * (double(x[j + l]) - mu));
  }
}

DPC_AVX512_CLONES void affineRow(const float *x, int64_t n, float a, float b,
                                 float *y) {
  for (int64_t j = 0; j < n; ++j)
    y[j] = x[j] * a + b;
}

DPC_AVX512_CLONES void batchNormGradRow(const float *dy, const float *x,
                                        int64_t n, double mu, double invStd,
                                        double a, double meanDy,
                                        double meanDyXhat, float *dx) {
  for (int64_t j = 0; j < n; ++j) {
    double xhat = (double(x[j]) - mu) * invStd;
    dx[j] = float(a * (double(dy[j]) - meanDy - xhat * meanDyXhat));
  }
}

DPC_AVX512_CLONES void addBlockRow(BlockLanes &acc, const float *p, int64_t s) {
  Doubles8 lo = acc.lo, hi = acc.hi;
  for (int64_t j = 0; j < s; ++j, p += kLanes) {
    lo += widen8(p);
    hi += widen8(p + 8);
  }
  acc.lo = lo;
  acc.hi = hi;
}

DPC_AVX512_CLONES void addBlockSquaredDeviations(BlockLanes &acc,
                                                 const float *p, int64_t s,
                                                 const BlockLanes &mu) {
  Doubles8 lo = acc.lo, hi = acc.hi;
  for (int64_t j = 0; j < s; ++j, p += kLanes) {
    Doubles8 dl = widen8(p) - mu.lo, dh = widen8(p + 8) - mu.hi;
    lo += dl * dl;
    hi += dh * dh;
  }
  acc.lo = lo;
  acc.hi = hi;
}

DPC_AVX512_CLONES void addBlockProductsOfDeviations(BlockLanes &sumG,
                                                    BlockLanes &sumGD,
                                                    const float *g,
                                                    const float *x, int64_t s,
                                                    const BlockLanes &mu) {
  for (int64_t j = 0; j < s; ++j, g += kLanes, x += kLanes) {
    Doubles8 gl = widen8(g), gh = widen8(g + 8);
    sumG.lo += gl;
    sumG.hi += gh;
    sumGD.lo += gl * (widen8(x) - mu.lo);
    sumGD.hi += gh * (widen8(x + 8) - mu.hi);
  }
}

DPC_AVX512_CLONES void affineBlockRow(const float *x, int64_t s, const float *a,
                                      const float *b, float *y) {
  Floats16 va = load16(a), vb = load16(b);
  for (int64_t j = 0; j < s; ++j, x += kLanes, y += kLanes) {
    Floats16 v = load16(x) * va + vb;
    std::memcpy(y, &v, sizeof v);
  }
}

DPC_AVX512_CLONES void
batchNormGradBlockRow(const float *dy, const float *x, int64_t s,
                      const double *mu, const double *invStd, const double *a,
                      const double *meanDy, const double *meanDyXhat,
                      float *dx) {
  for (int64_t j = 0; j < s; ++j, dy += kLanes, x += kLanes, dx += kLanes)
    for (int64_t l = 0; l < kLanes; ++l) {
      double xhat = (double(x[l]) - mu[l]) * invStd[l];
      dx[l] = float(a[l] * (double(dy[l]) - meanDy[l] - xhat * meanDyXhat[l]));
    }
}

} // namespace dpc::cpu
