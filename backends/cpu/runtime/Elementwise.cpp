//===- Elementwise.cpp - Elementwise and broadcast kernels ----------------===//
//
// The kernels that map elements to elements: the binary arithmetic, the
// comparisons and logic on masks, casts, where, their broadcasts (with
// sum_to_shape, the broadcast's gradient, and broadcast_to), dropout, clip,
// cumsum, ReLU and the functions of UnaryFunctions.def with their gradients.
// Long loops run in chunks on the kernel threads (Internal.h).
//
//===----------------------------------------------------------------------===//

#include "backends/cpu/runtime/Internal.h"

#include "backends/common/Box.h"
#include "backends/common/Cast.h"
#include "backends/common/ElementwiseMath.h"
#include "backends/common/Random.h"

#include <type_traits>

using namespace dpc::cpu;

namespace {

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

} // namespace

extern "C" {

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
  // The conversions of backends/common/Cast.h.
  bool known = dpc::cast::dispatchDtype(from, [&](auto fromType) {
    using From = decltype(fromType);
    bool knownTo = dpc::cast::dispatchDtype(to, [&](auto toType) {
      using To = decltype(toType);
      const From *in = static_cast<const From *>(x);
      To *out = static_cast<To *>(y);
      for (int64_t i = 0; i < count; ++i)
        out[i] = dpc::cast::convert<To>(in[i]);
    });
    if (!knownTo)
      fail("dpc_cast", "unknown element type " + std::to_string(to));
  });
  if (!known)
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

void dpc_cumsum(const float *x, float *y, int64_t outer, int64_t length,
                int64_t inner, int64_t exclusive, int64_t reverse) {
  if (outer < 0 || length < 0 || inner < 0)
    fail("dpc_cumsum", "negative size " + std::to_string(outer) + " x " +
                           std::to_string(length) + " x " +
                           std::to_string(inner));
  // A line per (outer, inner) pair, summed in order along the middle.
  parallelChunks(outer * inner, [&](int64_t begin, int64_t end) {
    for (int64_t line = begin; line < end; ++line) {
      const float *in = x + (line / inner) * length * inner + line % inner;
      float *out = y + (in - x);
      float sum = 0.0f;
      for (int64_t k = 0; k < length; ++k) {
        int64_t at = (reverse ? length - 1 - k : k) * inner;
        float value = in[at];
        if (!exclusive)
          sum += value;
        out[at] = sum;
        if (exclusive)
          sum += value;
      }
    }
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
