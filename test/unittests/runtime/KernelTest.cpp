//===- KernelTest.cpp - CPU kernels against naive references --------------===//
//
// Every kernel of the C ABI (backends/cpu/runtime) on random data against a
// direct loop in double precision: convolutions over strides, pads,
// dilations and groups, matmul over transposes, shared operands and
// accumulation, pooling with ceil-mode-sized outputs and ties.
//
//===----------------------------------------------------------------------===//

#include "dpc/runtime/Abi.h"
#include "dpc/runtime/Device.h"
#include "dpc/runtime/UnaryFunctions.h"
#include "test/unittests/UnaryReferences.h"

#include <gtest/gtest.h>

#ifdef DPC_TEST_OPENMP
#include <omp.h>
#endif

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <ostream>
#include <random>
#include <utility>
#include <vector>

namespace {

using Vec = std::vector<float>;

Vec randomVec(size_t n, uint32_t seed, float lo = -1, float hi = 1) {
  std::mt19937 gen(seed);
  Vec v(n);
  for (float &x : v)
    x = lo + (hi - lo) * float(gen() >> 8) * 0x1p-24f;
  return v;
}

/// |a - e| <= tol * max(1, |e|) elementwise: relative for large values,
/// absolute near zero (sums of mixed signs cancel).
void expectClose(const Vec &actual, const std::vector<double> &expected,
                 double tol = 1e-5) {
  ASSERT_EQ(actual.size(), expected.size());
  for (size_t i = 0; i < actual.size(); ++i)
    ASSERT_LE(std::abs(actual[i] - expected[i]),
              tol * std::max(1.0, std::abs(expected[i])))
        << "element " << i << ": " << actual[i] << " vs " << expected[i];
}

/// For long float32 reductions, whose rounding depends on the order the
/// kernel sums in (oneDNN's blocked layouts sum differently from a loop):
/// |a - e| <= tol * max(1, sum of |terms|), the usual bound for a sum.
void expectCloseToSums(const Vec &actual, const std::vector<double> &expected,
                       const std::vector<double> &absSums, double tol = 1e-6) {
  ASSERT_EQ(actual.size(), expected.size());
  for (size_t i = 0; i < actual.size(); ++i)
    ASSERT_LE(std::abs(actual[i] - expected[i]),
              tol * std::max(1.0, absSums[i]))
        << "element " << i << ": " << actual[i] << " vs " << expected[i];
}

//===----------------------------------------------------------------------===//
// Convolution
//===----------------------------------------------------------------------===//

struct ConvCase {
  int64_t n, c, h, w, o, kh, kw;
  int64_t sh, sw, pt, pl, pb, pr, dh, dw, g;
  bool bias;
};

struct ConvSetup {
  ConvCase k;
  int64_t oh, ow;
  int64_t x[4], wt[4], y[4], p[9];
  explicit ConvSetup(const ConvCase &c) : k(c) {
    oh = (c.h + c.pt + c.pb - c.dh * (c.kh - 1) - 1) / c.sh + 1;
    ow = (c.w + c.pl + c.pr - c.dw * (c.kw - 1) - 1) / c.sw + 1;
    int64_t xs[4] = {c.n, c.c, c.h, c.w}, ws[4] = {c.o, c.c / c.g, c.kh, c.kw},
            ys[4] = {c.n, c.o, oh, ow},
            ps[9] = {c.sh, c.sw, c.pt, c.pl, c.pb, c.pr, c.dh, c.dw, c.g};
    std::copy(xs, xs + 4, x);
    std::copy(ws, ws + 4, wt);
    std::copy(ys, ys + 4, y);
    std::copy(ps, ps + 9, p);
  }
  size_t xn() const { return size_t(k.n * k.c * k.h * k.w); }
  size_t wn() const { return size_t(k.o * (k.c / k.g) * k.kh * k.kw); }
  size_t yn() const { return size_t(k.n * k.o * oh * ow); }

  /// Visits every (output element, input element, weight element) triple
  /// that a direct convolution multiplies.
  template <typename F> void forEachTap(F f) const {
    int64_t cg = k.c / k.g, og = k.o / k.g;
    for (int64_t b = 0; b < k.n; ++b)
      for (int64_t oc = 0; oc < k.o; ++oc) {
        int64_t grp = oc / og;
        for (int64_t i = 0; i < oh; ++i)
          for (int64_t j = 0; j < ow; ++j)
            for (int64_t ic = 0; ic < cg; ++ic)
              for (int64_t u = 0; u < k.kh; ++u)
                for (int64_t v = 0; v < k.kw; ++v) {
                  int64_t hi = i * k.sh - k.pt + u * k.dh;
                  int64_t wi = j * k.sw - k.pl + v * k.dw;
                  if (hi < 0 || hi >= k.h || wi < 0 || wi >= k.w)
                    continue;
                  size_t yi = size_t(((b * k.o + oc) * oh + i) * ow + j);
                  size_t xi =
                      size_t(((b * k.c + grp * cg + ic) * k.h + hi) * k.w + wi);
                  size_t wi2 = size_t(((oc * cg + ic) * k.kh + u) * k.kw + v);
                  f(yi, xi, wi2);
                }
      }
  }
};

class ConvTest : public ::testing::TestWithParam<ConvCase> {};

TEST_P(ConvTest, ForwardMatchesDirectLoop) {
  ConvSetup s(GetParam());
  Vec x = randomVec(s.xn(), 1), w = randomVec(s.wn(), 2),
      b = randomVec(size_t(s.k.o), 3), y(s.yn(), 123.0f);
  dpc_conv2d(x.data(), s.x, w.data(), s.wt, s.k.bias ? b.data() : nullptr,
             y.data(), s.y, s.p);
  std::vector<double> ref(s.yn(), 0.0);
  if (s.k.bias)
    for (size_t i = 0; i < ref.size(); ++i)
      ref[i] = b[(i / size_t(s.oh * s.ow)) % size_t(s.k.o)];
  s.forEachTap([&](size_t yi, size_t xi, size_t wi) {
    ref[yi] += double(x[xi]) * w[wi];
  });
  expectClose(y, ref);
}

TEST_P(ConvTest, GradInputMatchesDirectLoop) {
  ConvSetup s(GetParam());
  Vec dy = randomVec(s.yn(), 4), w = randomVec(s.wn(), 5), dx(s.xn(), 123.0f);
  dpc_conv2d_grad_input(dy.data(), s.y, w.data(), s.wt, dx.data(), s.x, s.p);
  std::vector<double> ref(s.xn(), 0.0);
  s.forEachTap([&](size_t yi, size_t xi, size_t wi) {
    ref[xi] += double(dy[yi]) * w[wi];
  });
  expectClose(dx, ref);
}

TEST_P(ConvTest, GradFilterMatchesDirectLoop) {
  ConvSetup s(GetParam());
  Vec dy = randomVec(s.yn(), 6), x = randomVec(s.xn(), 7), dw(s.wn(), 123.0f);
  dpc_conv2d_grad_filter(dy.data(), s.y, x.data(), s.x, dw.data(), s.wt, s.p);
  // Each filter tap sums over the batch and every output position.
  std::vector<double> ref(s.wn(), 0.0), absSums(s.wn(), 0.0);
  s.forEachTap([&](size_t yi, size_t xi, size_t wi) {
    ref[wi] += double(dy[yi]) * x[xi];
    absSums[wi] += std::abs(double(dy[yi]) * x[xi]);
  });
  expectCloseToSums(dw, ref, absSums);
}

TEST_P(ConvTest, RepeatedCallsReuseThePrimitive) {
  // The second call hits the primitive cache; it must give the same result.
  ConvSetup s(GetParam());
  Vec x = randomVec(s.xn(), 8), w = randomVec(s.wn(), 9), y1(s.yn()),
      y2(s.yn());
  dpc_conv2d(x.data(), s.x, w.data(), s.wt, nullptr, y1.data(), s.y, s.p);
  dpc_conv2d(x.data(), s.x, w.data(), s.wt, nullptr, y2.data(), s.y, s.p);
  EXPECT_EQ(y1, y2);
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, ConvTest,
    ::testing::Values(
        // LeNet-5's first layer: 5x5, pad 2, bias.
        ConvCase{2, 1, 28, 28, 6, 5, 5, 1, 1, 2, 2, 2, 2, 1, 1, 1, true},
        // LeNet-5's second layer, no padding.
        ConvCase{3, 6, 14, 14, 16, 5, 5, 1, 1, 0, 0, 0, 0, 1, 1, 1, false},
        // Strides, asymmetric pads.
        ConvCase{2, 3, 11, 9, 4, 3, 3, 2, 3, 1, 0, 2, 1, 1, 1, 1, true},
        // Dilation.
        ConvCase{1, 2, 12, 10, 3, 3, 2, 1, 1, 2, 1, 2, 1, 2, 3, 1, false},
        // Groups, and depthwise.
        ConvCase{2, 6, 8, 8, 9, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 3, true},
        ConvCase{2, 4, 7, 7, 4, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 4, false},
        // 1x1, everything at once.
        ConvCase{2, 8, 9, 7, 4, 1, 1, 2, 2, 0, 0, 0, 0, 1, 1, 2, true},
        ConvCase{2, 4, 13, 11, 6, 3, 3, 2, 1, 2, 1, 0, 2, 2, 1, 2, true}));

TEST(ConvBiasGrad, SumsOverBatchAndSpace) {
  int64_t shape[4] = {3, 5, 4, 6};
  Vec dy = randomVec(3 * 5 * 4 * 6, 10), db(5, 123.0f);
  dpc_conv2d_grad_bias(dy.data(), shape, db.data());
  std::vector<double> ref(5, 0.0);
  for (size_t i = 0; i < dy.size(); ++i)
    ref[(i / 24) % 5] += dy[i];
  expectClose(db, ref);
}

//===----------------------------------------------------------------------===//
// Matmul
//===----------------------------------------------------------------------===//

struct MatmulCase {
  int64_t batch, m, n, k;
  bool ta, tb;
  bool shareA, shareB; // stride 0
  bool accumulate;
};

class MatmulTest : public ::testing::TestWithParam<MatmulCase> {};

TEST_P(MatmulTest, MatchesDirectLoop) {
  MatmulCase c = GetParam();
  int64_t as = c.shareA ? 0 : c.m * c.k, bs = c.shareB ? 0 : c.k * c.n;
  Vec a = randomVec(size_t(c.shareA ? c.m * c.k : c.batch * c.m * c.k), 11);
  Vec b = randomVec(size_t(c.shareB ? c.k * c.n : c.batch * c.k * c.n), 12);
  int64_t outs = c.accumulate ? 1 : c.batch;
  Vec y(size_t(outs * c.m * c.n), 123.0f);
  dpc_matmul(a.data(), b.data(), y.data(), c.batch, c.m, c.n, c.k, c.ta, c.tb,
             as, bs, c.accumulate);
  std::vector<double> ref(y.size(), 0.0);
  for (int64_t bi = 0; bi < c.batch; ++bi)
    for (int64_t i = 0; i < c.m; ++i)
      for (int64_t j = 0; j < c.n; ++j) {
        double s = 0;
        for (int64_t l = 0; l < c.k; ++l) {
          float av = a[size_t(bi * as + (c.ta ? l * c.m + i : i * c.k + l))];
          float bv = b[size_t(bi * bs + (c.tb ? j * c.k + l : l * c.n + j))];
          s += double(av) * bv;
        }
        ref[size_t((c.accumulate ? 0 : bi) * c.m * c.n + i * c.n + j)] += s;
      }
  expectClose(y, ref);
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, MatmulTest,
    ::testing::Values(MatmulCase{1, 16, 120, 400, false, true, false, false,
                                 false}, // Gemm with transB, as ONNX exports
                      MatmulCase{1, 7, 5, 3, false, false, false, false, false},
                      MatmulCase{1, 7, 5, 3, true, false, false, false, false},
                      MatmulCase{1, 7, 5, 3, true, true, false, false, false},
                      MatmulCase{4, 6, 5, 9, false, false, false, false, false},
                      MatmulCase{4, 6, 5, 9, true, true, false, true, false},
                      MatmulCase{3, 6, 5, 9, false, true, true, false, false},
                      // The weight gradient of a shared weight.
                      MatmulCase{5, 6, 4, 7, true, false, false, false, true},
                      MatmulCase{3, 2, 3, 4, false, false, true, true, true},
                      MatmulCase{2, 3, 3, 0, false, false, false, false,
                                 false})); // k = 0: zeros

//===----------------------------------------------------------------------===//
// Elementwise, broadcasting and reductions
//===----------------------------------------------------------------------===//

/// Index of `flat` (in `full`) in a tensor of `shape` broadcast to `full`.
size_t broadcastIndex(size_t flat, const std::vector<int64_t> &full,
                      const std::vector<int64_t> &shape) {
  size_t index = 0, stride = 1;
  for (size_t d = full.size(); d-- > 0;) {
    size_t coord = flat % size_t(full[d]);
    flat /= size_t(full[d]);
    if (shape[d] != 1)
      index += coord * stride;
    stride *= size_t(shape[d]);
  }
  return index;
}

size_t count(const std::vector<int64_t> &s) {
  size_t n = 1;
  for (int64_t d : s)
    n *= size_t(d);
  return n;
}

struct BroadcastCase {
  std::vector<int64_t> a, b, y;
};

class BinaryTest : public ::testing::TestWithParam<BroadcastCase> {};

TEST_P(BinaryTest, BroadcastsLikeNumpy) {
  BroadcastCase c = GetParam();
  Vec a = randomVec(count(c.a), 13), b = randomVec(count(c.b), 14);
  // Divisors away from zero.
  for (float &v : b)
    v = v < 0 ? v - 0.5f : v + 0.5f;
  for (int64_t fn :
       {DPC_BINARY_ADD, DPC_BINARY_SUB, DPC_BINARY_MUL, DPC_BINARY_DIV}) {
    Vec y(count(c.y), 123.0f);
    dpc_binary(fn, a.data(), c.a.data(), b.data(), c.b.data(), y.data(),
               c.y.data(), int64_t(c.y.size()));
    std::vector<double> ref(y.size());
    for (size_t i = 0; i < ref.size(); ++i) {
      double u = a[broadcastIndex(i, c.y, c.a)];
      double v = b[broadcastIndex(i, c.y, c.b)];
      ref[i] = fn == DPC_BINARY_ADD   ? u + v
               : fn == DPC_BINARY_SUB ? u - v
               : fn == DPC_BINARY_MUL ? u * v
                                      : u / v;
    }
    SCOPED_TRACE("function " + std::to_string(fn));
    expectClose(y, ref, 1e-6);
  }
}

TEST(BinaryTest, RefusesAnUnknownFunction) {
  int64_t shape[] = {2};
  float a[2] = {1, 2}, y[2];
  EXPECT_DEATH(dpc_binary(7, a, shape, a, shape, y, shape, 1),
               "dpc_binary: unknown function 7");
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, BinaryTest,
    ::testing::Values(BroadcastCase{{4, 5}, {4, 5}, {4, 5}},
                      BroadcastCase{{16, 10}, {1, 10}, {16, 10}}, // bias
                      BroadcastCase{{2, 3, 4, 5}, {1, 3, 1, 1}, {2, 3, 4, 5}},
                      BroadcastCase{{2, 1, 4}, {1, 3, 1}, {2, 3, 4}},
                      BroadcastCase{{3, 1}, {3, 1}, {3, 1}},
                      BroadcastCase{{1}, {1}, {1}},
                      BroadcastCase{{1, 1}, {5, 7}, {5, 7}}));

class SumToShapeTest : public ::testing::TestWithParam<BroadcastCase> {};

TEST_P(SumToShapeTest, SumsBroadcastDimensions) {
  BroadcastCase c = GetParam(); // sums a (full) to y
  Vec x = randomVec(count(c.a), 15), y(count(c.y), 123.0f);
  dpc_sum_to_shape(x.data(), c.a.data(), y.data(), c.y.data(),
                   int64_t(c.a.size()), 0.25f);
  std::vector<double> ref(y.size(), 0.0);
  for (size_t i = 0; i < x.size(); ++i)
    ref[broadcastIndex(i, c.a, c.y)] += 0.25 * x[i];
  expectClose(y, ref);
}

// broadcast_to against a direct index map, and as the adjoint of
// sum_to_shape with the same scale: <broadcast(u), g> = <u, sum(g)>.
TEST_P(SumToShapeTest, BroadcastIsTheAdjoint) {
  BroadcastCase c = GetParam(); // broadcasts y (narrow) to a (full)
  int64_t rank = int64_t(c.a.size());
  Vec u = randomVec(count(c.y), 19), g = randomVec(count(c.a), 20);
  Vec wide(count(c.a), 123.0f), narrow(count(c.y), 123.0f);
  dpc_broadcast_to(u.data(), c.y.data(), wide.data(), c.a.data(), rank, 0.5f);
  dpc_sum_to_shape(g.data(), c.a.data(), narrow.data(), c.y.data(), rank, 0.5f);
  std::vector<double> ref(wide.size());
  double lhs = 0, rhs = 0;
  for (size_t i = 0; i < wide.size(); ++i) {
    ref[i] = 0.5 * u[broadcastIndex(i, c.a, c.y)];
    lhs += double(wide[i]) * g[i];
  }
  for (size_t i = 0; i < narrow.size(); ++i)
    rhs += double(u[i]) * narrow[i];
  expectClose(wide, ref, 1e-6);
  EXPECT_NEAR(lhs, rhs, 1e-4 * std::max(1.0, std::fabs(lhs)));
}

TEST(BroadcastTo, RefusesShapesThatDoNotBroadcast) {
  int64_t from[] = {3}, to[] = {4};
  float x[3] = {}, y[4];
  EXPECT_DEATH(dpc_broadcast_to(x, from, y, to, 1, 1.0f),
               "dpc_broadcast_to: cannot broadcast \\[3\\] to \\[4\\]");
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, SumToShapeTest,
    ::testing::Values(BroadcastCase{{16, 10}, {}, {1, 10}},
                      BroadcastCase{{2, 3, 4, 5}, {}, {1, 3, 1, 1}},
                      BroadcastCase{{2, 3, 4}, {}, {2, 1, 4}},
                      BroadcastCase{{2, 3, 4}, {}, {1, 1, 1}},
                      BroadcastCase{{6, 7}, {}, {6, 1}},
                      BroadcastCase{{6, 7}, {}, {6, 7}}));

//===----------------------------------------------------------------------===//
// Transpose and softmax
//===----------------------------------------------------------------------===//

struct TransposeCase {
  std::vector<int64_t> shape, perm;
};
// Named by shape and permutation, e.g. "2x3x4_by_0_2_1".
void PrintTo(const TransposeCase &c, std::ostream *os) {
  for (size_t d = 0; d < c.shape.size(); ++d)
    *os << (d ? "x" : "") << c.shape[d];
  *os << "_by";
  for (int64_t p : c.perm)
    *os << "_" << p;
}

class TransposeTest : public ::testing::TestWithParam<TransposeCase> {};

TEST_P(TransposeTest, PermutesAndTheInverseRestores) {
  TransposeCase c = GetParam();
  size_t rank = c.shape.size();
  std::vector<int64_t> yShape(rank), inverse(rank), xStrides(rank, 1);
  for (size_t d = rank - 1; d-- > 0;)
    xStrides[d] = xStrides[d + 1] * c.shape[d + 1];
  for (size_t d = 0; d < rank; ++d) {
    yShape[d] = c.shape[size_t(c.perm[d])];
    inverse[size_t(c.perm[d])] = int64_t(d);
  }
  Vec x = randomVec(count(c.shape), 21), y(x.size(), 123.0f),
      back(x.size(), 123.0f);
  dpc_transpose(x.data(), c.shape.data(), y.data(), c.perm.data(),
                int64_t(rank));
  for (size_t i = 0; i < y.size(); ++i) {
    // y's multi-index, each coordinate a step along x's dimension perm[d].
    size_t rest = i, offset = 0;
    for (size_t d = rank; d-- > 0;) {
      offset +=
          (rest % size_t(yShape[d])) * size_t(xStrides[size_t(c.perm[d])]);
      rest /= size_t(yShape[d]);
    }
    ASSERT_EQ(y[i], x[offset]) << "element " << i;
  }
  dpc_transpose(y.data(), yShape.data(), back.data(), inverse.data(),
                int64_t(rank));
  EXPECT_EQ(back, x);
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, TransposeTest,
    ::testing::Values(TransposeCase{{2, 3, 4}, {0, 2, 1}},
                      TransposeCase{{2, 3, 4, 5}, {3, 1, 0, 2}},
                      TransposeCase{{6, 7}, {1, 0}},
                      TransposeCase{{1, 3, 1, 2}, {2, 3, 0, 1}},
                      TransposeCase{{5}, {0}}));

TEST(Transpose, RefusesAPermutationWithARepeat) {
  int64_t shape[] = {2, 2}, perm[] = {1, 1};
  float x[4] = {}, y[4];
  EXPECT_DEATH(dpc_transpose(x, shape, y, perm, 2),
               "dpc_transpose: not a permutation of 2 dimensions");
}

// softmax and log_softmax over the middle dimension of outer x n x inner
// against a double reference, and their gradients against central
// differences of L = sum(w * y) through the forward kernel itself.
TEST(Softmax, ForwardAndGradientAgainstDifferences) {
  const int64_t outer = 3, n = 7, inner = 4, size = outer * n * inner;
  Vec x = randomVec(size_t(size), 22, -3.0f, 3.0f);
  Vec w = randomVec(size_t(size), 23);
  x[5] = 80.0f; // large logits must not overflow
  for (int64_t log : {0, 1}) {
    SCOPED_TRACE(log ? "log_softmax" : "softmax");
    Vec y(x.size()), dx(x.size());
    dpc_softmax(x.data(), y.data(), outer, n, inner, log);
    dpc_softmax_grad(w.data(), y.data(), dx.data(), outer, n, inner, log);
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t i = 0; i < inner; ++i) {
        auto at = [&](int64_t j) { return size_t((o * n + j) * inner + i); };
        double max = -INFINITY, sum = 0;
        for (int64_t j = 0; j < n; ++j)
          max = std::max(max, double(x[at(j)]));
        for (int64_t j = 0; j < n; ++j)
          sum += std::exp(x[at(j)] - max);
        for (int64_t j = 0; j < n; ++j) {
          double p = std::exp(x[at(j)] - max) / sum;
          double want = log ? x[at(j)] - max - std::log(sum) : p;
          EXPECT_NEAR(y[at(j)], want, 1e-5 * std::max(1.0, std::fabs(want)));
        }
      }
    auto loss = [&](const Vec &input) {
      Vec out(input.size());
      dpc_softmax(input.data(), out.data(), outer, n, inner, log);
      double l = 0;
      for (size_t k = 0; k < out.size(); ++k)
        l += double(w[k]) * out[k];
      return l;
    };
    for (size_t k = 0; k < x.size(); k += 5) {
      Vec hi = x, lo = x;
      hi[k] += 1e-2f;
      lo[k] -= 1e-2f;
      double slope = (loss(hi) - loss(lo)) / (double(hi[k]) - lo[k]);
      EXPECT_NEAR(dx[k], slope, 2e-3) << "element " << k;
    }
  }
}

TEST(Relu, ForwardAndGradient) {
  Vec x = randomVec(1000, 16), y(1000), dy = randomVec(1000, 17), dx(1000);
  x[0] = 0.0f;
  x[1] = std::numeric_limits<float>::quiet_NaN();
  dpc_relu(x.data(), y.data(), 1000);
  dpc_relu_grad(dy.data(), y.data(), dx.data(), 1000);
  EXPECT_EQ(y[0], 0.0f);
  EXPECT_TRUE(std::isnan(y[1])); // as torch.relu
  for (size_t i = 2; i < x.size(); ++i) {
    EXPECT_EQ(y[i], x[i] > 0 ? x[i] : 0.0f);
    EXPECT_EQ(dx[i], x[i] > 0 ? dy[i] : 0.0f);
  }
  EXPECT_EQ(dx[0], 0.0f); // relu'(0) = 0, as PyTorch
}

// Each function of UnaryFunctions.def against its double reference
// (UnaryReferences.h), and its gradient, from the tensor the row says the
// gradient op is given, against central differences of the forward kernel
// itself. A row with no reference fails the test.
TEST(Unary, ForwardAndGradientAgainstDifferences) {
  const size_t n = 257;
  Vec dy = randomVec(n, 41);
  dpc::testing::forEachUnaryFunction([&](const auto &fn, const auto *ref) {
    Vec x = randomVec(n, 40, ref->lo, ref->hi);
    x[0] = std::clamp(1.0f, ref->lo, ref->hi);
    Vec y(n), dx(n);
    dpc_unary(fn.code, ref->a, ref->b, x.data(), y.data(), int64_t(n));
    for (size_t i = 0; i < n; ++i)
      EXPECT_NEAR(y[i], ref->f(x[i]),
                  2e-6 * std::max(1.0, std::fabs(ref->f(x[i]))));
    if (fn.saved == dpc::runtime::UnarySaved::None)
      return;
    bool fromInput = fn.saved == dpc::runtime::UnarySaved::Input;
    dpc_unary_grad(fn.code, ref->a, ref->b, dy.data(),
                   fromInput ? x.data() : y.data(), dx.data(), int64_t(n));
    for (size_t i = 0; i < n; ++i) {
      float h = 1e-2f * std::max(std::fabs(x[i]), 0.1f);
      float lo = x[i] - h, hi = x[i] + h, ylo, yhi;
      dpc_unary(fn.code, ref->a, ref->b, &lo, &ylo, 1);
      dpc_unary(fn.code, ref->a, ref->b, &hi, &yhi, 1);
      double slope = (double(yhi) - ylo) / (double(hi) - lo);
      bool nearKink =
          std::any_of(ref->kinks.begin(), ref->kinks.end(),
                      [&](double k) { return std::fabs(x[i] - k) < 2 * h; });
      if (!nearKink)
        EXPECT_NEAR(dx[i], dy[i] * slope,
                    2e-3 * std::max(1.0, std::fabs(slope)))
            << "at x = " << x[i];
    }
  });
  // At the kinks, PyTorch's one-sided choices: abs' = 0 at 0; hardswish'
  // = -1/2 at -3 and 3/2 at 3, where the middle piece includes both ends;
  // leaky_relu' = alpha at 0; hardsigmoid' (alpha 1/6, beta 1/2, as
  // MobileNetV3 exports it) = 0 at -3 and 3, where the flat parts include
  // both ends.
  float kinks[3] = {0.0f, -3.0f, 3.0f}, ones[3] = {1.0f, 1.0f, 1.0f}, d[3];
  dpc_unary_grad(DPC_UNARY_ABS, 0, 0, ones, kinks, d, 1);
  EXPECT_EQ(d[0], 0.0f);
  dpc_unary_grad(DPC_UNARY_HARD_SWISH, 0, 0, ones, kinks, d, 3);
  EXPECT_EQ(d[1], -0.5f);
  EXPECT_EQ(d[2], 1.5f);
  dpc_unary_grad(DPC_UNARY_LEAKY_RELU, 0.01f, 0, ones, kinks, d, 1);
  EXPECT_EQ(d[0], 0.01f);
  dpc_unary_grad(DPC_UNARY_HARD_SIGMOID, 1.0f / 6, 0.5f, ones, kinks, d, 3);
  EXPECT_FLOAT_EQ(d[0], 1.0f / 6);
  EXPECT_EQ(d[1], 0.0f);
  EXPECT_EQ(d[2], 0.0f);
  // Sigmoid saturates without overflow at both ends.
  float big[2] = {-200.0f, 200.0f}, s[2];
  dpc_unary(DPC_UNARY_SIGMOID, 0, 0, big, s, 2);
  EXPECT_EQ(s[0], 0.0f);
  EXPECT_EQ(s[1], 1.0f);
}

TEST(Unary, NegIsForwardOnly) {
  float x[3] = {1.5f, -2.0f, 0.0f}, y[3];
  dpc_unary(DPC_UNARY_NEG, 0, 0, x, y, 3);
  EXPECT_EQ(y[0], -1.5f);
  EXPECT_EQ(y[1], 2.0f);
  EXPECT_EQ(y[2], -0.0f);
  // Its gradient is a neg of dy, built as such.
  EXPECT_DEATH(dpc_unary_grad(DPC_UNARY_NEG, 0, 0, x, x, y, 3),
               "dpc_unary_grad: unknown function 5");
}

// A 3-d box with a step, read out and written back, against index loops.
TEST(Box, SliceAndInsertAgainstLoops) {
  const int64_t whole[3] = {3, 5, 4}, box[3] = {2, 2, 3};
  const int64_t offsets[3] = {1, 1, 0}, steps[3] = {1, 2, 1};
  Vec x = randomVec(3 * 5 * 4, 51), y(2 * 2 * 3, 123.0f);
  dpc_slice(x.data(), whole, y.data(), box, 3, offsets, steps);
  auto at = [&](int64_t i, int64_t j, int64_t k) {
    return ((offsets[0] + i * steps[0]) * 5 + offsets[1] + j * steps[1]) * 4 +
           offsets[2] + k * steps[2];
  };
  for (int64_t i = 0; i < 2; ++i)
    for (int64_t j = 0; j < 2; ++j)
      for (int64_t k = 0; k < 3; ++k)
        EXPECT_EQ(y[size_t((i * 2 + j) * 3 + k)], x[size_t(at(i, j, k))]);
  // Written back into a zeroed tensor: the box's elements, zero elsewhere.
  Vec back(x.size(), 7.0f);
  dpc_insert(y.data(), box, back.data(), whole, 3, offsets, steps, 1, 0.0f);
  Vec expected(x.size(), 0.0f);
  for (int64_t i = 0; i < 2; ++i)
    for (int64_t j = 0; j < 2; ++j)
      for (int64_t k = 0; k < 3; ++k)
        expected[size_t(at(i, j, k))] = x[size_t(at(i, j, k))];
  EXPECT_EQ(back, expected);
  // Without zeroing, the rest stays as it was.
  Vec kept(x.size(), 7.0f);
  dpc_insert(y.data(), box, kept.data(), whole, 3, offsets, steps, 0, 0.0f);
  for (size_t e = 0; e < x.size(); ++e)
    EXPECT_EQ(kept[e], expected[e] != 0.0f ? expected[e] : 7.0f);
  // A constant pad's border: the fill value.
  Vec padded(x.size(), 0.0f);
  dpc_insert(y.data(), box, padded.data(), whole, 3, offsets, steps, 1, -2.5f);
  for (size_t e = 0; e < x.size(); ++e)
    EXPECT_EQ(padded[e], expected[e] != 0.0f ? expected[e] : -2.5f);
}

TEST(Box, OutOfRangeIsAnError) {
  const int64_t whole[1] = {4}, box[1] = {3}, offsets[1] = {2}, steps[1] = {1};
  float x[4] = {}, y[3];
  EXPECT_DEATH(dpc_slice(x, whole, y, box, 1, offsets, steps),
               "dpc_slice: box \\[3\\] out of \\[4\\] in dimension 0");
}

// Dropout's mask: the keep rate within 3 sigma of 1 - p for several keys and
// rates, pairs of neighbours dropped together as often as independence
// says, kept elements scaled by exactly 1 / (1 - p), the same mask for the
// gradient (the kernel on dy under the same key), another mask under
// another key, and the identity under a negative key.
TEST(Dropout, MaskStatisticsScalingAndGradient) {
  const int64_t n = 200003;
  Vec x = randomVec(size_t(n), 71, 0.5f, 1.5f), dy = randomVec(size_t(n), 72);
  for (float p : {0.1f, 0.3f, 0.5f}) {
    for (int64_t key : {int64_t(1), int64_t(0x5DEECE66D), int64_t(1) << 62}) {
      SCOPED_TRACE(testing::Message() << "p " << p << " key " << key);
      Vec y(static_cast<size_t>(n)), dx(static_cast<size_t>(n));
      dpc_dropout(x.data(), y.data(), n, p, key);
      dpc_dropout(dy.data(), dx.data(), n, p, key);
      int64_t kept = 0, bothDropped = 0;
      for (int64_t i = 0; i < n; ++i) {
        bool keep = y[size_t(i)] != 0.0f;
        kept += keep;
        if (keep) {
          EXPECT_EQ(y[size_t(i)], x[size_t(i)] * (1.0f / (1.0f - p)));
          EXPECT_EQ(dx[size_t(i)], dy[size_t(i)] * (1.0f / (1.0f - p)));
        } else {
          ASSERT_EQ(dx[size_t(i)], 0.0f) << "at " << i;
        }
        if (i > 0 && !keep && y[size_t(i - 1)] == 0.0f)
          ++bothDropped;
      }
      double rate = double(kept) / double(n);
      double sigma = std::sqrt(double(p) * (1 - p) / double(n));
      EXPECT_NEAR(rate, 1.0 - p, 3 * sigma);
      // Overlapping pairs covary by P(three dropped) - p^4 = p^3 (1 - p).
      double pairs = double(bothDropped) / double(n - 1);
      double q = p;
      EXPECT_NEAR(
          pairs, q * q,
          4 * std::sqrt((q * q * (1 - q * q) + 2 * q * q * q * (1 - q)) /
                        double(n)));
    }
  }
  // Another key, another mask: agreement as two independent masks give.
  Vec a(static_cast<size_t>(n)), b(static_cast<size_t>(n));
  dpc_dropout(x.data(), a.data(), n, 0.5f, 11);
  dpc_dropout(x.data(), b.data(), n, 0.5f, 12);
  int64_t same = 0;
  for (int64_t i = 0; i < n; ++i)
    same += (a[size_t(i)] == 0.0f) == (b[size_t(i)] == 0.0f);
  EXPECT_NEAR(double(same) / double(n), 0.5, 3 * std::sqrt(0.25 / double(n)));
  // Evaluation: the identity.
  Vec id(static_cast<size_t>(n));
  dpc_dropout(x.data(), id.data(), n, 0.5f, -1);
  EXPECT_EQ(id, x);
}

// Clip, and its gradient passing at the bounds themselves (PyTorch's clamp).
TEST(Clip, ValuesAndGradientAtTheBounds) {
  float x[6] = {-1.0f, 0.0f, 3.0f, 6.0f, 7.5f, NAN}, y[6], dx[6];
  float dy[6] = {1, 2, 3, 4, 5, 6};
  dpc_clip(x, y, 6, 0.0f, 6.0f);
  EXPECT_EQ(y[0], 0.0f);
  EXPECT_EQ(y[2], 3.0f);
  EXPECT_EQ(y[4], 6.0f);
  EXPECT_TRUE(std::isnan(y[5]));
  dpc_clip_grad(dy, x, dx, 6, 0.0f, 6.0f);
  EXPECT_EQ(dx[0], 0.0f);
  EXPECT_EQ(dx[1], 2.0f);
  EXPECT_EQ(dx[2], 3.0f);
  EXPECT_EQ(dx[3], 4.0f);
  EXPECT_EQ(dx[4], 0.0f);
}

TEST(Copy, CopiesBytes) {
  Vec a = randomVec(33, 18), b(33, 0.0f);
  dpc_copy(a.data(), b.data(), 33 * 4);
  EXPECT_EQ(a, b);
}

//===----------------------------------------------------------------------===//
// Max pooling
//===----------------------------------------------------------------------===//

struct PoolCase {
  int64_t n, c, h, w, kh, kw, sh, sw, pt, pl, pb, pr;
  bool ceil;
};

int64_t poolOut(int64_t in, int64_t k, int64_t s, int64_t p0, int64_t p1,
                bool ceil) {
  int64_t span = in + p0 + p1 - k;
  int64_t out = (ceil ? (span + s - 1) / s : span / s) + 1;
  // PyTorch's rule: the last window must start inside the input or the
  // leading pad.
  if (ceil && (out - 1) * s >= in + p0)
    --out;
  return out;
}

class PoolTest : public ::testing::TestWithParam<PoolCase> {};

TEST_P(PoolTest, ForwardAndGradientFollowFirstMaximum) {
  PoolCase c = GetParam();
  int64_t oh = poolOut(c.h, c.kh, c.sh, c.pt, c.pb, c.ceil);
  int64_t ow = poolOut(c.w, c.kw, c.sw, c.pl, c.pr, c.ceil);
  int64_t xs[4] = {c.n, c.c, c.h, c.w}, ys[4] = {c.n, c.c, oh, ow};
  int64_t p[8] = {c.kh, c.kw, c.sh, c.sw, c.pt, c.pl, c.pb, c.pr};
  size_t xn = size_t(c.n * c.c * c.h * c.w), yn = size_t(c.n * c.c * oh * ow);
  // Values from a small set, so that windows have ties.
  Vec x = randomVec(xn, 19);
  for (float &v : x)
    v = std::round(v * 3) / 3;
  Vec y(yn, 123.0f), dy = randomVec(yn, 20), dx(xn, 123.0f);
  dpc_max_pool2d(x.data(), xs, y.data(), ys, p);
  dpc_max_pool2d_grad(dy.data(), ys, x.data(), xs, dx.data(), p);

  std::vector<double> ry(yn), rdx(xn, 0.0);
  for (int64_t pl = 0; pl < c.n * c.c; ++pl)
    for (int64_t i = 0; i < oh; ++i)
      for (int64_t j = 0; j < ow; ++j) {
        int64_t best = -1;
        for (int64_t u = 0; u < c.kh; ++u)
          for (int64_t v = 0; v < c.kw; ++v) {
            int64_t hi = i * c.sh - c.pt + u, wi = j * c.sw - c.pl + v;
            if (hi < 0 || hi >= c.h || wi < 0 || wi >= c.w)
              continue;
            int64_t idx = (pl * c.h + hi) * c.w + wi;
            if (best < 0 || x[size_t(idx)] > x[size_t(best)])
              best = idx;
          }
        size_t yi = size_t((pl * oh + i) * ow + j);
        ASSERT_GE(best, 0);
        ry[yi] = x[size_t(best)];
        rdx[size_t(best)] += dy[yi];
      }
  expectClose(y, ry, 0);
  expectClose(dx, rdx, 1e-6);
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, PoolTest,
    ::testing::Values(PoolCase{2, 3, 28, 28, 2, 2, 2, 2, 0, 0, 0, 0, false},
                      PoolCase{2, 3, 7, 7, 2, 2, 2, 2, 0, 0, 0, 0, true},
                      PoolCase{1, 2, 9, 8, 3, 3, 2, 2, 1, 1, 1, 1, false},
                      PoolCase{1, 2, 10, 9, 3, 2, 2, 3, 1, 0, 1, 0, true},
                      // Overlapping windows: gradients add up.
                      PoolCase{2, 2, 8, 8, 3, 3, 1, 1, 0, 0, 0, 0, false}));

//===----------------------------------------------------------------------===//
// Average pooling
//===----------------------------------------------------------------------===//

/// Hand-checked windows (the values torch.nn.functional.avg_pool2d gives):
/// 1..9 in a 3 x 3 plane, 2 x 2 windows at stride 2 with one pixel of
/// padding, then 1..16 in 4 x 4 with 3 x 3 windows, stride 2, pad 1 and
/// ceil mode, with and without counting the padding.
TEST(AvgPool, DivisorsFollowPyTorch) {
  struct Case {
    int64_t h, k, out, ceil;
    std::vector<float> withPad, withoutPad;
  };
  std::vector<Case> cases = {
      {3, 2, 2, 0, {0.25f, 1.25f, 2.75f, 7.0f}, {1.0f, 2.5f, 5.5f, 7.0f}},
      {4,
       3,
       3,
       1,
       {14.0f / 9, 30.0f / 9, 2.0f, 57.0f / 9, 11.0f, 6.0f, 4.5f, 7.5f, 4.0f},
       {3.5f, 5.0f, 6.0f, 9.5f, 11.0f, 12.0f, 13.5f, 15.0f, 16.0f}}};
  for (const Case &c : cases) {
    Vec x(size_t(c.h * c.h));
    for (size_t i = 0; i < x.size(); ++i)
      x[i] = float(i + 1);
    int64_t xs[4] = {1, 1, c.h, c.h}, ys[4] = {1, 1, c.out, c.out};
    for (int64_t include : {1, 0}) {
      int64_t p[9] = {c.k, c.k, 2, 2, 1, 1, 1, 1, include};
      Vec y(size_t(c.out * c.out), 123.0f);
      dpc_avg_pool2d(x.data(), xs, y.data(), ys, p);
      const std::vector<float> &want = include ? c.withPad : c.withoutPad;
      expectClose(y, std::vector<double>(want.begin(), want.end()), 1e-6);
    }
  }
}

/// A linear map's gradient is its adjoint: <dy, pool(x)> = <grad(dy), x>
/// for every x and dy.
double dot(const Vec &a, const Vec &b) {
  double sum = 0;
  for (size_t i = 0; i < a.size(); ++i)
    sum += double(a[i]) * b[i];
  return sum;
}

TEST_P(PoolTest, AverageGradientIsTheAdjoint) {
  PoolCase c = GetParam();
  int64_t oh = poolOut(c.h, c.kh, c.sh, c.pt, c.pb, c.ceil);
  int64_t ow = poolOut(c.w, c.kw, c.sw, c.pl, c.pr, c.ceil);
  int64_t xs[4] = {c.n, c.c, c.h, c.w}, ys[4] = {c.n, c.c, oh, ow};
  size_t xn = size_t(c.n * c.c * c.h * c.w), yn = size_t(c.n * c.c * oh * ow);
  Vec x = randomVec(xn, 31), dy = randomVec(yn, 32);
  for (int64_t include : {0, 1}) {
    int64_t p[9] = {c.kh, c.kw, c.sh, c.sw, c.pt, c.pl, c.pb, c.pr, include};
    Vec y(yn, 123.0f), dx(xn, 123.0f);
    dpc_avg_pool2d(x.data(), xs, y.data(), ys, p);
    dpc_avg_pool2d_grad(dy.data(), ys, dx.data(), xs, p);
    EXPECT_NEAR(dot(dy, y), dot(dx, x),
                1e-4 * std::max(1.0, std::abs(dot(dy, y))))
        << "count_include_pad " << include;
  }
}

TEST(GlobalAvgPool, MeanAndAdjointGradient) {
  int64_t planes = 6, size = 49;
  Vec x = randomVec(size_t(planes * size), 33), y(size_t(planes), 123.0f);
  dpc_global_avg_pool(x.data(), planes, size, y.data());
  std::vector<double> want(static_cast<size_t>(planes), 0.0);
  for (int64_t p = 0; p < planes; ++p) {
    for (int64_t i = 0; i < size; ++i)
      want[size_t(p)] += x[size_t(p * size + i)];
    want[size_t(p)] /= double(size);
  }
  expectClose(y, want, 1e-6);
  Vec dy = randomVec(size_t(planes), 34), dx(x.size(), 123.0f);
  dpc_global_avg_pool_grad(dy.data(), planes, size, dx.data());
  EXPECT_NEAR(dot(dy, y), dot(dx, x), 1e-5);
}

//===----------------------------------------------------------------------===//
// Batch normalization
//===----------------------------------------------------------------------===//

/// The mean of channel k of x (n, c, s) and the sum of squared deviations
/// from it.
template <typename T>
std::pair<double, double> channelMoments(const std::vector<T> &x, int64_t n,
                                         int64_t c, int64_t s, int64_t k) {
  double mean = 0, squares = 0;
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < s; ++j)
      mean += x[size_t((i * c + k) * s + j)];
  mean /= double(n * s);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < s; ++j)
      squares += std::pow(x[size_t((i * c + k) * s + j)] - mean, 2);
  return {mean, squares};
}

/// Training-mode batch normalization in double, the statistics taken from
/// x itself: what the finite differences below differentiate.
std::vector<double> batchNormReference(const std::vector<double> &x,
                                       const std::vector<double> &scale,
                                       const std::vector<double> &bias,
                                       int64_t n, int64_t c, int64_t s,
                                       double epsilon) {
  std::vector<double> y(x.size());
  for (int64_t k = 0; k < c; ++k) {
    auto [mean, squares] = channelMoments(x, n, c, s, k);
    double var = squares / double(n * s);
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < s; ++j) {
        size_t at = size_t((i * c + k) * s + j);
        y[at] = scale[size_t(k)] * (x[at] - mean) / std::sqrt(var + epsilon) +
                bias[size_t(k)];
      }
  }
  return y;
}

TEST(BatchNorm, StatisticsUpdateTheRunningOnesLikeTorch) {
  int64_t n = 3, c = 2, s = 5;
  Vec x = randomVec(size_t(n * c * s), 41, -2, 3);
  Vec runningMean = {0.5f, -1.0f}, runningVar = {2.0f, 0.25f};
  Vec stats(size_t(2 * c), 123.0f);
  dpc_batch_norm_stats(x.data(), n, c, s, runningMean.data(), runningVar.data(),
                       0.9f, 1, stats.data());
  std::vector<double> want(size_t(2 * c)), wantMean(2), wantVar(2);
  for (int64_t k = 0; k < c; ++k) {
    auto [mean, squares] = channelMoments(x, n, c, s, k);
    want[size_t(k)] = mean;
    want[size_t(c + k)] = squares / double(n * s);
    // The running variance folds in the unbiased estimate, as torch does.
    wantMean[size_t(k)] = 0.9 * (k ? -1.0 : 0.5) + 0.1 * mean;
    wantVar[size_t(k)] =
        0.9 * (k ? 0.25 : 2.0) + 0.1 * squares / double(n * s - 1);
  }
  expectClose(stats, want, 1e-6);
  expectClose(runningMean, wantMean, 1e-6);
  expectClose(runningVar, wantVar, 1e-6);

  // Evaluation normalizes with the running statistics and leaves them be.
  Vec before = runningMean;
  dpc_batch_norm_stats(x.data(), n, c, s, runningMean.data(), runningVar.data(),
                       0.9f, 0, stats.data());
  EXPECT_EQ(runningMean, before);
  expectClose(stats, {wantMean[0], wantMean[1], wantVar[0], wantVar[1]}, 1e-6);
}

TEST(BatchNorm, ForwardAndGradientsMatchFiniteDifferences) {
  int64_t n = 3, c = 2, s = 5;
  float epsilon = 1e-3f;
  Vec x = randomVec(size_t(n * c * s), 42, -2, 3);
  Vec scale = {1.5f, -0.7f}, bias = {0.2f, 0.4f};
  Vec dy = randomVec(x.size(), 43);
  Vec runningMean(2, 0.0f), runningVar(2, 1.0f), stats(4);
  dpc_batch_norm_stats(x.data(), n, c, s, runningMean.data(), runningVar.data(),
                       0.9f, 1, stats.data());
  Vec y(x.size()), dx(x.size()), dscale(2), dbias(2);
  dpc_batch_norm(x.data(), stats.data(), scale.data(), bias.data(), n, c, s,
                 epsilon, y.data());
  dpc_batch_norm_grad_input(dy.data(), x.data(), stats.data(), scale.data(), n,
                            c, s, epsilon, dx.data());
  dpc_batch_norm_grad_scale(dy.data(), x.data(), stats.data(), n, c, s, epsilon,
                            dscale.data());
  int64_t folded[4] = {n, c, s, 1};
  dpc_conv2d_grad_bias(dy.data(), folded, dbias.data());

  std::vector<double> xd(x.begin(), x.end()), sd(scale.begin(), scale.end()),
      bd(bias.begin(), bias.end());
  expectClose(y, batchNormReference(xd, sd, bd, n, c, s, epsilon), 1e-5);
  // The loss sum(dy * y) and its central differences in double.
  auto loss = [&](const std::vector<double> &xv, const std::vector<double> &sv,
                  const std::vector<double> &bv) {
    std::vector<double> out = batchNormReference(xv, sv, bv, n, c, s, epsilon);
    double sum = 0;
    for (size_t i = 0; i < out.size(); ++i)
      sum += dy[i] * out[i];
    return sum;
  };
  auto derivative = [&](std::vector<double> &v, size_t i) {
    double h = 1e-6, keep = v[i];
    v[i] = keep + h;
    double up = loss(xd, sd, bd);
    v[i] = keep - h;
    double down = loss(xd, sd, bd);
    v[i] = keep;
    return (up - down) / (2 * h);
  };
  std::vector<double> wantDx(x.size()), wantDscale(2), wantDbias(2);
  for (size_t i = 0; i < x.size(); ++i)
    wantDx[i] = derivative(xd, i);
  for (size_t k = 0; k < 2; ++k) {
    wantDscale[k] = derivative(sd, k);
    wantDbias[k] = derivative(bd, k);
  }
  expectClose(dx, wantDx, 1e-4);
  expectClose(dscale, wantDscale, 1e-4);
  expectClose(dbias, wantDbias, 1e-4);
}

//===----------------------------------------------------------------------===//
// Layer normalization
//===----------------------------------------------------------------------===//

/// Layer normalization of rows x size in double; empty scale or bias are
/// absent (1 and 0).
std::vector<double> layerNormReference(const std::vector<double> &x,
                                       const std::vector<double> &scale,
                                       const std::vector<double> &bias,
                                       int64_t rows, int64_t size,
                                       double epsilon) {
  std::vector<double> y(x.size());
  for (int64_t r = 0; r < rows; ++r) {
    double mean = 0, squares = 0;
    for (int64_t j = 0; j < size; ++j)
      mean += x[size_t(r * size + j)];
    mean /= double(size);
    for (int64_t j = 0; j < size; ++j)
      squares += std::pow(x[size_t(r * size + j)] - mean, 2);
    double invStd = 1 / std::sqrt(squares / double(size) + epsilon);
    for (int64_t j = 0; j < size; ++j) {
      size_t at = size_t(r * size + j);
      y[at] = (x[at] - mean) * invStd;
      if (!scale.empty())
        y[at] *= scale[size_t(j)];
      if (!bias.empty())
        y[at] += bias[size_t(j)];
    }
  }
  return y;
}

struct LayerNormCase {
  const char *name;
  int64_t rows, size;
  bool affine;
  float epsilon;
  friend std::ostream &operator<<(std::ostream &os, const LayerNormCase &c) {
    return os << c.name;
  }
};

class LayerNormTest : public ::testing::TestWithParam<LayerNormCase> {};

TEST_P(LayerNormTest, ForwardAndGradientsMatchFiniteDifferences) {
  const LayerNormCase &c = GetParam();
  int64_t rows = c.rows, size = c.size;
  Vec x = randomVec(size_t(rows * size), 61, -2, 3);
  x[1] += 40.0f; // an offset row: the variance must not cancel
  Vec scale = c.affine ? randomVec(size_t(size), 62, 0.5f, 1.5f) : Vec();
  Vec bias = c.affine ? randomVec(size_t(size), 63) : Vec();
  Vec dy = randomVec(x.size(), 64);
  const float *scaleOrNull = c.affine ? scale.data() : nullptr;
  Vec y(x.size()), dx(x.size());
  dpc_layer_norm(x.data(), scaleOrNull, c.affine ? bias.data() : nullptr, rows,
                 size, c.epsilon, y.data());
  dpc_layer_norm_grad_input(dy.data(), x.data(), scaleOrNull, rows, size,
                            c.epsilon, dx.data());

  std::vector<double> xd(x.begin(), x.end()), sd(scale.begin(), scale.end()),
      bd(bias.begin(), bias.end());
  expectClose(y, layerNormReference(xd, sd, bd, rows, size, c.epsilon), 1e-5);
  auto loss = [&] {
    std::vector<double> out =
        layerNormReference(xd, sd, bd, rows, size, c.epsilon);
    double sum = 0;
    for (size_t i = 0; i < out.size(); ++i)
      sum += dy[i] * out[i];
    return sum;
  };
  auto derivative = [&](std::vector<double> &v, size_t i) {
    double h = 1e-6, keep = v[i];
    v[i] = keep + h;
    double up = loss();
    v[i] = keep - h;
    double down = loss();
    v[i] = keep;
    return (up - down) / (2 * h);
  };
  std::vector<double> wantDx(x.size());
  for (size_t i = 0; i < x.size(); ++i)
    wantDx[i] = derivative(xd, i);
  expectClose(dx, wantDx, 1e-4);
  if (!c.affine)
    return;
  // The weight gradients: the scale's kernel, and the bias's sum_to_shape
  // of dy to the normalized shape, as autodiff builds it.
  Vec dscale(static_cast<size_t>(size)), dbias(static_cast<size_t>(size));
  dpc_layer_norm_grad_scale(dy.data(), x.data(), rows, size, c.epsilon,
                            dscale.data());
  int64_t dyShape[2] = {rows, size}, biasShape[2] = {1, size};
  dpc_sum_to_shape(dy.data(), dyShape, dbias.data(), biasShape, 2, 1.0f);
  std::vector<double> wantDscale(static_cast<size_t>(size)),
      wantDbias(static_cast<size_t>(size));
  for (size_t j = 0; j < size_t(size); ++j) {
    wantDscale[j] = derivative(sd, j);
    wantDbias[j] = derivative(bd, j);
  }
  expectClose(dscale, wantDscale, 1e-4);
  expectClose(dbias, wantDbias, 1e-4);
}

INSTANTIATE_TEST_SUITE_P(
    Kernels, LayerNormTest,
    ::testing::Values(LayerNormCase{"rows6_size10_affine", 6, 10, true, 1e-5f},
                      LayerNormCase{"rows4_size33_plain", 4, 33, false, 1e-5f},
                      LayerNormCase{"rows1_size7_eps01", 1, 7, true, 0.1f},
                      LayerNormCase{"rows5_size1_affine", 5, 1, true, 1e-3f}),
    [](const auto &info) { return std::string(info.param.name); });

TEST(LayerNorm, RefusesAnEmptyRow) {
  Vec x(4), y(4);
  EXPECT_DEATH(
      dpc_layer_norm(x.data(), nullptr, nullptr, 4, 0, 1e-5f, y.data()),
      "dpc_layer_norm: bad sizes rows 4, size 0");
}

//===----------------------------------------------------------------------===//
// LSTM
//===----------------------------------------------------------------------===//

namespace {

struct LstmSizes {
  int64_t steps = 3, batch = 2, input = 3, hidden = 2;
};

// The LSTM of dpc_lstm in double: the states T x B x 6H (h, c, i, o, f, g).
std::vector<double>
lstmReference(const LstmSizes &n, const std::vector<double> &x,
              const std::vector<double> &w, const std::vector<double> &r,
              const std::vector<double> &bias, const std::vector<double> &h0,
              const std::vector<double> &c0) {
  int64_t H = n.hidden, B = n.batch, I = n.input;
  std::vector<double> states(size_t(n.steps * B * 6 * H));
  std::vector<double> h = h0, c = c0;
  for (int64_t t = 0; t < n.steps; ++t)
    for (int64_t b = 0; b < B; ++b) {
      double *s = &states[size_t((t * B + b) * 6 * H)];
      std::vector<double> z(size_t(4 * H));
      for (int64_t g = 0; g < 4 * H; ++g) {
        double sum = bias[size_t(g)] + bias[size_t(4 * H + g)];
        for (int64_t k = 0; k < I; ++k)
          sum += x[size_t((t * B + b) * I + k)] * w[size_t(g * I + k)];
        for (int64_t k = 0; k < H; ++k)
          sum += h[size_t(b * H + k)] * r[size_t(g * H + k)];
        z[size_t(g)] = sum;
      }
      for (int64_t j = 0; j < H; ++j) {
        auto sig = [](double v) { return 1 / (1 + std::exp(-v)); };
        double i = sig(z[size_t(j)]), o = sig(z[size_t(H + j)]),
               f = sig(z[size_t(2 * H + j)]),
               g = std::tanh(z[size_t(3 * H + j)]);
        double cell = f * c[size_t(b * H + j)] + i * g;
        s[j] = o * std::tanh(cell);
        s[H + j] = cell;
        s[2 * H + j] = i;
        s[3 * H + j] = o;
        s[4 * H + j] = f;
        s[5 * H + j] = g;
      }
      for (int64_t j = 0; j < H; ++j) {
        h[size_t(b * H + j)] = s[j];
        c[size_t(b * H + j)] = s[H + j];
      }
    }
  return states;
}

std::vector<double> toDouble(const Vec &v) { return {v.begin(), v.end()}; }

} // namespace

// The forward against the double reference; the backward's gate and cell
// gradients, turned into every operand's gradient as nn.lstm's gradient
// rule does, against central differences of the reference under the loss
// sum(states * dstates) over the h and c parts (the gates' part of dstates
// is random and must be ignored).
TEST(Lstm, ForwardAndGradientsMatchFiniteDifferences) {
  LstmSizes n;
  int64_t T = n.steps, B = n.batch, I = n.input, H = n.hidden;
  Vec x = randomVec(size_t(T * B * I), 41, -1, 1);
  Vec w = randomVec(size_t(4 * H * I), 42, -0.8f, 0.8f);
  Vec r = randomVec(size_t(4 * H * H), 43, -0.8f, 0.8f);
  Vec bias = randomVec(size_t(8 * H), 44, -0.5f, 0.5f);
  Vec h0 = randomVec(size_t(B * H), 45, -1, 1);
  Vec c0 = randomVec(size_t(B * H), 46, -1, 1);
  Vec states(size_t(T * B * 6 * H), 99.0f);
  dpc_lstm(x.data(), w.data(), r.data(), bias.data(), h0.data(), c0.data(), T,
           B, I, H, states.data());
  std::vector<std::vector<double>> operands = {toDouble(x),  toDouble(w),
                                               toDouble(r),  toDouble(bias),
                                               toDouble(h0), toDouble(c0)};
  auto reference = [&] {
    return lstmReference(n, operands[0], operands[1], operands[2], operands[3],
                         operands[4], operands[5]);
  };
  expectClose(states, reference());

  Vec dstates = randomVec(states.size(), 47, -1, 1);
  auto loss = [&] {
    std::vector<double> s = reference();
    double sum = 0;
    for (size_t e = 0; e < s.size(); ++e)
      if (int64_t(e) % (6 * H) < 2 * H)
        sum += s[e] * dstates[e];
    return sum;
  };
  Vec out(size_t(T * B * 5 * H), 99.0f);
  dpc_lstm_grad(dstates.data(), states.data(), r.data(), c0.data(), T, B, H,
                out.data());
  auto dz = [&](int64_t t, int64_t b, int64_t g) {
    return double(out[size_t((t * B + b) * 5 * H + g)]);
  };
  auto hPrev = [&](int64_t t, int64_t b, int64_t k) {
    return t == 0 ? double(h0[size_t(b * H + k)])
                  : double(states[size_t(((t - 1) * B + b) * 6 * H + k)]);
  };
  std::vector<std::vector<double>> grads(6);
  for (size_t o = 0; o < 6; ++o)
    grads[o].assign(operands[o].size(), 0.0);
  for (int64_t t = 0; t < T; ++t)
    for (int64_t b = 0; b < B; ++b)
      for (int64_t g = 0; g < 4 * H; ++g) {
        for (int64_t k = 0; k < I; ++k) {
          grads[0][size_t((t * B + b) * I + k)] +=
              dz(t, b, g) * w[size_t(g * I + k)];
          grads[1][size_t(g * I + k)] +=
              dz(t, b, g) * x[size_t((t * B + b) * I + k)];
        }
        for (int64_t k = 0; k < H; ++k)
          grads[2][size_t(g * H + k)] += dz(t, b, g) * hPrev(t, b, k);
        grads[3][size_t(g)] += dz(t, b, g);
        grads[3][size_t(4 * H + g)] += dz(t, b, g);
        if (t == 0)
          for (int64_t k = 0; k < H; ++k)
            grads[4][size_t(b * H + k)] += dz(0, b, g) * r[size_t(g * H + k)];
      }
  for (int64_t b = 0; b < B; ++b)
    for (int64_t j = 0; j < H; ++j)
      grads[5][size_t(b * H + j)] =
          double(out[size_t(b * 5 * H + 4 * H + j)]) *
          double(states[size_t(b * 6 * H + 4 * H + j)]);

  const double step = 1e-6;
  for (size_t o = 0; o < 6; ++o)
    for (size_t e = 0; e < operands[o].size(); ++e) {
      double saved = operands[o][e];
      operands[o][e] = saved + step;
      double up = loss();
      operands[o][e] = saved - step;
      double down = loss();
      operands[o][e] = saved;
      double numeric = (up - down) / (2 * step);
      EXPECT_NEAR(grads[o][e], numeric, 1e-4 * std::max(1.0, std::abs(numeric)))
          << "operand " << o << ", element " << e;
    }
}

TEST(Lstm, WithoutBiasIsAZeroBias) {
  LstmSizes n;
  int64_t T = n.steps, B = n.batch, I = n.input, H = n.hidden;
  Vec x = randomVec(size_t(T * B * I), 51),
      w = randomVec(size_t(4 * H * I), 52),
      r = randomVec(size_t(4 * H * H), 53), zero(size_t(8 * H), 0.0f),
      h0 = randomVec(size_t(B * H), 54), c0 = randomVec(size_t(B * H), 55);
  Vec a(size_t(T * B * 6 * H)), b(a.size());
  dpc_lstm(x.data(), w.data(), r.data(), nullptr, h0.data(), c0.data(), T, B, I,
           H, a.data());
  dpc_lstm(x.data(), w.data(), r.data(), zero.data(), h0.data(), c0.data(), T,
           B, I, H, b.data());
  EXPECT_EQ(a, b);
}

TEST(Lstm, RefusesAnEmptySequence) {
  Vec x(4), w(8), r(16), h(2), c(2), s(12);
  EXPECT_DEATH(dpc_lstm(x.data(), w.data(), r.data(), nullptr, h.data(),
                        c.data(), 0, 1, 2, 2, s.data()),
               "dpc_lstm: bad sizes steps 0");
}

//===----------------------------------------------------------------------===//
// Softmax cross-entropy
//===----------------------------------------------------------------------===//

TEST(SoftmaxCrossEntropy, LossAndGradientMatchReference) {
  int64_t n = 16, c = 10;
  Vec logits = randomVec(size_t(n * c), 21, -5, 5);
  logits[3] = 80.0f; // exp(80) overflows float without the max shift
  std::vector<int64_t> labels(static_cast<size_t>(n), 0);
  for (int64_t i = 0; i < n; ++i)
    labels[size_t(i)] = (i * 7) % c;
  float scale = 1.0f / 64, loss = 0;
  dpc_softmax_cross_entropy(logits.data(), labels.data(), n, c, scale, &loss);
  Vec grad(size_t(n * c), 123.0f);
  dpc_softmax_cross_entropy_grad(logits.data(), labels.data(), n, c, scale,
                                 grad.data());
  double total = 0;
  std::vector<double> rgrad(grad.size());
  for (int64_t i = 0; i < n; ++i) {
    const float *row = logits.data() + i * c;
    double m = *std::max_element(row, row + c), s = 0;
    for (int64_t j = 0; j < c; ++j)
      s += std::exp(row[j] - m);
    total += m + std::log(s) - row[labels[size_t(i)]];
    for (int64_t j = 0; j < c; ++j)
      rgrad[size_t(i * c + j)] =
          scale * (std::exp(row[j] - m) / s - (j == labels[size_t(i)]));
  }
  EXPECT_TRUE(std::isfinite(loss));
  expectClose({loss}, {scale * total});
  expectClose(grad, rgrad);
}

// torch's ignore_index: the ignored rows add nothing and get a zero
// gradient, whether the index is outside the classes (-100) or one of them.
TEST(SoftmaxCrossEntropy, IgnoredRowsAddNothing) {
  int64_t n = 12, c = 6;
  Vec logits = randomVec(size_t(n * c), 22, -4, 4);
  for (int64_t ignore : {int64_t(-100), int64_t(3)}) {
    SCOPED_TRACE("ignore_index " + std::to_string(ignore));
    std::vector<int64_t> labels(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i)
      labels[size_t(i)] = i % 3 == 1 ? ignore : (i * 5) % c;
    float scale = 0.125f, loss = 0;
    dpc_softmax_cross_entropy_ignore(logits.data(), labels.data(), n, c, ignore,
                                     scale, &loss);
    Vec grad(size_t(n * c), 123.0f);
    dpc_softmax_cross_entropy_ignore_grad(logits.data(), labels.data(), n, c,
                                          ignore, scale, grad.data());
    double total = 0;
    std::vector<double> rgrad(grad.size(), 0.0);
    for (int64_t i = 0; i < n; ++i) {
      int64_t label = labels[size_t(i)];
      if (label == ignore)
        continue;
      const float *row = logits.data() + i * c;
      double m = *std::max_element(row, row + c), s = 0;
      for (int64_t j = 0; j < c; ++j)
        s += std::exp(row[j] - m);
      total += m + std::log(s) - row[label];
      for (int64_t j = 0; j < c; ++j)
        rgrad[size_t(i * c + j)] =
            scale * (std::exp(row[j] - m) / s - (j == label));
    }
    expectClose({loss}, {scale * total});
    expectClose(grad, rgrad);
  }
}

TEST(SoftmaxCrossEntropy, RefusesALabelOutsideTheClassesThatIsNotIgnored) {
  Vec logits(8, 0.0f), grad(8);
  std::vector<int64_t> labels = {1, -100, -1, 0};
  float loss = 0;
  EXPECT_DEATH(dpc_softmax_cross_entropy_ignore(logits.data(), labels.data(), 4,
                                                2, -100, 1.0f, &loss),
               "label -1 of row 2 is outside \\[0, 2\\)");
  EXPECT_DEATH(dpc_softmax_cross_entropy_ignore_grad(
                   logits.data(), labels.data(), 4, 2, -100, 1.0f, grad.data()),
               "label -1 of row 2 is outside");
}

//===----------------------------------------------------------------------===//
// Mean squared error
//===----------------------------------------------------------------------===//

TEST(MseLoss, LossAndGradientMatchReference) {
  int64_t n = 24;
  Vec prediction = randomVec(size_t(n), 23, -3, 3);
  Vec target = randomVec(size_t(n), 24, -3, 3);
  // 1 / (2 microbatches x 24 elements): the minibatch mean's share.
  float scale = 1.0f / 48, loss = 0;
  dpc_mse_loss(prediction.data(), target.data(), n, scale, &loss);
  Vec grad(size_t(n), 123.0f);
  dpc_mse_loss_grad(prediction.data(), target.data(), n, scale, grad.data());
  double total = 0;
  std::vector<double> rgrad(grad.size());
  for (int64_t i = 0; i < n; ++i) {
    double d = double(prediction[size_t(i)]) - target[size_t(i)];
    total += d * d;
    rgrad[size_t(i)] = 2.0 * scale * d;
  }
  expectClose({loss}, {scale * total});
  expectClose(grad, rgrad);
}

TEST(MseLoss, ExactTargetsGiveZeroLossAndGradient) {
  Vec prediction = {1.5f, -2.0f, 0.25f}, grad(3, 123.0f);
  float loss = 7;
  dpc_mse_loss(prediction.data(), prediction.data(), 3, 0.5f, &loss);
  dpc_mse_loss_grad(prediction.data(), prediction.data(), 3, 0.5f, grad.data());
  EXPECT_EQ(loss, 0.0f);
  EXPECT_EQ(grad, Vec(3, 0.0f));
  // One element off by 2: scale * 4, and 2 * scale * 2 on that element.
  Vec target = {1.5f, -4.0f, 0.25f};
  dpc_mse_loss(prediction.data(), target.data(), 3, 0.5f, &loss);
  dpc_mse_loss_grad(prediction.data(), target.data(), 3, 0.5f, grad.data());
  EXPECT_EQ(loss, 2.0f);
  EXPECT_EQ(grad, (Vec{0.0f, 2.0f, 0.0f}));
}

//===----------------------------------------------------------------------===//
// Gather (embedding)
//===----------------------------------------------------------------------===//

TEST(Gather, RowsAndScatteredGradientMatchLoops) {
  int64_t rows = 7, width = 3;
  Vec table = randomVec(size_t(rows * width), 31, -1, 1);
  // Repeats (rows 2 and 6 twice) and a negative index (-1 is row 6).
  std::vector<int64_t> indices = {2, 0, 6, 2, -1, 5};
  int64_t n = int64_t(indices.size());
  Vec out(size_t(n * width), 99.0f);
  dpc_gather(table.data(), indices.data(), rows, width, n, out.data());
  for (int64_t i = 0; i < n; ++i) {
    int64_t row =
        indices[size_t(i)] < 0 ? indices[size_t(i)] + rows : indices[size_t(i)];
    for (int64_t j = 0; j < width; ++j)
      EXPECT_EQ(out[size_t(i * width + j)], table[size_t(row * width + j)]);
  }
  // The gradient adds each row of dy into the row it was read from; rows
  // nothing read are zero.
  Vec dy = randomVec(size_t(n * width), 32, -1, 1);
  Vec dtable(size_t(rows * width), 55.0f);
  dpc_gather_grad(dy.data(), indices.data(), rows, width, n, dtable.data());
  std::vector<double> want(size_t(rows * width), 0.0);
  for (int64_t i = 0; i < n; ++i) {
    int64_t row =
        indices[size_t(i)] < 0 ? indices[size_t(i)] + rows : indices[size_t(i)];
    for (int64_t j = 0; j < width; ++j)
      want[size_t(row * width + j)] += dy[size_t(i * width + j)];
  }
  expectClose(dtable, want);
  EXPECT_EQ(dtable[size_t(1 * width)], 0.0f);
}

TEST(Gather, RefusesAnIndexOutsideTheTable) {
  Vec table(6, 1.0f), out(2);
  int64_t indices[] = {1, 3};
  EXPECT_DEATH(dpc_gather(table.data(), indices, 3, 2, 2, out.data()),
               "dpc_gather: index 3 at position 1 is outside the table's 3 "
               "rows");
  int64_t negative[] = {-4};
  EXPECT_DEATH(dpc_gather_grad(out.data(), negative, 3, 2, 1, table.data()),
               "dpc_gather_grad: index -4 at position 0 is outside");
}

TEST(Masks, CompareCastAndLogicBroadcast) {
  // ids == pad over [2, 3] against a scalar; ids < a row [3].
  std::vector<int64_t> ids = {4, 0, 7, 0, 0, 2};
  int64_t pad = 0, idsShape[] = {2, 3}, one[] = {1, 1};
  std::vector<uint8_t> eq(6, 9);
  dpc_compare(DPC_COMPARE_EQ, DPC_DTYPE_I64, ids.data(), idsShape, &pad, one,
              eq.data(), idsShape, 2);
  EXPECT_EQ(eq, (std::vector<uint8_t>{0, 1, 0, 1, 1, 0}));
  std::vector<float> x = {1, 2, 3, 4, 5, 6}, row = {2, 2, 7};
  int64_t rowShape[] = {1, 3};
  std::vector<uint8_t> lt(6), ge(6), both(6);
  dpc_compare(DPC_COMPARE_LT, DPC_DTYPE_F32, x.data(), idsShape, row.data(),
              rowShape, lt.data(), idsShape, 2);
  EXPECT_EQ(lt, (std::vector<uint8_t>{1, 0, 1, 0, 0, 1}));
  dpc_compare(DPC_COMPARE_GE, DPC_DTYPE_F32, x.data(), idsShape, row.data(),
              rowShape, ge.data(), idsShape, 2);
  EXPECT_EQ(ge, (std::vector<uint8_t>{0, 1, 0, 1, 1, 0}));
  dpc_compare(DPC_COMPARE_OR, DPC_DTYPE_BOOL, eq.data(), idsShape, lt.data(),
              idsShape, both.data(), idsShape, 2);
  EXPECT_EQ(both, (std::vector<uint8_t>{1, 1, 1, 1, 1, 1}));
  dpc_compare(DPC_COMPARE_AND, DPC_DTYPE_BOOL, eq.data(), idsShape, lt.data(),
              idsShape, both.data(), idsShape, 2);
  EXPECT_EQ(both, (std::vector<uint8_t>{0, 0, 0, 0, 0, 0}));
  std::vector<uint8_t> negated(6);
  dpc_not(eq.data(), negated.data(), 6);
  EXPECT_EQ(negated, (std::vector<uint8_t>{1, 0, 1, 0, 0, 1}));
  // Casts: float to bool is != 0, bool to float 0/1, float to int truncates.
  std::vector<float> f = {0.0f, -0.5f, 2.75f, -3.5f};
  std::vector<uint8_t> b(4);
  dpc_cast(DPC_DTYPE_F32, DPC_DTYPE_BOOL, f.data(), b.data(), 4);
  EXPECT_EQ(b, (std::vector<uint8_t>{0, 1, 1, 1}));
  std::vector<float> back(4);
  dpc_cast(DPC_DTYPE_BOOL, DPC_DTYPE_F32, b.data(), back.data(), 4);
  EXPECT_EQ(back, (std::vector<float>{0, 1, 1, 1}));
  std::vector<int64_t> i(4);
  dpc_cast(DPC_DTYPE_F32, DPC_DTYPE_I64, f.data(), i.data(), 4);
  EXPECT_EQ(i, (std::vector<int64_t>{0, 0, 2, -3}));
}

TEST(Masks, WhereAndItsGradientsMatchLoops) {
  // masked_fill: a [T, T] causal mask and a scalar -inf over [B, T, T].
  int64_t b = 2, t = 3;
  Vec scores = randomVec(size_t(b * t * t), 41, -1, 1);
  std::vector<uint8_t> causal(size_t(t * t));
  for (int64_t i = 0; i < t; ++i)
    for (int64_t j = 0; j < t; ++j)
      causal[size_t(i * t + j)] = j > i;
  float negInf = -std::numeric_limits<float>::infinity();
  int64_t cShape[] = {1, 3, 3}, aShape[] = {1, 1, 1}, yShape[] = {2, 3, 3};
  Vec y(scores.size());
  dpc_where(causal.data(), cShape, &negInf, aShape, scores.data(), yShape,
            y.data(), yShape, 3);
  Vec dy = randomVec(scores.size(), 42, -1, 1), dTrue(dy.size()),
      dFalse(dy.size());
  dpc_where_grad(causal.data(), cShape, dy.data(), dTrue.data(), yShape, 3, 1);
  dpc_where_grad(causal.data(), cShape, dy.data(), dFalse.data(), yShape, 3, 0);
  for (int64_t e = 0; e < b * t * t; ++e) {
    bool masked = causal[size_t(e % (t * t))];
    EXPECT_EQ(y[size_t(e)], masked ? negInf : scores[size_t(e)]);
    EXPECT_EQ(dTrue[size_t(e)], masked ? dy[size_t(e)] : 0.0f);
    EXPECT_EQ(dFalse[size_t(e)], masked ? 0.0f : dy[size_t(e)]);
  }
}

TEST(Masks, RefuseShapesThatDoNotBroadcast) {
  uint8_t c[2] = {1, 0};
  float a[3] = {}, y[3];
  int64_t cShape[] = {2}, yShape[] = {3};
  EXPECT_DEATH(dpc_where(c, cShape, a, yShape, a, yShape, y, yShape, 1),
               "dpc_where: \\[2\\] does not broadcast to \\[3\\]");
}

// The rank main takes its memory from the kernel library it is linked with:
// the CPU kernels work on host pointers.
#ifdef DPC_TEST_OPENMP
// The kernels' loops over independent outputs run on OpenMP threads once a
// tensor is large (kParallelWork elements); every output is still computed
// by one thread in the serial order, so a thread count changes no bit.
// Inputs of [8, 64, 32, 32] (half a million elements) take the threaded
// paths; the small cases above check the values.
TEST(Threads, ResultsDoNotDependOnTheThreadCount) {
  const int64_t n = 8, c = 64, h = 32, w = 32, count = n * c * h * w;
  const int64_t shape[4] = {n, c, h, w}, pooled[4] = {n, c, 16, 16};
  const int64_t channel[4] = {1, c, 1, 1}, perm[4] = {0, 2, 3, 1};
  const int64_t permuted[4] = {n, h, w, c};
  const int64_t box[4] = {n, c / 2, h, w - 1}, offsets[4] = {0, 3, 0, 1};
  const int64_t steps[4] = {1, 1, 1, 1};
  const int64_t pool[9] = {3, 3, 2, 2, 1, 1, 1, 1, 1};
  Vec x = randomVec(size_t(count), 1), dy = randomVec(size_t(count), 2);
  Vec bias = randomVec(size_t(c), 3), scale = randomVec(size_t(c), 4, 0.5f, 2);
  Vec pooledDy = randomVec(size_t(n * c * 16 * 16), 5);

  // Every kernel's outputs, concatenated, at the current thread count.
  auto runAll = [&]() {
    std::vector<Vec> out;
    auto add = [&](size_t size, const std::function<void(float *)> &f) {
      out.emplace_back(size);
      f(out.back().data());
    };
    size_t all = size_t(count), planes = size_t(n * c * 16 * 16);
    add(all, [&](float *y) { dpc_relu(x.data(), y, count); });
    add(all, [&](float *y) { dpc_relu_grad(dy.data(), x.data(), y, count); });
    add(all,
        [&](float *y) { dpc_unary(DPC_UNARY_TANH, 0, 0, x.data(), y, count); });
    add(all, [&](float *y) { dpc_clip(x.data(), y, count, -0.5f, 0.5f); });
    add(all, [&](float *y) { dpc_dropout(x.data(), y, count, 0.3f, 77); });
    add(all, [&](float *y) {
      dpc_binary(DPC_BINARY_ADD, x.data(), shape, bias.data(), channel, y,
                 shape, 4);
    });
    add(all, [&](float *y) { dpc_transpose(x.data(), shape, y, perm, 4); });
    add(size_t(n * h * w * c),
        [&](float *y) { dpc_transpose(x.data(), permuted, y, perm, 4); });
    add(size_t(n * (c / 2) * h * (w - 1)), [&](float *y) {
      dpc_slice(x.data(), shape, y, box, 4, offsets, steps);
    });
    add(all, [&](float *y) {
      dpc_insert(x.data(), box, y, shape, 4, offsets, steps, 1, 0.0f);
    });
    add(all, [&](float *y) { dpc_softmax(x.data(), y, n * c, h, w, 0); });
    add(all, [&](float *y) {
      dpc_softmax_grad(dy.data(), x.data(), y, n * c, h, w, 1);
    });
    add(planes,
        [&](float *y) { dpc_max_pool2d(x.data(), shape, y, pooled, pool); });
    add(all, [&](float *y) {
      dpc_max_pool2d_grad(pooledDy.data(), pooled, x.data(), shape, y, pool);
    });
    add(planes,
        [&](float *y) { dpc_avg_pool2d(x.data(), shape, y, pooled, pool); });
    add(all, [&](float *y) {
      dpc_avg_pool2d_grad(pooledDy.data(), pooled, y, shape, pool);
    });
    add(size_t(n * c),
        [&](float *y) { dpc_global_avg_pool(x.data(), n * c, h * w, y); });
    add(all,
        [&](float *y) { dpc_global_avg_pool_grad(x.data(), n * c, h * w, y); });
    add(size_t(c),
        [&](float *y) { dpc_conv2d_grad_bias(dy.data(), shape, y); });
    Vec stats(size_t(2 * c)), runMean(size_t(c), 0.0f), runVar(size_t(c), 1.0f);
    dpc_batch_norm_stats(x.data(), n, c, h * w, runMean.data(), runVar.data(),
                         0.9f, 1, stats.data());
    out.push_back(stats);
    out.push_back(runMean);
    out.push_back(runVar);
    add(all, [&](float *y) {
      dpc_batch_norm(x.data(), stats.data(), scale.data(), bias.data(), n, c,
                     h * w, 1e-5f, y);
    });
    add(all, [&](float *y) {
      dpc_batch_norm_grad_input(dy.data(), x.data(), stats.data(), scale.data(),
                                n, c, h * w, 1e-5f, y);
    });
    add(size_t(c), [&](float *y) {
      dpc_batch_norm_grad_scale(dy.data(), x.data(), stats.data(), n, c, h * w,
                                1e-5f, y);
    });
    return out;
  };

  int before = omp_get_max_threads();
  omp_set_num_threads(1);
  std::vector<Vec> serial = runAll();
  omp_set_num_threads(4);
  std::vector<Vec> threaded = runAll();
  omp_set_num_threads(before);
  ASSERT_EQ(serial.size(), threaded.size());
  for (size_t k = 0; k < serial.size(); ++k) {
    ASSERT_EQ(serial[k].size(), threaded[k].size());
    EXPECT_EQ(std::memcmp(serial[k].data(), threaded[k].data(),
                          serial[k].size() * sizeof(float)),
              0)
        << "output " << k << " differs with 4 threads";
  }
}
#endif

TEST(TargetDevice, IsTheHost) {
  std::unique_ptr<dpc::runtime::Device> d = dpc::runtime::createTargetDevice();
  EXPECT_TRUE(d->hostAccessible());
  EXPECT_EQ(d->description(), "host");
}

} // namespace
