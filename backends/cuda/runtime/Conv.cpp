//===- Conv.cpp - conv2d and its gradients on cuDNN -----------------------===//
//
// cuDNN's descriptor API: every distinct shape gets its descriptors and
// algorithm once, from the heuristics (cudnnGet*Algorithm_v7, which launch
// nothing), and keeps them in a cache for the rest of the run; a training
// step sees the same few shapes every iteration.
//
// Numerics: the convolution descriptor asks for FMA math, and candidates
// that would use tensor cores are skipped, so FP32 convolutions never run in
// TF32 and match the CPU backend and PyTorch with TF32 off. Deterministic
// algorithms are preferred (the backward-filter ones that use atomics give
// different low bits from run to run), which keeps step-by-step comparisons
// against a reference reproducible.
//
// cuDNN pads symmetrically. ONNX allows pad_top != pad_bottom (SAME_UPPER
// with even kernels); those shapes pad the input explicitly into scratch and
// run the convolution unpadded, and the input gradient is computed on the
// padded shape and cropped.
//
// dpc_conv_transpose2d, ONNX ConvTranspose, is the input gradient of the
// convolution it transposes (backward data) plus its bias. The 3-D kernels
// (dpc_conv3d..., dpc_conv_transpose3d) are the same calls on N-d
// descriptors, with even pads only.
//
// The bias gradient needs no cuDNN: dpc_conv2d_grad_bias sums dy over all
// but the channel dimension with launchReduce (Elementwise.cu).
//
//===----------------------------------------------------------------------===//

#include "dpc/runtime/CudaKernels.h"

#include "backends/cuda/runtime/Internal.h"

#include <cudnn.h>

#include <climits>
#include <map>
#include <memory>

namespace dpc::cuda {
namespace {

/// The cuDNN call of each kernel: a transposed convolution is the input
/// gradient of the convolution it transposes, plus its bias.
enum class ConvKind : int64_t { Forward, GradInput, GradFilter, Transposed };

const char *kindName(ConvKind kind) {
  switch (kind) {
  case ConvKind::Forward:
    return "dpc_conv2d";
  case ConvKind::GradInput:
    return "dpc_conv2d_grad_input";
  case ConvKind::GradFilter:
    return "dpc_conv2d_grad_filter";
  case ConvKind::Transposed:
    return "dpc_conv_transpose2d";
  }
  return "conv";
}

/// Algorithms whose workspace exceeds this are passed over: the memory plan
/// budgets activations, not cuDNN's appetite.
constexpr size_t kMaxWorkspaceBytes = size_t(1) << 30;

struct Candidate {
  int algo;
  size_t workspaceBytes;
};

struct ConvPlan {
  ConvKind kind;
  /// The kernel's name, for messages.
  const char *name = "";
  // `unpadded`: a transposed convolution's output (x) as the caller holds
  // it, where x is the explicitly padded one.
  cudnnTensorDescriptor_t x = nullptr, y = nullptr, bias = nullptr,
                          unpadded = nullptr;
  cudnnFilterDescriptor_t w = nullptr;
  cudnnConvolutionDescriptor_t conv = nullptr;
  /// Usable algorithms, best first; `chosen` moves past any that the
  /// library turns down at execution time under FMA math.
  std::vector<Candidate> candidates;
  size_t chosen = 0;
  int64_t n = 0, c = 0, h = 0, w_ = 0;
  bool explicitPad = false;
  int64_t paddedH = 0, paddedW = 0, padTop = 0, padLeft = 0;

  ~ConvPlan() {
    if (x)
      cudnnDestroyTensorDescriptor(x);
    if (y)
      cudnnDestroyTensorDescriptor(y);
    if (bias)
      cudnnDestroyTensorDescriptor(bias);
    if (unpadded)
      cudnnDestroyTensorDescriptor(unpadded);
    if (w)
      cudnnDestroyFilterDescriptor(w);
    if (conv)
      cudnnDestroyConvolutionDescriptor(conv);
  }
};

void checkDnn(cudnnStatus_t status, const std::string &what) {
  if (status != CUDNN_STATUS_SUCCESS)
    fail(what + ": " + cudnnGetErrorString(status));
}

int narrow(int64_t value, const char *what) {
  if (value < 0 || value > INT_MAX)
    fail(std::string(what) + ": size " + std::to_string(value) +
         " out of cuDNN's range");
  return int(value);
}

std::string shapeText(const int64_t *s) {
  return "[" + std::to_string(s[0]) + ", " + std::to_string(s[1]) + ", " +
         std::to_string(s[2]) + ", " + std::to_string(s[3]) + "]";
}

bool usesTensorCores(cudnnMathType_t math) {
  return math == CUDNN_TENSOR_OP_MATH ||
         math == CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION;
}

/// Orders the heuristics' answers: deterministic ones first, each group in
/// the heuristics' own order; drops failures and tensor-core variants.
template <typename Perf>
std::vector<int> rankAlgorithms(const Perf *perfs, int count) {
  std::vector<int> order;
  for (int pass = 0; pass < 2; ++pass)
    for (int i = 0; i < count; ++i) {
      const Perf &perf = perfs[i];
      if (perf.status != CUDNN_STATUS_SUCCESS || usesTensorCores(perf.mathType))
        continue;
      bool deterministic = perf.determinism == CUDNN_DETERMINISTIC;
      if (deterministic == (pass == 0))
        order.push_back(int(perf.algo));
    }
  return order;
}

void chooseAlgorithms(ConvPlan &plan) {
  cudnnHandle_t handle = cudnn();
  // Deduplicated: the heuristics list an algorithm once per math type.
  auto add = [&](int algo, cudnnStatus_t status, size_t bytes) {
    for (const Candidate &c : plan.candidates)
      if (c.algo == algo)
        return;
    if (status == CUDNN_STATUS_SUCCESS && bytes <= kMaxWorkspaceBytes)
      plan.candidates.push_back({algo, bytes});
  };
  int found = 0;
  switch (plan.kind) {
  case ConvKind::Forward: {
    cudnnConvolutionFwdAlgoPerf_t perfs[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
    checkDnn(cudnnGetConvolutionForwardAlgorithm_v7(
                 handle, plan.x, plan.w, plan.conv, plan.y,
                 CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &found, perfs),
             "dpc_conv2d: cudnnGetConvolutionForwardAlgorithm_v7");
    for (int algo : rankAlgorithms(perfs, found)) {
      size_t bytes = 0;
      cudnnStatus_t status = cudnnGetConvolutionForwardWorkspaceSize(
          handle, plan.x, plan.w, plan.conv, plan.y,
          cudnnConvolutionFwdAlgo_t(algo), &bytes);
      add(algo, status, bytes);
    }
    break;
  }
  case ConvKind::GradInput:
  case ConvKind::Transposed: {
    cudnnConvolutionBwdDataAlgoPerf_t
        perfs[CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT];
    checkDnn(cudnnGetConvolutionBackwardDataAlgorithm_v7(
                 handle, plan.w, plan.y, plan.conv, plan.x,
                 CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, &found, perfs),
             std::string(plan.name) +
                 ": cudnnGetConvolutionBackwardDataAlgorithm_v7");
    for (int algo : rankAlgorithms(perfs, found)) {
      size_t bytes = 0;
      cudnnStatus_t status = cudnnGetConvolutionBackwardDataWorkspaceSize(
          handle, plan.w, plan.y, plan.conv, plan.x,
          cudnnConvolutionBwdDataAlgo_t(algo), &bytes);
      add(algo, status, bytes);
    }
    break;
  }
  case ConvKind::GradFilter: {
    cudnnConvolutionBwdFilterAlgoPerf_t
        perfs[CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT];
    checkDnn(cudnnGetConvolutionBackwardFilterAlgorithm_v7(
                 handle, plan.x, plan.y, plan.conv, plan.w,
                 CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT, &found, perfs),
             "dpc_conv2d_grad_filter: "
             "cudnnGetConvolutionBackwardFilterAlgorithm_v7");
    for (int algo : rankAlgorithms(perfs, found)) {
      size_t bytes = 0;
      cudnnStatus_t status = cudnnGetConvolutionBackwardFilterWorkspaceSize(
          handle, plan.x, plan.y, plan.conv, plan.w,
          cudnnConvolutionBwdFilterAlgo_t(algo), &bytes);
      add(algo, status, bytes);
    }
    break;
  }
  }
  if (plan.candidates.empty())
    fail(std::string(plan.name) +
         ": cuDNN offers no FP32 algorithm without tensor cores for this "
         "shape");
}

using Cache = std::map<std::vector<int64_t>, std::unique_ptr<ConvPlan>>;

Cache &cache() {
  static Cache *c = new Cache;
  return *c;
}

/// The plan for a convolution with input shape xs, filter ws and output ys
/// (NCHW / OIHW), whichever of them the call computes.
ConvPlan &getPlan(ConvKind kind, const int64_t *xs, const int64_t *ws,
                  const int64_t *ys, const dpc_conv_params *p) {
  int64_t allowed = kind == ConvKind::GradFilter ? DPC_CONV_ACCUMULATE_DW : 0;
  if (p->layouts & ~allowed)
    fail(std::string(kindName(kind)) + ": layouts " +
         std::to_string(p->layouts) +
         " (channel-blocked activations are a CPU layout; only a filter "
         "gradient accumulates)");
  std::vector<int64_t> key{int64_t(kind)};
  key.insert(key.end(), xs, xs + 4);
  key.insert(key.end(), ws, ws + 4);
  key.insert(key.end(), ys, ys + 4);
  key.insert(key.end(),
             {p->stride_h, p->stride_w, p->pad_top, p->pad_left, p->pad_bottom,
              p->pad_right, p->dilation_h, p->dilation_w, p->groups});
  std::unique_ptr<ConvPlan> &slot = cache()[key];
  if (slot)
    return *slot;

  const char *what = kindName(kind);
  int64_t strideH = p->stride_h, strideW = p->stride_w, padTop = p->pad_top,
          padLeft = p->pad_left, padBottom = p->pad_bottom,
          padRight = p->pad_right, dilationH = p->dilation_h,
          dilationW = p->dilation_w, groups = p->groups;
  if (groups < 1 || xs[1] != ws[1] * groups || ws[0] % groups != 0 ||
      ys[0] != xs[0] || ys[1] != ws[0])
    fail(std::string(what) + ": input " + shapeText(xs) + ", filter " +
         shapeText(ws) + " and output " + shapeText(ys) +
         " do not match with groups " + std::to_string(groups));
  if (padTop < 0 || padLeft < 0 || padBottom < 0 || padRight < 0)
    fail(std::string(what) + ": negative padding");

  auto plan = std::make_unique<ConvPlan>();
  plan->kind = kind;
  plan->name = what;
  plan->n = xs[0];
  plan->c = xs[1];
  plan->h = xs[2];
  plan->w_ = xs[3];
  plan->explicitPad = padTop != padBottom || padLeft != padRight;
  int64_t h = xs[2], w = xs[3], cudnnPadH = padTop, cudnnPadW = padLeft;
  if (plan->explicitPad) {
    h += padTop + padBottom;
    w += padLeft + padRight;
    cudnnPadH = cudnnPadW = 0;
    plan->paddedH = h;
    plan->paddedW = w;
    plan->padTop = padTop;
    plan->padLeft = padLeft;
  }

  checkDnn(cudnnCreateTensorDescriptor(&plan->x), what);
  checkDnn(cudnnCreateTensorDescriptor(&plan->y), what);
  checkDnn(cudnnCreateFilterDescriptor(&plan->w), what);
  checkDnn(cudnnCreateConvolutionDescriptor(&plan->conv), what);
  checkDnn(cudnnSetTensor4dDescriptor(plan->x, CUDNN_TENSOR_NCHW,
                                      CUDNN_DATA_FLOAT, narrow(xs[0], what),
                                      narrow(xs[1], what), narrow(h, what),
                                      narrow(w, what)),
           std::string(what) + ": input descriptor");
  checkDnn(cudnnSetFilter4dDescriptor(plan->w, CUDNN_DATA_FLOAT,
                                      CUDNN_TENSOR_NCHW, narrow(ws[0], what),
                                      narrow(ws[1], what), narrow(ws[2], what),
                                      narrow(ws[3], what)),
           std::string(what) + ": filter descriptor");
  checkDnn(cudnnSetConvolution2dDescriptor(
               plan->conv, narrow(cudnnPadH, what), narrow(cudnnPadW, what),
               narrow(strideH, what), narrow(strideW, what),
               narrow(dilationH, what), narrow(dilationW, what),
               CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT),
           std::string(what) + ": convolution descriptor");
  checkDnn(cudnnSetConvolutionGroupCount(plan->conv, int(groups)),
           std::string(what) + ": group count");
  checkDnn(cudnnSetConvolutionMathType(plan->conv, CUDNN_FMA_MATH),
           std::string(what) + ": math type");

  int on = 0, oc = 0, oh = 0, ow = 0;
  checkDnn(cudnnGetConvolution2dForwardOutputDim(plan->conv, plan->x, plan->w,
                                                 &on, &oc, &oh, &ow),
           std::string(what) + ": output size");
  if (on != ys[0] || oc != ys[1] || oh != ys[2] || ow != ys[3])
    fail(std::string(what) + ": output " + shapeText(ys) +
         " does not match the " + std::to_string(oh) + "x" +
         std::to_string(ow) + " that input " + shapeText(xs) + " and filter " +
         shapeText(ws) + " give");
  checkDnn(cudnnSetTensor4dDescriptor(plan->y, CUDNN_TENSOR_NCHW,
                                      CUDNN_DATA_FLOAT, on, oc, oh, ow),
           std::string(what) + ": output descriptor");
  if (kind == ConvKind::Forward || kind == ConvKind::Transposed) {
    // The bias is per channel of what the call writes: y, or x when
    // transposed.
    int channels = kind == ConvKind::Forward ? oc : narrow(xs[1], what);
    checkDnn(cudnnCreateTensorDescriptor(&plan->bias), what);
    checkDnn(cudnnSetTensor4dDescriptor(plan->bias, CUDNN_TENSOR_NCHW,
                                        CUDNN_DATA_FLOAT, 1, channels, 1, 1),
             std::string(what) + ": bias descriptor");
  }
  if (kind == ConvKind::Transposed) {
    checkDnn(cudnnCreateTensorDescriptor(&plan->unpadded), what);
    checkDnn(cudnnSetTensor4dDescriptor(
                 plan->unpadded, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT,
                 narrow(xs[0], what), narrow(xs[1], what), narrow(xs[2], what),
                 narrow(xs[3], what)),
             std::string(what) + ": output descriptor");
  }
  chooseAlgorithms(*plan);
  slot = std::move(plan);
  return *slot;
}

const char *kindName3d(ConvKind kind) {
  switch (kind) {
  case ConvKind::Forward:
    return "dpc_conv3d";
  case ConvKind::GradInput:
    return "dpc_conv3d_grad_input";
  case ConvKind::GradFilter:
    return "dpc_conv3d_grad_filter";
  case ConvKind::Transposed:
    return "dpc_conv_transpose3d";
  }
  return "conv3d";
}

/// A packed NCDHW (or [1, C, 1, 1, 1]) tensor descriptor.
void setTensor5d(cudnnTensorDescriptor_t *desc, const int64_t *shape,
                 const std::string &what) {
  int dims[5], strides[5];
  for (int i = 0; i < 5; ++i)
    dims[i] = narrow(shape[i], what.c_str());
  strides[4] = 1;
  for (int i = 3; i >= 0; --i)
    strides[i] = strides[i + 1] * dims[i + 1];
  checkDnn(cudnnCreateTensorDescriptor(desc), what);
  checkDnn(
      cudnnSetTensorNdDescriptor(*desc, CUDNN_DATA_FLOAT, 5, dims, strides),
      what + ": tensor descriptor");
}

/// The plan of a 3-D convolution with input xs, filter ws and output ys
/// (NCDHW / OIDHW) on cuDNN's N-d descriptors. cuDNN pads symmetrically,
/// and there is no explicit padding in 3-D here: uneven pads are refused
/// (torch's Conv3d exports even ones).
ConvPlan &getPlan3d(ConvKind kind, const int64_t *xs, const int64_t *ws,
                    const int64_t *ys, const dpc_conv3d_params *p) {
  const char *what = kindName3d(kind);
  int64_t allowed = kind == ConvKind::GradFilter ? DPC_CONV_ACCUMULATE_DW : 0;
  if (p->layouts & ~allowed)
    fail(std::string(what) + ": layouts " + std::to_string(p->layouts));
  std::vector<int64_t> key{int64_t(kind), 3};
  key.insert(key.end(), xs, xs + 5);
  key.insert(key.end(), ws, ws + 5);
  key.insert(key.end(), ys, ys + 5);
  key.insert(key.end(),
             {p->stride_d, p->stride_h, p->stride_w, p->pad_front, p->pad_top,
              p->pad_left, p->pad_back, p->pad_bottom, p->pad_right,
              p->dilation_d, p->dilation_h, p->dilation_w, p->groups});
  std::unique_ptr<ConvPlan> &slot = cache()[key];
  if (slot)
    return *slot;
  if (p->groups < 1 || xs[1] != ws[1] * p->groups || ws[0] % p->groups != 0 ||
      ys[0] != xs[0] || ys[1] != ws[0])
    fail(std::string(what) +
         ": input, filter and output channels do not "
         "match with groups " +
         std::to_string(p->groups));
  if (p->pad_front != p->pad_back || p->pad_top != p->pad_bottom ||
      p->pad_left != p->pad_right || p->pad_front < 0 || p->pad_top < 0 ||
      p->pad_left < 0)
    fail(std::string(what) + ": cuDNN takes even, non-negative pads in 3-D");
  auto plan = std::make_unique<ConvPlan>();
  plan->kind = kind;
  plan->name = what;
  std::string name = what;
  setTensor5d(&plan->x, xs, name + ": input");
  int filter[5];
  for (int i = 0; i < 5; ++i)
    filter[i] = narrow(ws[i], what);
  checkDnn(cudnnCreateFilterDescriptor(&plan->w), name);
  checkDnn(cudnnSetFilterNdDescriptor(plan->w, CUDNN_DATA_FLOAT,
                                      CUDNN_TENSOR_NCHW, 5, filter),
           name + ": filter descriptor");
  int pads[3] = {narrow(p->pad_front, what), narrow(p->pad_top, what),
                 narrow(p->pad_left, what)};
  int strides[3] = {narrow(p->stride_d, what), narrow(p->stride_h, what),
                    narrow(p->stride_w, what)};
  int dilations[3] = {narrow(p->dilation_d, what), narrow(p->dilation_h, what),
                      narrow(p->dilation_w, what)};
  checkDnn(cudnnCreateConvolutionDescriptor(&plan->conv), name);
  checkDnn(cudnnSetConvolutionNdDescriptor(plan->conv, 3, pads, strides,
                                           dilations, CUDNN_CROSS_CORRELATION,
                                           CUDNN_DATA_FLOAT),
           name + ": convolution descriptor");
  checkDnn(cudnnSetConvolutionGroupCount(plan->conv, int(p->groups)),
           name + ": group count");
  checkDnn(cudnnSetConvolutionMathType(plan->conv, CUDNN_FMA_MATH),
           name + ": math type");
  int out[5];
  checkDnn(cudnnGetConvolutionNdForwardOutputDim(plan->conv, plan->x, plan->w,
                                                 5, out),
           name + ": output size");
  for (int i = 0; i < 5; ++i)
    if (out[i] != ys[i])
      fail(name + ": output [" + std::to_string(ys[0]) +
           ", ...] does not "
           "match the convolution's, dimension " +
           std::to_string(i) + " is " + std::to_string(out[i]));
  setTensor5d(&plan->y, ys, name + ": output");
  if (kind == ConvKind::Forward || kind == ConvKind::Transposed) {
    const int64_t channels[5] = {1, kind == ConvKind::Forward ? ys[1] : xs[1],
                                 1, 1, 1};
    setTensor5d(&plan->bias, channels, name + ": bias");
  }
  if (kind == ConvKind::Transposed)
    setTensor5d(&plan->unpadded, xs, name + ": output");
  chooseAlgorithms(*plan);
  slot = std::move(plan);
  return *slot;
}

/// The input as the convolution sees it: x itself, or x padded into scratch.
const float *paddedInput(const ConvPlan &plan, const float *x) {
  if (!plan.explicitPad)
    return x;
  float *padded = static_cast<float *>(scratch(
      Scratch::Input,
      size_t(plan.n * plan.c * plan.paddedH * plan.paddedW) * sizeof(float)));
  launchWindowCopy(x, plan.n, plan.c, plan.h, plan.w_, padded, plan.paddedH,
                   plan.paddedW, -plan.padTop, -plan.padLeft);
  return padded;
}

/// Runs `call(algo, workspace, bytes)` with the plan's algorithm, moving on
/// to the next candidate when cuDNN reports it unsupported.
template <typename Call> void execute(ConvPlan &plan, Call call) {
  for (; plan.chosen < plan.candidates.size(); ++plan.chosen) {
    const Candidate &c = plan.candidates[plan.chosen];
    void *workspace = c.workspaceBytes
                          ? scratch(Scratch::Workspace, c.workspaceBytes)
                          : nullptr;
    cudnnStatus_t status = call(c.algo, workspace, c.workspaceBytes);
    if (status == CUDNN_STATUS_NOT_SUPPORTED)
      continue;
    checkDnn(status, plan.name);
    return;
  }
  fail(std::string(plan.name) +
       ": every cuDNN algorithm was turned down for this shape");
}

const float kOne = 1.0f, kZero = 0.0f;

/// dx = the input gradient of the convolution of `plan` for dy, by
/// cuDNN's backward data (on the padded shape and cropped where the pads
/// are uneven).
void backwardData(ConvPlan &plan, const float *dy, const float *w, float *dx) {
  float *out = dx;
  if (plan.explicitPad)
    out = static_cast<float *>(scratch(
        Scratch::Input,
        size_t(plan.n * plan.c * plan.paddedH * plan.paddedW) * sizeof(float)));
  execute(plan, [&](int algo, void *workspace, size_t bytes) {
    return cudnnConvolutionBackwardData(cudnn(), &kOne, plan.w, w, plan.y, dy,
                                        plan.conv,
                                        cudnnConvolutionBwdDataAlgo_t(algo),
                                        workspace, bytes, &kZero, plan.x, out);
  });
  if (plan.explicitPad)
    launchWindowCopy(out, plan.n, plan.c, plan.paddedH, plan.paddedW, dx,
                     plan.h, plan.w_, plan.padTop, plan.padLeft);
}

} // namespace

void releaseConvCache() { cache().clear(); }

} // namespace dpc::cuda

using namespace dpc::cuda;

extern "C" {

void dpc_conv2d(const float *x, const int64_t *x_shape, const float *w,
                const int64_t *w_shape, const float *bias, float *y,
                const int64_t *y_shape, const dpc_conv_params *params) {
  if (y_shape[0] * y_shape[1] * y_shape[2] * y_shape[3] == 0)
    return;
  ConvPlan &plan =
      getPlan(ConvKind::Forward, x_shape, w_shape, y_shape, params);
  const float *input = paddedInput(plan, x);
  execute(plan, [&](int algo, void *workspace, size_t bytes) {
    return cudnnConvolutionForward(cudnn(), &kOne, plan.x, input, plan.w, w,
                                   plan.conv, cudnnConvolutionFwdAlgo_t(algo),
                                   workspace, bytes, &kZero, plan.y, y);
  });
  if (bias)
    checkDnn(cudnnAddTensor(cudnn(), &kOne, plan.bias, bias, &kOne, plan.y, y),
             "dpc_conv2d: adding the bias");
}

void dpc_conv2d_grad_input(const float *dy, const int64_t *dy_shape,
                           const float *w, const int64_t *w_shape, float *dx,
                           const int64_t *dx_shape,
                           const dpc_conv_params *params) {
  int64_t dxCount = dx_shape[0] * dx_shape[1] * dx_shape[2] * dx_shape[3];
  if (dxCount == 0)
    return;
  backwardData(
      getPlan(ConvKind::GradInput, dx_shape, w_shape, dy_shape, params), dy, w,
      dx);
}

void dpc_conv_transpose2d(const float *x, const int64_t *x_shape,
                          const float *w, const int64_t *w_shape,
                          const float *bias, float *y, const int64_t *y_shape,
                          const dpc_conv_params *params) {
  if (y_shape[0] * y_shape[1] * y_shape[2] * y_shape[3] == 0)
    return;
  // The convolution transposed reads y and writes x.
  ConvPlan &plan =
      getPlan(ConvKind::Transposed, y_shape, w_shape, x_shape, params);
  backwardData(plan, x, w, y);
  if (bias)
    checkDnn(cudnnAddTensor(cudnn(), &kOne, plan.bias, bias, &kOne,
                            plan.unpadded, y),
             "dpc_conv_transpose2d: adding the bias");
}

void dpc_conv2d_grad_filter(const float *dy, const int64_t *dy_shape,
                            const float *x, const int64_t *x_shape, float *dw,
                            const int64_t *dw_shape,
                            const dpc_conv_params *params) {
  int64_t dwCount = dw_shape[0] * dw_shape[1] * dw_shape[2] * dw_shape[3];
  if (dwCount == 0)
    return;
  // Accumulating: dw += the gradient, cuDNN's beta of 1.
  bool accumulate = params->layouts & DPC_CONV_ACCUMULATE_DW;
  if (x_shape[0] == 0 && accumulate)
    return;
  if (x_shape[0] == 0) {
    check(cudaMemsetAsync(dw, 0, size_t(dwCount) * sizeof(float), stream()),
          "dpc_conv2d_grad_filter: clearing for an empty batch");
    return;
  }
  ConvPlan &plan =
      getPlan(ConvKind::GradFilter, x_shape, dw_shape, dy_shape, params);
  const float *input = paddedInput(plan, x);
  execute(plan, [&](int algo, void *workspace, size_t bytes) {
    return cudnnConvolutionBackwardFilter(
        cudnn(), &kOne, plan.x, input, plan.y, dy, plan.conv,
        cudnnConvolutionBwdFilterAlgo_t(algo), workspace, bytes,
        accumulate ? &kOne : &kZero, plan.w, dw);
  });
}

void dpc_conv3d(const float *x, const int64_t *x_shape, const float *w,
                const int64_t *w_shape, const float *bias, float *y,
                const int64_t *y_shape, const dpc_conv3d_params *params) {
  if (y_shape[0] * y_shape[1] * y_shape[2] * y_shape[3] * y_shape[4] == 0)
    return;
  ConvPlan &plan =
      getPlan3d(ConvKind::Forward, x_shape, w_shape, y_shape, params);
  execute(plan, [&](int algo, void *workspace, size_t bytes) {
    return cudnnConvolutionForward(cudnn(), &kOne, plan.x, x, plan.w, w,
                                   plan.conv, cudnnConvolutionFwdAlgo_t(algo),
                                   workspace, bytes, &kZero, plan.y, y);
  });
  if (bias)
    checkDnn(cudnnAddTensor(cudnn(), &kOne, plan.bias, bias, &kOne, plan.y, y),
             "dpc_conv3d: adding the bias");
}

void dpc_conv3d_grad_input(const float *dy, const int64_t *dy_shape,
                           const float *w, const int64_t *w_shape, float *dx,
                           const int64_t *dx_shape,
                           const dpc_conv3d_params *params) {
  if (dx_shape[0] * dx_shape[1] * dx_shape[2] * dx_shape[3] * dx_shape[4] == 0)
    return;
  backwardData(
      getPlan3d(ConvKind::GradInput, dx_shape, w_shape, dy_shape, params), dy,
      w, dx);
}

void dpc_conv3d_grad_filter(const float *dy, const int64_t *dy_shape,
                            const float *x, const int64_t *x_shape, float *dw,
                            const int64_t *dw_shape,
                            const dpc_conv3d_params *params) {
  int64_t dwCount =
      dw_shape[0] * dw_shape[1] * dw_shape[2] * dw_shape[3] * dw_shape[4];
  if (dwCount == 0)
    return;
  bool accumulate = params->layouts & DPC_CONV_ACCUMULATE_DW;
  if (x_shape[0] == 0) {
    if (!accumulate)
      check(cudaMemsetAsync(dw, 0, size_t(dwCount) * sizeof(float), stream()),
            "dpc_conv3d_grad_filter: clearing for an empty batch");
    return;
  }
  ConvPlan &plan =
      getPlan3d(ConvKind::GradFilter, x_shape, dw_shape, dy_shape, params);
  execute(plan, [&](int algo, void *workspace, size_t bytes) {
    return cudnnConvolutionBackwardFilter(
        cudnn(), &kOne, plan.x, x, plan.y, dy, plan.conv,
        cudnnConvolutionBwdFilterAlgo_t(algo), workspace, bytes,
        accumulate ? &kOne : &kZero, plan.w, dw);
  });
}

void dpc_conv_transpose3d(const float *x, const int64_t *x_shape,
                          const float *w, const int64_t *w_shape,
                          const float *bias, float *y, const int64_t *y_shape,
                          const dpc_conv3d_params *params) {
  if (y_shape[0] * y_shape[1] * y_shape[2] * y_shape[3] * y_shape[4] == 0)
    return;
  ConvPlan &plan =
      getPlan3d(ConvKind::Transposed, y_shape, w_shape, x_shape, params);
  backwardData(plan, x, w, y);
  if (bias)
    checkDnn(cudnnAddTensor(cudnn(), &kOne, plan.bias, bias, &kOne,
                            plan.unpadded, y),
             "dpc_conv_transpose3d: adding the bias");
}

void dpc_conv2d_grad_bias(const float *dy, const int64_t *dy_shape, float *db) {
  int64_t bShape[4] = {1, dy_shape[1], 1, 1};
  launchReduce(dy, planReduce(dy_shape, bShape, 4), db, 1.0f);
}

} // extern "C"
