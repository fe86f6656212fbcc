//===- Internal.h - Shared pieces of the CPU kernel library -----*- C++ -*-===//
//
// Private to backends/cpu/runtime. The kernels of the runtime C ABI live in
// files by op family, each beside the ABI function that runs it:
// Convolution.cpp, Matmul.cpp, Elementwise.cpp, Tensor.cpp, Pooling.cpp,
// Normalization.cpp, Softmax.cpp and RNN.cpp; ChannelSums.cpp holds the
// per-channel row sums that batch normalization and the bias gradient
// share, and Kernels.cpp the failure report. This header declares what more
// than one of them uses: the failure report, the kernel threads' loops, the
// row walk, oneDNN's engine and stream, the bf16 switch and the lane sums.
// The small helpers that hot loops call are inline here, so every family
// file inlines them as the single Kernels.cpp did. Nothing outside the
// folder includes it.
//
//===----------------------------------------------------------------------===//

#ifndef DPC_BACKENDS_CPU_RUNTIME_INTERNAL_H
#define DPC_BACKENDS_CPU_RUNTIME_INTERNAL_H

#include "dpc/runtime/Abi.h"

#include <dnnl.hpp>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

namespace dpc::cpu {

/// Prints "error: KERNEL: MESSAGE" and aborts the process (Kernels.cpp).
[[noreturn]] void fail(const char *kernel, const std::string &message);

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

/// "[2,3,4]": a shape for an error message.
std::string shapeText(const int64_t *shape, int rank);

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

//===----------------------------------------------------------------------===//
// oneDNN
//===----------------------------------------------------------------------===//

// One engine and one stream for the whole library (inline: one instance).
inline dnnl::engine &engine() {
  static dnnl::engine e(dnnl::engine::kind::cpu, 0);
  return e;
}

inline dnnl::stream &stream() {
  static dnnl::stream s(engine());
  return s;
}

using dt = dnnl::memory::data_type;
using tag = dnnl::memory::format_tag;
using dims = dnnl::memory::dims;

inline dnnl::memory mem(const dnnl::memory::desc &d, const void *p) {
  return dnnl::memory(d, engine(), const_cast<void *>(p));
}

/// What a convolution or matrix product reads its operands as. Bf16 reads
/// the inputs (source, weights, output gradient) as bfloat16 and writes
/// float32, accumulated in float32 by oneDNN: the master weights and every
/// buffer of the ABI stay float32, converted on the way in.
enum class Precision : int64_t { F32, Bf16 };

/// Whether this CPU computes bf16 natively (AVX512-BF16 or AMX), as oneDNN
/// sees it: DNNL_MAX_CPU_ISA can lower what it sees. Without it the bf16
/// kernels compute in f32 (see dpcBf16Fallback). Defined in Matmul.cpp.
bool bf16Native();

/// `precision`, or F32 where the CPU has no native bf16.
Precision effective(Precision precision);

//===----------------------------------------------------------------------===//
// Per-channel reductions (ChannelSums.cpp)
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
void addRow(LaneSums &acc, const float *p, int64_t n);

/// acc += (p[j] - mu)^2 over [0, n).
void addSquaredDeviations(LaneSums &acc, const float *p, int64_t n, double mu);

/// sumG += g[j] and sumGD += g[j] * (x[j] - mu) over [0, n).
void addProductsOfDeviations(LaneSums &sumG, LaneSums &sumGD, const float *g,
                             const float *x, int64_t n, double mu);

/// y = x * a + b over [0, n).
void affineRow(const float *x, int64_t n, float a, float b, float *y);

/// Batch normalization's input gradient over one row, in double:
/// dx = a * (dy - meanDy - xhat * meanDyXhat), xhat = (x - mu) * invStd.
void batchNormGradRow(const float *dy, const float *x, int64_t n, double mu,
                      double invStd, double a, double meanDy, double meanDyXhat,
                      float *dx);

// Channel-blocked (nChw16c) activations: one image's block of 16 channels
// is s vectors of 16, one lane per channel, so a block's per-channel sums
// and updates run on the lanes directly. A channel's values are summed in
// order over n and s, each on its own lane.
static_assert(DPC_CHANNEL_BLOCK == kLanes, "a channel block is one lane set");

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
void addBlockRow(BlockLanes &acc, const float *p, int64_t s);

/// The per-channel sums over n images of block cb of blocked x (`blocks`
/// blocks of s vectors per image).
inline BlockLanes blockSums(const float *x, int64_t n, int64_t blocks,
                            int64_t cb, int64_t s) {
  BlockLanes sum;
  for (int64_t i = 0; i < n; ++i)
    addBlockRow(sum, x + (i * blocks + cb) * s * kLanes, s);
  return sum;
}

/// acc += (p - mu)^2 over the s vectors at p.
void addBlockSquaredDeviations(BlockLanes &acc, const float *p, int64_t s,
                               const BlockLanes &mu);

/// sumG += g and sumGD += g * (x - mu) over the s vectors at g and x.
void addBlockProductsOfDeviations(BlockLanes &sumG, BlockLanes &sumGD,
                                  const float *g, const float *x, int64_t s,
                                  const BlockLanes &mu);

/// y = x * a + b over the s vectors at x, a and b (16 floats) one lane per
/// channel.
void affineBlockRow(const float *x, int64_t s, const float *a, const float *b,
                    float *y);

/// batchNormGradRow over the s vectors at dy and x, the coefficients one
/// lane per channel.
void batchNormGradBlockRow(const float *dy, const float *x, int64_t s,
                           const double *mu, const double *invStd,
                           const double *a, const double *meanDy,
                           const double *meanDyXhat, float *dx);

} // namespace dpc::cpu

#endif // DPC_BACKENDS_CPU_RUNTIME_INTERNAL_H
