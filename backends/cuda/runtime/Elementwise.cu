//===- Elementwise.cu - Broadcasting, reductions, masks, pointwise --------===//
//
// Broadcasting add, sub, mul and div (dpc_binary) and the scaled
// broadcast_to; the scaled sums of sum_to_shape (launchReduce, which the
// cuDNN and cuBLAS wrappers borrow); the masks (compare, not, cast, where and
// its gradient, operands broadcast unmerged); dropout with the Philox masks
// of backends/common/Random.h, clip, relu, cumsum (a thread per line), and
// every function of
// UnaryFunctions.def as one templated kernel per row, the math shared with
// the CPU in backends/common/ElementwiseMath.h.
//
//===----------------------------------------------------------------------===//

#include "backends/cuda/runtime/Kernels.cuh"

#include "backends/common/Cast.h"
#include "backends/common/ElementwiseMath.h"
#include "backends/common/Random.h"

#include <initializer_list>
#include <type_traits>

using namespace dpc::cuda;

//===----------------------------------------------------------------------===//
// Broadcasting binary functions
//===----------------------------------------------------------------------===//

namespace dpc::cuda {
namespace {

struct BroadcastArgs {
  int rank;
  int64_t shape[kMaxRank], aStrides[kMaxRank], bStrides[kMaxRank];
};

// f(a, b) for dpc_binary's codes.
__device__ float binaryValue(int64_t fn, float a, float b) {
  switch (fn) {
  case DPC_BINARY_ADD:
    return a + b;
  case DPC_BINARY_SUB:
    return a - b;
  case DPC_BINARY_MUL:
    return a * b;
  default:
    return a / b;
  }
}

__global__ void binarySameShape(int64_t fn, const float *a, const float *b,
                                float *y, int64_t count) {
  GRID_STRIDE(i, count) { y[i] = binaryValue(fn, a[i], b[i]); }
}

__global__ void binaryBroadcast(int64_t fn, const float *a, const float *b,
                                float *y, int64_t count, BroadcastArgs args) {
  GRID_STRIDE(i, count) {
    int64_t rest = i, aOffset = 0, bOffset = 0;
    for (int d = args.rank - 1; d >= 0; --d) {
      int64_t index = rest % args.shape[d];
      rest /= args.shape[d];
      aOffset += index * args.aStrides[d];
      bOffset += index * args.bStrides[d];
    }
    y[i] = binaryValue(fn, a[aOffset], b[bOffset]);
  }
}

/// A plan's merged shape and strides for a kernel launch.
BroadcastArgs broadcastArgs(const BroadcastPlan &plan, const char *kernel) {
  if (plan.shape.size() > size_t(kMaxRank))
    fail(std::string(kernel) + ": more than " + std::to_string(kMaxRank) +
         " dimensions after merging");
  BroadcastArgs args{};
  args.rank = int(plan.shape.size());
  std::copy(plan.shape.begin(), plan.shape.end(), args.shape);
  std::copy(plan.aStrides.begin(), plan.aStrides.end(), args.aStrides);
  std::copy(plan.bStrides.begin(), plan.bStrides.end(), args.bStrides);
  return args;
}

// y = scale * x broadcast: x's strides are a plan's aStrides.
__global__ void broadcastKernel(const float *x, float *y, int64_t count,
                                BroadcastArgs args, float scale) {
  GRID_STRIDE(i, count) {
    y[i] = scale * x[offsetOf(i, args.shape, args.aStrides, args.rank)];
  }
}

} // namespace
} // namespace dpc::cuda

extern "C" {

void dpc_binary(int64_t fn, const float *a, const int64_t *a_shape,
                const float *b, const int64_t *b_shape, float *y,
                const int64_t *y_shape, int64_t rank) {
  if (fn < DPC_BINARY_ADD || fn > DPC_BINARY_DIV)
    fail("dpc_binary: unknown function " + std::to_string(fn));
  BroadcastPlan plan = planBroadcast(a_shape, b_shape, y_shape, rank);
  if (plan.count == 0)
    return;
  bool same = true;
  for (size_t d = 0; d < plan.shape.size(); ++d)
    same = same && plan.aStrides[d] != 0 && plan.bStrides[d] != 0;
  if (same) {
    binarySameShape<<<blocksFor(plan.count), kThreads, 0, stream()>>>(
        fn, a, b, y, plan.count);
    checkLaunch("binarySameShape");
    return;
  }
  binaryBroadcast<<<blocksFor(plan.count), kThreads, 0, stream()>>>(
      fn, a, b, y, plan.count, broadcastArgs(plan, "dpc_binary"));
  checkLaunch("binaryBroadcast");
}

void dpc_broadcast_to(const float *x, const int64_t *x_shape, float *y,
                      const int64_t *y_shape, int64_t rank, float scale) {
  BroadcastPlan plan = planBroadcast(x_shape, x_shape, y_shape, rank);
  if (plan.count == 0)
    return;
  broadcastKernel<<<blocksFor(plan.count), kThreads, 0, stream()>>>(
      x, y, plan.count, broadcastArgs(plan, "dpc_broadcast_to"), scale);
  checkLaunch("broadcast_to");
}

} // extern "C"

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

namespace dpc::cuda {
namespace {

struct ReduceArgs {
  int keptRank, reducedRank;
  int64_t keptSizes[kMaxRank], keptStrides[kMaxRank];
  int64_t reducedSizes[kMaxRank], reducedStrides[kMaxRank];
  int64_t outputs, reduced;
  float scale;
};

/// Few values per output: one thread sums each.
__global__ void reduceByThread(const float *x, float *y, ReduceArgs args) {
  GRID_STRIDE(o, args.outputs) {
    const float *base =
        x + offsetOf(o, args.keptSizes, args.keptStrides, args.keptRank);
    float sum = 0.0f;
    for (int64_t r = 0; r < args.reduced; ++r)
      sum += base[offsetOf(r, args.reducedSizes, args.reducedStrides,
                           args.reducedRank)];
    y[o] = args.scale * sum;
  }
}

/// Many values per output: one block sums each.
__global__ void reduceByBlock(const float *x, float *y, ReduceArgs args) {
  for (int64_t o = blockIdx.x; o < args.outputs; o += gridDim.x) {
    const float *base =
        x + offsetOf(o, args.keptSizes, args.keptStrides, args.keptRank);
    float sum = 0.0f;
    for (int64_t r = threadIdx.x; r < args.reduced; r += blockDim.x)
      sum += base[offsetOf(r, args.reducedSizes, args.reducedStrides,
                           args.reducedRank)];
    sum = blockSum(sum);
    if (threadIdx.x == 0)
      y[o] = args.scale * sum;
  }
}

} // namespace

void launchReduce(const float *x, const ReducePlan &plan, float *y,
                  float scale) {
  if (plan.outputs == 0)
    return;
  if (plan.reduced == 0) {
    check(cudaMemsetAsync(y, 0, size_t(plan.outputs) * sizeof(float), stream()),
          "clearing an empty sum");
    return;
  }
  if (plan.keptSizes.size() > size_t(kMaxRank) ||
      plan.reducedSizes.size() > size_t(kMaxRank))
    fail("sum: more than " + std::to_string(kMaxRank) +
         " alternating kept and reduced dimensions");
  ReduceArgs args{};
  args.keptRank = int(plan.keptSizes.size());
  args.reducedRank = int(plan.reducedSizes.size());
  std::copy(plan.keptSizes.begin(), plan.keptSizes.end(), args.keptSizes);
  std::copy(plan.keptStrides.begin(), plan.keptStrides.end(), args.keptStrides);
  std::copy(plan.reducedSizes.begin(), plan.reducedSizes.end(),
            args.reducedSizes);
  std::copy(plan.reducedStrides.begin(), plan.reducedStrides.end(),
            args.reducedStrides);
  args.outputs = plan.outputs;
  args.reduced = plan.reduced;
  args.scale = scale;
  // A block per output pays off once there is a block's worth to sum; below
  // that, one thread per output keeps the whole device busy.
  if (plan.reduced >= 128) {
    reduceByBlock<<<unsigned(std::min<int64_t>(plan.outputs, 1 << 16)),
                    kThreads, 0, stream()>>>(x, y, args);
    checkLaunch("reduceByBlock");
  } else {
    reduceByThread<<<blocksFor(plan.outputs), kThreads, 0, stream()>>>(x, y,
                                                                       args);
    checkLaunch("reduceByThread");
  }
}

} // namespace dpc::cuda

extern "C" {

void dpc_sum_to_shape(const float *x, const int64_t *x_shape, float *y,
                      const int64_t *y_shape, int64_t rank, float scale) {
  launchReduce(x, planReduce(x_shape, y_shape, rank), y, scale);
}

} // extern "C"

//===----------------------------------------------------------------------===//
// Masks: comparisons, casts and selection
//===----------------------------------------------------------------------===//

namespace dpc::cuda {
namespace {

// Up to three operands broadcast to `shape`, each with its element strides
// (0 where broadcast), dimensions unmerged: masks are small.
struct MaskArgs {
  int rank;
  int64_t count;
  int64_t shape[kMaxRank], strides[3][kMaxRank];
};

MaskArgs maskArgs(const char *kernel, const int64_t *yShape, int64_t rank,
                  std::initializer_list<const int64_t *> shapes) {
  if (rank > kMaxRank)
    fail(std::string(kernel) + ": more than " + std::to_string(kMaxRank) +
         " dimensions");
  MaskArgs args{};
  args.rank = int(rank);
  args.count = 1;
  for (int64_t d = 0; d < rank; ++d) {
    args.shape[d] = yShape[d];
    args.count *= yShape[d];
  }
  int n = 0;
  for (const int64_t *shape : shapes) {
    int64_t s = 1;
    for (int64_t d = rank - 1; d >= 0; --d) {
      if (shape[d] != yShape[d] && shape[d] != 1)
        fail(std::string(kernel) + ": an operand does not broadcast to the "
                                   "result");
      args.strides[n][d] = shape[d] == 1 && yShape[d] != 1 ? 0 : s;
      s *= shape[d];
    }
    ++n;
  }
  return args;
}

__device__ void maskOffsets(const MaskArgs &args, int64_t i, int operands,
                            int64_t *offsets) {
  for (int n = 0; n < operands; ++n)
    offsets[n] = 0;
  for (int d = args.rank - 1; d >= 0; --d) {
    int64_t index = i % args.shape[d];
    i /= args.shape[d];
    for (int n = 0; n < operands; ++n)
      offsets[n] += index * args.strides[n][d];
  }
}

template <typename T>
__global__ void compareKernel(int64_t fn, const T *a, const T *b, uint8_t *y,
                              MaskArgs args) {
  GRID_STRIDE(i, args.count) {
    int64_t o[2];
    maskOffsets(args, i, 2, o);
    T u = a[o[0]], v = b[o[1]];
    bool r;
    switch (fn) {
    case DPC_COMPARE_EQ:
      r = u == v;
      break;
    case DPC_COMPARE_LT:
      r = u < v;
      break;
    case DPC_COMPARE_GT:
      r = u > v;
      break;
    case DPC_COMPARE_LE:
      r = u <= v;
      break;
    case DPC_COMPARE_GE:
      r = u >= v;
      break;
    case DPC_COMPARE_AND:
      r = u && v;
      break;
    case DPC_COMPARE_OR:
      r = u || v;
      break;
    default:
      r = bool(u) != bool(v);
      break;
    }
    y[i] = r ? 1 : 0;
  }
}

__global__ void notKernel(const uint8_t *x, uint8_t *y, int64_t count) {
  GRID_STRIDE(i, count) { y[i] = x[i] ? 0 : 1; }
}

template <typename From, typename To>
__global__ void castKernel(const From *x, To *y, int64_t count) {
  GRID_STRIDE(i, count) { y[i] = dpc::cast::convert<To>(x[i]); }
}

__global__ void whereKernel(const uint8_t *c, const float *a, const float *b,
                            float *y, MaskArgs args) {
  GRID_STRIDE(i, args.count) {
    int64_t o[3];
    maskOffsets(args, i, 3, o);
    y[i] = c[o[0]] ? a[o[1]] : b[o[2]];
  }
}

__global__ void whereGradKernel(const uint8_t *c, const float *dy, float *dx,
                                bool keep, MaskArgs args) {
  GRID_STRIDE(i, args.count) {
    int64_t o[1];
    maskOffsets(args, i, 1, o);
    dx[i] = (c[o[0]] != 0) == keep ? dy[i] : 0.0f;
  }
}

} // namespace
} // namespace dpc::cuda

extern "C" {

void dpc_compare(int64_t fn, int64_t dtype, const void *a,
                 const int64_t *a_shape, const void *b, const int64_t *b_shape,
                 uint8_t *y, const int64_t *y_shape, int64_t rank) {
  if (fn < DPC_COMPARE_EQ || fn > DPC_COMPARE_XOR)
    fail("dpc_compare: unknown function " + std::to_string(fn));
  MaskArgs args = maskArgs("dpc_compare", y_shape, rank, {a_shape, b_shape});
  if (args.count == 0)
    return;
  unsigned blocks = blocksFor(args.count);
  switch (dtype) {
  case DPC_DTYPE_F32:
    compareKernel<<<blocks, kThreads, 0, stream()>>>(
        fn, static_cast<const float *>(a), static_cast<const float *>(b), y,
        args);
    break;
  case DPC_DTYPE_I64:
    compareKernel<<<blocks, kThreads, 0, stream()>>>(
        fn, static_cast<const int64_t *>(a), static_cast<const int64_t *>(b), y,
        args);
    break;
  case DPC_DTYPE_BOOL:
    compareKernel<<<blocks, kThreads, 0, stream()>>>(
        fn, static_cast<const uint8_t *>(a), static_cast<const uint8_t *>(b), y,
        args);
    break;
  default:
    fail("dpc_compare: unknown element type " + std::to_string(dtype));
  }
  checkLaunch("compare");
}

void dpc_not(const uint8_t *x, uint8_t *y, int64_t count) {
  if (count <= 0)
    return;
  notKernel<<<blocksFor(count), kThreads, 0, stream()>>>(x, y, count);
  checkLaunch("not");
}

void dpc_cast(int64_t from, int64_t to, const void *x, void *y, int64_t count) {
  if (count <= 0)
    return;
  // The conversions of backends/common/Cast.h.
  bool known = dpc::cast::dispatchDtype(from, [&](auto fromType) {
    using From = decltype(fromType);
    bool knownTo = dpc::cast::dispatchDtype(to, [&](auto toType) {
      using To = decltype(toType);
      castKernel<<<blocksFor(count), kThreads, 0, stream()>>>(
          static_cast<const From *>(x), static_cast<To *>(y), count);
    });
    if (!knownTo)
      fail("dpc_cast: unknown element type " + std::to_string(to));
  });
  if (!known)
    fail("dpc_cast: unknown element type " + std::to_string(from));
  checkLaunch("cast");
}

void dpc_where(const uint8_t *c, const int64_t *c_shape, const float *a,
               const int64_t *a_shape, const float *b, const int64_t *b_shape,
               float *y, const int64_t *y_shape, int64_t rank) {
  MaskArgs args =
      maskArgs("dpc_where", y_shape, rank, {c_shape, a_shape, b_shape});
  if (args.count == 0)
    return;
  whereKernel<<<blocksFor(args.count), kThreads, 0, stream()>>>(c, a, b, y,
                                                                args);
  checkLaunch("where");
}

void dpc_where_grad(const uint8_t *c, const int64_t *c_shape, const float *dy,
                    float *dx, const int64_t *dy_shape, int64_t rank,
                    int64_t branch) {
  MaskArgs args = maskArgs("dpc_where_grad", dy_shape, rank, {c_shape});
  if (args.count == 0)
    return;
  whereGradKernel<<<blocksFor(args.count), kThreads, 0, stream()>>>(
      c, dy, dx, branch != 0, args);
  checkLaunch("where_grad");
}

} // extern "C"

//===----------------------------------------------------------------------===//
// Pointwise: dropout, clip, relu and the unary functions
//===----------------------------------------------------------------------===//

namespace dpc::cuda {
namespace {

__global__ void dropoutKernel(const float *x, float *y, int64_t count,
                              float ratio, float scale, uint64_t key) {
  GRID_STRIDE(i, count) {
    y[i] = dpc::random::dropoutKeeps(key, uint64_t(i), ratio) ? x[i] * scale
                                                              : 0.0f;
  }
}

__global__ void clipKernel(const float *x, float *y, int64_t count, float lo,
                           float hi) {
  // NaN stays NaN, as on the CPU and in PyTorch (fmaxf would drop it).
  GRID_STRIDE(i, count) {
    y[i] = x[i] != x[i] ? x[i] : fminf(fmaxf(x[i], lo), hi);
  }
}

__global__ void clipGradKernel(const float *dy, const float *x, float *dx,
                               int64_t count, float lo, float hi) {
  GRID_STRIDE(i, count) { dx[i] = x[i] >= lo && x[i] <= hi ? dy[i] : 0.0f; }
}

// A thread per (outer, inner) line, summing in order along the middle.
__global__ void cumsumKernel(const float *x, float *y, int64_t outer,
                             int64_t length, int64_t inner, bool exclusive,
                             bool reverse) {
  GRID_STRIDE(line, outer * inner) {
    int64_t base = (line / inner) * length * inner + line % inner;
    float sum = 0.0f;
    for (int64_t k = 0; k < length; ++k) {
      int64_t at = base + (reverse ? length - 1 - k : k) * inner;
      float value = x[at];
      if (!exclusive)
        sum += value;
      y[at] = sum;
      if (exclusive)
        sum += value;
    }
  }
}

__global__ void reluKernel(const float *x, float *y, int64_t count) {
  // NaN stays NaN, as on the CPU (std::max) and in torch.relu.
  GRID_STRIDE(i, count) { y[i] = x[i] < 0.0f ? 0.0f : x[i]; }
}

__global__ void reluGradKernel(const float *dy, const float *y, float *dx,
                               int64_t count) {
  GRID_STRIDE(i, count) { dx[i] = y[i] > 0.0f ? dy[i] : 0.0f; }
}

// One function of UnaryFunctions.def, its row's type as `F`.
template <typename F>
__global__ void unaryKernel(F, float a, float b, const float *x, float *y,
                            int64_t count) {
  GRID_STRIDE(i, count) { y[i] = F::value(x[i], a, b); }
}

template <typename F>
__global__ void unaryGradKernel(F, float a, float b, const float *dy,
                                const float *saved, float *dx, int64_t count) {
  GRID_STRIDE(i, count) { dx[i] = F::grad(dy[i], saved[i], a, b); }
}

} // namespace
} // namespace dpc::cuda

extern "C" {

void dpc_dropout(const float *x, float *y, int64_t count, float ratio,
                 int64_t key) {
  if (count <= 0)
    return;
  if (key < 0) {
    if (x != y)
      check(cudaMemcpyAsync(y, x, size_t(count) * sizeof(float),
                            cudaMemcpyDeviceToDevice, stream()),
            "dpc_dropout: cudaMemcpyAsync");
    return;
  }
  dropoutKernel<<<blocksFor(count), kThreads, 0, stream()>>>(
      x, y, count, ratio, 1.0f / (1.0f - ratio), uint64_t(key));
  checkLaunch("dropout");
}

void dpc_cumsum(const float *x, float *y, int64_t outer, int64_t length,
                int64_t inner, int64_t exclusive, int64_t reverse) {
  int64_t lines = outer * inner;
  if (lines <= 0 || length <= 0)
    return;
  cumsumKernel<<<blocksFor(lines), kThreads, 0, stream()>>>(
      x, y, outer, length, inner, exclusive != 0, reverse != 0);
  checkLaunch("cumsum");
}

void dpc_clip(const float *x, float *y, int64_t count, float lo, float hi) {
  if (count <= 0)
    return;
  clipKernel<<<blocksFor(count), kThreads, 0, stream()>>>(x, y, count, lo, hi);
  checkLaunch("clip");
}

void dpc_clip_grad(const float *dy, const float *x, float *dx, int64_t count,
                   float lo, float hi) {
  if (count <= 0)
    return;
  clipGradKernel<<<blocksFor(count), kThreads, 0, stream()>>>(dy, x, dx, count,
                                                              lo, hi);
  checkLaunch("clip_grad");
}

void dpc_relu(const float *x, float *y, int64_t count) {
  if (count <= 0)
    return;
  reluKernel<<<blocksFor(count), kThreads, 0, stream()>>>(x, y, count);
  checkLaunch("relu");
}

void dpc_relu_grad(const float *dy, const float *y, float *dx, int64_t count) {
  if (count <= 0)
    return;
  reluGradKernel<<<blocksFor(count), kThreads, 0, stream()>>>(dy, y, dx, count);
  checkLaunch("relu_grad");
}

void dpc_unary(int64_t fn, float a, float b, const float *x, float *y,
               int64_t count) {
  bool known = dpc::elementwise::dispatchUnary(fn, [&](auto f) {
    if (count <= 0)
      return;
    unaryKernel<<<blocksFor(count), kThreads, 0, stream()>>>(f, a, b, x, y,
                                                             count);
    checkLaunch("unary");
  });
  if (!known)
    fail("dpc_unary: unknown function " + std::to_string(fn));
}

void dpc_unary_grad(int64_t fn, float a, float b, const float *dy,
                    const float *saved, float *dx, int64_t count) {
  bool known = dpc::elementwise::dispatchUnaryGrad(fn, [&](auto f) {
    if (count <= 0)
      return;
    unaryGradKernel<<<blocksFor(count), kThreads, 0, stream()>>>(
        f, a, b, dy, saved, dx, count);
    checkLaunch("unary_grad");
  });
  if (!known)
    fail("dpc_unary_grad: unknown function " + std::to_string(fn));
}

} // extern "C"
