//===- Lrn.h - Host and device math of LRN ----------------------*- C++ -*-===//
//
// ONNX LRN's channel windows and its scale, compiled for the host and for
// the GPU alike, so that the CPU and CUDA kernels of dpc_lrn and
// dpc_lrn_grad sum the same channels and raise the same base. ONNX centres
// the window of channel c on [c - floor((size-1)/2), c + ceil((size-1)/2)],
// clipped to the channels that exist; for an even size that is one channel
// further up than PyTorch's local_response_norm, which pads the other way.
//
//===----------------------------------------------------------------------===//

#ifndef DPC_BACKENDS_COMMON_LRN_H
#define DPC_BACKENDS_COMMON_LRN_H

#include <math.h>
#include <stdint.h>

#if defined(__CUDACC__)
#define DPC_LRN_MATH __host__ __device__ inline
#else
#define DPC_LRN_MATH inline
#endif

namespace dpc::lrn {

/// Channels first..last, both included.
struct Window {
  int64_t first, last;
};

/// The channels whose squares the scale of channel `c` of `channels` sums.
DPC_LRN_MATH Window window(int64_t c, int64_t channels, int64_t size) {
  int64_t below = (size - 1) / 2, above = size / 2;
  return {c - below < 0 ? 0 : c - below,
          c + above >= channels ? channels - 1 : c + above};
}

/// The channels whose windows hold channel `c`: those the gradient of `c`
/// gathers from (the window turned around).
DPC_LRN_MATH Window covering(int64_t c, int64_t channels, int64_t size) {
  int64_t below = (size - 1) / 2, above = size / 2;
  return {c - above < 0 ? 0 : c - above,
          c + below >= channels ? channels - 1 : c + below};
}

/// The base the output divides by, before the power: bias + alpha / size
/// times the window's sum of squares.
DPC_LRN_MATH float base(float sumSquares, int64_t size, float alpha,
                        float bias) {
  return bias + alpha / float(size) * sumSquares;
}

/// The sum of squares over channel c's window of the column of `x` that
/// starts at `column` (channel stride `stride`).
DPC_LRN_MATH float sumSquares(const float *x, int64_t column, int64_t stride,
                              Window w) {
  float sum = 0.0f;
  for (int64_t k = w.first; k <= w.last; ++k) {
    float v = x[column + k * stride];
    sum += v * v;
  }
  return sum;
}

/// The gradient of one input element, x_j's:
///   dy_j * base_j^-beta - 2 alpha beta / size * x_j * gathered,
/// `gathered` the sum over the channels c whose windows hold j of
/// dy_c * x_c * base_c^(-beta-1).
DPC_LRN_MATH float inputGradient(float dy, float x, float base, float gathered,
                                 int64_t size, float alpha, float beta) {
  return dy * powf(base, -beta) -
         2.0f * alpha * beta / float(size) * x * gathered;
}

} // namespace dpc::lrn

#endif // DPC_BACKENDS_COMMON_LRN_H
