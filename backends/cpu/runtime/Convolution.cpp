//===- Convolution.cpp - conv2d and its gradients on oneDNN ---------------===//
//
// The convolution kernels: forward (with bias), input gradient and filter
// gradient, each direct or Winograd's F(4x4, 3x3) and in f32 or bf16, and
// ONNX ConvTranspose (oneDNN's deconvolution, f32); and the same in 3-D
// (f32, direct, plain layouts), on
// oneDNN primitives that pick their own layouts, cached by shape; filters
// that are parameters are reordered once per write (ParamEpochs.h). Also
// dpc_relayout, between the plain and the channel-blocked (nChw16c)
// activations these kernels can take, and the bias gradient, a per-channel
// sum on ChannelSums.cpp's lanes.
//
//===----------------------------------------------------------------------===//

#include "backends/cpu/runtime/Internal.h"

#include "dpc/runtime/ParamEpochs.h"

#include <cstdio>
#include <map>
#include <mutex>
#include <unordered_map>

using namespace dpc::cpu;

namespace {

struct ConvGeometry {
  int64_t n, c, h, w; // input
  int64_t o, kh, kw;  // filter
  int64_t oh, ow;     // output
  int64_t sh, sw, pt, pl, pb, pr, dh, dw, groups;
  // Which activations the caller's buffers hold channel-blocked
  // (dpc_conv_layouts); the primitive does not depend on it.
  int64_t layouts;
  // A 3-D convolution's depth: input, filter and output extents, stride,
  // front and back pads, dilation (a 2-D one has none).
  bool volumetric = false;
  int64_t d = 1, kd = 1, od = 1, sd = 1, pf = 0, pk = 0, dd = 1;
};

ConvGeometry convGeometry(const char *kernel, const int64_t *x,
                          const int64_t *w, const int64_t *y,
                          const dpc_conv_params *p) {
  ConvGeometry g{x[0],          x[1],          x[2],         x[3],
                 w[0],          w[2],          w[3],         y[2],
                 y[3],          p->stride_h,   p->stride_w,  p->pad_top,
                 p->pad_left,   p->pad_bottom, p->pad_right, p->dilation_h,
                 p->dilation_w, p->groups,     p->layouts};
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

/// The geometry of a 3-D convolution of x (NCDHW) by w (OIDHW) into y, in
/// plain layouts (only DPC_CONV_ACCUMULATE_DW may be set).
ConvGeometry convGeometry3d(const char *kernel, const int64_t *x,
                            const int64_t *w, const int64_t *y,
                            const dpc_conv3d_params *p) {
  ConvGeometry g{x[0],          x[1],          x[3],         x[4],
                 w[0],          w[3],          w[4],         y[3],
                 y[4],          p->stride_h,   p->stride_w,  p->pad_top,
                 p->pad_left,   p->pad_bottom, p->pad_right, p->dilation_h,
                 p->dilation_w, p->groups,     p->layouts};
  g.volumetric = true;
  g.d = x[2];
  g.kd = w[2];
  g.od = y[2];
  g.sd = p->stride_d;
  g.pf = p->pad_front;
  g.pk = p->pad_back;
  g.dd = p->dilation_d;
  std::string shapes = "input " + shapeText(x, 5) + ", filter " +
                       shapeText(w, 5) + ", output " + shapeText(y, 5);
  if (g.layouts & ~int64_t(DPC_CONV_ACCUMULATE_DW))
    fail(kernel, shapes + ": bad layouts " + std::to_string(g.layouts));
  if (g.groups < 1 || g.c % g.groups || g.o % g.groups ||
      w[1] * g.groups != g.c)
    fail(kernel, shapes + ": filter channels do not match " +
                     std::to_string(g.groups) + " groups");
  const int64_t in[3] = {g.d, g.h, g.w}, k[3] = {g.kd, g.kh, g.kw},
                s[3] = {g.sd, g.sh, g.sw}, dil[3] = {g.dd, g.dh, g.dw},
                begin[3] = {g.pf, g.pt, g.pl}, end[3] = {g.pk, g.pb, g.pr};
  std::string expected = "[" + std::to_string(g.n) + "," + std::to_string(g.o);
  bool sizesMatch = y[0] == g.n && y[1] == g.o;
  for (int i = 0; i < 3; ++i) {
    if (s[i] < 1 || dil[i] < 1 || begin[i] < 0 || end[i] < 0)
      fail(kernel, shapes + ": bad strides, dilations or pads");
    int64_t size =
        (in[i] + begin[i] + end[i] - dil[i] * (k[i] - 1) - 1) / s[i] + 1;
    expected += "," + std::to_string(size);
    sizesMatch = sizesMatch && y[2 + i] == size;
  }
  if (!sizesMatch)
    fail(kernel, shapes + ": the output should be " + expected + "]");
  return g;
}

struct ConvDescs {
  dnnl::memory::desc src, weights, bias, dst;
  dims strides, dilates, padL, padR;
};

/// The descriptors of a 3-D convolution's buffers: NCDHW activations and
/// OIDHW filters (goidhw by group).
ConvDescs convDescs3d(const ConvGeometry &g) {
  ConvDescs d;
  d.src = {{g.n, g.c, g.d, g.h, g.w}, dt::f32, tag::ncdhw};
  d.dst = {{g.n, g.o, g.od, g.oh, g.ow}, dt::f32, tag::ncdhw};
  d.weights = g.groups == 1
                  ? dnnl::memory::desc({g.o, g.c, g.kd, g.kh, g.kw}, dt::f32,
                                       tag::oidhw)
                  : dnnl::memory::desc({g.groups, g.o / g.groups,
                                        g.c / g.groups, g.kd, g.kh, g.kw},
                                       dt::f32, tag::goidhw);
  d.bias = {{g.o}, dt::f32, tag::x};
  d.strides = {g.sd, g.sh, g.sw};
  d.dilates = {g.dd - 1, g.dh - 1, g.dw - 1};
  d.padL = {g.pf, g.pt, g.pl};
  d.padR = {g.pk, g.pb, g.pr};
  return d;
}

/// The descriptors of the caller's buffers: NCHW activations, or nChw16c
/// where g.layouts says, and OIHW filters.
ConvDescs convDescs(const ConvGeometry &g) {
  if (g.volumetric)
    return convDescs3d(g);
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

/// What a primitive computes: a convolution's forward (with or without
/// bias), its data or weights gradient, or ONNX ConvTranspose (oneDNN's
/// deconvolution, with or without bias).
enum class ConvKind : int64_t {
  Forward,
  ForwardBias,
  Data,
  Weights,
  Transposed,
  TransposedBias
};

/// How a convolution is computed: the direct kernels, or Winograd's
/// F(4x4, 3x3) (the _winograd ABI kernels, f32 only; select-conv-algorithm
/// gives them the 3x3, stride-1 layers where they pay).
enum class ConvAlgorithm : int64_t { Direct, Winograd };

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

/// The descriptors of a transposed convolution's buffers, for the conv2d
/// geometry `g` it is the input gradient of: src is that convolution's
/// output (x, NCHW), dst its input (y), and the ONNX filter (Cin, Cout/G,
/// KH, KW) is oneDNN's deconvolution weights (Cout, Cin, KH, KW) stored
/// input channels first: iohw, or giohw by group.
ConvDescs transposedDescs(const ConvGeometry &g) {
  ConvDescs t = convDescs(g);
  if (g.volumetric) {
    t.src = {{g.n, g.o, g.od, g.oh, g.ow}, dt::f32, tag::ncdhw};
    t.dst = {{g.n, g.c, g.d, g.h, g.w}, dt::f32, tag::ncdhw};
    t.weights = g.groups == 1
                    ? dnnl::memory::desc({g.c, g.o, g.kd, g.kh, g.kw}, dt::f32,
                                         tag::iodhw)
                    : dnnl::memory::desc({g.groups, g.c / g.groups,
                                          g.o / g.groups, g.kd, g.kh, g.kw},
                                         dt::f32, tag::giodhw);
    t.bias = {{g.c}, dt::f32, tag::x};
    return t;
  }
  t.src = {{g.n, g.o, g.oh, g.ow}, dt::f32, tag::nchw};
  t.dst = {{g.n, g.c, g.h, g.w}, dt::f32, tag::nchw};
  t.weights = g.groups == 1 ? dnnl::memory::desc({g.c, g.o, g.kh, g.kw},
                                                 dt::f32, tag::iohw)
                            : dnnl::memory::desc({g.groups, g.c / g.groups,
                                                  g.o / g.groups, g.kh, g.kw},
                                                 dt::f32, tag::giohw);
  t.bias = {{g.c}, dt::f32, tag::x};
  return t;
}

/// oneDNN's deconvolution for ONNX ConvTranspose (f32), in the layouts it
/// picks.
ConvPrimitive createTransposedPrimitive(bool bias, const ConvGeometry &g) {
  using fwd = dnnl::deconvolution_forward;
  ConvDescs t = transposedDescs(g);
  dnnl::memory::desc src(t.src.dims(), dt::f32, tag::any),
      weights(t.weights.dims(), dt::f32, tag::any),
      dst(t.dst.dims(), dt::f32, tag::any);
  auto prop = dnnl::prop_kind::forward_training;
  auto algorithm = dnnl::algorithm::deconvolution_direct;
  auto desc = bias ? fwd::desc(prop, algorithm, src, weights, t.bias, dst,
                               t.strides, t.dilates, t.padL, t.padR)
                   : fwd::desc(prop, algorithm, src, weights, dst, t.strides,
                               t.dilates, t.padL, t.padR);
  fwd::primitive_desc pd(desc, engine());
  ConvPrimitive cp;
  cp.prim = fwd(pd);
  cp.layouts = {{DNNL_ARG_SRC, pd.src_desc()},
                {DNNL_ARG_WEIGHTS, pd.weights_desc()},
                {DNNL_ARG_DST, pd.dst_desc()}};
  return cp;
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
  case ConvKind::Transposed:
  case ConvKind::TransposedBias:
    return createTransposedPrimitive(kind == ConvKind::TransposedBias, g);
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
  return !g.volumetric && g.kh == 3 && g.kw == 3 && g.sh == 1 && g.sw == 1 &&
         g.dh == 1 && g.dw == 1 && g.groups == 1 && evenPads;
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
                              g.groups,
                              int64_t(g.volumetric),
                              g.d,
                              g.kd,
                              g.od,
                              g.sd,
                              g.pf,
                              g.pk,
                              g.dd};
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

/// Only a filter gradient adds to its output (DPC_CONV_ACCUMULATE_DW).
void refuseAccumulate(const char *kernel, const ConvGeometry &g) {
  if (g.layouts & DPC_CONV_ACCUMULATE_DW)
    fail(kernel, "only a filter gradient accumulates");
}

void convForward(const char *kernel, Precision precision,
                 ConvAlgorithm algorithm, const ConvGeometry &g, const float *x,
                 const float *w, const float *bias, float *y) {
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

void convGradInput(const char *kernel, Precision precision,
                   ConvAlgorithm algorithm, const ConvGeometry &g,
                   const float *dy, const float *w, float *dx) {
  refuseAccumulate(kernel, g);
  ConvDescs d = convDescs(g);
  runConv(kernel, ConvKind::Data, effective(precision), algorithm, g,
          {{DNNL_ARG_DIFF_DST, d.dst, dy},
           {DNNL_ARG_WEIGHTS, d.weights, w},
           {DNNL_ARG_DIFF_SRC, d.src, dx, /*output=*/true}});
}

void convGradFilter(const char *kernel, Precision precision,
                    ConvAlgorithm algorithm, const ConvGeometry &g,
                    const float *dy, const float *x, float *dw) {
  ConvDescs d = convDescs(g);
  bool accumulate = g.layouts & DPC_CONV_ACCUMULATE_DW;
  runConv(
      kernel, ConvKind::Weights, effective(precision), algorithm, g,
      {{DNNL_ARG_DIFF_DST, d.dst, dy},
       {DNNL_ARG_SRC, d.src, x},
       {DNNL_ARG_DIFF_WEIGHTS, d.weights, dw, /*output=*/true, accumulate}});
}

/// Refuses a transposed convolution's output y unless each of its `rank` -
/// 2 spatial sizes is the natural one plus an output padding below the
/// stride (the sizes whose convolution gives x back).
void checkTransposedOutput(const char *kernel, int rank, const int64_t *x,
                           const int64_t *w, const int64_t *y,
                           const int64_t *strides, const int64_t *padSums,
                           const int64_t *dilations) {
  for (int i = 0; i < rank - 2; ++i) {
    int64_t natural = (x[2 + i] - 1) * strides[i] - padSums[i] +
                      dilations[i] * (w[2 + i] - 1) + 1;
    if (strides[i] < 1 || y[2 + i] < natural ||
        y[2 + i] >= natural + strides[i])
      fail(kernel, "input " + shapeText(x, rank) + ", filter " +
                       shapeText(w, rank) + ": output " + shapeText(y, rank) +
                       " is not the natural size plus an output padding "
                       "below the stride");
  }
}

/// ONNX ConvTranspose of x by w (+ bias) into y: the deconvolution whose
/// geometry `g` is that of the convolution with input y, filter w and
/// output x.
void convTransposed(const char *kernel, const ConvGeometry &g, const float *x,
                    const float *w, const float *bias, float *y) {
  if (g.layouts)
    fail(kernel,
         "takes plain layouts only, got layouts " + std::to_string(g.layouts));
  ConvDescs t = transposedDescs(g);
  std::vector<ConvArg> args = {{DNNL_ARG_SRC, t.src, x},
                               {DNNL_ARG_WEIGHTS, t.weights, w},
                               {DNNL_ARG_DST, t.dst, y, /*output=*/true}};
  if (bias)
    args.push_back({DNNL_ARG_BIAS, t.bias, bias});
  runConv(kernel, bias ? ConvKind::TransposedBias : ConvKind::Transposed,
          Precision::F32, ConvAlgorithm::Direct, g, args);
}

// The 2-D kernels' geometry from their params.
void conv2d(const char *kernel, Precision precision, ConvAlgorithm algorithm,
            const float *x, const int64_t *x_shape, const float *w,
            const int64_t *w_shape, const float *bias, float *y,
            const int64_t *y_shape, const dpc_conv_params *params) {
  convForward(kernel, precision, algorithm,
              convGeometry(kernel, x_shape, w_shape, y_shape, params), x, w,
              bias, y);
}

void conv2dGradInput(const char *kernel, Precision precision,
                     ConvAlgorithm algorithm, const float *dy,
                     const int64_t *dy_shape, const float *w,
                     const int64_t *w_shape, float *dx, const int64_t *dx_shape,
                     const dpc_conv_params *params) {
  convGradInput(kernel, precision, algorithm,
                convGeometry(kernel, dx_shape, w_shape, dy_shape, params), dy,
                w, dx);
}

void conv2dGradFilter(const char *kernel, Precision precision,
                      ConvAlgorithm algorithm, const float *dy,
                      const int64_t *dy_shape, const float *x,
                      const int64_t *x_shape, float *dw,
                      const int64_t *dw_shape, const dpc_conv_params *params) {
  convGradFilter(kernel, precision, algorithm,
                 convGeometry(kernel, x_shape, dw_shape, dy_shape, params), dy,
                 x, dw);
}

} // namespace

extern "C" {

void dpc_conv_transpose2d(const float *x, const int64_t *x_shape,
                          const float *w, const int64_t *w_shape,
                          const float *bias, float *y, const int64_t *y_shape,
                          const dpc_conv_params *p) {
  const char *kernel = "dpc_conv_transpose2d";
  const int64_t strides[2] = {p->stride_h, p->stride_w},
                padSums[2] = {p->pad_top + p->pad_bottom,
                              p->pad_left + p->pad_right},
                dilations[2] = {p->dilation_h, p->dilation_w};
  checkTransposedOutput(kernel, 4, x_shape, w_shape, y_shape, strides, padSums,
                        dilations);
  convTransposed(kernel, convGeometry(kernel, y_shape, w_shape, x_shape, p), x,
                 w, bias, y);
}

void dpc_conv3d(const float *x, const int64_t *x_shape, const float *w,
                const int64_t *w_shape, const float *bias, float *y,
                const int64_t *y_shape, const dpc_conv3d_params *params) {
  const char *kernel = "dpc_conv3d";
  convForward(kernel, Precision::F32, ConvAlgorithm::Direct,
              convGeometry3d(kernel, x_shape, w_shape, y_shape, params), x, w,
              bias, y);
}

void dpc_conv3d_grad_input(const float *dy, const int64_t *dy_shape,
                           const float *w, const int64_t *w_shape, float *dx,
                           const int64_t *dx_shape,
                           const dpc_conv3d_params *params) {
  const char *kernel = "dpc_conv3d_grad_input";
  convGradInput(kernel, Precision::F32, ConvAlgorithm::Direct,
                convGeometry3d(kernel, dx_shape, w_shape, dy_shape, params), dy,
                w, dx);
}

void dpc_conv3d_grad_filter(const float *dy, const int64_t *dy_shape,
                            const float *x, const int64_t *x_shape, float *dw,
                            const int64_t *dw_shape,
                            const dpc_conv3d_params *params) {
  const char *kernel = "dpc_conv3d_grad_filter";
  convGradFilter(kernel, Precision::F32, ConvAlgorithm::Direct,
                 convGeometry3d(kernel, x_shape, dw_shape, dy_shape, params),
                 dy, x, dw);
}

void dpc_conv_transpose3d(const float *x, const int64_t *x_shape,
                          const float *w, const int64_t *w_shape,
                          const float *bias, float *y, const int64_t *y_shape,
                          const dpc_conv3d_params *p) {
  const char *kernel = "dpc_conv_transpose3d";
  const int64_t strides[3] = {p->stride_d, p->stride_h, p->stride_w},
                padSums[3] = {p->pad_front + p->pad_back,
                              p->pad_top + p->pad_bottom,
                              p->pad_left + p->pad_right},
                dilations[3] = {p->dilation_d, p->dilation_h, p->dilation_w};
  checkTransposedOutput(kernel, 5, x_shape, w_shape, y_shape, strides, padSums,
                        dilations);
  convTransposed(kernel, convGeometry3d(kernel, y_shape, w_shape, x_shape, p),
                 x, w, bias, y);
}

void dpc_conv2d(const float *x, const int64_t *x_shape, const float *w,
                const int64_t *w_shape, const float *bias, float *y,
                const int64_t *y_shape, const dpc_conv_params *params) {
  conv2d("dpc_conv2d", Precision::F32, ConvAlgorithm::Direct, x, x_shape, w,
         w_shape, bias, y, y_shape, params);
}

void dpc_conv2d_bf16(const float *x, const int64_t *x_shape, const float *w,
                     const int64_t *w_shape, const float *bias, float *y,
                     const int64_t *y_shape, const dpc_conv_params *params) {
  conv2d("dpc_conv2d_bf16", Precision::Bf16, ConvAlgorithm::Direct, x, x_shape,
         w, w_shape, bias, y, y_shape, params);
}

void dpc_conv2d_grad_input(const float *dy, const int64_t *dy_shape,
                           const float *w, const int64_t *w_shape, float *dx,
                           const int64_t *dx_shape,
                           const dpc_conv_params *params) {
  conv2dGradInput("dpc_conv2d_grad_input", Precision::F32,
                  ConvAlgorithm::Direct, dy, dy_shape, w, w_shape, dx, dx_shape,
                  params);
}

void dpc_conv2d_grad_input_bf16(const float *dy, const int64_t *dy_shape,
                                const float *w, const int64_t *w_shape,
                                float *dx, const int64_t *dx_shape,
                                const dpc_conv_params *params) {
  conv2dGradInput("dpc_conv2d_grad_input_bf16", Precision::Bf16,
                  ConvAlgorithm::Direct, dy, dy_shape, w, w_shape, dx, dx_shape,
                  params);
}

void dpc_conv2d_grad_filter(const float *dy, const int64_t *dy_shape,
                            const float *x, const int64_t *x_shape, float *dw,
                            const int64_t *dw_shape,
                            const dpc_conv_params *params) {
  conv2dGradFilter("dpc_conv2d_grad_filter", Precision::F32,
                   ConvAlgorithm::Direct, dy, dy_shape, x, x_shape, dw,
                   dw_shape, params);
}

void dpc_conv2d_grad_filter_bf16(const float *dy, const int64_t *dy_shape,
                                 const float *x, const int64_t *x_shape,
                                 float *dw, const int64_t *dw_shape,
                                 const dpc_conv_params *params) {
  conv2dGradFilter("dpc_conv2d_grad_filter_bf16", Precision::Bf16,
                   ConvAlgorithm::Direct, dy, dy_shape, x, x_shape, dw,
                   dw_shape, params);
}

void dpc_conv2d_winograd(const float *x, const int64_t *x_shape, const float *w,
                         const int64_t *w_shape, const float *bias, float *y,
                         const int64_t *y_shape,
                         const dpc_conv_params *params) {
  conv2d("dpc_conv2d_winograd", Precision::F32, ConvAlgorithm::Winograd, x,
         x_shape, w, w_shape, bias, y, y_shape, params);
}

void dpc_conv2d_grad_input_winograd(const float *dy, const int64_t *dy_shape,
                                    const float *w, const int64_t *w_shape,
                                    float *dx, const int64_t *dx_shape,
                                    const dpc_conv_params *params) {
  conv2dGradInput("dpc_conv2d_grad_input_winograd", Precision::F32,
                  ConvAlgorithm::Winograd, dy, dy_shape, w, w_shape, dx,
                  dx_shape, params);
}

void dpc_conv2d_grad_filter_winograd(const float *dy, const int64_t *dy_shape,
                                     const float *x, const int64_t *x_shape,
                                     float *dw, const int64_t *dw_shape,
                                     const dpc_conv_params *params) {
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

} // extern "C"
