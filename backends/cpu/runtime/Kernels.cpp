//===- Kernels.cpp - CPU kernels of the runtime C ABI ---------------------===//
//
// The kernels generated CPU code calls (declared in dpc/runtime/Abi.h).
// Convolutions go to oneDNN and matrix products to its sgemm; the rest are
// plain loops, which the compiler vectorizes well enough for elementwise work
// and which let max pooling follow PyTorch's first-maximum rule exactly.
// Loops over independent outputs (elements, rows, channels, planes) run on
// the kernel threads oneDNN uses too (OpenMP, OMP_NUM_THREADS), each output
// computed by one thread in the serial order, so results do not depend on
// the thread count; reductions across outputs stay on one thread.
//
// Generated code has no unwind tables and no way to handle an error, and a
// bad shape here is a compiler bug, so a kernel that is handed inconsistent
// shapes prints what is wrong and aborts the process; mpirun then stops the
// other ranks.
//
//===----------------------------------------------------------------------===//

#include "dpc/runtime/Abi.h"
#include "dpc/runtime/Bf16.h"
#include "dpc/runtime/ParamEpochs.h"
#include "dpc/support/TargetClones.h"

#include "backends/common/Box.h"
#include "backends/common/ElementwiseMath.h"
#include "backends/common/Random.h"

#include <dnnl.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <vector>

namespace {

[[noreturn]] void fail(const char *kernel, const std::string &message) {
  std::fprintf(stderr, "error: %s: %s\n", kernel, message.c_str());
  std::fflush(stderr);
  std::abort();
}

/// Work, in elements touched, below which a loop stays on the calling
/// thread: waking the other kernel threads costs a few microseconds, about
/// what one thread needs for this many elementwise updates.
constexpr int64_t kParallelWork = int64_t(1) << 15;

/// Runs body(i) for every i in [0, n), on the kernel threads when `work`
/// (the elements the whole loop touches) pays for it. Every i is handled by
/// exactly one thread, so a body that writes only outputs of its own i gives
/// bitwise the serial result.
template <typename Body> void parallelFor(int64_t n, int64_t work, Body body) {
#pragma omp parallel for schedule(static) if (n > 1 && work >= kParallelWork)
  for (int64_t i = 0; i < n; ++i)
    body(i);
}

/// Runs body(begin, end) over [0, count) in contiguous chunks (long enough
/// to vectorize), on the kernel threads when count pays for it.
template <typename Body> void parallelChunks(int64_t count, Body body) {
  constexpr int64_t kChunk = int64_t(1) << 13;
  int64_t chunks = (count + kChunk - 1) / kChunk;
  parallelFor(chunks, count, [&](int64_t c) {
    body(c * kChunk, std::min(count, (c + 1) * kChunk));
  });
}

std::string shapeText(const int64_t *shape, int rank) {
  std::string s = "[";
  for (int k = 0; k < rank; ++k)
    s += (k ? "," : "") + std::to_string(shape[k]);
  return s + "]";
}

/// Fails unless `block` is 1 (plain) or DPC_CHANNEL_BLOCK with `c` a
/// multiple of it.
void checkChannelBlock(const char *kernel, int64_t c, int64_t block) {
  if (block == 1 || (block == DPC_CHANNEL_BLOCK && c % block == 0))
    return;
  fail(kernel, "channel block " + std::to_string(block) + " for " +
                   std::to_string(c) + " channels");
}

//===----------------------------------------------------------------------===//
// Per-channel reductions
//===----------------------------------------------------------------------===//

// The per-channel sums of batch normalization and of a bias gradient
// accumulate in double, over 16 independent lanes (two vectors of 8): one
// running sum is a chain of dependent adds, an add's latency per element.
// Element j of a row goes to lane j mod 16, so a channel's sums are the same
// bits whatever the thread count. The row loops are built twice, for
// AVX-512 and the baseline, and the loader picks.
typedef float Floats8 __attribute__((vector_size(32)));
typedef double Doubles8 __attribute__((vector_size(64)));
constexpr int64_t kLanes = 16;

inline __attribute__((always_inline)) Doubles8 widen8(const float *p) {
  Floats8 f;
  std::memcpy(&f, p, sizeof f);
  return __builtin_convertvector(f, Doubles8);
}

/// Sums of one channel, in kLanes partial sums.
struct LaneSums {
  Doubles8 lane[2] = {};
  double total() const {
    double sum = 0;
    for (const Doubles8 &v : lane)
      for (int l = 0; l < 8; ++l)
        sum += v[l];
    return sum;
  }
  void add(int64_t l, double v) { lane[l / 8][l % 8] += v; }
};

/// acc += p[0, n).
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

/// acc += (p[j] - mu)^2 over [0, n).
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

/// sumG += g[j] and sumGD += g[j] * (x[j] - mu) over [0, n).
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

/// y = x * a + b over [0, n).
DPC_AVX512_CLONES void affineRow(const float *x, int64_t n, float a, float b,
                                 float *y) {
  for (int64_t j = 0; j < n; ++j)
    y[j] = x[j] * a + b;
}

/// Batch normalization's input gradient over one row, in double:
/// dx = a * (dy - meanDy - xhat * meanDyXhat), xhat = (x - mu) * invStd.
DPC_AVX512_CLONES void batchNormGradRow(const float *dy, const float *x,
                                        int64_t n, double mu, double invStd,
                                        double a, double meanDy,
                                        double meanDyXhat, float *dx) {
  for (int64_t j = 0; j < n; ++j) {
    double xhat = (double(x[j]) - mu) * invStd;
    dx[j] = float(a * (double(dy[j]) - meanDy - xhat * meanDyXhat));
  }
}

// Channel-blocked (nChw16c) activations: one image's block of 16 channels
// is s vectors of 16, one lane per channel, so a block's per-channel sums
// and updates run on the lanes directly. A channel's values are summed in
// order over n and s, each on its own lane.
static_assert(DPC_CHANNEL_BLOCK == kLanes, "a channel block is one lane set");
typedef float Floats16 __attribute__((vector_size(64)));

inline __attribute__((always_inline)) Floats16 load16(const float *p) {
  Floats16 v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

/// The 16 channels of a block, one lane each, in double.
struct BlockLanes {
  Doubles8 lo = {}, hi = {};
  double operator[](int64_t l) const { return l < 8 ? lo[l] : hi[l - 8]; }
};

/// One lane per channel of `values` (16 doubles).
inline BlockLanes blockLanes(const double *values) {
  BlockLanes v;
  for (int l = 0; l < 8; ++l) {
    v.lo[l] = values[l];
    v.hi[l] = values[l + 8];
  }
  return v;
}

/// acc += the s vectors at p.
DPC_AVX512_CLONES void addBlockRow(BlockLanes &acc, const float *p, int64_t s) {
  Doubles8 lo = acc.lo, hi = acc.hi;
  for (int64_t j = 0; j < s; ++j, p += kLanes) {
    lo += widen8(p);
    hi += widen8(p + 8);
  }
  acc.lo = lo;
  acc.hi = hi;
}

/// The per-channel sums over n images of block cb of blocked x (`blocks`
/// blocks of s vectors per image).
BlockLanes blockSums(const float *x, int64_t n, int64_t blocks, int64_t cb,
                     int64_t s) {
  BlockLanes sum;
  for (int64_t i = 0; i < n; ++i)
    addBlockRow(sum, x + (i * blocks + cb) * s * kLanes, s);
  return sum;
}

/// acc += (p - mu)^2 over the s vectors at p.
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

/// sumG += g and sumGD += g * (x - mu) over the s vectors at g and x.
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

/// y = x * a + b over the s vectors at x, a and b (16 floats) one lane per
/// channel.
DPC_AVX512_CLONES void affineBlockRow(const float *x, int64_t s, const float *a,
                                      const float *b, float *y) {
  Floats16 va = load16(a), vb = load16(b);
  for (int64_t j = 0; j < s; ++j, x += kLanes, y += kLanes) {
    Floats16 v = load16(x) * va + vb;
    std::memcpy(y, &v, sizeof v);
  }
}

/// batchNormGradRow over the s vectors at dy and x, the coefficients one
/// lane per channel.
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

//===----------------------------------------------------------------------===//
// Convolution through oneDNN
//===----------------------------------------------------------------------===//

struct ConvGeometry {
  int64_t n, c, h, w; // input
  int64_t o, kh, kw;  // filter
  int64_t oh, ow;     // output
  int64_t sh, sw, pt, pl, pb, pr, dh, dw, groups;
  // Which activations the caller's buffers hold channel-blocked
  // (dpc_conv_layouts); the primitive does not depend on it.
  int64_t layouts;
};

ConvGeometry convGeometry(const char *kernel, const int64_t *x,
                          const int64_t *w, const int64_t *y,
                          const int64_t *p) {
  ConvGeometry g{x[0], x[1], x[2], x[3], w[0], w[2], w[3], y[2], y[3], p[0],
                 p[1], p[2], p[3], p[4], p[5], p[6], p[7], p[8], p[9]};
  std::string shapes = "input " + shapeText(x, 4) + ", filter " +
                       shapeText(w, 4) + ", output " + shapeText(y, 4);
  bool blockedX = g.layouts & DPC_CONV_BLOCKED_X;
  bool blockedY = g.layouts & DPC_CONV_BLOCKED_Y;
  if ((g.layouts & ~int64_t(DPC_CONV_BLOCKED_X | DPC_CONV_BLOCKED_Y |
                            DPC_CONV_ACCUMULATE_DW)) ||
      (blockedX && g.c % DPC_CHANNEL_BLOCK) ||
      (blockedY && g.o % DPC_CHANNEL_BLOCK))
    fail(kernel, shapes + ": bad layouts " + std::to_string(g.layouts));
  if (g.groups < 1 || g.c % g.groups || g.o % g.groups ||
      w[1] * g.groups != g.c)
    fail(kernel, shapes + ": filter channels do not match " +
                     std::to_string(g.groups) + " groups");
  if (g.sh < 1 || g.sw < 1 || g.dh < 1 || g.dw < 1 || g.pt < 0 || g.pl < 0 ||
      g.pb < 0 || g.pr < 0)
    fail(kernel, shapes + ": bad strides, dilations or pads");
  int64_t eh = (g.h + g.pt + g.pb - g.dh * (g.kh - 1) - 1) / g.sh + 1;
  int64_t ew = (g.w + g.pl + g.pr - g.dw * (g.kw - 1) - 1) / g.sw + 1;
  if (y[0] != g.n || y[1] != g.o || g.oh != eh || g.ow != ew)
    fail(kernel, shapes + ": the output should be [" + std::to_string(g.n) +
                     "," + std::to_string(g.o) + "," + std::to_string(eh) +
                     "," + std::to_string(ew) + "]");
  return g;
}

dnnl::engine &engine() {
  static dnnl::engine e(dnnl::engine::kind::cpu, 0);
  return e;
}

dnnl::stream &stream() {
  static dnnl::stream s(engine());
  return s;
}

using dt = dnnl::memory::data_type;
using tag = dnnl::memory::format_tag;
using dims = dnnl::memory::dims;

struct ConvDescs {
  dnnl::memory::desc src, weights, bias, dst;
  dims strides, dilates, padL, padR;
};

/// The descriptors of the caller's buffers: NCHW activations, or nChw16c
/// where g.layouts says, and OIHW filters.
ConvDescs convDescs(const ConvGeometry &g) {
  ConvDescs d;
  auto activation = [](bool blocked) {
    return blocked ? tag::nChw16c : tag::nchw;
  };
  d.src = {{g.n, g.c, g.h, g.w},
           dt::f32,
           activation(g.layouts & DPC_CONV_BLOCKED_X)};
  d.dst = {{g.n, g.o, g.oh, g.ow},
           dt::f32,
           activation(g.layouts & DPC_CONV_BLOCKED_Y)};
  // OIHW with O = G * (O/G) is goihw in memory.
  d.weights = g.groups == 1 ? dnnl::memory::desc({g.o, g.c, g.kh, g.kw},
                                                 dt::f32, tag::oihw)
                            : dnnl::memory::desc({g.groups, g.o / g.groups,
                                                  g.c / g.groups, g.kh, g.kw},
                                                 dt::f32, tag::goihw);
  d.bias = {{g.o}, dt::f32, tag::x};
  d.strides = {g.sh, g.sw};
  // oneDNN counts dilation from 0 (no dilation), PyTorch and ONNX from 1.
  d.dilates = {g.dh - 1, g.dw - 1};
  d.padL = {g.pt, g.pl};
  d.padR = {g.pb, g.pr};
  return d;
}

dnnl::convolution_forward::primitive_desc
forwardDesc(const ConvDescs &d, bool bias, dnnl::algorithm algorithm) {
  using fwd = dnnl::convolution_forward;
  auto desc =
      bias ? fwd::desc(dnnl::prop_kind::forward_training, algorithm, d.src,
                       d.weights, d.bias, d.dst, d.strides, d.dilates, d.padL,
                       d.padR)
           : fwd::desc(dnnl::prop_kind::forward_training, algorithm, d.src,
                       d.weights, d.dst, d.strides, d.dilates, d.padL, d.padR);
  return fwd::primitive_desc(desc, engine());
}

enum class ConvKind : int64_t { Forward, ForwardBias, Data, Weights };

/// How a convolution is computed: the direct kernels, or Winograd's
/// F(4x4, 3x3) (the _winograd ABI kernels, f32 only; select-conv-algorithm
/// gives them the 3x3, stride-1 layers where they pay).
enum class ConvAlgorithm : int64_t { Direct, Winograd };

/// What a convolution or matrix product reads its operands as. Bf16 reads
/// the inputs (source, weights, output gradient) as bfloat16 and writes
/// float32, accumulated in float32 by oneDNN: the master weights and every
/// buffer of the ABI stay float32, converted on the way in.
enum class Precision : int64_t { F32, Bf16 };

/// A filter in a primitive's layout, reordered from the parameter buffer at
/// its address when that buffer had `epoch` (dpc/runtime/ParamEpochs.h).
struct ReorderedWeights {
  uint64_t epoch = 0;
  dnnl::memory memory;
};

/// A convolution primitive with the memory layouts it chose. Primitives are
/// created for `format_tag::any`, so oneDNN picks its blocked layouts and
/// direct (not im2col) kernels; the plain NCHW/OIHW buffers of the ABI are
/// reordered into those layouts and back, through buffers kept here. A
/// filter that is a parameter is reordered once per write of it (once a
/// step, not every microbatch), and kept by its address.
struct ConvPrimitive {
  dnnl::primitive prim;
  std::unordered_map<int, dnnl::memory::desc> layouts; // by DNNL_ARG_*
  std::unordered_map<int, dnnl::memory> staging;
  std::unordered_map<int, dnnl::reorder> reorders;
  std::unordered_map<const void *, ReorderedWeights> weights;
};

/// The primitive's descriptors for `kind`: in bf16, what the kind reads is
/// bf16 and what it writes f32 (forward: src, weights -> dst; data: diff_dst
/// (dst), weights -> diff_src (src); weights: src, diff_dst (dst) ->
/// diff_weights (weights)).
ConvDescs anyLayouts(const ConvDescs &plain, ConvKind kind,
                     Precision precision) {
  bool bf16 = precision == Precision::Bf16;
  auto type = [&](bool written) {
    return bf16 && !written ? dt::bf16 : dt::f32;
  };
  bool forward = kind == ConvKind::Forward || kind == ConvKind::ForwardBias;
  ConvDescs d = plain;
  d.src = {plain.src.dims(), type(kind == ConvKind::Data), tag::any};
  d.weights = {plain.weights.dims(), type(kind == ConvKind::Weights), tag::any};
  d.dst = {plain.dst.dims(), type(forward), tag::any};
  return d;
}

/// The forward descriptor a backward primitive takes as its hint: the
/// backward's types for every operand it shares with the forward.
ConvDescs hintLayouts(const ConvDescs &d, Precision precision) {
  ConvDescs h = d;
  dt type = precision == Precision::Bf16 ? dt::bf16 : dt::f32;
  h.src = {d.src.dims(), type, tag::any};
  h.weights = {d.weights.dims(), type, tag::any};
  h.dst = {d.dst.dims(), type, tag::any};
  return h;
}

/// The primitive for `kind` computed by `algorithm`.
ConvPrimitive createConvPrimitive(ConvKind kind, Precision precision,
                                  dnnl::algorithm algorithm,
                                  const ConvGeometry &g) {
  ConvDescs d = anyLayouts(convDescs(g), kind, precision);
  ConvDescs hint = hintLayouts(d, precision);
  ConvPrimitive cp;
  switch (kind) {
  case ConvKind::Forward:
  case ConvKind::ForwardBias: {
    auto pd = forwardDesc(d, kind == ConvKind::ForwardBias, algorithm);
    cp.prim = dnnl::convolution_forward(pd);
    cp.layouts = {{DNNL_ARG_SRC, pd.src_desc()},
                  {DNNL_ARG_WEIGHTS, pd.weights_desc()},
                  {DNNL_ARG_DST, pd.dst_desc()}};
    break;
  }
  case ConvKind::Data: {
    using bwd = dnnl::convolution_backward_data;
    bwd::desc desc(algorithm, d.src, d.weights, d.dst, d.strides, d.dilates,
                   d.padL, d.padR);
    bwd::primitive_desc pd(desc, engine(), forwardDesc(hint, false, algorithm));
    cp.prim = bwd(pd);
    cp.layouts = {{DNNL_ARG_DIFF_DST, pd.diff_dst_desc()},
                  {DNNL_ARG_WEIGHTS, pd.weights_desc()},
                  {DNNL_ARG_DIFF_SRC, pd.diff_src_desc()}};
    break;
  }
  case ConvKind::Weights: {
    using bwd = dnnl::convolution_backward_weights;
    bwd::desc desc(algorithm, d.src, d.weights, d.dst, d.strides, d.dilates,
                   d.padL, d.padR);
    bwd::primitive_desc pd(desc, engine(), forwardDesc(hint, false, algorithm));
    cp.prim = bwd(pd);
    cp.layouts = {{DNNL_ARG_DIFF_DST, pd.diff_dst_desc()},
                  {DNNL_ARG_SRC, pd.src_desc()},
                  {DNNL_ARG_DIFF_WEIGHTS, pd.diff_weights_desc()}};
    break;
  }
  }
  return cp;
}

/// Whether oneDNN's Winograd kernels compute `g` right: a 3x3 filter, unit
/// strides and dilations, one group, and the same pad of 0 or 1 on every
/// side. With uneven pads its input gradient is wrong (oneDNN 2.6; see
/// WinogradKernelTest), and larger pads it refuses; the verifier allows
/// neither, and the ABI runs such a call on the direct kernels.
bool winogradTakes(const ConvGeometry &g) {
  bool evenPads = g.pt == g.pb && g.pl == g.pr && g.pt == g.pl && g.pt <= 1;
  return g.kh == 3 && g.kw == 3 && g.sh == 1 && g.sw == 1 && g.dh == 1 &&
         g.dw == 1 && g.groups == 1 && evenPads;
}

/// Primitives by kind, algorithm and geometry: the same shapes recur every
/// microbatch, and creating a oneDNN primitive costs far more than running
/// a small one. Where this oneDNN has no Winograd kernel for the CPU (it
/// has them for AVX-512), the Winograd entry holds the direct primitive,
/// after one warning per process; so does one that winogradTakes refuses.
/// Kernels run on the executor's thread; the lock only guards against a future
/// caller that is not.
ConvPrimitive &convPrimitive(ConvKind kind, Precision precision,
                             ConvAlgorithm algorithm, const ConvGeometry &g) {
  static std::mutex mutex;
  static std::map<std::vector<int64_t>, ConvPrimitive> cache;
  std::vector<int64_t> key = {int64_t(kind),
                              int64_t(precision),
                              int64_t(algorithm),
                              g.n,
                              g.c,
                              g.h,
                              g.w,
                              g.o,
                              g.kh,
                              g.kw,
                              g.oh,
                              g.ow,
                              g.sh,
                              g.sw,
                              g.pt,
                              g.pl,
                              g.pb,
                              g.pr,
                              g.dh,
                              g.dw,
                              g.groups};
  std::lock_guard<std::mutex> lock(mutex);
  auto it = cache.find(key);
  if (it != cache.end())
    return it->second;
  ConvPrimitive cp;
  if (algorithm == ConvAlgorithm::Winograd && winogradTakes(g)) {
    try {
      cp = createConvPrimitive(kind, precision,
                               dnnl::algorithm::convolution_winograd, g);
    } catch (const dnnl::error &) {
      static bool warned = false;
      if (!warned)
        std::fprintf(stderr,
                     "warning: oneDNN has no Winograd convolution for this "
                     "CPU; running the direct kernels instead\n");
      warned = true;
      cp = createConvPrimitive(kind, precision,
                               dnnl::algorithm::convolution_direct, g);
    }
  } else {
    cp = createConvPrimitive(kind, precision,
                             dnnl::algorithm::convolution_direct, g);
  }
  return cache.emplace(std::move(key), std::move(cp)).first->second;
}

dnnl::memory mem(const dnnl::memory::desc &d, const void *p) {
  return dnnl::memory(d, engine(), const_cast<void *>(p));
}

/// One buffer of a convolution call, in the caller's layout: the ABI's plain
/// one, or channel-blocked where the call's `layouts` say.
struct ConvArg {
  int id; // DNNL_ARG_*
  dnnl::memory::desc user;
  const void *data;
  bool output = false;
  // An output added to what the caller's buffer holds.
  bool accumulate = false;
};

/// The key of the reorder between the caller's buffer of argument `id` and
/// the primitive's: one per argument, direction, caller's layout and
/// whether it adds.
int reorderKey(const ConvArg &arg) {
  bool blocked = arg.user.data.format_desc.blocking.inner_nblks > 0;
  return ((arg.id * 2 + int(arg.output)) * 2 + int(blocked)) * 2 +
         int(arg.accumulate);
}

/// Runs the primitive's reorder `key` from `from` into `to` (adding to what
/// `to` holds with `accumulate`), created on first use: every call of a key
/// reorders between the same two layouts.
void runReorder(ConvPrimitive &cp, int key, dnnl::memory &from,
                dnnl::memory &to, bool accumulate = false) {
  auto [reorder, created] = cp.reorders.try_emplace(key);
  if (created) {
    dnnl::primitive_attr attr;
    if (accumulate) {
      dnnl::post_ops ops;
      ops.append_sum(1.0f);
      attr.set_post_ops(ops);
    }
    reorder->second = dnnl::reorder(from, to, attr);
  }
  reorder->second.execute(stream(), from, to);
}

/// The filter `user` (the parameter buffer of `arg`, with `epoch`) in the
/// primitive's layout: reordered when the parameter was written since.
dnnl::memory &parameterWeights(ConvPrimitive &cp, const ConvArg &arg,
                               dnnl::memory &user, uint64_t epoch) {
  const void *data = arg.data;
  auto [it, fresh] = cp.weights.try_emplace(data);
  ReorderedWeights &kept = it->second;
  if (fresh)
    kept.memory = dnnl::memory(cp.layouts.at(DNNL_ARG_WEIGHTS), engine());
  if (kept.epoch != epoch) {
    runReorder(cp, reorderKey(arg), user, kept.memory);
    kept.epoch = epoch;
  }
  return kept.memory;
}

void runConv(const char *kernel, ConvKind kind, Precision precision,
             ConvAlgorithm algorithm, const ConvGeometry &g,
             const std::vector<ConvArg> &args) {
  try {
    ConvPrimitive &cp = convPrimitive(kind, precision, algorithm, g);
    std::unordered_map<int, dnnl::memory> exec;
    std::vector<int> outputs;
    for (const ConvArg &arg : args) {
      dnnl::memory user = mem(arg.user, arg.data);
      auto layout = cp.layouts.find(arg.id);
      // An adding output always goes through the primitive's own buffer.
      if (layout == cp.layouts.end() ||
          (layout->second == arg.user && !arg.accumulate)) {
        exec[arg.id] = user;
        continue;
      }
      if (!arg.output && arg.id == DNNL_ARG_WEIGHTS) {
        if (uint64_t epoch = dpc::runtime::paramEpoch(arg.data)) {
          exec[arg.id] = parameterWeights(cp, arg, user, epoch);
          continue;
        }
      }
      auto [staged, created] = cp.staging.try_emplace(arg.id);
      if (created)
        staged->second = dnnl::memory(layout->second, engine());
      if (arg.output) {
        outputs.push_back(arg.id);
      } else {
        runReorder(cp, reorderKey(arg), user, staged->second);
      }
      exec[arg.id] = staged->second;
    }
    cp.prim.execute(stream(), exec);
    for (int id : outputs) {
      const ConvArg &arg =
          *std::find_if(args.begin(), args.end(),
                        [&](const ConvArg &a) { return a.id == id; });
      dnnl::memory user = mem(arg.user, arg.data);
      runReorder(cp, reorderKey(arg), cp.staging.at(id), user, arg.accumulate);
    }
    stream().wait();
  } catch (const dnnl::error &e) {
    fail(kernel, std::string("oneDNN: ") + e.what());
  }
}

//===----------------------------------------------------------------------===//
// Broadcasting helpers
//===----------------------------------------------------------------------===//

/// Element strides of `shape` in a dense row-major buffer, 0 where the
/// dimension is broadcast (size 1) against `full`.
std::vector<int64_t> broadcastStrides(const int64_t *shape, const int64_t *full,
                                      int64_t rank) {
  std::vector<int64_t> strides(size_t(rank), 0);
  int64_t s = 1;
  for (int64_t d = rank - 1; d >= 0; --d) {
    strides[size_t(d)] = shape[d] == 1 && full[d] != 1 ? 0 : s;
    s *= shape[d];
  }
  return strides;
}

/// Calls body(offsetA, offsetB, offsetY) for each run of the last dimension,
/// walking all leading indices of `full` with an odometer.
template <typename Body>
void forEachRow(const int64_t *full, int64_t rank,
                const std::vector<int64_t> &sa, const std::vector<int64_t> &sb,
                Body body) {
  if (rank == 0) {
    body(0, 0, 0);
    return;
  }
  int64_t rows = 1;
  for (int64_t d = 0; d + 1 < rank; ++d)
    rows *= full[d];
  std::vector<int64_t> index(size_t(rank), 0);
  int64_t oa = 0, ob = 0, last = full[rank - 1];
  for (int64_t r = 0; r < rows; ++r) {
    body(oa, ob, r * last);
    for (int64_t d = rank - 2; d >= 0; --d) {
      size_t k = size_t(d);
      ++index[k];
      oa += sa[k];
      ob += sb[k];
      if (index[k] < full[d])
        break;
      oa -= sa[k] * full[d];
      ob -= sb[k] * full[d];
      index[k] = 0;
    }
  }
}

// y = f(a, b) over the broadcast, one innermost row at a time.
template <typename F>
void broadcastBinaryRows(const float *a, const int64_t *a_shape, const float *b,
                         const int64_t *b_shape, float *y,
                         const int64_t *y_shape, int64_t rank, F f) {
  std::vector<int64_t> sa = broadcastStrides(a_shape, y_shape, rank);
  std::vector<int64_t> sb = broadcastStrides(b_shape, y_shape, rank);
  int64_t last = rank ? y_shape[rank - 1] : 1;
  int64_t la = rank ? sa.back() : 0, lb = rank ? sb.back() : 0;
  forEachRow(y_shape, rank, sa, sb, [&](int64_t oa, int64_t ob, int64_t oy) {
    const float *pa = a + oa, *pb = b + ob;
    float *py = y + oy;
    if (la && lb)
      for (int64_t i = 0; i < last; ++i)
        py[i] = f(pa[i], pb[i]);
    else if (la)
      for (int64_t i = 0; i < last; ++i)
        py[i] = f(pa[i], pb[0]);
    else if (lb)
      for (int64_t i = 0; i < last; ++i)
        py[i] = f(pa[0], pb[i]);
    else
      for (int64_t i = 0; i < last; ++i)
        py[i] = f(pa[0], pb[0]);
  });
}

// The same, with the leading dimension's slices on the kernel threads.
template <typename F>
void broadcastBinary(const float *a, const int64_t *a_shape, const float *b,
                     const int64_t *b_shape, float *y, const int64_t *y_shape,
                     int64_t rank, F f) {
  if (rank < 2 || y_shape[0] < 2) {
    broadcastBinaryRows(a, a_shape, b, b_shape, y, y_shape, rank, f);
    return;
  }
  int64_t sa = broadcastStrides(a_shape, y_shape, rank)[0];
  int64_t sb = broadcastStrides(b_shape, y_shape, rank)[0];
  int64_t slice = dpc::box::elements(y_shape + 1, rank - 1);
  parallelFor(y_shape[0], y_shape[0] * slice, [&](int64_t i) {
    broadcastBinaryRows(a + i * sa, a_shape + 1, b + i * sb, b_shape + 1,
                        y + i * slice, y_shape + 1, rank - 1, f);
  });
}

// Calls body(offsets, y) for every element y of `full` in row-major order,
// with the element offsets of operands whose broadcast strides are given.
template <size_t N, typename Body>
void forEachElement(const int64_t *full, int64_t rank,
                    const std::vector<int64_t> (&strides)[N], Body body) {
  int64_t count = 1;
  for (int64_t d = 0; d < rank; ++d)
    count *= full[d];
  std::vector<int64_t> index(size_t(rank), 0);
  int64_t offsets[N] = {};
  for (int64_t e = 0; e < count; ++e) {
    body(offsets, e);
    for (int64_t d = rank - 1; d >= 0; --d) {
      size_t k = size_t(d);
      for (size_t n = 0; n < N; ++n)
        offsets[n] += strides[n][k];
      if (++index[k] < full[d])
        break;
      for (size_t n = 0; n < N; ++n)
        offsets[n] -= strides[n][k] * full[d];
      index[k] = 0;
    }
  }
}

void checkBroadcast(const char *kernel, const int64_t *shape,
                    const int64_t *full, int64_t rank) {
  for (int64_t d = 0; d < rank; ++d)
    if (shape[d] != full[d] && shape[d] != 1)
      fail(kernel, shapeText(shape, int(rank)) + " does not broadcast to " +
                       shapeText(full, int(rank)));
}

template <typename T>
void compareTyped(int64_t fn, const T *a, const int64_t *a_shape, const T *b,
                  const int64_t *b_shape, uint8_t *y, const int64_t *y_shape,
                  int64_t rank) {
  std::vector<int64_t> strides[2] = {broadcastStrides(a_shape, y_shape, rank),
                                     broadcastStrides(b_shape, y_shape, rank)};
  auto apply = [&](auto f) {
    forEachElement(y_shape, rank, strides, [&](const int64_t *o, int64_t e) {
      y[e] = f(a[o[0]], b[o[1]]) ? 1 : 0;
    });
  };
  switch (fn) {
  case DPC_COMPARE_EQ:
    return apply([](T u, T v) { return u == v; });
  case DPC_COMPARE_LT:
    return apply([](T u, T v) { return u < v; });
  case DPC_COMPARE_GT:
    return apply([](T u, T v) { return u > v; });
  case DPC_COMPARE_LE:
    return apply([](T u, T v) { return u <= v; });
  case DPC_COMPARE_GE:
    return apply([](T u, T v) { return u >= v; });
  case DPC_COMPARE_AND:
    return apply([](T u, T v) { return u && v; });
  case DPC_COMPARE_OR:
    return apply([](T u, T v) { return u || v; });
  case DPC_COMPARE_XOR:
    return apply([](T u, T v) { return bool(u) != bool(v); });
  }
  fail("dpc_compare", "unknown function " + std::to_string(fn));
}

template <typename From, typename To>
void castTyped(const From *x, To *y, int64_t count) {
  for (int64_t i = 0; i < count; ++i) {
    if constexpr (std::is_same_v<To, uint8_t>)
      y[i] = x[i] != From(0) ? 1 : 0;
    else
      y[i] = static_cast<To>(x[i]);
  }
}

template <typename From>
void castFrom(int64_t to, const From *x, void *y, int64_t count) {
  switch (to) {
  case DPC_DTYPE_F32:
    return castTyped(x, static_cast<float *>(y), count);
  case DPC_DTYPE_I64:
    return castTyped(x, static_cast<int64_t *>(y), count);
  case DPC_DTYPE_BOOL:
    return castTyped(x, static_cast<uint8_t *>(y), count);
  }
  fail("dpc_cast", "unknown element type " + std::to_string(to));
}

/// Whether this CPU computes bf16 natively (AVX512-BF16 or AMX), as oneDNN
/// sees it: DNNL_MAX_CPU_ISA can lower what it sees. Without it the bf16
/// kernels compute in f32 (see dpcBf16Fallback).
bool bf16Native() {
  static const bool native = [] {
    dnnl::cpu_isa isa = dnnl::get_effective_cpu_isa();
    return isa == dnnl::cpu_isa::avx512_core_bf16 ||
           isa == dnnl::cpu_isa::avx512_core_amx;
  }();
  return native;
}

Precision effective(Precision precision) {
  return precision == Precision::Bf16 && bf16Native() ? Precision::Bf16
                                                      : Precision::F32;
}

/// Only a filter gradient adds to its output (DPC_CONV_ACCUMULATE_DW).
void refuseAccumulate(const char *kernel, const ConvGeometry &g) {
  if (g.layouts & DPC_CONV_ACCUMULATE_DW)
    fail(kernel, "only a filter gradient accumulates");
}

void conv2d(const char *kernel, Precision precision, ConvAlgorithm algorithm,
            const float *x, const int64_t *x_shape, const float *w,
            const int64_t *w_shape, const float *bias, float *y,
            const int64_t *y_shape, const int64_t *params) {
  ConvGeometry g = convGeometry(kernel, x_shape, w_shape, y_shape, params);
  refuseAccumulate(kernel, g);
  ConvDescs d = convDescs(g);
  std::vector<ConvArg> args = {{DNNL_ARG_SRC, d.src, x},
                               {DNNL_ARG_WEIGHTS, d.weights, w},
                               {DNNL_ARG_DST, d.dst, y, /*output=*/true}};
  if (bias)
    args.push_back({DNNL_ARG_BIAS, d.bias, bias});
  runConv(kernel, bias ? ConvKind::ForwardBias : ConvKind::Forward,
          effective(precision), algorithm, g, args);
}

void conv2dGradInput(const char *kernel, Precision precision,
                     ConvAlgorithm algorithm, const float *dy,
                     const int64_t *dy_shape, const float *w,
                     const int64_t *w_shape, float *dx, const int64_t *dx_shape,
                     const int64_t *params) {
  ConvGeometry g = convGeometry(kernel, dx_shape, w_shape, dy_shape, params);
  refuseAccumulate(kernel, g);
  ConvDescs d = convDescs(g);
  runConv(kernel, ConvKind::Data, effective(precision), algorithm, g,
          {{DNNL_ARG_DIFF_DST, d.dst, dy},
           {DNNL_ARG_WEIGHTS, d.weights, w},
           {DNNL_ARG_DIFF_SRC, d.src, dx, /*output=*/true}});
}

void conv2dGradFilter(const char *kernel, Precision precision,
                      ConvAlgorithm algorithm, const float *dy,
                      const int64_t *dy_shape, const float *x,
                      const int64_t *x_shape, float *dw,
                      const int64_t *dw_shape, const int64_t *params) {
  ConvGeometry g = convGeometry(kernel, x_shape, dw_shape, dy_shape, params);
  ConvDescs d = convDescs(g);
  bool accumulate = g.layouts & DPC_CONV_ACCUMULATE_DW;
  runConv(
      kernel, ConvKind::Weights, effective(precision), algorithm, g,
      {{DNNL_ARG_DIFF_DST, d.dst, dy},
       {DNNL_ARG_SRC, d.src, x},
       {DNNL_ARG_DIFF_WEIGHTS, d.weights, dw, /*output=*/true, accumulate}});
}

/// A bf16 x bf16 -> f32 product y = op(a) op(b) (+ y with `sum`), on
/// oneDNN's matmul primitive: this oneDNN's sgemm has no bf16 form. The
/// transposes are strides of the operands' descriptors.
dnnl::matmul &bf16Matmul(int64_t m, int64_t n, int64_t k, bool ta, bool tb,
                         bool sum) {
  static std::mutex mutex;
  static std::map<std::vector<int64_t>, dnnl::matmul> cache;
  std::vector<int64_t> key = {m, n, k, ta, tb, sum};
  std::lock_guard<std::mutex> lock(mutex);
  auto it = cache.find(key);
  if (it != cache.end())
    return it->second;
  dnnl::memory::desc a({m, k}, dt::bf16, ta ? dims{1, m} : dims{k, 1});
  dnnl::memory::desc b({k, n}, dt::bf16, tb ? dims{1, k} : dims{n, 1});
  dnnl::memory::desc c({m, n}, dt::f32, dims{n, 1});
  dnnl::primitive_attr attr;
  if (sum) {
    dnnl::post_ops ops;
    ops.append_sum(1.0f);
    attr.set_post_ops(ops);
  }
  dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(a, b, c), attr, engine());
  return cache.emplace(std::move(key), dnnl::matmul(pd)).first->second;
}

/// `count` floats as bf16, into a buffer kept per thread between calls.
const uint16_t *toBf16(const float *src, int64_t count,
                       std::vector<uint16_t> &buffer) {
  if (int64_t(buffer.size()) < count)
    buffer.resize(size_t(count));
  uint16_t *dst = buffer.data();
  parallelChunks(count, [&](int64_t begin, int64_t end) {
    dpc::runtime::floatsToBf16(src + begin, dst + begin, end - begin);
  });
  return dst;
}

void matmul(const char *kernel, Precision precision, const float *a,
            const float *b, float *y, int64_t batch, int64_t m, int64_t n,
            int64_t k, int64_t transpose_a, int64_t transpose_b,
            int64_t a_stride, int64_t b_stride, int64_t accumulate) {
  if (batch < 1 || m < 0 || n < 0 || k < 0)
    fail(kernel, "bad sizes batch " + std::to_string(batch) + ", m " +
                     std::to_string(m) + ", n " + std::to_string(n) + ", k " +
                     std::to_string(k));
  if (m == 0 || n == 0)
    return;
  if (k == 0) {
    std::fill(y, y + (accumulate ? 1 : batch) * m * n, 0.0f);
    return;
  }
  if (effective(precision) == Precision::Bf16) {
    // Operands are converted whole (a shared one, stride 0, once), then each
    // batch runs on the converted copies at the same offsets.
    thread_local std::vector<uint16_t> aBuffer, bBuffer;
    const uint16_t *a16 = toBf16(a, (batch - 1) * a_stride + m * k, aBuffer);
    const uint16_t *b16 = toBf16(b, (batch - 1) * b_stride + k * n, bBuffer);
    try {
      dnnl::matmul &first =
          bf16Matmul(m, n, k, transpose_a, transpose_b, false);
      dnnl::matmul *summing =
          accumulate && batch > 1
              ? &bf16Matmul(m, n, k, transpose_a, transpose_b, true)
              : nullptr;
      dnnl::memory::desc aDesc({m, k}, dt::bf16,
                               transpose_a ? dims{1, m} : dims{k, 1});
      dnnl::memory::desc bDesc({k, n}, dt::bf16,
                               transpose_b ? dims{1, k} : dims{n, 1});
      dnnl::memory::desc cDesc({m, n}, dt::f32, dims{n, 1});
      for (int64_t i = 0; i < batch; ++i) {
        float *out = accumulate ? y : y + i * m * n;
        dnnl::matmul &prim = accumulate && i > 0 ? *summing : first;
        prim.execute(stream(),
                     {{DNNL_ARG_SRC, mem(aDesc, a16 + i * a_stride)},
                      {DNNL_ARG_WEIGHTS, mem(bDesc, b16 + i * b_stride)},
                      {DNNL_ARG_DST, mem(cDesc, out)}});
      }
      stream().wait();
    } catch (const dnnl::error &e) {
      fail(kernel, std::string("oneDNN: ") + e.what());
    }
    return;
  }
  // oneDNN's sgemm is row-major, like the ABI's buffers.
  char ta = transpose_a ? 'T' : 'N', tb = transpose_b ? 'T' : 'N';
  int64_t lda = transpose_a ? m : k, ldb = transpose_b ? k : n;
  for (int64_t i = 0; i < batch; ++i) {
    float beta = accumulate && i > 0 ? 1.0f : 0.0f;
    float *out = accumulate ? y : y + i * m * n;
    dnnl_status_t status = dnnl_sgemm(ta, tb, m, n, k, 1.0f, a + i * a_stride,
                                      lda, b + i * b_stride, ldb, beta, out, n);
    if (status != dnnl_success)
      fail(kernel,
           "dnnl_sgemm failed with status " + std::to_string(int(status)));
  }
}

} // namespace

//===----------------------------------------------------------------------===//
// The C ABI
//===----------------------------------------------------------------------===//

extern "C" {

void dpc_conv2d(const float *x, const int64_t *x_shape, const float *w,
                const int64_t *w_shape, const float *bias, float *y,
                const int64_t *y_shape, const int64_t *params) {
  conv2d("dpc_conv2d", Precision::F32, ConvAlgorithm::Direct, x, x_shape, w,
         w_shape, bias, y, y_shape, params);
}

void dpc_conv2d_bf16(const float *x, const int64_t *x_shape, const float *w,
                     const int64_t *w_shape, const float *bias, float *y,
                     const int64_t *y_shape, const int64_t *params) {
  conv2d("dpc_conv2d_bf16", Precision::Bf16, ConvAlgorithm::Direct, x, x_shape,
         w, w_shape, bias, y, y_shape, params);
}

void dpc_conv2d_grad_input(const float *dy, const int64_t *dy_shape,
                           const float *w, const int64_t *w_shape, float *dx,
                           const int64_t *dx_shape, const int64_t *params) {
  conv2dGradInput("dpc_conv2d_grad_input", Precision::F32,
                  ConvAlgorithm::Direct, dy, dy_shape, w, w_shape, dx, dx_shape,
                  params);
}

void dpc_conv2d_grad_input_bf16(const float *dy, const int64_t *dy_shape,
                                const float *w, const int64_t *w_shape,
                                float *dx, const int64_t *dx_shape,
                                const int64_t *params) {
  conv2dGradInput("dpc_conv2d_grad_input_bf16", Precision::Bf16,
                  ConvAlgorithm::Direct, dy, dy_shape, w, w_shape, dx, dx_shape,
                  params);
}

void dpc_conv2d_grad_filter(const float *dy, const int64_t *dy_shape,
                            const float *x, const int64_t *x_shape, float *dw,
                            const int64_t *dw_shape, const int64_t *params) {
  conv2dGradFilter("dpc_conv2d_grad_filter", Precision::F32,
                   ConvAlgorithm::Direct, dy, dy_shape, x, x_shape, dw,
                   dw_shape, params);
}

void dpc_conv2d_grad_filter_bf16(const float *dy, const int64_t *dy_shape,
                                 const float *x, const int64_t *x_shape,
                                 float *dw, const int64_t *dw_shape,
                                 const int64_t *params) {
  conv2dGradFilter("dpc_conv2d_grad_filter_bf16", Precision::Bf16,
                   ConvAlgorithm::Direct, dy, dy_shape, x, x_shape, dw,
                   dw_shape, params);
}

void dpc_conv2d_winograd(const float *x, const int64_t *x_shape, const float *w,
                         const int64_t *w_shape, const float *bias, float *y,
                         const int64_t *y_shape, const int64_t *params) {
  conv2d("dpc_conv2d_winograd", Precision::F32, ConvAlgorithm::Winograd, x,
         x_shape, w, w_shape, bias, y, y_shape, params);
}

void dpc_conv2d_grad_input_winograd(const float *dy, const int64_t *dy_shape,
                                    const float *w, const int64_t *w_shape,
                                    float *dx, const int64_t *dx_shape,
                                    const int64_t *params) {
  conv2dGradInput("dpc_conv2d_grad_input_winograd", Precision::F32,
                  ConvAlgorithm::Winograd, dy, dy_shape, w, w_shape, dx,
                  dx_shape, params);
}

void dpc_conv2d_grad_filter_winograd(const float *dy, const int64_t *dy_shape,
                                     const float *x, const int64_t *x_shape,
                                     float *dw, const int64_t *dw_shape,
                                     const int64_t *params) {
  conv2dGradFilter("dpc_conv2d_grad_filter_winograd", Precision::F32,
                   ConvAlgorithm::Winograd, dy, dy_shape, x, x_shape, dw,
                   dw_shape, params);
}

void dpc_relayout(const float *x, const int64_t *shape, int64_t to_blocked,
                  float *y) {
  static std::mutex mutex;
  static std::map<std::vector<int64_t>, dnnl::reorder> cache;
  if (shape[1] % DPC_CHANNEL_BLOCK)
    fail("dpc_relayout", shapeText(shape, 4) + " has channels that are not " +
                             "a multiple of the block");
  dims d = {shape[0], shape[1], shape[2], shape[3]};
  dnnl::memory::desc plain(d, dt::f32, tag::nchw),
      blocked(d, dt::f32, tag::nChw16c);
  const dnnl::memory::desc &from = to_blocked ? plain : blocked;
  const dnnl::memory::desc &to = to_blocked ? blocked : plain;
  dnnl::memory src = mem(from, x), dst = mem(to, y);
  try {
    std::lock_guard<std::mutex> lock(mutex);
    std::vector<int64_t> key = {shape[0], shape[1], shape[2], shape[3],
                                to_blocked};
    auto [it, created] = cache.try_emplace(key);
    if (created)
      it->second = dnnl::reorder(src, dst);
    it->second.execute(stream(), src, dst);
    stream().wait();
  } catch (const dnnl::error &e) {
    fail("dpc_relayout", std::string("oneDNN: ") + e.what());
  }
}

void dpc_conv2d_grad_bias(const float *dy, const int64_t *dy_shape, float *db) {
  int64_t n = dy_shape[0], c = dy_shape[1], hw = dy_shape[2] * dy_shape[3];
  parallelFor(c, n * c * hw, [&](int64_t ch) {
    LaneSums sum;
    for (int64_t b = 0; b < n; ++b)
      addRow(sum, dy + (b * c + ch) * hw, hw);
    db[ch] = float(sum.total());
  });
}

void dpc_matmul(const float *a, const float *b, float *y, int64_t batch,
                int64_t m, int64_t n, int64_t k, int64_t transpose_a,
                int64_t transpose_b, int64_t a_stride, int64_t b_stride,
                int64_t accumulate) {
  matmul("dpc_matmul", Precision::F32, a, b, y, batch, m, n, k, transpose_a,
         transpose_b, a_stride, b_stride, accumulate);
}

void dpc_matmul_bf16(const float *a, const float *b, float *y, int64_t batch,
                     int64_t m, int64_t n, int64_t k, int64_t transpose_a,
                     int64_t transpose_b, int64_t a_stride, int64_t b_stride,
                     int64_t accumulate) {
  matmul("dpc_matmul_bf16", Precision::Bf16, a, b, y, batch, m, n, k,
         transpose_a, transpose_b, a_stride, b_stride, accumulate);
}

int64_t dpc_bf16_native(void) { return bf16Native(); }

void dpc_binary(int64_t fn, const float *a, const int64_t *a_shape,
                const float *b, const int64_t *b_shape, float *y,
                const int64_t *y_shape, int64_t rank) {
  for (int64_t d = 0; d < rank; ++d)
    if ((a_shape[d] != y_shape[d] && a_shape[d] != 1) ||
        (b_shape[d] != y_shape[d] && b_shape[d] != 1))
      fail("dpc_binary", shapeText(a_shape, int(rank)) + " and " +
                             shapeText(b_shape, int(rank)) +
                             " do not broadcast to " +
                             shapeText(y_shape, int(rank)));
  auto apply = [&](auto f) {
    broadcastBinary(a, a_shape, b, b_shape, y, y_shape, rank, f);
  };
  switch (fn) {
  case DPC_BINARY_ADD:
    return apply([](float u, float v) { return u + v; });
  case DPC_BINARY_SUB:
    return apply([](float u, float v) { return u - v; });
  case DPC_BINARY_MUL:
    return apply([](float u, float v) { return u * v; });
  case DPC_BINARY_DIV:
    return apply([](float u, float v) { return u / v; });
  }
  fail("dpc_binary", "unknown function " + std::to_string(fn));
}

void dpc_compare(int64_t fn, int64_t dtype, const void *a,
                 const int64_t *a_shape, const void *b, const int64_t *b_shape,
                 uint8_t *y, const int64_t *y_shape, int64_t rank) {
  checkBroadcast("dpc_compare", a_shape, y_shape, rank);
  checkBroadcast("dpc_compare", b_shape, y_shape, rank);
  switch (dtype) {
  case DPC_DTYPE_F32:
    return compareTyped(fn, static_cast<const float *>(a), a_shape,
                        static_cast<const float *>(b), b_shape, y, y_shape,
                        rank);
  case DPC_DTYPE_I64:
    return compareTyped(fn, static_cast<const int64_t *>(a), a_shape,
                        static_cast<const int64_t *>(b), b_shape, y, y_shape,
                        rank);
  case DPC_DTYPE_BOOL:
    return compareTyped(fn, static_cast<const uint8_t *>(a), a_shape,
                        static_cast<const uint8_t *>(b), b_shape, y, y_shape,
                        rank);
  }
  fail("dpc_compare", "unknown element type " + std::to_string(dtype));
}

void dpc_not(const uint8_t *x, uint8_t *y, int64_t count) {
  for (int64_t i = 0; i < count; ++i)
    y[i] = x[i] ? 0 : 1;
}

void dpc_cast(int64_t from, int64_t to, const void *x, void *y, int64_t count) {
  switch (from) {
  case DPC_DTYPE_F32:
    return castFrom(to, static_cast<const float *>(x), y, count);
  case DPC_DTYPE_I64:
    return castFrom(to, static_cast<const int64_t *>(x), y, count);
  case DPC_DTYPE_BOOL:
    return castFrom(to, static_cast<const uint8_t *>(x), y, count);
  }
  fail("dpc_cast", "unknown element type " + std::to_string(from));
}

void dpc_where(const uint8_t *c, const int64_t *c_shape, const float *a,
               const int64_t *a_shape, const float *b, const int64_t *b_shape,
               float *y, const int64_t *y_shape, int64_t rank) {
  checkBroadcast("dpc_where", c_shape, y_shape, rank);
  checkBroadcast("dpc_where", a_shape, y_shape, rank);
  checkBroadcast("dpc_where", b_shape, y_shape, rank);
  std::vector<int64_t> strides[3] = {broadcastStrides(c_shape, y_shape, rank),
                                     broadcastStrides(a_shape, y_shape, rank),
                                     broadcastStrides(b_shape, y_shape, rank)};
  forEachElement(y_shape, rank, strides, [&](const int64_t *o, int64_t e) {
    y[e] = c[o[0]] ? a[o[1]] : b[o[2]];
  });
}

void dpc_where_grad(const uint8_t *c, const int64_t *c_shape, const float *dy,
                    float *dx, const int64_t *dy_shape, int64_t rank,
                    int64_t branch) {
  checkBroadcast("dpc_where_grad", c_shape, dy_shape, rank);
  std::vector<int64_t> strides[1] = {broadcastStrides(c_shape, dy_shape, rank)};
  bool keep = branch != 0;
  forEachElement(dy_shape, rank, strides, [&](const int64_t *o, int64_t e) {
    dx[e] = (c[o[0]] != 0) == keep ? dy[e] : 0.0f;
  });
}

void dpc_sum_to_shape(const float *x, const int64_t *x_shape, float *y,
                      const int64_t *y_shape, int64_t rank, float scale) {
  int64_t count = 1;
  for (int64_t d = 0; d < rank; ++d) {
    if (y_shape[d] != x_shape[d] && y_shape[d] != 1)
      fail("dpc_sum_to_shape", "cannot sum " + shapeText(x_shape, int(rank)) +
                                   " to " + shapeText(y_shape, int(rank)));
    count *= y_shape[d];
  }
  // Sums in double: a bias gradient adds up thousands of terms.
  std::vector<double> acc(size_t(count), 0.0);
  std::vector<int64_t> sy = broadcastStrides(y_shape, x_shape, rank);
  int64_t last = rank ? x_shape[rank - 1] : 1;
  int64_t ly = rank ? sy.back() : 0;
  forEachRow(x_shape, rank, sy, sy, [&](int64_t oy, int64_t, int64_t ox) {
    const float *px = x + ox;
    double *py = acc.data() + oy;
    if (ly)
      for (int64_t i = 0; i < last; ++i)
        py[i] += px[i];
    else {
      double s = 0;
      for (int64_t i = 0; i < last; ++i)
        s += px[i];
      py[0] += s;
    }
  });
  for (int64_t i = 0; i < count; ++i)
    y[i] = float(acc[size_t(i)] * scale);
}

void dpc_broadcast_to(const float *x, const int64_t *x_shape, float *y,
                      const int64_t *y_shape, int64_t rank, float scale) {
  for (int64_t d = 0; d < rank; ++d)
    if (x_shape[d] != y_shape[d] && x_shape[d] != 1)
      fail("dpc_broadcast_to", "cannot broadcast " +
                                   shapeText(x_shape, int(rank)) + " to " +
                                   shapeText(y_shape, int(rank)));
  broadcastBinary(x, x_shape, x, x_shape, y, y_shape, rank,
                  [scale](float u, float) { return scale * u; });
}

void dpc_transpose(const float *x, const int64_t *x_shape, float *y,
                   const int64_t *perm, int64_t rank) {
  // y's dimension d walks x with the stride of x's dimension perm[d].
  size_t n = size_t(rank);
  std::vector<int64_t> xStrides(n, 1), yShape(n), strides(n);
  std::vector<bool> seen(n, false);
  for (int64_t d = rank - 2; d >= 0; --d)
    xStrides[size_t(d)] = xStrides[size_t(d + 1)] * x_shape[d + 1];
  for (int64_t d = 0; d < rank; ++d) {
    if (perm[d] < 0 || perm[d] >= rank || seen[size_t(perm[d])])
      fail("dpc_transpose",
           "not a permutation of " + std::to_string(rank) + " dimensions");
    seen[size_t(perm[d])] = true;
    yShape[size_t(d)] = x_shape[perm[d]];
    strides[size_t(d)] = xStrides[size_t(perm[d])];
  }
  int64_t last = rank ? yShape.back() : 1, step = rank ? strides.back() : 0;
  // y's leading slices on the kernel threads (the leading dimension split
  // off when there are two or more); each walks the rest in rows.
  int64_t split = rank > 1 ? 1 : 0;
  int64_t lead = split ? yShape[0] : 1;
  std::vector<int64_t> restShape(yShape.begin() + split, yShape.end());
  std::vector<int64_t> restStrides(strides.begin() + split, strides.end());
  int64_t slice =
      dpc::box::elements(restShape.data(), int64_t(restShape.size()));
  parallelFor(lead, lead * slice, [&](int64_t s) {
    const float *xs = x + (split ? s * strides[0] : 0);
    float *ys = y + s * slice;
    forEachRow(restShape.data(), int64_t(restShape.size()), restStrides,
               restStrides, [&](int64_t ox, int64_t, int64_t oy) {
                 const float *px = xs + ox;
                 float *py = ys + oy;
                 for (int64_t i = 0; i < last; ++i)
                   py[i] = px[i * step];
               });
  });
}

} // extern "C"

namespace {

// The box of a strided slice as forEachRow walks it: its strides in the
// whole tensor (backends/common/Box.h), the offset of its first element,
// and its last dimension's size and stride.
struct BoxWalk {
  std::vector<int64_t> strides;
  int64_t base = 0, lastStep = 1, last = 1;
};

BoxWalk boxWalk(const char *kernel, const int64_t *whole, const int64_t *box,
                int64_t rank, const int64_t *offsets, const int64_t *steps) {
  BoxWalk walk;
  walk.strides.assign(size_t(rank), 1);
  int64_t bad = dpc::box::layout(whole, box, rank, offsets, steps,
                                 walk.strides.data(), walk.base);
  if (bad >= 0)
    fail(kernel, "box " + shapeText(box, int(rank)) + " out of " +
                     shapeText(whole, int(rank)) + " in dimension " +
                     std::to_string(bad));
  if (rank) {
    walk.lastStep = walk.strides.back();
    walk.last = box[rank - 1];
  }
  return walk;
}

/// Calls row(offsetInWhole, offsetInBox) for every last-dimension run of the
/// box, the box's leading slices on the kernel threads.
template <typename Row>
void forEachBoxSlice(const int64_t *box, int64_t rank, const BoxWalk &walk,
                     Row row) {
  if (rank < 2) {
    forEachRow(box, rank, walk.strides, walk.strides,
               [&](int64_t ow, int64_t, int64_t ob) { row(ow, ob); });
    return;
  }
  std::vector<int64_t> rest(walk.strides.begin() + 1, walk.strides.end());
  int64_t slice = dpc::box::elements(box + 1, rank - 1);
  parallelFor(box[0], box[0] * slice, [&](int64_t s) {
    forEachRow(box + 1, rank - 1, rest, rest,
               [&](int64_t ow, int64_t, int64_t ob) {
                 row(s * walk.strides[0] + ow, s * slice + ob);
               });
  });
}

} // namespace

extern "C" {

void dpc_slice(const float *whole, const int64_t *whole_shape, float *box,
               const int64_t *box_shape, int64_t rank, const int64_t *offsets,
               const int64_t *steps) {
  BoxWalk w =
      boxWalk("dpc_slice", whole_shape, box_shape, rank, offsets, steps);
  forEachBoxSlice(box_shape, rank, w, [&](int64_t ow, int64_t ob) {
    const float *from = whole + w.base + ow;
    for (int64_t i = 0; i < w.last; ++i)
      box[ob + i] = from[i * w.lastStep];
  });
}

void dpc_insert(const float *box, const int64_t *box_shape, float *whole,
                const int64_t *whole_shape, int64_t rank,
                const int64_t *offsets, const int64_t *steps, int64_t fill_rest,
                float fill_value) {
  BoxWalk w =
      boxWalk("dpc_insert", whole_shape, box_shape, rank, offsets, steps);
  if (fill_rest)
    parallelChunks(dpc::box::elements(whole_shape, rank),
                   [&](int64_t begin, int64_t end) {
                     std::fill(whole + begin, whole + end, fill_value);
                   });
  forEachBoxSlice(box_shape, rank, w, [&](int64_t ow, int64_t ob) {
    float *to = whole + w.base + ow;
    for (int64_t i = 0; i < w.last; ++i)
      to[i * w.lastStep] = box[ob + i];
  });
}

void dpc_dropout(const float *x, float *y, int64_t count, float ratio,
                 int64_t key) {
  if (key < 0) {
    std::copy(x, x + count, y);
    return;
  }
  float scale = 1.0f / (1.0f - ratio);
  parallelChunks(count, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i)
      y[i] = dpc::random::dropoutKeeps(uint64_t(key), uint64_t(i), ratio)
                 ? x[i] * scale
                 : 0.0f;
  });
}

void dpc_clip(const float *x, float *y, int64_t count, float lo, float hi) {
  parallelChunks(count, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i)
      y[i] = std::min(std::max(x[i], lo), hi);
  });
}

void dpc_clip_grad(const float *dy, const float *x, float *dx, int64_t count,
                   float lo, float hi) {
  parallelChunks(count, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      float g = dy[i]; // read unconditionally, as dpc_relu_grad's
      dx[i] = x[i] >= lo && x[i] <= hi ? g : 0.0f;
    }
  });
}

} // extern "C"

namespace {

void checkSoftmaxSizes(const char *kernel, int64_t outer, int64_t n,
                       int64_t inner) {
  if (outer < 0 || n < 1 || inner < 0)
    fail(kernel, "bad sizes outer " + std::to_string(outer) + ", n " +
                     std::to_string(n) + ", inner " + std::to_string(inner));
}

} // namespace

extern "C" {

void dpc_softmax(const float *x, float *y, int64_t outer, int64_t n,
                 int64_t inner, int64_t log) {
  checkSoftmaxSizes("dpc_softmax", outer, n, inner);
  parallelFor(outer, outer * n * inner, [&](int64_t o) {
    for (int64_t i = 0; i < inner; ++i) {
      const float *px = x + o * n * inner + i;
      float *py = y + o * n * inner + i;
      float max = px[0];
      for (int64_t j = 1; j < n; ++j)
        max = std::max(max, px[j * inner]);
      // The exponentials go to y first, so each is computed once.
      double sum = 0;
      for (int64_t j = 0; j < n; ++j) {
        double e = std::exp(double(px[j * inner] - max));
        py[j * inner] = float(e);
        sum += e;
      }
      if (log) {
        float lse = max + float(std::log(sum));
        for (int64_t j = 0; j < n; ++j)
          py[j * inner] = px[j * inner] - lse;
      } else {
        double inverse = 1.0 / sum;
        for (int64_t j = 0; j < n; ++j)
          py[j * inner] = float(py[j * inner] * inverse);
      }
    }
  });
}

void dpc_softmax_grad(const float *dy, const float *y, float *dx, int64_t outer,
                      int64_t n, int64_t inner, int64_t log) {
  checkSoftmaxSizes("dpc_softmax_grad", outer, n, inner);
  parallelFor(outer, outer * n * inner, [&](int64_t o) {
    for (int64_t i = 0; i < inner; ++i) {
      int64_t base = o * n * inner + i;
      double sum = 0;
      for (int64_t j = 0; j < n; ++j) {
        int64_t k = base + j * inner;
        sum += log ? double(dy[k]) : double(dy[k]) * y[k];
      }
      for (int64_t j = 0; j < n; ++j) {
        int64_t k = base + j * inner;
        dx[k] = log ? dy[k] - std::exp(y[k]) * float(sum)
                    : y[k] * (dy[k] - float(sum));
      }
    }
  });
}

void dpc_relu(const float *x, float *y, int64_t count) {
  // std::max(x, 0) keeps NaN, as torch.relu does.
  parallelChunks(count, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i)
      y[i] = std::max(x[i], 0.0f);
  });
}

void dpc_relu_grad(const float *dy, const float *y, float *dx, int64_t count) {
  // dy is read whatever the sign: a load under the condition cannot be
  // vectorized, and the branch it leaves mispredicts on half the elements
  // (8x slower on ResNet-18's 28x28 layers).
  parallelChunks(count, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      float g = dy[i];
      dx[i] = y[i] > 0.0f ? g : 0.0f;
    }
  });
}

void dpc_unary(int64_t fn, float a, float b, const float *x, float *y,
               int64_t count) {
  bool known = dpc::elementwise::dispatchUnary(fn, [&](auto f) {
    parallelChunks(count, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i)
        y[i] = f.value(x[i], a, b);
    });
  });
  if (!known)
    fail("dpc_unary", "unknown function " + std::to_string(fn));
}

void dpc_unary_grad(int64_t fn, float a, float b, const float *dy,
                    const float *saved, float *dx, int64_t count) {
  bool known = dpc::elementwise::dispatchUnaryGrad(fn, [&](auto f) {
    parallelChunks(count, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i)
        dx[i] = f.grad(dy[i], saved[i], a, b);
    });
  });
  if (!known)
    fail("dpc_unary_grad", "unknown function " + std::to_string(fn));
}

} // extern "C"

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

void dpc_batch_norm_stats(const float *x, int64_t n, int64_t c, int64_t s,
                          int64_t block, float *running_mean,
                          float *running_var, float momentum, int64_t training,
                          float *stats) {
  float *mean = stats, *var = stats + c;
  checkChannelBlock("dpc_batch_norm_stats", c, block);
  if (!training) {
    std::copy(running_mean, running_mean + c, mean);
    std::copy(running_var, running_var + c, var);
    return;
  }
  int64_t count = n * s;
  if (count < 2)
    fail("dpc_batch_norm_stats",
         "training needs more than one value per channel, got " +
             std::to_string(count));
  // Two passes over a channel: the mean, then squared deviations from it (no
  // cancellation as in E[x^2] - E[x]^2).
  auto finish = [&](int64_t k, double mu, double squared) {
    mean[k] = float(mu);
    var[k] = float(squared / double(count));
    double unbiased = squared / double(count - 1);
    running_mean[k] =
        float(momentum * double(running_mean[k]) + (1.0 - momentum) * mu);
    running_var[k] =
        float(momentum * double(running_var[k]) + (1.0 - momentum) * unbiased);
  };
  if (block == 1) {
    parallelFor(c, n * c * s, [&](int64_t k) {
      LaneSums sum;
      for (int64_t i = 0; i < n; ++i)
        addRow(sum, x + (i * c + k) * s, s);
      double mu = sum.total() / double(count);
      LaneSums squares;
      for (int64_t i = 0; i < n; ++i)
        addSquaredDeviations(squares, x + (i * c + k) * s, s, mu);
      finish(k, mu, squares.total());
    });
    return;
  }
  int64_t blocks = c / block;
  parallelFor(blocks, n * c * s, [&](int64_t cb) {
    BlockLanes sum = blockSums(x, n, blocks, cb, s);
    double mu[kLanes];
    for (int64_t l = 0; l < kLanes; ++l)
      mu[l] = sum[l] / double(count);
    BlockLanes squares;
    for (int64_t i = 0; i < n; ++i)
      addBlockSquaredDeviations(squares, x + (i * blocks + cb) * s * block, s,
                                blockLanes(mu));
    for (int64_t l = 0; l < kLanes; ++l)
      finish(cb * block + l, mu[l], squares[l]);
  });
}

void dpc_batch_norm(const float *x, const float *stats, const float *scale,
                    const float *bias, int64_t n, int64_t c, int64_t s,
                    int64_t block, float epsilon, float *y) {
  checkChannelBlock("dpc_batch_norm", c, block);
  // y = x * a + b per channel, a and b computed in float.
  auto coefficients = [&](int64_t k, float &a, float &b) {
    float invStd = 1.0f / std::sqrt(stats[c + k] + epsilon);
    a = scale[k] * invStd;
    b = bias[k] - stats[k] * a;
  };
  if (block == 1) {
    parallelFor(c, n * c * s, [&](int64_t k) {
      float a, b;
      coefficients(k, a, b);
      for (int64_t i = 0; i < n; ++i)
        affineRow(x + (i * c + k) * s, s, a, b, y + (i * c + k) * s);
    });
    return;
  }
  int64_t blocks = c / block;
  parallelFor(blocks, n * c * s, [&](int64_t cb) {
    float a[kLanes], b[kLanes];
    for (int64_t l = 0; l < kLanes; ++l)
      coefficients(cb * block + l, a[l], b[l]);
    for (int64_t i = 0; i < n; ++i) {
      int64_t offset = (i * blocks + cb) * s * block;
      affineBlockRow(x + offset, s, a, b, y + offset);
    }
  });
}

} // extern "C"

namespace {

/// Batch normalization's backward sums of channel k, by the statistics in
/// `stats` (2 x c): sum of dy and sum of dy * xhat over n and s, and the
/// mean and 1/std they were taken with.
struct BatchNormGradSums {
  double sumDy, sumDyXhat, mu, invStd;
};

BatchNormGradSums gradSums(const float *stats, int64_t c, float epsilon,
                           int64_t k, double sumDy, double sumDyDeviation) {
  double invStd = 1.0 / std::sqrt(double(stats[c + k]) + epsilon);
  return {sumDy, sumDyDeviation * invStd, double(stats[k]), invStd};
}

/// Calls each(k, sums) for the channels [k, k + block) of dy and x, with
/// their sums (`block` of them: 1 for plain tensors, one call per channel;
/// DPC_CHANNEL_BLOCK for blocked ones, one call per block), on the kernel
/// threads.
template <typename Each>
void forEachBlockGradSums(const char *kernel, const float *dy, const float *x,
                          const float *stats, int64_t n, int64_t c, int64_t s,
                          int64_t block, float epsilon, Each each) {
  checkChannelBlock(kernel, c, block);
  if (block == 1) {
    parallelFor(c, n * c * s, [&](int64_t k) {
      LaneSums dySum, dyDeviation;
      double mu = stats[k];
      for (int64_t i = 0; i < n; ++i)
        addProductsOfDeviations(dySum, dyDeviation, dy + (i * c + k) * s,
                                x + (i * c + k) * s, s, mu);
      BatchNormGradSums sums =
          gradSums(stats, c, epsilon, k, dySum.total(), dyDeviation.total());
      each(k, &sums);
    });
    return;
  }
  int64_t blocks = c / block;
  parallelFor(blocks, n * c * s, [&](int64_t cb) {
    double mu[kLanes];
    for (int64_t l = 0; l < kLanes; ++l)
      mu[l] = stats[cb * block + l];
    BlockLanes dySum, dyDeviation;
    for (int64_t i = 0; i < n; ++i) {
      int64_t offset = (i * blocks + cb) * s * block;
      addBlockProductsOfDeviations(dySum, dyDeviation, dy + offset, x + offset,
                                   s, blockLanes(mu));
    }
    BatchNormGradSums sums[kLanes];
    for (int64_t l = 0; l < kLanes; ++l)
      sums[l] =
          gradSums(stats, c, epsilon, cb * block + l, dySum[l], dyDeviation[l]);
    each(cb * block, sums);
  });
}

} // namespace

extern "C" {

void dpc_batch_norm_grad_input(const float *dy, const float *x,
                               const float *stats, const float *scale,
                               int64_t n, int64_t c, int64_t s, int64_t block,
                               float epsilon, float *dx) {
  double count = double(n * s);
  // dx = a * (dy - meanDy - xhat * meanDyXhat) over each channel's values.
  forEachBlockGradSums(
      "dpc_batch_norm_grad_input", dy, x, stats, n, c, s, block, epsilon,
      [&](int64_t first, const BatchNormGradSums *sums) {
        double mu[kLanes], invStd[kLanes], a[kLanes], meanDy[kLanes],
            meanDyXhat[kLanes];
        for (int64_t l = 0; l < block; ++l) {
          mu[l] = sums[l].mu;
          invStd[l] = sums[l].invStd;
          a[l] = scale[first + l] * sums[l].invStd;
          meanDy[l] = sums[l].sumDy / count;
          meanDyXhat[l] = sums[l].sumDyXhat / count;
        }
        for (int64_t i = 0; i < n; ++i) {
          if (block == 1) {
            int64_t offset = (i * c + first) * s;
            batchNormGradRow(dy + offset, x + offset, s, mu[0], invStd[0], a[0],
                             meanDy[0], meanDyXhat[0], dx + offset);
          } else {
            // (i * c + first) * s is also where block first / 16 starts.
            int64_t offset = (i * c + first) * s;
            batchNormGradBlockRow(dy + offset, x + offset, s, mu, invStd, a,
                                  meanDy, meanDyXhat, dx + offset);
          }
        }
      });
}

void dpc_batch_norm_grad_scale(const float *dy, const float *x,
                               const float *stats, int64_t n, int64_t c,
                               int64_t s, int64_t block, float epsilon,
                               float *dscale) {
  forEachBlockGradSums("dpc_batch_norm_grad_scale", dy, x, stats, n, c, s,
                       block, epsilon,
                       [&](int64_t first, const BatchNormGradSums *sums) {
                         for (int64_t l = 0; l < block; ++l)
                           dscale[first + l] = float(sums[l].sumDyXhat);
                       });
}

void dpc_batch_norm_grad_bias(const float *dy, int64_t n, int64_t c, int64_t s,
                              int64_t block, float *dbias) {
  checkChannelBlock("dpc_batch_norm_grad_bias", c, block);
  if (block == 1) {
    int64_t shape[4] = {n, c, s, 1};
    dpc_conv2d_grad_bias(dy, shape, dbias);
    return;
  }
  int64_t blocks = c / block;
  parallelFor(blocks, n * c * s, [&](int64_t cb) {
    BlockLanes sum = blockSums(dy, n, blocks, cb, s);
    for (int64_t l = 0; l < kLanes; ++l)
      dbias[cb * block + l] = float(sum[l]);
  });
}

} // extern "C"

namespace {

// Layer normalization runs on oneDNN's layer_normalization primitive, whose
// JIT kernels beat plain loops by far. On [16, 64, 128] (1024 rows of 128),
// one thread: the forward takes 0.035 ms against 0.25 ms for a loop
// accumulating in double; the three gradients (input, scale, and the bias's
// dpc_sum_to_shape) 0.17 ms against 0.72 ms. The ABI recomputes the
// statistics in the backward pass, so each gradient kernel first runs the
// training forward for them; oneDNN's own backward from saved statistics
// would take 0.06 ms.
enum class LayerNormKind : int64_t { Forward, Statistics, BackwardData };

void checkLayerNormSizes(const char *kernel, int64_t rows, int64_t size) {
  if (rows < 0 || size < 1)
    fail(kernel, "bad sizes rows " + std::to_string(rows) + ", size " +
                     std::to_string(size));
}

/// Primitives by kind, sizes, epsilon and the affine operands they read,
/// cached like the convolutions'.
dnnl::primitive &layerNormPrimitive(LayerNormKind kind, int64_t rows,
                                    int64_t size, float epsilon, bool scale,
                                    bool shift) {
  static std::mutex mutex;
  static std::map<std::vector<int64_t>, dnnl::primitive> cache;
  int32_t epsilonBits;
  std::memcpy(&epsilonBits, &epsilon, sizeof epsilonBits);
  std::vector<int64_t> key = {int64_t(kind), rows,           size,
                              epsilonBits,   int64_t(scale), int64_t(shift)};
  std::lock_guard<std::mutex> lock(mutex);
  auto it = cache.find(key);
  if (it != cache.end())
    return it->second;
  using fwd = dnnl::layer_normalization_forward;
  using bwd = dnnl::layer_normalization_backward;
  dnnl::memory::desc data({rows, size}, dt::f32, tag::ab);
  dnnl::memory::desc stats({rows}, dt::f32, tag::a);
  auto flags = dnnl::normalization_flags::none;
  if (scale)
    flags |= dnnl::normalization_flags::use_scale;
  if (shift)
    flags |= dnnl::normalization_flags::use_shift;
  try {
    fwd::primitive_desc training(fwd::desc(dnnl::prop_kind::forward_training,
                                           data, stats, epsilon, flags),
                                 engine());
    dnnl::primitive prim;
    switch (kind) {
    case LayerNormKind::Forward:
      prim =
          fwd(fwd::primitive_desc(fwd::desc(dnnl::prop_kind::forward_inference,
                                            data, stats, epsilon, flags),
                                  engine()));
      break;
    case LayerNormKind::Statistics:
      prim = fwd(training);
      break;
    case LayerNormKind::BackwardData:
      // oneDNN 2.6 has no backward_data with a scale: with one, the full
      // backward runs and its scale gradient goes to scratch.
      prim = bwd(
          bwd::primitive_desc(bwd::desc(scale ? dnnl::prop_kind::backward
                                              : dnnl::prop_kind::backward_data,
                                        data, data, stats, epsilon, flags),
                              engine(), training));
      break;
    }
    return cache.emplace(key, prim).first->second;
  } catch (const dnnl::error &e) {
    fail("dpc_layer_norm",
         "oneDNN, primitive " + std::to_string(int(kind)) + ": " + e.what());
  }
}

/// Each row's mean and biased variance, from the training forward; its
/// normalized output goes to scratch too. Valid until the next call.
struct LayerNormStats {
  float *mean, *variance;
};

LayerNormStats layerNormStats(const float *x, int64_t rows, int64_t size,
                              float epsilon) {
  static thread_local std::vector<float> moments, normalized;
  moments.resize(size_t(2 * rows));
  normalized.resize(size_t(rows * size));
  dnnl::memory::desc data({rows, size}, dt::f32, tag::ab);
  dnnl::memory::desc stats({rows}, dt::f32, tag::a);
  LayerNormStats s{moments.data(), moments.data() + rows};
  layerNormPrimitive(LayerNormKind::Statistics, rows, size, epsilon, false,
                     false)
      .execute(stream(), {{DNNL_ARG_SRC, mem(data, x)},
                          {DNNL_ARG_DST, mem(data, normalized.data())},
                          {DNNL_ARG_MEAN, mem(stats, s.mean)},
                          {DNNL_ARG_VARIANCE, mem(stats, s.variance)}});
  stream().wait();
  return s;
}

} // namespace

extern "C" {

void dpc_layer_norm(const float *x, const float *scale, const float *bias,
                    int64_t rows, int64_t size, float epsilon, float *y) {
  checkLayerNormSizes("dpc_layer_norm", rows, size);
  if (rows == 0)
    return;
  dnnl::memory::desc data({rows, size}, dt::f32, tag::ab);
  dnnl::memory::desc weights({size}, dt::f32, tag::a);
  std::unordered_map<int, dnnl::memory> args = {{DNNL_ARG_SRC, mem(data, x)},
                                                {DNNL_ARG_DST, mem(data, y)}};
  if (scale)
    args.emplace(DNNL_ARG_SCALE, mem(weights, scale));
  if (bias)
    args.emplace(DNNL_ARG_SHIFT, mem(weights, bias));
  layerNormPrimitive(LayerNormKind::Forward, rows, size, epsilon, scale, bias)
      .execute(stream(), args);
  stream().wait();
}

void dpc_layer_norm_grad_input(const float *dy, const float *x,
                               const float *scale, int64_t rows, int64_t size,
                               float epsilon, float *dx) {
  checkLayerNormSizes("dpc_layer_norm_grad_input", rows, size);
  if (rows == 0)
    return;
  LayerNormStats s = layerNormStats(x, rows, size, epsilon);
  dnnl::memory::desc data({rows, size}, dt::f32, tag::ab);
  dnnl::memory::desc stats({rows}, dt::f32, tag::a);
  std::unordered_map<int, dnnl::memory> args = {
      {DNNL_ARG_SRC, mem(data, x)},
      {DNNL_ARG_DIFF_DST, mem(data, dy)},
      {DNNL_ARG_MEAN, mem(stats, s.mean)},
      {DNNL_ARG_VARIANCE, mem(stats, s.variance)},
      {DNNL_ARG_DIFF_SRC, mem(data, dx)}};
  static thread_local std::vector<float> scaleGrad;
  if (scale) {
    dnnl::memory::desc weights({size}, dt::f32, tag::a);
    scaleGrad.resize(size_t(size));
    args.emplace(DNNL_ARG_SCALE, mem(weights, scale));
    args.emplace(DNNL_ARG_DIFF_SCALE, mem(weights, scaleGrad.data()));
  }
  layerNormPrimitive(LayerNormKind::BackwardData, rows, size, epsilon, scale,
                     false)
      .execute(stream(), args);
  stream().wait();
}

// A loop over the rows, each adding its row to every column's sum: the
// inner loop has no reduction, so it vectorizes.
void dpc_layer_norm_grad_scale(const float *dy, const float *x, int64_t rows,
                               int64_t size, float epsilon, float *dscale) {
  checkLayerNormSizes("dpc_layer_norm_grad_scale", rows, size);
  std::fill(dscale, dscale + size, 0.0f);
  if (rows == 0)
    return;
  LayerNormStats s = layerNormStats(x, rows, size, epsilon);
  for (int64_t r = 0; r < rows; ++r) {
    const float *in = x + r * size, *grad = dy + r * size;
    float mean = s.mean[r], invStd = 1.0f / std::sqrt(s.variance[r] + epsilon);
    for (int64_t j = 0; j < size; ++j)
      dscale[j] += grad[j] * ((in[j] - mean) * invStd);
  }
}

static int64_t gatherRow(const char *kernel, const int64_t *indices, int64_t i,
                         int64_t rows) {
  int64_t index = indices[i];
  if (index < -rows || index >= rows)
    fail(kernel, "index " + std::to_string(index) + " at position " +
                     std::to_string(i) + " is outside the table's " +
                     std::to_string(rows) + " rows");
  return index < 0 ? index + rows : index;
}

void dpc_gather(const float *table, const int64_t *indices, int64_t rows,
                int64_t width, int64_t n, float *out) {
  for (int64_t i = 0; i < n; ++i)
    std::memcpy(out + i * width,
                table + gatherRow("dpc_gather", indices, i, rows) * width,
                size_t(width) * sizeof(float));
}

void dpc_gather_grad(const float *dy, const int64_t *indices, int64_t rows,
                     int64_t width, int64_t n, float *dtable) {
  std::fill(dtable, dtable + rows * width, 0.0f);
  for (int64_t i = 0; i < n; ++i) {
    float *row =
        dtable + gatherRow("dpc_gather_grad", indices, i, rows) * width;
    const float *g = dy + i * width;
    for (int64_t j = 0; j < width; ++j)
      row[j] += g[j];
  }
}

} // extern "C"

namespace {

// y (m x n, leading dimension ldy) = beta * y + a (m x k) b^T (b: n x k),
// row-major with leading dimensions; one dnnl_sgemm.
void gemmTransB(const char *kernel, int64_t m, int64_t n, int64_t k,
                const float *a, int64_t lda, const float *b, int64_t ldb,
                float beta, float *y, int64_t ldy) {
  dnnl_status_t status =
      dnnl_sgemm('N', 'T', m, n, k, 1.0f, a, lda, b, ldb, beta, y, ldy);
  if (status != dnnl_success)
    fail(kernel,
         "dnnl_sgemm failed with status " + std::to_string(int(status)));
}

void gemm(const char *kernel, int64_t m, int64_t n, int64_t k, const float *a,
          int64_t lda, const float *b, int64_t ldb, float beta, float *y,
          int64_t ldy) {
  dnnl_status_t status =
      dnnl_sgemm('N', 'N', m, n, k, 1.0f, a, lda, b, ldb, beta, y, ldy);
  if (status != dnnl_success)
    fail(kernel,
         "dnnl_sgemm failed with status " + std::to_string(int(status)));
}

float sigmoid(float z) { return 1.0f / (1.0f + std::exp(-z)); }

void checkLstmSizes(const char *kernel, int64_t steps, int64_t batch,
                    int64_t input, int64_t hidden) {
  if (steps < 1 || batch < 1 || input < 0 || hidden < 1)
    fail(kernel, "bad sizes steps " + std::to_string(steps) + ", batch " +
                     std::to_string(batch) + ", input " +
                     std::to_string(input) + ", hidden " +
                     std::to_string(hidden));
}

} // namespace

extern "C" {

// The input projection of every step is one GEMM; the recurrence is a GEMM
// per step into the pre-activations, which the gate loop then overwrites
// in place with the activations.
void dpc_lstm(const float *x, const float *w, const float *r, const float *bias,
              const float *h0, const float *c0, int64_t steps, int64_t batch,
              int64_t input, int64_t hidden, float *states) {
  checkLstmSizes("dpc_lstm", steps, batch, input, hidden);
  const int64_t H = hidden, G = 4 * H, S = 6 * H;
  // The pre-activations go where the gates will be, at column 2H of each
  // state row.
  float *z = states + 2 * H;
  if (input > 0)
    gemmTransB("dpc_lstm", steps * batch, G, input, x, input, w, input, 0.0f, z,
               S);
  for (int64_t t = 0; t < steps; ++t) {
    float *row = states + t * batch * S;
    if (input == 0)
      for (int64_t b = 0; b < batch; ++b)
        std::fill(row + b * S + 2 * H, row + b * S + S, 0.0f);
    const float *hPrev = t == 0 ? h0 : states + (t - 1) * batch * S;
    int64_t ldh = t == 0 ? H : S;
    gemmTransB("dpc_lstm", batch, G, H, hPrev, ldh, r, H, 1.0f, row + 2 * H, S);
    for (int64_t b = 0; b < batch; ++b) {
      float *s = row + b * S;
      float *gates = s + 2 * H;
      const float *cPrev =
          t == 0 ? c0 + b * H : states + ((t - 1) * batch + b) * S + H;
      for (int64_t j = 0; j < H; ++j) {
        float zi = gates[j], zo = gates[H + j], zf = gates[2 * H + j],
              zc = gates[3 * H + j];
        if (bias) {
          zi += bias[j] + bias[G + j];
          zo += bias[H + j] + bias[G + H + j];
          zf += bias[2 * H + j] + bias[G + 2 * H + j];
          zc += bias[3 * H + j] + bias[G + 3 * H + j];
        }
        float i = sigmoid(zi), o = sigmoid(zo), f = sigmoid(zf),
              g = std::tanh(zc);
        float c = f * cPrev[j] + i * g;
        gates[j] = i;
        gates[H + j] = o;
        gates[2 * H + j] = f;
        gates[3 * H + j] = g;
        s[H + j] = c;
        s[j] = o * std::tanh(c);
      }
    }
  }
}

void dpc_lstm_grad(const float *dstates, const float *states, const float *r,
                   const float *c0, int64_t steps, int64_t batch,
                   int64_t hidden, float *out) {
  checkLstmSizes("dpc_lstm_grad", steps, batch, 0, hidden);
  const int64_t H = hidden, S = 6 * H, O = 5 * H;
  // dh and dc carried from step t + 1 into step t.
  std::vector<float> dhNext(size_t(batch * H), 0.0f),
      dcNext(size_t(batch * H), 0.0f);
  for (int64_t t = steps - 1; t >= 0; --t) {
    for (int64_t b = 0; b < batch; ++b) {
      const float *s = states + (t * batch + b) * S;
      const float *ds = dstates + (t * batch + b) * S;
      const float *cPrev =
          t == 0 ? c0 + b * H : states + ((t - 1) * batch + b) * S + H;
      float *o5 = out + (t * batch + b) * O;
      float *dhCarry = dhNext.data() + b * H, *dcCarry = dcNext.data() + b * H;
      for (int64_t j = 0; j < H; ++j) {
        float i = s[2 * H + j], o = s[3 * H + j], f = s[4 * H + j],
              g = s[5 * H + j];
        float tc = std::tanh(s[H + j]);
        float dh = ds[j] + dhCarry[j];
        float dc = ds[H + j] + dcCarry[j] + dh * o * (1.0f - tc * tc);
        o5[j] = dc * g * i * (1.0f - i);
        o5[H + j] = dh * tc * o * (1.0f - o);
        o5[2 * H + j] = dc * cPrev[j] * f * (1.0f - f);
        o5[3 * H + j] = dc * i * (1.0f - g * g);
        o5[4 * H + j] = dc;
        dcCarry[j] = dc * f;
      }
    }
    // dh[t-1] = z_grad[t] r.
    if (t > 0)
      gemm("dpc_lstm_grad", batch, H, 4 * H, out + t * batch * O, O, r, H, 0.0f,
           dhNext.data(), H);
  }
}

} // extern "C"

extern "C" {

// `ignored` points at the label whose rows are left out, or is null.
static void crossEntropy(const char *name, const float *logits,
                         const int64_t *labels, int64_t n, int64_t c,
                         const int64_t *ignored, float scale, float *loss,
                         double smoothing = 0) {
  double total = 0;
  for (int64_t i = 0; i < n; ++i) {
    const float *row = logits + i * c;
    if (ignored && labels[i] == *ignored)
      continue;
    if (labels[i] < 0 || labels[i] >= c)
      fail(name, "label " + std::to_string(labels[i]) + " of row " +
                     std::to_string(i) + " is outside [0, " +
                     std::to_string(c) + ")");
    // Subtracting the maximum keeps exp() finite.
    float m = *std::max_element(row, row + c);
    double sum = 0;
    for (int64_t j = 0; j < c; ++j)
      sum += std::exp(double(row[j]) - m);
    double lse = double(m) + std::log(sum);
    if (smoothing == 0) {
      total += lse - double(row[labels[i]]);
      continue;
    }
    // mean_j -log p[j] = lse - mean_j logits[j].
    double rowSum = 0;
    for (int64_t j = 0; j < c; ++j)
      rowSum += double(row[j]);
    total += (1 - smoothing) * (lse - double(row[labels[i]])) +
             smoothing * (lse - rowSum / double(c));
  }
  *loss = float(double(scale) * total);
}

static void crossEntropyGrad(const char *name, const float *logits,
                             const int64_t *labels, int64_t n, int64_t c,
                             const int64_t *ignored, float scale,
                             float *dlogits, double smoothing = 0) {
  for (int64_t i = 0; i < n; ++i) {
    const float *row = logits + i * c;
    float *out = dlogits + i * c;
    if (ignored && labels[i] == *ignored) {
      std::fill(out, out + c, 0.0f);
      continue;
    }
    if (labels[i] < 0 || labels[i] >= c)
      fail(name, "label " + std::to_string(labels[i]) + " of row " +
                     std::to_string(i) + " is outside [0, " +
                     std::to_string(c) + ")");
    float m = *std::max_element(row, row + c);
    double sum = 0;
    for (int64_t j = 0; j < c; ++j)
      sum += std::exp(double(row[j]) - m);
    double hit = 1 - smoothing, spread = smoothing / double(c);
    for (int64_t j = 0; j < c; ++j) {
      double p = std::exp(double(row[j]) - m) / sum;
      double target = (j == labels[i] ? hit : 0.0) + spread;
      out[j] = float(double(scale) * (p - target));
    }
  }
}

void dpc_softmax_cross_entropy(const float *logits, const int64_t *labels,
                               int64_t n, int64_t c, float scale, float *loss) {
  crossEntropy("dpc_softmax_cross_entropy", logits, labels, n, c, nullptr,
               scale, loss);
}

void dpc_softmax_cross_entropy_grad(const float *logits, const int64_t *labels,
                                    int64_t n, int64_t c, float scale,
                                    float *dlogits) {
  crossEntropyGrad("dpc_softmax_cross_entropy_grad", logits, labels, n, c,
                   nullptr, scale, dlogits);
}

void dpc_softmax_cross_entropy_ignore(const float *logits,
                                      const int64_t *labels, int64_t n,
                                      int64_t c, int64_t ignore_index,
                                      float scale, float *loss) {
  crossEntropy("dpc_softmax_cross_entropy_ignore", logits, labels, n, c,
               &ignore_index, scale, loss);
}

void dpc_softmax_cross_entropy_ignore_grad(const float *logits,
                                           const int64_t *labels, int64_t n,
                                           int64_t c, int64_t ignore_index,
                                           float scale, float *dlogits) {
  crossEntropyGrad("dpc_softmax_cross_entropy_ignore_grad", logits, labels, n,
                   c, &ignore_index, scale, dlogits);
}

void dpc_softmax_cross_entropy_smoothed(const float *logits,
                                        const int64_t *labels, int64_t n,
                                        int64_t c, int64_t has_ignore,
                                        int64_t ignore_index, float smoothing,
                                        float scale, float *loss) {
  crossEntropy("dpc_softmax_cross_entropy_smoothed", logits, labels, n, c,
               has_ignore ? &ignore_index : nullptr, scale, loss, smoothing);
}

void dpc_softmax_cross_entropy_smoothed_grad(const float *logits,
                                             const int64_t *labels, int64_t n,
                                             int64_t c, int64_t has_ignore,
                                             int64_t ignore_index,
                                             float smoothing, float scale,
                                             float *dlogits) {
  crossEntropyGrad("dpc_softmax_cross_entropy_smoothed_grad", logits, labels, n,
                   c, has_ignore ? &ignore_index : nullptr, scale, dlogits,
                   smoothing);
}

void dpc_mse_loss(const float *prediction, const float *target, int64_t n,
                  float scale, float *loss) {
  double total = 0;
  for (int64_t i = 0; i < n; ++i) {
    double d = double(prediction[i]) - double(target[i]);
    total += d * d;
  }
  *loss = float(double(scale) * total);
}

void dpc_mse_loss_grad(const float *prediction, const float *target, int64_t n,
                       float scale, float *dprediction) {
  float twice = 2.0f * scale;
  for (int64_t i = 0; i < n; ++i)
    dprediction[i] = twice * (prediction[i] - target[i]);
}

void dpc_copy(const void *src, void *dst, int64_t bytes) {
  if (bytes > 0 && src != dst)
    std::memmove(dst, src, size_t(bytes));
}

} // extern "C"
