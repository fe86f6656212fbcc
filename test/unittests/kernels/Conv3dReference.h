//===- Conv3dReference.h - 3-D convolutions in double ----------*- C++ -*-===//
//
// The plain references of dpc_conv3d and its input and filter gradients
// for the conformance suite: direct loops over every product of a 3-D
// cross-correlation (NCDHW input, OIDHW filter, Abi.h's dpc_conv3d_params),
// as Reference.h's for conv2d.
//
//===----------------------------------------------------------------------===//

#ifndef DPC_TEST_UNITTESTS_KERNELS_CONV3DREFERENCE_H
#define DPC_TEST_UNITTESTS_KERNELS_CONV3DREFERENCE_H

#include "test/unittests/kernels/Reference.h"

namespace dpc::testing {

/// One conv3d: x (N, C, D, H, W), w (O, C/groups, KD, KH, KW).
struct Conv3dConfig {
  const char *name;
  Shape x, w;
  dpc_conv3d_params params;

  const int64_t *strides() const { return &params.stride_d; }
  const int64_t *pads() const { return &params.pad_front; }
  const int64_t *dilations() const { return &params.dilation_d; }
  Shape y() const {
    Shape y = {x[0], w[0]};
    for (int i = 0; i < 3; ++i)
      y.push_back((x[2 + i] + pads()[i] + pads()[3 + i] -
                   (w[2 + i] - 1) * dilations()[i] - 1) /
                      strides()[i] +
                  1);
    return y;
  }

  /// Calls f(yIndex, xIndex, wIndex) for every product whose input element
  /// lies inside the input.
  template <typename F> void forEachTap(F f) const {
    Shape ys = y();
    int64_t cPerGroup = w[1], oPerGroup = w[0] / params.groups;
    int64_t taps = w[2] * w[3] * w[4];
    for (size_t yi = 0; yi < countOf(ys); ++yi) {
      int64_t rest = int64_t(yi), out[3];
      for (int i = 2; i >= 0; --i) {
        out[i] = rest % ys[2 + i];
        rest /= ys[2 + i];
      }
      int64_t o = rest % ys[1], n = rest / ys[1];
      for (int64_t ci = 0; ci < cPerGroup; ++ci)
        for (int64_t t = 0; t < taps; ++t) {
          int64_t k[3] = {t / (w[3] * w[4]), t / w[4] % w[3], t % w[4]};
          int64_t in[3];
          bool inside = true;
          for (int i = 0; i < 3; ++i) {
            in[i] = out[i] * strides()[i] - pads()[i] + k[i] * dilations()[i];
            inside = inside && in[i] >= 0 && in[i] < x[2 + i];
          }
          if (!inside)
            continue;
          int64_t c = o / oPerGroup * cPerGroup + ci;
          size_t xi = size_t(
              (((n * x[1] + c) * x[2] + in[0]) * x[3] + in[1]) * x[4] + in[2]);
          f(yi, xi, size_t((o * cPerGroup + ci) * taps + t));
        }
    }
  }
};
inline void PrintTo(const Conv3dConfig &c, std::ostream *os) { *os << c.name; }

/// y = conv3d(x, w) + bias (bias empty: none).
inline Doubles conv3dForward(const Conv3dConfig &c, const Floats &x,
                             const Floats &w, const Floats &bias) {
  Shape ys = c.y();
  Doubles y(countOf(ys), 0.0);
  size_t spatial = size_t(ys[2] * ys[3] * ys[4]);
  if (!bias.empty())
    for (size_t i = 0; i < y.size(); ++i)
      y[i] = bias[(i / spatial) % size_t(ys[1])];
  c.forEachTap(
      [&](size_t yi, size_t xi, size_t wi) { y[yi] += double(x[xi]) * w[wi]; });
  return y;
}

inline Doubles conv3dGradInput(const Conv3dConfig &c, const Floats &dy,
                               const Floats &w) {
  Doubles dx(countOf(c.x), 0.0);
  c.forEachTap([&](size_t yi, size_t xi, size_t wi) {
    dx[xi] += double(dy[yi]) * w[wi];
  });
  return dx;
}

/// `absSums` receives the sums of the terms' magnitudes.
inline Doubles conv3dGradFilter(const Conv3dConfig &c, const Floats &dy,
                                const Floats &x, Doubles *absSums) {
  Doubles dw(countOf(c.w), 0.0), sums(dw.size(), 0.0);
  c.forEachTap([&](size_t yi, size_t xi, size_t wi) {
    double term = double(dy[yi]) * x[xi];
    dw[wi] += term;
    sums[wi] += std::abs(term);
  });
  *absSums = std::move(sums);
  return dw;
}

} // namespace dpc::testing

#endif // DPC_TEST_UNITTESTS_KERNELS_CONV3DREFERENCE_H
