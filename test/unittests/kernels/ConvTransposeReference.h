//===- ConvTransposeReference.h - ONNX ConvTranspose in double --*- C++ -*-===//
//
// The plain reference of dpc_conv_transpose2d for the conformance suite,
// written from ONNX's definition of ConvTranspose (each input element
// scattered through the filter into the output), not from the convolution
// it is the gradient of: the suite checks that the two agree.
//
//===----------------------------------------------------------------------===//

#ifndef DPC_TEST_UNITTESTS_KERNELS_CONVTRANSPOSEREFERENCE_H
#define DPC_TEST_UNITTESTS_KERNELS_CONVTRANSPOSEREFERENCE_H

#include "test/unittests/kernels/Reference.h"

namespace dpc::testing {

/// One ConvTranspose: x (N, Cin, H, W), w (Cin, Cout/groups, KH, KW), the
/// conv2d attributes in Abi.h's dpc_conv_params and ONNX's output padding.
struct ConvTransposeConfig {
  const char *name;
  Shape x, w;
  dpc_conv_params params;
  int64_t outputPadding[2];

  int64_t cout() const { return w[1] * params.groups; }
  Shape y() const {
    const dpc_conv_params &p = params;
    return {x[0], cout(),
            (x[2] - 1) * p.stride_h - p.pad_top - p.pad_bottom +
                p.dilation_h * (w[2] - 1) + 1 + outputPadding[0],
            (x[3] - 1) * p.stride_w - p.pad_left - p.pad_right +
                p.dilation_w * (w[3] - 1) + 1 + outputPadding[1]};
  }
};
inline void PrintTo(const ConvTransposeConfig &c, std::ostream *os) {
  *os << c.name;
}

/// y[n, g Cout/G + co, ih s_h - pad_top + kh d_h, iw s_w - pad_left +
/// kw d_w] += x[n, g Cin/G + ci, ih, iw] * w[g Cin/G + ci, co, kh, kw] over
/// the positions inside y, plus bias[channel] (bias empty: none).
inline Doubles convTransposeForward(const ConvTransposeConfig &c,
                                    const Doubles &x, const Doubles &w,
                                    const Doubles &bias) {
  const dpc_conv_params &p = c.params;
  Shape ys = c.y();
  Doubles y(countOf(ys), 0.0);
  int64_t cinPerGroup = c.x[1] / p.groups, coutPerGroup = c.w[1];
  for (int64_t n = 0; n < c.x[0]; ++n)
    for (int64_t ch = 0; ch < c.x[1]; ++ch)
      for (int64_t ih = 0; ih < c.x[2]; ++ih)
        for (int64_t iw = 0; iw < c.x[3]; ++iw) {
          double v = x[size_t(((n * c.x[1] + ch) * c.x[2] + ih) * c.x[3] + iw)];
          int64_t group = ch / cinPerGroup;
          for (int64_t co = 0; co < coutPerGroup; ++co)
            for (int64_t kh = 0; kh < c.w[2]; ++kh)
              for (int64_t kw = 0; kw < c.w[3]; ++kw) {
                int64_t oh = ih * p.stride_h - p.pad_top + kh * p.dilation_h;
                int64_t ow = iw * p.stride_w - p.pad_left + kw * p.dilation_w;
                if (oh < 0 || oh >= ys[2] || ow < 0 || ow >= ys[3])
                  continue;
                int64_t oc = group * coutPerGroup + co;
                y[size_t(((n * ys[1] + oc) * ys[2] + oh) * ys[3] + ow)] +=
                    v *
                    w[size_t(((ch * c.w[1] + co) * c.w[2] + kh) * c.w[3] + kw)];
              }
        }
  if (!bias.empty())
    for (size_t i = 0; i < y.size(); ++i)
      y[i] += bias[(i / size_t(ys[2] * ys[3])) % size_t(ys[1])];
  return y;
}

} // namespace dpc::testing

#endif // DPC_TEST_UNITTESTS_KERNELS_CONVTRANSPOSEREFERENCE_H
