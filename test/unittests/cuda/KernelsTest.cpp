//===- KernelsTest.cpp - CUDA kernels against CPU references --------------===//
//
// Each kernel of Abi.h runs on random data on the device and is compared
// with a plain loop reference written here (accumulating in double), not
// with the CPU backend: the two backends must each be right on their own.
// TF32 is off in the library, so FP32 results agree to about 1e-5 relative;
// the tolerance is 1e-4 of the reference's RMS plus the value itself.
//
// Without a device every test skips and says why.
//
//===----------------------------------------------------------------------===//

#include "backends/common/Random.h"
#include "dpc/runtime/CudaKernels.h"
#include "dpc/runtime/UnaryFunctions.h"
#include "test/unittests/UnaryReferences.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <ostream>
#include <random>
#include <string>
#include <vector>

namespace {

/// Parameterized tests are named, and printed, by their config's `name`.
auto byName = [](const auto &info) { return std::string(info.param.name); };

using Shape = std::vector<int64_t>;

int64_t countOf(const Shape &s) {
  int64_t n = 1;
  for (int64_t d : s)
    n *= d;
  return n;
}

std::string deviceMissing() {
  int count = 0;
  cudaError_t code = cudaGetDeviceCount(&count);
  if (code != cudaSuccess)
    return std::string("no CUDA device (") + cudaGetErrorString(code) + ")";
  if (count == 0)
    return "no CUDA device";
  return "";
}

class Cuda : public ::testing::Test {
protected:
  void SetUp() override {
    std::string why = deviceMissing();
    if (!why.empty())
      GTEST_SKIP() << why;
  }
  void TearDown() override {
    if (deviceMissing().empty())
      dpc_cuda_synchronize();
  }
};

/// A device copy of host data, read back with host().
template <typename T> class Device {
public:
  explicit Device(const std::vector<T> &data) : count(data.size()) {
    EXPECT_EQ(cudaMalloc(reinterpret_cast<void **>(&ptr), bytes()),
              cudaSuccess);
    EXPECT_EQ(cudaMemcpy(ptr, data.data(), bytes(), cudaMemcpyHostToDevice),
              cudaSuccess);
  }
  explicit Device(size_t n) : Device(std::vector<T>(n, T(-7))) {}
  ~Device() { cudaFree(ptr); }
  Device(const Device &) = delete;
  Device &operator=(const Device &) = delete;
  T *get() const { return ptr; }
  std::vector<T> host() const {
    std::vector<T> out(count);
    EXPECT_EQ(cudaStreamSynchronize(dpc_cuda_stream()), cudaSuccess);
    EXPECT_EQ(cudaMemcpy(out.data(), ptr, bytes(), cudaMemcpyDeviceToHost),
              cudaSuccess);
    return out;
  }

private:
  size_t bytes() const { return std::max<size_t>(1, count) * sizeof(T); }
  T *ptr = nullptr;
  size_t count;
};

std::vector<float> randomFloats(size_t n, unsigned seed, float lo = -1.0f,
                                float hi = 1.0f) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (float &x : v)
    x = dist(gen);
  return v;
}

/// Small integers, so that pooling windows contain ties.
std::vector<float> randomSmallInts(size_t n, unsigned seed) {
  std::mt19937 gen(seed);
  std::uniform_int_distribution<int> dist(-3, 3);
  std::vector<float> v(n);
  for (float &x : v)
    x = float(dist(gen));
  return v;
}

void expectNear(const std::vector<float> &got, const std::vector<double> &want,
                double rtol = 1e-4) {
  ASSERT_EQ(got.size(), want.size());
  double rms = 0;
  for (double w : want)
    rms += w * w;
  rms = std::sqrt(rms / double(std::max<size_t>(1, want.size())));
  size_t bad = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    double tol = rtol * (std::abs(want[i]) + rms) + 1e-7;
    if (!(std::abs(double(got[i]) - want[i]) <= tol)) {
      if (++bad <= 5)
        ADD_FAILURE() << "element " << i << ": got " << got[i] << ", want "
                      << want[i];
    }
  }
  EXPECT_EQ(bad, 0u) << "of " << got.size() << " elements";
}

//===----------------------------------------------------------------------===//
// References
//===----------------------------------------------------------------------===//

struct ConvConfig {
  const char *name;
  Shape x, w;
  int64_t params[9]; // stride h/w, pad t/l/b/r, dilation h/w, groups
  Shape y() const {
    const int64_t *p = params;
    int64_t kh = (w[2] - 1) * p[6] + 1, kw = (w[3] - 1) * p[7] + 1;
    return {x[0], w[0], (x[2] + p[2] + p[4] - kh) / p[0] + 1,
            (x[3] + p[3] + p[5] - kw) / p[1] + 1};
  }
};
void PrintTo(const ConvConfig &c, std::ostream *os) { *os << c.name; }

/// Calls f(n, o, oh, ow, c, i, j, xIndex, wIndex) for every product term
/// of the convolution that lands inside the input.
template <typename F> void forEachTerm(const ConvConfig &cfg, F f) {
  const int64_t *p = cfg.params;
  Shape y = cfg.y();
  int64_t groups = p[8], cPerGroup = cfg.w[1], oPerGroup = cfg.w[0] / groups;
  for (int64_t n = 0; n < y[0]; ++n)
    for (int64_t o = 0; o < y[1]; ++o) {
      int64_t g = o / oPerGroup;
      for (int64_t oh = 0; oh < y[2]; ++oh)
        for (int64_t ow = 0; ow < y[3]; ++ow)
          for (int64_t ci = 0; ci < cPerGroup; ++ci)
            for (int64_t i = 0; i < cfg.w[2]; ++i)
              for (int64_t j = 0; j < cfg.w[3]; ++j) {
                int64_t ih = oh * p[0] - p[2] + i * p[6];
                int64_t iw = ow * p[1] - p[3] + j * p[7];
                if (ih < 0 || ih >= cfg.x[2] || iw < 0 || iw >= cfg.x[3])
                  continue;
                int64_t c = g * cPerGroup + ci;
                int64_t xi =
                    ((n * cfg.x[1] + c) * cfg.x[2] + ih) * cfg.x[3] + iw;
                int64_t wi =
                    ((o * cPerGroup + ci) * cfg.w[2] + i) * cfg.w[3] + j;
                int64_t yi = ((n * y[1] + o) * y[2] + oh) * y[3] + ow;
                f(yi, xi, wi);
              }
    }
}

//===----------------------------------------------------------------------===//
// Convolution
//===----------------------------------------------------------------------===//

class Conv : public Cuda, public ::testing::WithParamInterface<ConvConfig> {};

TEST_P(Conv, ForwardWithBias) {
  ConvConfig cfg = GetParam();
  Shape ys = cfg.y();
  auto x = randomFloats(size_t(countOf(cfg.x)), 1);
  auto w = randomFloats(size_t(countOf(cfg.w)), 2);
  auto b = randomFloats(size_t(cfg.w[0]), 3);
  std::vector<double> want(size_t(countOf(ys)));
  for (int64_t i = 0; i < countOf(ys); ++i)
    want[size_t(i)] = b[size_t((i / (ys[2] * ys[3])) % ys[1])];
  forEachTerm(cfg, [&](int64_t yi, int64_t xi, int64_t wi) {
    want[size_t(yi)] += double(x[size_t(xi)]) * w[size_t(wi)];
  });
  Device<float> dx(x), dw(w), db(b), dy(want.size());
  dpc_conv2d(dx.get(), cfg.x.data(), dw.get(), cfg.w.data(), db.get(), dy.get(),
             ys.data(), cfg.params);
  expectNear(dy.host(), want);
  // Without bias.
  Device<float> dy2(want.size());
  dpc_conv2d(dx.get(), cfg.x.data(), dw.get(), cfg.w.data(), nullptr, dy2.get(),
             ys.data(), cfg.params);
  std::vector<float> got = dy2.host(), withBias = dy.host();
  for (size_t i = 0; i < got.size(); ++i)
    got[i] += b[(i / size_t(ys[2] * ys[3])) % size_t(ys[1])];
  std::vector<double> withBiasD(withBias.begin(), withBias.end());
  expectNear(got, withBiasD);
}

TEST_P(Conv, GradInput) {
  ConvConfig cfg = GetParam();
  Shape ys = cfg.y();
  auto g = randomFloats(size_t(countOf(ys)), 4);
  auto w = randomFloats(size_t(countOf(cfg.w)), 5);
  std::vector<double> want(size_t(countOf(cfg.x)), 0.0);
  forEachTerm(cfg, [&](int64_t yi, int64_t xi, int64_t wi) {
    want[size_t(xi)] += double(g[size_t(yi)]) * w[size_t(wi)];
  });
  Device<float> dg(g), dw(w), dx(want.size());
  dpc_conv2d_grad_input(dg.get(), ys.data(), dw.get(), cfg.w.data(), dx.get(),
                        cfg.x.data(), cfg.params);
  expectNear(dx.host(), want);
}

TEST_P(Conv, GradFilterAndBias) {
  ConvConfig cfg = GetParam();
  Shape ys = cfg.y();
  auto g = randomFloats(size_t(countOf(ys)), 6);
  auto x = randomFloats(size_t(countOf(cfg.x)), 7);
  std::vector<double> want(size_t(countOf(cfg.w)), 0.0);
  forEachTerm(cfg, [&](int64_t yi, int64_t xi, int64_t wi) {
    want[size_t(wi)] += double(g[size_t(yi)]) * x[size_t(xi)];
  });
  Device<float> dg(g), dx(x), dw(want.size());
  dpc_conv2d_grad_filter(dg.get(), ys.data(), dx.get(), cfg.x.data(), dw.get(),
                         cfg.w.data(), cfg.params);
  expectNear(dw.host(), want);

  std::vector<double> bias(size_t(ys[1]), 0.0);
  for (int64_t i = 0; i < countOf(ys); ++i)
    bias[size_t((i / (ys[2] * ys[3])) % ys[1])] += g[size_t(i)];
  Device<float> db(bias.size());
  dpc_conv2d_grad_bias(dg.get(), ys.data(), db.get());
  expectNear(db.host(), bias);
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, Conv,
    ::testing::Values(
        // LeNet-5's first and second layers.
        ConvConfig{"LeNetConv1",
                   {4, 1, 28, 28},
                   {6, 1, 5, 5},
                   {1, 1, 2, 2, 2, 2, 1, 1, 1}},
        ConvConfig{"LeNetConv2",
                   {4, 6, 14, 14},
                   {16, 6, 5, 5},
                   {1, 1, 0, 0, 0, 0, 1, 1, 1}},
        // Stride, dilation, groups.
        ConvConfig{"Stride2",
                   {2, 4, 11, 9},
                   {8, 4, 3, 3},
                   {2, 2, 1, 1, 1, 1, 1, 1, 1}},
        ConvConfig{"Dilation2",
                   {2, 3, 12, 12},
                   {5, 3, 3, 3},
                   {1, 1, 2, 2, 2, 2, 2, 2, 1}},
        ConvConfig{
            "Groups2", {2, 8, 7, 7}, {6, 4, 3, 3}, {1, 1, 1, 1, 1, 1, 1, 1, 2}},
        // Asymmetric padding (SAME_UPPER with an even kernel).
        ConvConfig{"AsymmetricPad",
                   {2, 3, 8, 8},
                   {4, 3, 2, 2},
                   {1, 1, 0, 0, 1, 1, 1, 1, 1}},
        ConvConfig{"AsymmetricPadStride",
                   {1, 2, 9, 7},
                   {3, 2, 4, 3},
                   {2, 1, 1, 0, 2, 1, 1, 1, 1}}),
    byName);

//===----------------------------------------------------------------------===//
// Matmul
//===----------------------------------------------------------------------===//

struct MatmulConfig {
  const char *name;
  int64_t batch, m, n, k;
  bool ta, tb;
  bool sharedA, sharedB; // stride 0
  bool accumulate;
};
void PrintTo(const MatmulConfig &c, std::ostream *os) { *os << c.name; }

class Matmul : public Cuda,
               public ::testing::WithParamInterface<MatmulConfig> {};

TEST_P(Matmul, MatchesReference) {
  MatmulConfig c = GetParam();
  int64_t aStride = c.sharedA ? 0 : c.m * c.k;
  int64_t bStride = c.sharedB ? 0 : c.k * c.n;
  auto a = randomFloats(size_t(c.sharedA ? c.m * c.k : c.batch * c.m * c.k), 8);
  auto b = randomFloats(size_t(c.sharedB ? c.k * c.n : c.batch * c.k * c.n), 9);
  int64_t outputs = c.accumulate ? 1 : c.batch;
  std::vector<double> want(size_t(outputs * c.m * c.n), 0.0);
  for (int64_t bi = 0; bi < c.batch; ++bi)
    for (int64_t i = 0; i < c.m; ++i)
      for (int64_t j = 0; j < c.n; ++j) {
        double sum = 0;
        for (int64_t l = 0; l < c.k; ++l) {
          float av =
              a[size_t(bi * aStride + (c.ta ? l * c.m + i : i * c.k + l))];
          float bv =
              b[size_t(bi * bStride + (c.tb ? j * c.k + l : l * c.n + j))];
          sum += double(av) * bv;
        }
        want[size_t((c.accumulate ? 0 : bi) * c.m * c.n + i * c.n + j)] += sum;
      }
  Device<float> da(a), db(b), dy(want.size());
  dpc_matmul(da.get(), db.get(), dy.get(), c.batch, c.m, c.n, c.k, c.ta, c.tb,
             aStride, bStride, c.accumulate);
  expectNear(dy.host(), want);
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, Matmul,
    ::testing::Values(
        MatmulConfig{"Plain", 1, 17, 13, 29, false, false, false, false, false},
        MatmulConfig{"TransposeA", 1, 17, 13, 29, true, false, false, false,
                     false},
        MatmulConfig{"TransposeB", 1, 17, 13, 29, false, true, false, false,
                     false},
        MatmulConfig{"TransposeBoth", 1, 17, 13, 29, true, true, false, false,
                     false},
        MatmulConfig{"Batched", 5, 8, 12, 7, false, false, false, false, false},
        // A linear layer over a batched input: the weight is shared.
        MatmulConfig{"SharedB", 5, 8, 12, 7, false, true, false, true, false},
        MatmulConfig{"SharedA", 5, 8, 12, 7, false, false, true, false, false},
        // Accumulating strategies: fold into K, scale, chain, batch + sum.
        MatmulConfig{"AccumulateFoldK", 6, 7, 12, 8, true, false, false, false,
                     true},
        MatmulConfig{"AccumulateScale", 6, 7, 12, 8, false, false, true, true,
                     true},
        MatmulConfig{"AccumulateChain", 3, 7, 12, 8, false, true, false, false,
                     true},
        MatmulConfig{"AccumulateBatchedSum", 9, 7, 12, 8, false, true, false,
                     false, true},
        MatmulConfig{"AccumulateSharedA", 9, 7, 12, 8, false, false, true,
                     false, true}),
    byName);

//===----------------------------------------------------------------------===//
// Broadcasting binary functions and sum_to_shape
//===----------------------------------------------------------------------===//

/// The element of `narrow` (same rank, each dimension 1 or `full`'s) that
/// element `index` of `full` reads under numpy broadcasting.
int64_t broadcastOffset(int64_t index, const Shape &full, const Shape &narrow) {
  int64_t offset = 0, stride = 1;
  for (size_t d = full.size(); d-- > 0;) {
    int64_t coordinate = index % full[d];
    index /= full[d];
    offset += (narrow[d] == 1 ? 0 : coordinate) * stride;
    stride *= narrow[d];
  }
  return offset;
}

struct BroadcastConfig {
  const char *name;
  Shape a, b;
};
void PrintTo(const BroadcastConfig &c, std::ostream *os) { *os << c.name; }

class Binary : public Cuda,
               public ::testing::WithParamInterface<BroadcastConfig> {};

TEST_P(Binary, MatchesReference) {
  BroadcastConfig c = GetParam();
  size_t rank = c.a.size();
  Shape y(rank);
  for (size_t d = 0; d < rank; ++d)
    y[d] = std::max(c.a[d], c.b[d]);
  auto a = randomFloats(size_t(countOf(c.a)), 10);
  auto b = randomFloats(size_t(countOf(c.b)), 11);
  for (float &v : b) // divisors away from zero
    v = v < 0 ? v - 0.5f : v + 0.5f;
  std::vector<int64_t> aIndex(size_t(countOf(y))), bIndex(aIndex.size());
  for (int64_t i = 0; i < countOf(y); ++i) {
    aIndex[size_t(i)] = broadcastOffset(i, y, c.a);
    bIndex[size_t(i)] = broadcastOffset(i, y, c.b);
  }
  Device<float> da(a), db(b), dy(aIndex.size());
  for (int64_t fn :
       {DPC_BINARY_ADD, DPC_BINARY_SUB, DPC_BINARY_MUL, DPC_BINARY_DIV}) {
    std::vector<double> want(aIndex.size());
    for (size_t i = 0; i < want.size(); ++i) {
      double u = a[size_t(aIndex[i])], v = b[size_t(bIndex[i])];
      want[i] = fn == DPC_BINARY_ADD   ? u + v
                : fn == DPC_BINARY_SUB ? u - v
                : fn == DPC_BINARY_MUL ? u * v
                                       : u / v;
    }
    dpc_binary(fn, da.get(), c.a.data(), db.get(), c.b.data(), dy.get(),
               y.data(), int64_t(rank));
    SCOPED_TRACE("function " + std::to_string(fn));
    expectNear(dy.host(), want, 1e-6);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, Binary,
    ::testing::Values(BroadcastConfig{"SameShape", {3, 4, 5}, {3, 4, 5}},
                      BroadcastConfig{"BiasRows", {64, 10}, {1, 10}},
                      BroadcastConfig{"BiasRowsLeft", {1, 10}, {64, 10}},
                      BroadcastConfig{"BothSides", {2, 1, 3}, {1, 4, 1}},
                      BroadcastConfig{"ScalarLeft", {1, 1}, {7, 9}},
                      BroadcastConfig{
                          "Rank6", {2, 3, 1, 5, 1, 2}, {1, 3, 4, 1, 6, 2}}),
    byName);

struct ReduceConfig {
  const char *name;
  Shape x, y;
};
void PrintTo(const ReduceConfig &c, std::ostream *os) { *os << c.name; }

class SumToShape : public Cuda,
                   public ::testing::WithParamInterface<ReduceConfig> {};

TEST_P(SumToShape, MatchesReference) {
  ReduceConfig c = GetParam();
  size_t rank = c.x.size();
  auto x = randomFloats(size_t(countOf(c.x)), 12);
  std::vector<double> want(size_t(countOf(c.y)), 0.0);
  for (int64_t i = 0; i < countOf(c.x); ++i)
    want[size_t(broadcastOffset(i, c.x, c.y))] += 0.5 * x[size_t(i)];
  Device<float> dx(x), dy(want.size());
  dpc_sum_to_shape(dx.get(), c.x.data(), dy.get(), c.y.data(), int64_t(rank),
                   0.5f);
  expectNear(dy.host(), want);
}

// The other way: y (narrow) stretched to x (wide), scaled.
TEST_P(SumToShape, BroadcastMatchesReference) {
  ReduceConfig c = GetParam();
  size_t rank = c.x.size();
  auto u = randomFloats(size_t(countOf(c.y)), 13);
  std::vector<double> want(size_t(countOf(c.x)));
  for (int64_t i = 0; i < countOf(c.x); ++i)
    want[size_t(i)] = 0.5 * u[size_t(broadcastOffset(i, c.x, c.y))];
  Device<float> du(u), dw(want.size());
  dpc_broadcast_to(du.get(), c.y.data(), dw.get(), c.x.data(), int64_t(rank),
                   0.5f);
  expectNear(dw.host(), want, 1e-6);
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, SumToShape,
    ::testing::Values(ReduceConfig{"BiasOverBatch", {64, 10}, {1, 10}},
                      ReduceConfig{"KeepOuter", {2, 3, 4}, {2, 1, 1}},
                      ReduceConfig{"Alternating", {2, 3, 4, 5}, {1, 3, 1, 5}},
                      ReduceConfig{"LongColumn", {3000, 3}, {1, 3}},
                      ReduceConfig{"Identity", {3, 4}, {3, 4}},
                      ReduceConfig{"All", {5, 7}, {1, 1}}),
    byName);

//===----------------------------------------------------------------------===//
// Transpose and softmax
//===----------------------------------------------------------------------===//

struct TransposeConfig {
  const char *name;
  Shape x, perm;
};
void PrintTo(const TransposeConfig &c, std::ostream *os) { *os << c.name; }

class Transpose : public Cuda,
                  public ::testing::WithParamInterface<TransposeConfig> {};

TEST_P(Transpose, MatchesReference) {
  TransposeConfig c = GetParam();
  size_t rank = c.x.size();
  Shape y(rank), strides(rank, 1);
  for (size_t d = rank - 1; d-- > 0;)
    strides[d] = strides[d + 1] * c.x[d + 1];
  for (size_t d = 0; d < rank; ++d)
    y[d] = c.x[size_t(c.perm[d])];
  auto x = randomFloats(size_t(countOf(c.x)), 14);
  std::vector<double> want(x.size());
  for (int64_t i = 0; i < countOf(y); ++i) {
    int64_t rest = i, offset = 0;
    for (size_t d = rank; d-- > 0;) {
      offset += (rest % y[d]) * strides[size_t(c.perm[d])];
      rest /= y[d];
    }
    want[size_t(i)] = x[size_t(offset)];
  }
  Device<float> dx(x), dy(want.size());
  dpc_transpose(dx.get(), c.x.data(), dy.get(), c.perm.data(), int64_t(rank));
  expectNear(dy.host(), want, 0.0);
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, Transpose,
    ::testing::Values(TransposeConfig{"LastTwo", {8, 28, 16}, {0, 2, 1}},
                      TransposeConfig{"Heads", {2, 5, 3, 4}, {0, 2, 1, 3}},
                      TransposeConfig{"Reverse", {2, 3, 4, 5}, {3, 2, 1, 0}},
                      TransposeConfig{"Matrix", {33, 65}, {1, 0}},
                      TransposeConfig{"UnitDims", {1, 3, 1, 2}, {2, 3, 0, 1}}),
    byName);

struct SoftmaxConfig {
  const char *name;
  int64_t outer, n, inner;
};
void PrintTo(const SoftmaxConfig &c, std::ostream *os) { *os << c.name; }

class Softmax : public Cuda,
                public ::testing::WithParamInterface<SoftmaxConfig> {};

// Forward and gradient of softmax and log_softmax against double loops.
TEST_P(Softmax, MatchesReference) {
  SoftmaxConfig c = GetParam();
  size_t size = size_t(c.outer * c.n * c.inner);
  auto x = randomFloats(size, 15, -4.0f, 4.0f);
  auto dy = randomFloats(size, 16);
  for (int64_t log : {0, 1}) {
    SCOPED_TRACE(log ? "log_softmax" : "softmax");
    std::vector<double> y(size), dx(size);
    for (int64_t o = 0; o < c.outer; ++o)
      for (int64_t i = 0; i < c.inner; ++i) {
        auto at = [&](int64_t j) {
          return size_t((o * c.n + j) * c.inner + i);
        };
        double max = -INFINITY, sum = 0, dot = 0;
        for (int64_t j = 0; j < c.n; ++j)
          max = std::max(max, double(x[at(j)]));
        for (int64_t j = 0; j < c.n; ++j)
          sum += std::exp(x[at(j)] - max);
        for (int64_t j = 0; j < c.n; ++j) {
          double p = std::exp(x[at(j)] - max) / sum;
          y[at(j)] = log ? std::log(p) : p;
          dot += log ? dy[at(j)] : dy[at(j)] * p;
        }
        for (int64_t j = 0; j < c.n; ++j) {
          double p = std::exp(x[at(j)] - max) / sum;
          dx[at(j)] = log ? dy[at(j)] - p * dot : p * (dy[at(j)] - dot);
        }
      }
    Device<float> dX(x), dY(size), dDy(dy), dDx(size);
    dpc_softmax(dX.get(), dY.get(), c.outer, c.n, c.inner, log);
    expectNear(dY.host(), y);
    dpc_softmax_grad(dDy.get(), dY.get(), dDx.get(), c.outer, c.n, c.inner,
                     log);
    expectNear(dDx.host(), dx);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, Softmax,
    ::testing::Values(SoftmaxConfig{"Attention", 8 * 28, 28, 1},
                      SoftmaxConfig{"WideRows", 3, 1000, 1},
                      SoftmaxConfig{"Strided", 4, 9, 5},
                      SoftmaxConfig{"Single", 2, 1, 3}),
    byName);

//===----------------------------------------------------------------------===//
// Elementwise, pooling, loss, copy, optimizer
//===----------------------------------------------------------------------===//

// Every function of UnaryFunctions.def and its gradient against its double
// reference (UnaryReferences.h: f and f'); a row without one fails. The
// inputs miss the kinks (abs at 0, hardswish at +-3) with probability one;
// the CPU suite checks PyTorch's one-sided values there.
TEST_F(Cuda, UnaryFunctionsAndGrads) {
  auto g = randomFloats(4099, 32);
  dpc::testing::forEachUnaryFunction([&](const auto &fn, const auto *ref) {
    std::vector<float> in = randomFloats(4099, 31, ref->lo, ref->hi);
    in[0] = ref->lo; // the domain's end: sigmoid's and softplus' tails
    std::vector<double> y(in.size()), dx(in.size());
    std::vector<float> yf(in.size());
    for (size_t i = 0; i < in.size(); ++i) {
      y[i] = ref->f(in[i]);
      yf[i] = float(y[i]);
      if (ref->df)
        dx[i] = g[i] * ref->df(in[i]);
    }
    Device<float> dX(in), dY(in.size());
    dpc_unary(fn.code, ref->a, ref->b, dX.get(), dY.get(), int64_t(in.size()));
    expectNear(dY.host(), y, 1e-5);
    if (fn.saved == dpc::runtime::UnarySaved::None)
      return;
    bool fromInput = fn.saved == dpc::runtime::UnarySaved::Input;
    Device<float> dG(g), dSaved(fromInput ? in : yf), dDx(in.size());
    dpc_unary_grad(fn.code, ref->a, ref->b, dG.get(), dSaved.get(), dDx.get(),
                   int64_t(in.size()));
    expectNear(dDx.host(), dx, 1e-5);
  });
}

// A strided 3-d box out of and back into a tensor, and clip with its
// gradient, against host loops.
TEST_F(Cuda, BoxesAndClip) {
  const int64_t whole[3] = {3, 5, 4}, box[3] = {2, 2, 3};
  const int64_t offsets[3] = {1, 1, 0}, steps[3] = {1, 2, 1};
  auto x = randomFloats(60, 61);
  std::vector<double> sliced, back(60, 0.0);
  for (int64_t i = 0; i < 2; ++i)
    for (int64_t j = 0; j < 2; ++j)
      for (int64_t k = 0; k < 3; ++k) {
        size_t at = size_t((1 + i) * 20 + (1 + 2 * j) * 4 + k);
        sliced.push_back(x[at]);
        back[at] = x[at];
      }
  Device<float> dX(x), dBox(12), dBack(60);
  dpc_slice(dX.get(), whole, dBox.get(), box, 3, offsets, steps);
  expectNear(dBox.host(), sliced, 0);
  dpc_insert(dBox.get(), box, dBack.get(), whole, 3, offsets, steps, 1, 0.0f);
  expectNear(dBack.host(), back, 0);
  // The border of a constant pad.
  std::vector<double> padded(back);
  for (size_t i = 0; i < padded.size(); ++i)
    if (back[i] == 0.0)
      padded[i] = -2.5;
  dpc_insert(dBox.get(), box, dBack.get(), whole, 3, offsets, steps, 1, -2.5f);
  expectNear(dBack.host(), padded, 0);

  std::vector<double> clipped(x.size()), dx(x.size());
  auto g = randomFloats(60, 62);
  for (size_t i = 0; i < x.size(); ++i) {
    clipped[i] = std::min(std::max(double(x[i]), -0.25), 0.5);
    dx[i] = x[i] >= -0.25f && x[i] <= 0.5f ? g[i] : 0.0;
  }
  Device<float> dY(x.size()), dG(g), dDx(x.size());
  dpc_clip(dX.get(), dY.get(), int64_t(x.size()), -0.25f, 0.5f);
  dpc_clip_grad(dG.get(), dX.get(), dDx.get(), int64_t(x.size()), -0.25f, 0.5f);
  expectNear(dY.host(), clipped, 0);
  expectNear(dDx.host(), dx, 0);
}

// Dropout on the GPU drops exactly the elements the host's Philox says
// (the CPU kernel's mask), scales the rest, and is the identity under -1.
TEST_F(Cuda, DropoutMatchesTheHostMask) {
  const int64_t n = 100003;
  auto x = randomFloats(size_t(n), 73, 0.5f, 1.5f);
  std::vector<double> expected(x.size());
  const float p = 0.3f;
  for (int64_t i = 0; i < n; ++i)
    expected[size_t(i)] = dpc::random::dropoutKeeps(12345, uint64_t(i), p)
                              ? double(x[size_t(i)] * (1.0f / (1.0f - p)))
                              : 0.0;
  Device<float> dX(x), dY(x.size());
  dpc_dropout(dX.get(), dY.get(), n, p, 12345);
  expectNear(dY.host(), expected, 0);
  dpc_dropout(dX.get(), dY.get(), n, p, -1);
  expectNear(dY.host(), std::vector<double>(x.begin(), x.end()), 0);
}

TEST_F(Cuda, ReluAndGrad) {
  auto x = randomFloats(10007, 13);
  auto g = randomFloats(10007, 14);
  std::vector<double> y(x.size()), dx(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    y[i] = x[i] > 0 ? x[i] : 0.0;
    dx[i] = y[i] > 0 ? g[i] : 0.0;
  }
  Device<float> dX(x), dY(x.size()), dG(g), dDx(x.size());
  dpc_relu(dX.get(), dY.get(), int64_t(x.size()));
  dpc_relu_grad(dG.get(), dY.get(), dDx.get(), int64_t(x.size()));
  expectNear(dY.host(), y, 0);
  expectNear(dDx.host(), dx, 0);
}

struct PoolConfig {
  const char *name;
  Shape x;
  int64_t params[8]; // kernel h/w, stride h/w, pad t/l/b/r
  Shape y() const {
    const int64_t *p = params;
    return {x[0], x[1], (x[2] + p[4] + p[6] - p[0]) / p[2] + 1,
            (x[3] + p[5] + p[7] - p[1]) / p[3] + 1};
  }
};
void PrintTo(const PoolConfig &c, std::ostream *os) { *os << c.name; }

class MaxPool : public Cuda,
                public ::testing::WithParamInterface<PoolConfig> {};

TEST_P(MaxPool, ForwardAndGradWithTies) {
  PoolConfig c = GetParam();
  Shape ys = c.y();
  const int64_t *p = c.params;
  auto x = randomSmallInts(size_t(countOf(c.x)), 15);
  auto g = randomFloats(size_t(countOf(ys)), 16);
  std::vector<double> y(size_t(countOf(ys))), dx(x.size(), 0.0);
  for (int64_t plane = 0; plane < ys[0] * ys[1]; ++plane)
    for (int64_t oh = 0; oh < ys[2]; ++oh)
      for (int64_t ow = 0; ow < ys[3]; ++ow) {
        int64_t best = -1;
        float bestValue = -std::numeric_limits<float>::infinity();
        for (int64_t i = 0; i < p[0]; ++i)
          for (int64_t j = 0; j < p[1]; ++j) {
            int64_t ih = oh * p[2] - p[4] + i, iw = ow * p[3] - p[5] + j;
            if (ih < 0 || ih >= c.x[2] || iw < 0 || iw >= c.x[3])
              continue;
            int64_t xi = (plane * c.x[2] + ih) * c.x[3] + iw;
            if (best < 0 || x[size_t(xi)] > bestValue) { // first maximum
              best = xi;
              bestValue = x[size_t(xi)];
            }
          }
        int64_t yi = (plane * ys[2] + oh) * ys[3] + ow;
        y[size_t(yi)] = bestValue;
        dx[size_t(best)] += g[size_t(yi)];
      }
  Device<float> dX(x), dY(y.size()), dG(g), dDx(x.size());
  dpc_max_pool2d(dX.get(), c.x.data(), dY.get(), ys.data(), c.params);
  dpc_max_pool2d_grad(dG.get(), ys.data(), dX.get(), c.x.data(), dDx.get(),
                      c.params);
  expectNear(dY.host(), y, 0);
  expectNear(dDx.host(), dx);
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, MaxPool,
    ::testing::Values(
        PoolConfig{"LeNet2x2", {4, 6, 28, 28}, {2, 2, 2, 2, 0, 0, 0, 0}},
        PoolConfig{"Overlap3x3Pad1", {2, 3, 13, 11}, {3, 3, 2, 2, 1, 1, 1, 1}},
        PoolConfig{"Stride1", {2, 3, 9, 9}, {3, 3, 1, 1, 0, 0, 0, 0}},
        PoolConfig{"AsymmetricPad", {1, 2, 8, 7}, {2, 3, 2, 2, 0, 1, 1, 1}}),
    byName);

class AvgPool : public Cuda,
                public ::testing::WithParamInterface<PoolConfig> {};

TEST_P(AvgPool, ForwardAndGradBothDivisors) {
  PoolConfig c = GetParam();
  Shape ys = c.y();
  const int64_t *p = c.params;
  auto x = randomFloats(size_t(countOf(c.x)), 17);
  auto g = randomFloats(size_t(countOf(ys)), 18);
  for (int64_t include : {0, 1}) {
    std::vector<double> y(size_t(countOf(ys))), dx(x.size(), 0.0);
    for (int64_t plane = 0; plane < ys[0] * ys[1]; ++plane)
      for (int64_t oh = 0; oh < ys[2]; ++oh)
        for (int64_t ow = 0; ow < ys[3]; ++ow) {
          // PyTorch's divisor: the window within the padded input, or the
          // input elements it covers.
          int64_t padded = 0, inside = 0;
          double sum = 0;
          for (int64_t i = 0; i < p[0]; ++i)
            for (int64_t j = 0; j < p[1]; ++j) {
              int64_t ih = oh * p[2] - p[4] + i, iw = ow * p[3] - p[5] + j;
              if (ih >= c.x[2] + p[6] || iw >= c.x[3] + p[7])
                continue;
              ++padded;
              if (ih < 0 || ih >= c.x[2] || iw < 0 || iw >= c.x[3])
                continue;
              ++inside;
              sum += x[size_t((plane * c.x[2] + ih) * c.x[3] + iw)];
            }
          int64_t divisor = include ? padded : inside;
          int64_t yi = (plane * ys[2] + oh) * ys[3] + ow;
          y[size_t(yi)] = sum / double(divisor);
          for (int64_t i = 0; i < p[0]; ++i)
            for (int64_t j = 0; j < p[1]; ++j) {
              int64_t ih = oh * p[2] - p[4] + i, iw = ow * p[3] - p[5] + j;
              if (ih >= 0 && ih < c.x[2] && iw >= 0 && iw < c.x[3])
                dx[size_t((plane * c.x[2] + ih) * c.x[3] + iw)] +=
                    g[size_t(yi)] / double(divisor);
            }
        }
    int64_t params[9];
    std::copy(p, p + 8, params);
    params[8] = include;
    Device<float> dX(x), dY(y.size()), dG(g), dDx(x.size());
    dpc_avg_pool2d(dX.get(), c.x.data(), dY.get(), ys.data(), params);
    dpc_avg_pool2d_grad(dG.get(), ys.data(), dDx.get(), c.x.data(), params);
    expectNear(dY.host(), y);
    expectNear(dDx.host(), dx);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, AvgPool,
    ::testing::Values(
        PoolConfig{"Plain2x2", {4, 6, 28, 28}, {2, 2, 2, 2, 0, 0, 0, 0}},
        PoolConfig{"Overlap3x3Pad1", {2, 3, 13, 11}, {3, 3, 2, 2, 1, 1, 1, 1}},
        PoolConfig{"AsymmetricPad", {1, 2, 8, 7}, {2, 3, 2, 2, 0, 1, 1, 1}}),
    byName);

TEST_F(Cuda, GlobalAvgPoolAndGrad) {
  int64_t planes = 2 * 512, size = 49; // ResNet-18's last feature map
  auto x = randomFloats(size_t(planes * size), 19);
  auto g = randomFloats(size_t(planes), 20);
  std::vector<double> y(size_t(planes), 0.0), dx(x.size());
  for (int64_t p = 0; p < planes; ++p) {
    for (int64_t i = 0; i < size; ++i) {
      y[size_t(p)] += x[size_t(p * size + i)] / double(size);
      dx[size_t(p * size + i)] = g[size_t(p)] / double(size);
    }
  }
  Device<float> dX(x), dY(y.size()), dG(g), dDx(x.size());
  dpc_global_avg_pool(dX.get(), planes, size, dY.get());
  dpc_global_avg_pool_grad(dG.get(), planes, size, dDx.get());
  expectNear(dY.host(), y);
  expectNear(dDx.host(), dx);
}

TEST_F(Cuda, BatchNormTrainingAndEvaluation) {
  int64_t n = 8, c = 16, s = 7 * 7;
  float epsilon = 1e-5f, momentum = 0.9f;
  auto x = randomFloats(size_t(n * c * s), 21, -2.0f, 3.0f);
  auto dy = randomFloats(x.size(), 22);
  auto scale = randomFloats(size_t(c), 23, 0.5f, 1.5f);
  auto bias = randomFloats(size_t(c), 24);
  auto runMean = randomFloats(size_t(c), 25);
  auto runVar = randomFloats(size_t(c), 26, 0.5f, 2.0f);
  double m = double(n * s);
  size_t channels = static_cast<size_t>(c);
  std::vector<double> stats(2 * channels), newMean(channels), newVar(channels),
      y(x.size()), dx(x.size()), dscale(channels, 0.0), dbias(channels, 0.0);
  auto at = [&](int64_t i, int64_t k, int64_t j) {
    return size_t((i * c + k) * s + j);
  };
  for (int64_t k = 0; k < c; ++k) {
    double mean = 0, var = 0;
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < s; ++j)
        mean += x[at(i, k, j)] / m;
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < s; ++j)
        var += std::pow(x[at(i, k, j)] - mean, 2) / m;
    stats[size_t(k)] = mean;
    stats[size_t(c + k)] = var;
    newMean[size_t(k)] = momentum * runMean[size_t(k)] + (1 - momentum) * mean;
    newVar[size_t(k)] =
        momentum * runVar[size_t(k)] + (1 - momentum) * var * m / (m - 1);
    double invStd = 1 / std::sqrt(var + epsilon);
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < s; ++j) {
        double xhat = (x[at(i, k, j)] - mean) * invStd;
        y[at(i, k, j)] = scale[size_t(k)] * xhat + bias[size_t(k)];
        dbias[size_t(k)] += dy[at(i, k, j)];
        dscale[size_t(k)] += dy[at(i, k, j)] * xhat;
      }
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < s; ++j) {
        double xhat = (x[at(i, k, j)] - mean) * invStd;
        dx[at(i, k, j)] = scale[size_t(k)] * invStd *
                          (dy[at(i, k, j)] - dbias[size_t(k)] / m -
                           xhat * dscale[size_t(k)] / m);
      }
  }
  Device<float> dX(x), dDy(dy), dScale(scale), dBias(bias), dRunMean(runMean),
      dRunVar(runVar), dStats(stats.size()), dY(x.size()), dDx(x.size()),
      dDscale(channels), dDbias(channels);
  dpc_batch_norm_stats(dX.get(), n, c, s, dRunMean.get(), dRunVar.get(),
                       momentum, 1, dStats.get());
  dpc_batch_norm(dX.get(), dStats.get(), dScale.get(), dBias.get(), n, c, s,
                 epsilon, dY.get());
  dpc_batch_norm_grad_input(dDy.get(), dX.get(), dStats.get(), dScale.get(), n,
                            c, s, epsilon, dDx.get());
  dpc_batch_norm_grad_scale(dDy.get(), dX.get(), dStats.get(), n, c, s, epsilon,
                            dDscale.get());
  Shape folded = {n, c, s, 1};
  dpc_conv2d_grad_bias(dDy.get(), folded.data(), dDbias.get());
  expectNear(dStats.host(), stats);
  expectNear(dRunMean.host(), newMean);
  expectNear(dRunVar.host(), newVar);
  expectNear(dY.host(), y);
  expectNear(dDx.host(), dx, 1e-3);
  expectNear(dDscale.host(), dscale);
  expectNear(dDbias.host(), dbias);

  // Evaluation: the running statistics, unchanged.
  dpc_batch_norm_stats(dX.get(), n, c, s, dRunMean.get(), dRunVar.get(),
                       momentum, 0, dStats.get());
  std::vector<double> running(newMean);
  running.insert(running.end(), newVar.begin(), newVar.end());
  expectNear(dStats.host(), running);
  expectNear(dRunMean.host(), newMean);
}

/// Layer normalization of rows x size in double (scale and bias empty when
/// absent), with the loss sum(w * y) the gradients below differentiate.
struct LayerNormReference {
  int64_t rows, size;
  double epsilon;
  std::vector<double> forward(const std::vector<double> &x,
                              const std::vector<double> &scale,
                              const std::vector<double> &bias) const {
    std::vector<double> y(x.size());
    for (int64_t r = 0; r < rows; ++r) {
      auto at = [&](int64_t j) { return size_t(r * size + j); };
      double mean = 0, var = 0;
      for (int64_t j = 0; j < size; ++j)
        mean += x[at(j)] / double(size);
      for (int64_t j = 0; j < size; ++j)
        var += std::pow(x[at(j)] - mean, 2) / double(size);
      for (int64_t j = 0; j < size; ++j) {
        double v = (x[at(j)] - mean) / std::sqrt(var + epsilon);
        y[at(j)] = (scale.empty() ? v : v * scale[size_t(j)]) +
                   (bias.empty() ? 0.0 : bias[size_t(j)]);
      }
    }
    return y;
  }
  /// The derivative of sum(w * forward) by v[i], central differences.
  double slope(const std::vector<float> &w, std::vector<double> &v, size_t i,
               const std::vector<double> &x, const std::vector<double> &scale,
               const std::vector<double> &bias) const {
    auto loss = [&] {
      std::vector<double> y = forward(x, scale, bias);
      double sum = 0;
      for (size_t k = 0; k < y.size(); ++k)
        sum += w[k] * y[k];
      return sum;
    };
    double h = 1e-6, keep = v[i];
    v[i] = keep + h;
    double up = loss();
    v[i] = keep - h;
    double down = loss();
    v[i] = keep;
    return (up - down) / (2 * h);
  }
};

TEST_F(Cuda, LayerNormAndGradsAgainstDifferences) {
  // Rows longer and shorter than a warp, not multiples of 32; with and
  // without scale and bias.
  for (auto [rows, size, affine] :
       {std::tuple<int64_t, int64_t, bool>{37, 200, true},
        {5, 7, false},
        {300, 33, true}}) {
    SCOPED_TRACE(std::to_string(rows) + "x" + std::to_string(size) +
                 (affine ? " affine" : " plain"));
    float epsilon = 1e-5f;
    auto x = randomFloats(size_t(rows * size), 71, -2.0f, 3.0f);
    x[0] += 40.0f; // an offset row: the variance must not cancel
    auto dy = randomFloats(x.size(), 72);
    auto scale = affine ? randomFloats(size_t(size), 73, 0.5f, 1.5f)
                        : std::vector<float>();
    auto bias = affine ? randomFloats(size_t(size), 74) : std::vector<float>();
    LayerNormReference ref{rows, size, epsilon};
    std::vector<double> xd(x.begin(), x.end()), sd(scale.begin(), scale.end()),
        bd(bias.begin(), bias.end());
    std::vector<double> y = ref.forward(xd, sd, bd), dx(x.size()),
                        dscale(static_cast<size_t>(size)),
                        dbias(static_cast<size_t>(size));
    for (size_t i = 0; i < x.size(); ++i)
      dx[i] = ref.slope(dy, xd, i, xd, sd, bd);
    for (size_t j = 0; affine && j < size_t(size); ++j) {
      dscale[j] = ref.slope(dy, sd, j, xd, sd, bd);
      dbias[j] = ref.slope(dy, bd, j, xd, sd, bd);
    }

    Device<float> dX(x), dDy(dy),
        dScale(affine ? scale : std::vector<float>(1)),
        dBias(affine ? bias : std::vector<float>(1)), dY(x.size()),
        dDx(x.size()), dDscale(static_cast<size_t>(size)),
        dDbias(static_cast<size_t>(size));
    const float *scaleOrNull = affine ? dScale.get() : nullptr;
    dpc_layer_norm(dX.get(), scaleOrNull, affine ? dBias.get() : nullptr, rows,
                   size, epsilon, dY.get());
    dpc_layer_norm_grad_input(dDy.get(), dX.get(), scaleOrNull, rows, size,
                              epsilon, dDx.get());
    expectNear(dY.host(), y);
    expectNear(dDx.host(), dx, 1e-3);
    if (!affine)
      continue;
    dpc_layer_norm_grad_scale(dDy.get(), dX.get(), rows, size, epsilon,
                              dDscale.get());
    Shape dyShape = {rows, size}, biasShape = {1, size};
    dpc_sum_to_shape(dDy.get(), dyShape.data(), dDbias.get(), biasShape.data(),
                     2, 1.0f);
    expectNear(dDscale.host(), dscale, 1e-3);
    expectNear(dDbias.host(), dbias, 1e-3);
  }
}

TEST_F(Cuda, SoftmaxCrossEntropyAndGrad) {
  for (auto [n, c, spread] : {std::tuple<int64_t, int64_t, float>{7, 10, 3.0f},
                              {64, 10, 1000.0f}, // stability: huge logits
                              {5, 1000, 5.0f}}) {
    SCOPED_TRACE("n " + std::to_string(n) + ", c " + std::to_string(c));
    auto logits = randomFloats(size_t(n * c), 17, -spread, spread);
    std::vector<int64_t> labels(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i)
      labels[size_t(i)] = (i * 7 + 3) % c;
    float scale = 1.0f / float(n);
    double loss = 0;
    std::vector<double> grad(logits.size());
    for (int64_t i = 0; i < n; ++i) {
      const float *row = &logits[size_t(i * c)];
      double m = *std::max_element(row, row + c), sum = 0;
      for (int64_t j = 0; j < c; ++j)
        sum += std::exp(double(row[j]) - m);
      loss += std::log(sum) + m - row[labels[size_t(i)]];
      for (int64_t j = 0; j < c; ++j)
        grad[size_t(i * c + j)] =
            scale * (std::exp(double(row[j]) - m) / sum -
                     (j == labels[size_t(i)] ? 1.0 : 0.0));
    }
    Device<float> dl(logits), dloss(1), dgrad(logits.size());
    Device<int64_t> dlabels(labels);
    dpc_softmax_cross_entropy(dl.get(), dlabels.get(), n, c, scale,
                              dloss.get());
    dpc_softmax_cross_entropy_grad(dl.get(), dlabels.get(), n, c, scale,
                                   dgrad.get());
    expectNear(dloss.host(), {scale * loss});
    expectNear(dgrad.host(), grad);
  }
}

// torch's ignore_index: ignored rows add 0 to the loss, their gradient is
// 0, inside or outside the classes.
TEST_F(Cuda, SoftmaxCrossEntropyIgnoresRows) {
  int64_t n = 40, c = 37;
  auto logits = randomFloats(size_t(n * c), 19, -6.0f, 6.0f);
  for (int64_t ignore : {int64_t(-100), int64_t(5)}) {
    SCOPED_TRACE("ignore_index " + std::to_string(ignore));
    std::vector<int64_t> labels(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i)
      labels[size_t(i)] = i % 4 == 2 ? ignore : (i * 7 + 3) % c;
    float scale = 1.0f / 29;
    double loss = 0;
    std::vector<double> grad(logits.size(), 0.0);
    for (int64_t i = 0; i < n; ++i) {
      int64_t label = labels[size_t(i)];
      if (label == ignore)
        continue;
      const float *row = &logits[size_t(i * c)];
      double m = *std::max_element(row, row + c), sum = 0;
      for (int64_t j = 0; j < c; ++j)
        sum += std::exp(double(row[j]) - m);
      loss += std::log(sum) + m - row[label];
      for (int64_t j = 0; j < c; ++j)
        grad[size_t(i * c + j)] =
            scale * (std::exp(double(row[j]) - m) / sum - (j == label));
    }
    Device<float> dl(logits), dloss(1),
        dgrad(std::vector<float>(logits.size(), 123.0f));
    Device<int64_t> dlabels(labels);
    dpc_softmax_cross_entropy_ignore(dl.get(), dlabels.get(), n, c, ignore,
                                     scale, dloss.get());
    dpc_softmax_cross_entropy_ignore_grad(dl.get(), dlabels.get(), n, c, ignore,
                                          scale, dgrad.get());
    expectNear(dloss.host(), {scale * loss});
    expectNear(dgrad.host(), grad);
  }
}

TEST_F(Cuda, MseLossAndGradMatchLoops) {
  // Past one block's 1024 threads, so that threads sum several elements.
  for (int64_t n : {int64_t(7), int64_t(3000)}) {
    SCOPED_TRACE("n " + std::to_string(n));
    auto prediction = randomFloats(size_t(n), 41, -3.0f, 3.0f);
    auto target = randomFloats(size_t(n), 43, -3.0f, 3.0f);
    float scale = 1.0f / float(4 * n);
    double loss = 0;
    std::vector<double> grad(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) {
      double d = double(prediction[size_t(i)]) - target[size_t(i)];
      loss += d * d;
      grad[size_t(i)] = 2.0 * scale * d;
    }
    Device<float> dp(prediction), dt(target), dloss(1),
        dgrad(static_cast<size_t>(n));
    dpc_mse_loss(dp.get(), dt.get(), n, scale, dloss.get());
    dpc_mse_loss_grad(dp.get(), dt.get(), n, scale, dgrad.get());
    expectNear(dloss.host(), {scale * loss});
    expectNear(dgrad.host(), grad);
  }
}

TEST_F(Cuda, GatherAndScatteredGradientMatchLoops) {
  int64_t rows = 7, width = 3;
  std::vector<float> table = randomFloats(size_t(rows * width), 31);
  // Repeats, a negative index, and one outside the table (its row is NaN).
  std::vector<int64_t> indices = {2, 0, 6, 2, -1, 5, 9};
  int64_t n = int64_t(indices.size());
  Device<float> dTable(table), dOut(size_t(n * width));
  Device<int64_t> dIndices(indices);
  dpc_gather(dTable.get(), dIndices.get(), rows, width, n, dOut.get());
  std::vector<float> out = dOut.host();
  for (int64_t i = 0; i + 1 < n; ++i) {
    int64_t row =
        indices[size_t(i)] < 0 ? indices[size_t(i)] + rows : indices[size_t(i)];
    for (int64_t j = 0; j < width; ++j)
      EXPECT_EQ(out[size_t(i * width + j)], table[size_t(row * width + j)]);
  }
  EXPECT_TRUE(std::isnan(out[size_t((n - 1) * width)]));

  std::vector<float> dy = randomFloats(size_t(n * width), 32);
  Device<float> dDy(dy), dDtable(size_t(rows * width));
  dpc_gather_grad(dDy.get(), dIndices.get(), rows, width, n, dDtable.get());
  std::vector<float> dtable = dDtable.host();
  std::vector<float> want(size_t(rows * width), 0.0f);
  for (int64_t i = 0; i + 1 < n; ++i) {
    int64_t row =
        indices[size_t(i)] < 0 ? indices[size_t(i)] + rows : indices[size_t(i)];
    for (int64_t j = 0; j < width; ++j)
      want[size_t(row * width + j)] += dy[size_t(i * width + j)];
  }
  // Summed in index order, as the loop above: bit for bit.
  EXPECT_EQ(dtable, want);
}

TEST_F(Cuda, MasksMatchLoops) {
  // ids == pad against a scalar, then masked_fill of [B, T, T] scores by the
  // padding mask broadcast over rows, and both branch gradients.
  int64_t b = 2, t = 3;
  std::vector<int64_t> ids = {4, 0, 7, 0, 0, 2}, pad = {0};
  Device<int64_t> dIds(ids), dPad(pad);
  Device<uint8_t> dMask(size_t(b * t));
  int64_t idsShape[] = {2, 3}, one[] = {1, 1};
  dpc_compare(DPC_COMPARE_EQ, DPC_DTYPE_I64, dIds.get(), idsShape, dPad.get(),
              one, dMask.get(), idsShape, 2);
  std::vector<uint8_t> mask = dMask.host();
  EXPECT_EQ(mask, (std::vector<uint8_t>{0, 1, 0, 1, 1, 0}));
  Device<uint8_t> dNot(size_t(b * t));
  dpc_not(dMask.get(), dNot.get(), b * t);
  EXPECT_EQ(dNot.host(), (std::vector<uint8_t>{1, 0, 1, 0, 0, 1}));
  Device<float> dAsFloat(size_t(b * t));
  dpc_cast(DPC_DTYPE_BOOL, DPC_DTYPE_F32, dMask.get(), dAsFloat.get(), b * t);
  EXPECT_EQ(dAsFloat.host(), (std::vector<float>{0, 1, 0, 1, 1, 0}));

  std::vector<float> scores = randomFloats(size_t(b * t * t), 51);
  std::vector<float> fill = {-1e9f};
  Device<float> dScores(scores), dFill(fill), dY(scores.size());
  int64_t cShape[] = {2, 1, 3}, aShape[] = {1, 1, 1}, yShape[] = {2, 3, 3};
  dpc_where(dMask.get(), cShape, dFill.get(), aShape, dScores.get(), yShape,
            dY.get(), yShape, 3);
  std::vector<float> dy = randomFloats(scores.size(), 52);
  Device<float> dDy(dy), dTrue(dy.size()), dFalse(dy.size());
  dpc_where_grad(dMask.get(), cShape, dDy.get(), dTrue.get(), yShape, 3, 1);
  dpc_where_grad(dMask.get(), cShape, dDy.get(), dFalse.get(), yShape, 3, 0);
  std::vector<float> y = dY.host(), gTrue = dTrue.host(),
                     gFalse = dFalse.host();
  for (int64_t e = 0; e < b * t * t; ++e) {
    bool masked = mask[size_t((e / (t * t)) * t + e % t)];
    EXPECT_EQ(y[size_t(e)], masked ? fill[0] : scores[size_t(e)]);
    EXPECT_EQ(gTrue[size_t(e)], masked ? dy[size_t(e)] : 0.0f);
    EXPECT_EQ(gFalse[size_t(e)], masked ? 0.0f : dy[size_t(e)]);
  }
}

TEST_F(Cuda, CopyIsStreamOrdered) {
  auto x = randomFloats(4097, 18);
  Device<float> src(x), dst(x.size());
  dpc_copy(src.get(), dst.get(), int64_t(x.size() * sizeof(float)));
  std::vector<double> want(x.begin(), x.end());
  expectNear(dst.host(), want, 0);
}

TEST_F(Cuda, SgdMatchesTorchSemantics) {
  const size_t n = 1000;
  const float lr = 0.05f, momentum = 0.9f, decay = 1e-3f;
  auto p = randomFloats(n, 19);
  std::vector<double> refP(p.begin(), p.end()), refV(n, 0.0);
  Device<float> dp(p), dv(std::vector<float>(n, 0.0f)),
      dacc(std::vector<float>(n, 0.0f));
  for (int step = 0; step < 3; ++step) {
    // Two microbatches' gradients accumulated, then one step.
    auto g1 = randomFloats(n, 20 + unsigned(step));
    auto g2 = randomFloats(n, 40 + unsigned(step));
    Device<float> dg1(g1), dg2(g2);
    dpc_cuda_accumulate(dacc.get(), dg1.get(), int64_t(n));
    dpc_cuda_accumulate(dacc.get(), dg2.get(), int64_t(n));
    dpc_cuda_sgd_step(dp.get(), dv.get(), dacc.get(), int64_t(n), lr, momentum,
                      decay);
    for (size_t i = 0; i < n; ++i) {
      double g = double(g1[i]) + g2[i] + decay * refP[i];
      refV[i] = momentum * refV[i] + g;
      refP[i] -= lr * refV[i];
    }
  }
  expectNear(dp.host(), refP);
  expectNear(dv.host(), refV);
  expectNear(dacc.host(), std::vector<double>(n, 0.0), 0);

  // Plain SGD needs no momentum buffer.
  auto q = randomFloats(n, 60), g = randomFloats(n, 61);
  Device<float> dq(q), dacc2(g);
  dpc_cuda_sgd_step(dq.get(), nullptr, dacc2.get(), int64_t(n), lr, 0.0f, 0.0f);
  std::vector<double> want(n);
  for (size_t i = 0; i < n; ++i)
    want[i] = double(q[i]) - double(lr) * g[i];
  expectNear(dq.host(), want);
}

TEST_F(Cuda, AdamMatchesTorchSemantics) {
  const size_t n = 1000;
  const double lr = 1e-3, beta1 = 0.9, beta2 = 0.999, eps = 1e-8, decay = 1e-2;
  auto p = randomFloats(n, 23);
  std::vector<double> refP(p.begin(), p.end()), refM(n, 0.0), refV(n, 0.0);
  Device<float> dp(p), dm(std::vector<float>(n, 0.0f)),
      dv(std::vector<float>(n, 0.0f)), dacc(std::vector<float>(n, 0.0f));
  for (int t = 1; t <= 4; ++t) {
    auto g = randomFloats(n, 70 + unsigned(t));
    Device<float> dg(g);
    dpc_cuda_accumulate(dacc.get(), dg.get(), int64_t(n));
    double c1 = 1 - std::pow(beta1, t), c2 = 1 - std::pow(beta2, t);
    dpc_cuda_adam_step(dp.get(), dm.get(), dv.get(), dacc.get(), int64_t(n),
                       float(beta1), float(beta2), float(eps), float(decay),
                       float(lr / c1), float(std::sqrt(c2)));
    for (size_t i = 0; i < n; ++i) {
      double grad = double(g[i]) + decay * refP[i];
      refM[i] = beta1 * refM[i] + (1 - beta1) * grad;
      refV[i] = beta2 * refV[i] + (1 - beta2) * grad * grad;
      refP[i] -= lr * (refM[i] / c1) / (std::sqrt(refV[i] / c2) + eps);
    }
  }
  expectNear(dp.host(), refP);
  expectNear(dm.host(), refM);
  expectNear(dv.host(), refV);
  expectNear(dacc.host(), std::vector<double>(n, 0.0), 0);
}

TEST_F(Cuda, KernelsFollowTheCurrentStream) {
  cudaStream_t stream;
  ASSERT_EQ(cudaStreamCreate(&stream), cudaSuccess);
  dpc_cuda_set_stream(stream);
  EXPECT_EQ(dpc_cuda_stream(), stream);
  auto x = randomFloats(1 << 20, 21);
  Device<float> dx(x), dy(x.size());
  dpc_relu(dx.get(), dy.get(), int64_t(x.size()));
  std::vector<double> want(x.size());
  for (size_t i = 0; i < x.size(); ++i)
    want[i] = x[i] > 0 ? x[i] : 0.0;
  expectNear(dy.host(), want, 0);
  dpc_cuda_set_stream(nullptr);
  cudaStreamDestroy(stream);
}

} // namespace
