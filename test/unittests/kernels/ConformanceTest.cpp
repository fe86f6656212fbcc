//===- ConformanceTest.cpp - Every kernel of Abi.h on every target --------===//
//
// One suite for the kernels of the C ABI, compiled once per target and
// linked with that target's kernel library: dpc-cpu-kernel-tests with
// dpc_cpu_kernels, dpc-cuda-kernel-tests with the CUDA libraries. Tensors
// live in the memory of the target's device (TargetDevice.h) and every
// kernel is checked against the plain double references of Reference.h and
// UnaryReferences.h, never against another backend, so that each target is
// right on its own and the targets agree because they pass the same cases.
//
// Where a target computes in another order (oneDNN's blocked sums, a GPU's
// parallel reductions) its results may differ in the low bits: the bounds
// of each check per target are the table kTolerances below, the only place
// where the targets differ. Tests that only one target has (the CPU's
// refusals and thread counts, the CUDA streams) are in CpuKernelTest.cpp and
// CudaKernelTest.cpp.
//
//===----------------------------------------------------------------------===//

#include "test/unittests/UnaryReferences.h"
#include "test/unittests/kernels/Reference.h"
#include "test/unittests/kernels/TargetDevice.h"

#include "backends/common/Random.h"
#include "dpc/runtime/Abi.h"
#include "dpc/runtime/UnaryFunctions.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <ostream>
#include <string>
#include <tuple>
#include <vector>

using namespace dpc::testing;

namespace {

//===----------------------------------------------------------------------===//
// The targets' bounds
//===----------------------------------------------------------------------===//

/// What a test compares with its reference.
enum class Check {
  ConvForward,
  ConvGradInput,
  ConvGradFilter,
  ConvGradBias,
  Matmul,
  Binary,
  SumToShape,
  BroadcastTo,
  Softmax,
  UnaryForward,
  UnaryGrad,
  /// Results with no arithmetic to round (relu, transpose, slices, clip,
  /// copies, max pooling's forward, dropout's scaling).
  Selection,
  MaxPoolGrad,
  AvgPool,
  GlobalAvgPool,
  BatchNormStats,
  BatchNorm,
  BatchNormGradInput,
  BatchNormGradWeights,
  LayerNorm,
  LayerNormGrads,
  Lstm,
  Loss,
  Optimizer,
  /// Interpolation's weighted sums of up to 8 neighbours, in float.
  Resize,
};

struct TargetTolerances {
  Check check;
  Tolerance cpu, cuda;
};

constexpr Tolerance::Kind Exact = Tolerance::Exact;
constexpr Tolerance::Kind Rel = Tolerance::Relative;
constexpr Tolerance::Kind RelSums = Tolerance::RelativeToSums;
constexpr Tolerance::Kind RelRms = Tolerance::RelativeToRms;

/// The CPU column is what the CPU suite asked for: relative to max(1, |e|),
/// or to the terms' sums where oneDNN reorders a long sum, and exact where
/// nothing is rounded. The CUDA column is the CUDA suite's: relative to |e|
/// plus the result's RMS (TF32 is off, so FP32 agrees to about 1e-5), with
/// 1e-3 for gradients through a normalization's statistics. Where only one
/// suite checked a kernel, the other column follows that target's style at
/// its neighbours' bound.
const TargetTolerances kTolerances[] = {
    {Check::ConvForward, {Rel, 1e-5}, {RelRms, 1e-4}},
    {Check::ConvGradInput, {Rel, 1e-5}, {RelRms, 1e-4}},
    {Check::ConvGradFilter, {RelSums, 1e-6}, {RelRms, 1e-4}},
    {Check::ConvGradBias, {Rel, 1e-5}, {RelRms, 1e-4}},
    {Check::Matmul, {Rel, 1e-5}, {RelRms, 1e-4}},
    {Check::Binary, {Rel, 1e-6}, {RelRms, 1e-6}},
    {Check::SumToShape, {Rel, 1e-5}, {RelRms, 1e-4}},
    {Check::BroadcastTo, {Rel, 1e-6}, {RelRms, 1e-6}},
    {Check::Softmax, {Rel, 1e-5}, {RelRms, 1e-4}},
    {Check::UnaryForward, {Rel, 2e-6}, {RelRms, 1e-5}},
    {Check::UnaryGrad, {Rel, 1e-5}, {RelRms, 1e-5}},
    {Check::Selection, {Exact}, {RelRms, 0}},
    {Check::MaxPoolGrad, {Rel, 1e-6}, {RelRms, 1e-4}},
    {Check::AvgPool, {Rel, 1e-6}, {RelRms, 1e-4}},
    {Check::GlobalAvgPool, {Rel, 1e-6}, {RelRms, 1e-4}},
    {Check::BatchNormStats, {Rel, 1e-6}, {RelRms, 1e-4}},
    {Check::BatchNorm, {Rel, 1e-5}, {RelRms, 1e-4}},
    {Check::BatchNormGradInput, {Rel, 1e-4}, {RelRms, 1e-3}},
    {Check::BatchNormGradWeights, {Rel, 1e-4}, {RelRms, 1e-4}},
    {Check::LayerNorm, {Rel, 1e-5}, {RelRms, 1e-4}},
    {Check::LayerNormGrads, {Rel, 1e-4}, {RelRms, 1e-3}},
    {Check::Lstm, {Rel, 1e-5}, {RelRms, 1e-4}},
    {Check::Loss, {Rel, 1e-5}, {RelRms, 1e-4}},
    {Check::Optimizer, {Rel, 1e-5}, {RelRms, 1e-4}},
    {Check::Resize, {Rel, 2e-6}, {RelRms, 1e-5}},
};

/// This binary's bound for `check`.
Tolerance tolerance(Check check) {
  for (const TargetTolerances &row : kTolerances)
    if (row.check == check) {
#ifdef DPC_TEST_TARGET_CUDA
      return row.cuda;
#else
      return row.cpu;
#endif
    }
  ADD_FAILURE() << "no tolerance for check " << int(check);
  return {Exact};
}

/// `actual` against `expected` within this target's bound for `check`.
void expectClose(const Floats &actual, const Doubles &expected, Check check,
                 const Doubles *absSums = nullptr) {
  dpc::testing::expectClose(actual, expected, tolerance(check), absSums);
}

/// Parameterized tests are named, and printed, by their config's `name`.
auto byName = [](const auto &info) { return std::string(info.param.name); };

/// A test over a list of configs.
template <typename Config>
class TargetKernelShapesTest : public TargetKernelTest,
                               public ::testing::WithParamInterface<Config> {};

//===----------------------------------------------------------------------===//
// Convolution
//===----------------------------------------------------------------------===//

using Conv = TargetKernelShapesTest<ConvConfig>;

TEST_P(Conv, ForwardWithAndWithoutBias) {
  const ConvConfig &c = GetParam();
  Shape ys = c.y();
  Floats x = randomFloats(countOf(c.x), 1), w = randomFloats(countOf(c.w), 2),
         b = randomFloats(size_t(c.w[0]), 3);
  Buffer<float> dX(x), dW(w), dB(b), dY(countOf(ys)), dY2(countOf(ys));
  dpc_conv2d(dX.get(), c.x.data(), dW.get(), c.w.data(), dB.get(), dY.get(),
             ys.data(), &c.params);
  dpc_conv2d(dX.get(), c.x.data(), dW.get(), c.w.data(), nullptr, dY2.get(),
             ys.data(), &c.params);
  expectClose(dY.host(), convForward(c, x, w, b), Check::ConvForward);
  expectClose(dY2.host(), convForward(c, x, w, {}), Check::ConvForward);
}

TEST_P(Conv, GradInput) {
  const ConvConfig &c = GetParam();
  Shape ys = c.y();
  Floats dy = randomFloats(countOf(ys), 4), w = randomFloats(countOf(c.w), 5);
  Buffer<float> dDy(dy), dW(w), dDx(countOf(c.x));
  dpc_conv2d_grad_input(dDy.get(), ys.data(), dW.get(), c.w.data(), dDx.get(),
                        c.x.data(), &c.params);
  expectClose(dDx.host(), convGradInput(c, dy, w), Check::ConvGradInput);
}

TEST_P(Conv, GradFilterAndBias) {
  const ConvConfig &c = GetParam();
  Shape ys = c.y();
  Floats dy = randomFloats(countOf(ys), 6), x = randomFloats(countOf(c.x), 7);
  Buffer<float> dDy(dy), dX(x), dDw(countOf(c.w)),
      dDb(static_cast<size_t>(ys[1]));
  dpc_conv2d_grad_filter(dDy.get(), ys.data(), dX.get(), c.x.data(), dDw.get(),
                         c.w.data(), &c.params);
  dpc_conv2d_grad_bias(dDy.get(), ys.data(), dDb.get());
  Doubles absSums;
  Doubles want = convGradFilter(c, dy, x, &absSums);
  expectClose(dDw.host(), want, Check::ConvGradFilter, &absSums);
  expectClose(dDb.host(), convGradBias(dy, ys), Check::ConvGradBias);
}

// With DPC_CONV_ACCUMULATE_DW the filter gradient adds to what dw holds
// (a parameter's gradient accumulator): twice onto a start value gives
// start + 2 * gradient, as two dpc_grad_accumulate calls would.
TEST_P(Conv, GradFilterAccumulates) {
  ConvConfig c = GetParam();
  c.params.layouts = DPC_CONV_ACCUMULATE_DW;
  Shape ys = c.y();
  Floats dy = randomFloats(countOf(ys), 6), x = randomFloats(countOf(c.x), 7);
  Floats start = randomFloats(countOf(c.w), 10);
  Buffer<float> dDy(dy), dX(x), dDw(start);
  for (int call = 0; call < 2; ++call)
    dpc_conv2d_grad_filter(dDy.get(), ys.data(), dX.get(), c.x.data(),
                           dDw.get(), c.w.data(), &c.params);
  Doubles absSums;
  Doubles want = convGradFilter(c, dy, x, &absSums);
  for (size_t i = 0; i < want.size(); ++i) {
    want[i] = start[i] + 2 * want[i];
    absSums[i] = std::fabs(start[i]) + 2 * absSums[i];
  }
  expectClose(dDw.host(), want, Check::ConvGradFilter, &absSums);
}

TEST_P(Conv, RepeatedCallsGiveTheSameResult) {
  // The second call hits the primitive (descriptor) cache.
  const ConvConfig &c = GetParam();
  Shape ys = c.y();
  Floats x = randomFloats(countOf(c.x), 8), w = randomFloats(countOf(c.w), 9);
  Buffer<float> dX(x), dW(w), dY1(countOf(ys)), dY2(countOf(ys));
  dpc_conv2d(dX.get(), c.x.data(), dW.get(), c.w.data(), nullptr, dY1.get(),
             ys.data(), &c.params);
  dpc_conv2d(dX.get(), c.x.data(), dW.get(), c.w.data(), nullptr, dY2.get(),
             ys.data(), &c.params);
  EXPECT_EQ(dY1.host(), dY2.host());
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, Conv,
    ::testing::Values(
        // LeNet-5's two layers, at two batch sizes.
        ConvConfig{"LeNetConv1",
                   {4, 1, 28, 28},
                   {6, 1, 5, 5},
                   {1, 1, 2, 2, 2, 2, 1, 1, 1}},
        ConvConfig{"LeNetConv1Batch2",
                   {2, 1, 28, 28},
                   {6, 1, 5, 5},
                   {1, 1, 2, 2, 2, 2, 1, 1, 1}},
        ConvConfig{"LeNetConv2",
                   {4, 6, 14, 14},
                   {16, 6, 5, 5},
                   {1, 1, 0, 0, 0, 0, 1, 1, 1}},
        ConvConfig{"LeNetConv2Batch3",
                   {3, 6, 14, 14},
                   {16, 6, 5, 5},
                   {1, 1, 0, 0, 0, 0, 1, 1, 1}},
        // Strides, asymmetric pads (SAME_UPPER with an even kernel),
        // dilations, groups and depthwise.
        ConvConfig{"Stride2",
                   {2, 4, 11, 9},
                   {8, 4, 3, 3},
                   {2, 2, 1, 1, 1, 1, 1, 1, 1}},
        ConvConfig{"StridesAsymmetricPads",
                   {2, 3, 11, 9},
                   {4, 3, 3, 3},
                   {2, 3, 1, 0, 2, 1, 1, 1, 1}},
        ConvConfig{"Dilation2",
                   {2, 3, 12, 12},
                   {5, 3, 3, 3},
                   {1, 1, 2, 2, 2, 2, 2, 2, 1}},
        ConvConfig{"DilationsAsymmetricPads",
                   {1, 2, 12, 10},
                   {3, 2, 3, 2},
                   {1, 1, 2, 1, 2, 1, 2, 3, 1}},
        ConvConfig{
            "Groups2", {2, 8, 7, 7}, {6, 4, 3, 3}, {1, 1, 1, 1, 1, 1, 1, 1, 2}},
        ConvConfig{
            "Groups3", {2, 6, 8, 8}, {9, 2, 3, 3}, {1, 1, 1, 1, 1, 1, 1, 1, 3}},
        ConvConfig{"Depthwise",
                   {2, 4, 7, 7},
                   {4, 1, 3, 3},
                   {2, 2, 1, 1, 1, 1, 1, 1, 4}},
        ConvConfig{"AsymmetricPad",
                   {2, 3, 8, 8},
                   {4, 3, 2, 2},
                   {1, 1, 0, 0, 1, 1, 1, 1, 1}},
        ConvConfig{"AsymmetricPadStride",
                   {1, 2, 9, 7},
                   {3, 2, 4, 3},
                   {2, 1, 1, 0, 2, 1, 1, 1, 1}},
        // 1x1 with stride and groups, and everything at once.
        ConvConfig{"Pointwise",
                   {2, 8, 9, 7},
                   {4, 4, 1, 1},
                   {2, 2, 0, 0, 0, 0, 1, 1, 2}},
        ConvConfig{"EverythingAtOnce",
                   {2, 4, 13, 11},
                   {6, 2, 3, 3},
                   {2, 1, 2, 1, 0, 2, 2, 1, 2}}),
    byName);

class ConvBiasGrad : public TargetKernelTest {};

TEST_F(ConvBiasGrad, SumsOverBatchAndSpace) {
  Shape shape = {3, 5, 4, 6};
  Floats dy = randomFloats(countOf(shape), 10);
  Buffer<float> dDy(dy), dDb(5);
  dpc_conv2d_grad_bias(dDy.get(), shape.data(), dDb.get());
  expectClose(dDb.host(), convGradBias(dy, shape), Check::ConvGradBias);
}

//===----------------------------------------------------------------------===//
// Matmul
//===----------------------------------------------------------------------===//

using Matmul = TargetKernelShapesTest<MatmulConfig>;

TEST_P(Matmul, MatchesReference) {
  const MatmulConfig &c = GetParam();
  Floats a = randomFloats(c.aCount(), 11), b = randomFloats(c.bCount(), 12);
  Buffer<float> dA(a), dB(b), dY(c.yCount());
  dpc_matmul(dA.get(), dB.get(), dY.get(), c.batch, c.m, c.n, c.k, c.ta, c.tb,
             c.aStride(), c.bStride(), c.accumulate);
  expectClose(dY.host(), matmul(c, a, b), Check::Matmul);
}

INSTANTIATE_TEST_SUITE_P(Shapes, Matmul, ::testing::ValuesIn(kMatmulShapes),
                         byName);

//===----------------------------------------------------------------------===//
// Broadcasting binary functions, sum_to_shape, broadcast_to
//===----------------------------------------------------------------------===//

struct BinaryConfig {
  const char *name;
  Shape a, b;
};
void PrintTo(const BinaryConfig &c, std::ostream *os) { *os << c.name; }

using Binary = TargetKernelShapesTest<BinaryConfig>;

TEST_P(Binary, BroadcastsLikeNumpy) {
  const BinaryConfig &c = GetParam();
  Shape y = broadcastShape(c.a, c.b);
  Floats a = randomFloats(countOf(c.a), 13), b = randomFloats(countOf(c.b), 14);
  for (float &v : b) // divisors away from zero
    v = v < 0 ? v - 0.5f : v + 0.5f;
  Buffer<float> dA(a), dB(b), dY(countOf(y));
  for (int64_t fn :
       {DPC_BINARY_ADD, DPC_BINARY_SUB, DPC_BINARY_MUL, DPC_BINARY_DIV}) {
    SCOPED_TRACE("function " + std::to_string(fn));
    dpc_binary(fn, dA.get(), c.a.data(), dB.get(), c.b.data(), dY.get(),
               y.data(), int64_t(y.size()));
    Doubles want(countOf(y));
    for (size_t i = 0; i < want.size(); ++i)
      want[i] = binary(fn, a[broadcastIndex(i, y, c.a)],
                       b[broadcastIndex(i, y, c.b)]);
    expectClose(dY.host(), want, Check::Binary);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, Binary,
    ::testing::Values(BinaryConfig{"SameShape", {3, 4, 5}, {3, 4, 5}},
                      BinaryConfig{"SameShapeMatrix", {4, 5}, {4, 5}},
                      BinaryConfig{"BiasRows", {64, 10}, {1, 10}},
                      BinaryConfig{"BiasRowsSmall", {16, 10}, {1, 10}},
                      BinaryConfig{"BiasRowsLeft", {1, 10}, {64, 10}},
                      BinaryConfig{"PerChannel", {2, 3, 4, 5}, {1, 3, 1, 1}},
                      BinaryConfig{"BothSides", {2, 1, 3}, {1, 4, 1}},
                      BinaryConfig{"BothSidesOuter", {2, 1, 4}, {1, 3, 1}},
                      BinaryConfig{"UnitColumn", {3, 1}, {3, 1}},
                      BinaryConfig{"OneElement", {1}, {1}},
                      BinaryConfig{"ScalarLeft", {1, 1}, {7, 9}},
                      BinaryConfig{"ScalarLeftSmall", {1, 1}, {5, 7}},
                      BinaryConfig{
                          "Rank6", {2, 3, 1, 5, 1, 2}, {1, 3, 4, 1, 6, 2}}),
    byName);

/// A wide shape and a narrow one it sums to (or is broadcast from).
struct ReduceConfig {
  const char *name;
  Shape wide, narrow;
};
void PrintTo(const ReduceConfig &c, std::ostream *os) { *os << c.name; }

using Broadcast = TargetKernelShapesTest<ReduceConfig>;

TEST_P(Broadcast, SumToShapeMatchesReference) {
  const ReduceConfig &c = GetParam();
  Floats x = randomFloats(countOf(c.wide), 15);
  Buffer<float> dX(x), dY(countOf(c.narrow));
  dpc_sum_to_shape(dX.get(), c.wide.data(), dY.get(), c.narrow.data(),
                   int64_t(c.wide.size()), 0.5f);
  expectClose(dY.host(), sumToShape(x, c.wide, c.narrow, 0.5),
              Check::SumToShape);
}

TEST_P(Broadcast, BroadcastToMatchesReference) {
  const ReduceConfig &c = GetParam();
  Floats u = randomFloats(countOf(c.narrow), 16);
  Buffer<float> dU(u), dW(countOf(c.wide));
  dpc_broadcast_to(dU.get(), c.narrow.data(), dW.get(), c.wide.data(),
                   int64_t(c.wide.size()), 0.5f);
  expectClose(dW.host(), broadcastTo(u, c.narrow, c.wide, 0.5),
              Check::BroadcastTo);
}

// broadcast_to is the adjoint of sum_to_shape with the same scale:
// <broadcast(u), g> = <u, sum(g)>.
TEST_P(Broadcast, BroadcastIsTheAdjointOfSum) {
  const ReduceConfig &c = GetParam();
  int64_t rank = int64_t(c.wide.size());
  Floats u = randomFloats(countOf(c.narrow), 19),
         g = randomFloats(countOf(c.wide), 20);
  Buffer<float> dU(u), dG(g), dWide(countOf(c.wide)),
      dNarrow(countOf(c.narrow));
  dpc_broadcast_to(dU.get(), c.narrow.data(), dWide.get(), c.wide.data(), rank,
                   0.5f);
  dpc_sum_to_shape(dG.get(), c.wide.data(), dNarrow.get(), c.narrow.data(),
                   rank, 0.5f);
  double lhs = dot(dWide.host(), g), rhs = dot(u, dNarrow.host());
  EXPECT_NEAR(lhs, rhs, 1e-4 * std::max(1.0, std::fabs(lhs)));
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, Broadcast,
    ::testing::Values(ReduceConfig{"BiasOverBatch", {64, 10}, {1, 10}},
                      ReduceConfig{"BiasOverBatchSmall", {16, 10}, {1, 10}},
                      ReduceConfig{"PerChannel", {2, 3, 4, 5}, {1, 3, 1, 1}},
                      ReduceConfig{"KeepOuter", {2, 3, 4}, {2, 1, 1}},
                      ReduceConfig{"Middle", {2, 3, 4}, {2, 1, 4}},
                      ReduceConfig{"Alternating", {2, 3, 4, 5}, {1, 3, 1, 5}},
                      ReduceConfig{"LongColumn", {3000, 3}, {1, 3}},
                      ReduceConfig{"Rows", {6, 7}, {6, 1}},
                      ReduceConfig{"Identity", {3, 4}, {3, 4}},
                      ReduceConfig{"IdentitySmall", {6, 7}, {6, 7}},
                      ReduceConfig{"All", {5, 7}, {1, 1}},
                      ReduceConfig{"AllOf3d", {2, 3, 4}, {1, 1, 1}}),
    byName);

//===----------------------------------------------------------------------===//
// Transpose and softmax
//===----------------------------------------------------------------------===//

struct TransposeConfig {
  const char *name;
  Shape x, perm;
};
void PrintTo(const TransposeConfig &c, std::ostream *os) { *os << c.name; }

using Transpose = TargetKernelShapesTest<TransposeConfig>;

TEST_P(Transpose, PermutesAndTheInverseRestores) {
  const TransposeConfig &c = GetParam();
  size_t rank = c.x.size();
  Shape y = permuted(c.x, c.perm), inverse(rank);
  for (size_t d = 0; d < rank; ++d)
    inverse[size_t(c.perm[d])] = int64_t(d);
  Floats x = randomFloats(countOf(c.x), 21);
  Buffer<float> dX(x), dY(x.size()), dBack(x.size());
  dpc_transpose(dX.get(), c.x.data(), dY.get(), c.perm.data(), int64_t(rank));
  dpc_transpose(dY.get(), y.data(), dBack.get(), inverse.data(), int64_t(rank));
  expectClose(dY.host(), transpose(x, c.x, c.perm), Check::Selection);
  expectClose(dBack.host(), toDoubles(x), Check::Selection);
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, Transpose,
    ::testing::Values(TransposeConfig{"LastTwo", {8, 28, 16}, {0, 2, 1}},
                      TransposeConfig{"LastTwoSmall", {2, 3, 4}, {0, 2, 1}},
                      TransposeConfig{"Heads", {2, 5, 3, 4}, {0, 2, 1, 3}},
                      TransposeConfig{"Reverse", {2, 3, 4, 5}, {3, 2, 1, 0}},
                      TransposeConfig{"Mixed", {2, 3, 4, 5}, {3, 1, 0, 2}},
                      TransposeConfig{"Matrix", {33, 65}, {1, 0}},
                      TransposeConfig{"MatrixSmall", {6, 7}, {1, 0}},
                      TransposeConfig{"UnitDims", {1, 3, 1, 2}, {2, 3, 0, 1}},
                      TransposeConfig{"Rank1", {5}, {0}}),
    byName);

struct SoftmaxConfig {
  const char *name;
  int64_t outer, n, inner;
};
void PrintTo(const SoftmaxConfig &c, std::ostream *os) { *os << c.name; }

using Softmax = TargetKernelShapesTest<SoftmaxConfig>;

// Forward and gradient of softmax and log_softmax against double loops; one
// large logit, which must not overflow.
TEST_P(Softmax, MatchesReference) {
  const SoftmaxConfig &c = GetParam();
  size_t size = size_t(c.outer * c.n * c.inner);
  Floats x = randomFloats(size, 15, -4.0f, 4.0f), dy = randomFloats(size, 16);
  x[size / 2] = 80.0f;
  for (int64_t log : {0, 1}) {
    SCOPED_TRACE(log ? "log_softmax" : "softmax");
    Doubles y, dx;
    softmax(x, dy, c.outer, c.n, c.inner, log, y, dx);
    Buffer<float> dX(x), dY(size), dDy(dy), dDx(size);
    dpc_softmax(dX.get(), dY.get(), c.outer, c.n, c.inner, log);
    dpc_softmax_grad(dDy.get(), dY.get(), dDx.get(), c.outer, c.n, c.inner,
                     log);
    expectClose(dY.host(), y, Check::Softmax);
    expectClose(dDx.host(), dx, Check::Softmax);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, Softmax,
    ::testing::Values(SoftmaxConfig{"Attention", 8 * 28, 28, 1},
                      SoftmaxConfig{"WideRows", 3, 1000, 1},
                      SoftmaxConfig{"Strided", 4, 9, 5},
                      SoftmaxConfig{"StridedSmall", 3, 7, 4},
                      SoftmaxConfig{"Single", 2, 1, 3}),
    byName);

// The gradients against central differences of L = sum(w * y) through the
// forward kernel itself.
TEST_F(Softmax, GradientAgainstDifferences) {
  const int64_t outer = 3, n = 7, inner = 4, size = outer * n * inner;
  Floats x = randomFloats(size_t(size), 22, -3.0f, 3.0f);
  Floats w = randomFloats(size_t(size), 23);
  x[5] = 80.0f;
  for (int64_t log : {0, 1}) {
    SCOPED_TRACE(log ? "log_softmax" : "softmax");
    Buffer<float> dX(x), dY(x.size()), dW(w), dDx(x.size());
    dpc_softmax(dX.get(), dY.get(), outer, n, inner, log);
    dpc_softmax_grad(dW.get(), dY.get(), dDx.get(), outer, n, inner, log);
    Floats dx = dDx.host();
    auto loss = [&](const Floats &input) {
      Buffer<float> in(input), out(input.size());
      dpc_softmax(in.get(), out.get(), outer, n, inner, log);
      return dot(w, out.host());
    };
    for (size_t k = 0; k < x.size(); k += 5) {
      Floats hi = x, lo = x;
      hi[k] += 1e-2f;
      lo[k] -= 1e-2f;
      double slope = (loss(hi) - loss(lo)) / (double(hi[k]) - lo[k]);
      EXPECT_NEAR(dx[k], slope, 2e-3) << "element " << k;
    }
  }
}

//===----------------------------------------------------------------------===//
// Elementwise functions
//===----------------------------------------------------------------------===//

class Relu : public TargetKernelTest {};

TEST_F(Relu, ForwardAndGradient) {
  Floats x = randomFloats(10007, 13), dy = randomFloats(10007, 14);
  x[0] = 0.0f;
  x[1] = std::numeric_limits<float>::quiet_NaN(); // stays NaN, as torch.relu
  Doubles y(x.size()), dx(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    y[i] = std::isnan(x[i]) ? x[i] : std::max(x[i], 0.0f);
    dx[i] = y[i] > 0 ? dy[i] : 0.0; // relu'(0) = 0, as PyTorch
  }
  Buffer<float> dX(x), dY(x.size()), dDy(dy), dDx(x.size());
  dpc_relu(dX.get(), dY.get(), int64_t(x.size()));
  dpc_relu_grad(dDy.get(), dY.get(), dDx.get(), int64_t(x.size()));
  expectClose(dY.host(), y, Check::Selection);
  expectClose(dDx.host(), dx, Check::Selection);
}

class Unary : public TargetKernelTest {};

// Every function of UnaryFunctions.def and its gradient, from the tensor
// the row says the gradient op is given, against its double reference
// (UnaryReferences.h: f and f'); a row without one fails. The inputs miss
// the kinks with probability one; KinksFollowPyTorch checks them.
TEST_F(Unary, MatchesReference) {
  Floats dy = randomFloats(4099, 32);
  forEachUnaryFunction([&](const auto &fn, const auto *ref) {
    Floats x = randomFloats(4099, 31, ref->lo, ref->hi);
    x[0] = ref->lo; // the domain's end: sigmoid's and softplus' tails
    Doubles y(x.size()), dx(x.size());
    Floats yf(x.size());
    for (size_t i = 0; i < x.size(); ++i) {
      y[i] = ref->f(x[i]);
      yf[i] = float(y[i]);
      if (ref->df)
        dx[i] = dy[i] * ref->df(x[i]);
    }
    Buffer<float> dX(x), dY(x.size());
    dpc_unary(fn.code, ref->a, ref->b, dX.get(), dY.get(), int64_t(x.size()));
    expectClose(dY.host(), y, Check::UnaryForward);
    if (fn.saved == dpc::runtime::UnarySaved::None)
      return;
    bool fromInput = fn.saved == dpc::runtime::UnarySaved::Input;
    Buffer<float> dDy(dy), dSaved(fromInput ? x : yf), dDx(x.size());
    dpc_unary_grad(fn.code, ref->a, ref->b, dDy.get(), dSaved.get(), dDx.get(),
                   int64_t(x.size()));
    expectClose(dDx.host(), dx, Check::UnaryGrad);
  });
}

// Each gradient kernel against central differences of the forward kernel
// itself, away from the kinks.
TEST_F(Unary, GradientAgainstDifferences) {
  const size_t n = 257;
  Floats dy = randomFloats(n, 41);
  forEachUnaryFunction([&](const auto &fn, const auto *ref) {
    Floats x = randomFloats(n, 40, ref->lo, ref->hi);
    x[0] = std::clamp(1.0f, ref->lo, ref->hi);
    Floats step(n), lo(n), hi(n);
    for (size_t i = 0; i < n; ++i) {
      step[i] = 1e-2f * std::max(std::fabs(x[i]), 0.1f);
      lo[i] = x[i] - step[i];
      hi[i] = x[i] + step[i];
    }
    Buffer<float> dX(x), dY(n), dLo(lo), dYlo(n), dHi(hi), dYhi(n);
    dpc_unary(fn.code, ref->a, ref->b, dX.get(), dY.get(), int64_t(n));
    dpc_unary(fn.code, ref->a, ref->b, dLo.get(), dYlo.get(), int64_t(n));
    dpc_unary(fn.code, ref->a, ref->b, dHi.get(), dYhi.get(), int64_t(n));
    Doubles want(n);
    for (size_t i = 0; i < n; ++i)
      want[i] = ref->f(x[i]);
    expectClose(dY.host(), want, Check::UnaryForward);
    if (fn.saved == dpc::runtime::UnarySaved::None)
      return;
    bool fromInput = fn.saved == dpc::runtime::UnarySaved::Input;
    Buffer<float> dDy(dy), dDx(n);
    dpc_unary_grad(fn.code, ref->a, ref->b, dDy.get(),
                   fromInput ? dX.get() : dY.get(), dDx.get(), int64_t(n));
    Floats dx = dDx.host(), ylo = dYlo.host(), yhi = dYhi.host();
    for (size_t i = 0; i < n; ++i) {
      double slope = (double(yhi[i]) - ylo[i]) / (double(hi[i]) - lo[i]);
      bool nearKink =
          std::any_of(ref->kinks.begin(), ref->kinks.end(), [&](double k) {
            return std::fabs(x[i] - k) < 2 * step[i];
          });
      if (!nearKink)
        EXPECT_NEAR(dx[i], dy[i] * slope,
                    2e-3 * std::max(1.0, std::fabs(slope)))
            << "at x = " << x[i];
    }
  });
}

// At the kinks, PyTorch's one-sided choices: abs' = 0 at 0; hardswish' =
// -1/2 at -3 and 3/2 at 3, where the middle piece includes both ends;
// leaky_relu' = alpha at 0; hardsigmoid' (alpha 1/6, beta 1/2, as
// MobileNetV3 exports it) = 1/6 at 0 and 0 at -3 and 3, where the flat
// parts include both ends. Sigmoid saturates without overflow.
TEST_F(Unary, KinksFollowPyTorch) {
  Buffer<float> kinks(Floats{0.0f, -3.0f, 3.0f}), ones(Floats(3, 1.0f)), d(3);
  auto gradient = [&](int64_t fn, float a, float b) {
    dpc_unary_grad(fn, a, b, ones.get(), kinks.get(), d.get(), 3);
    return d.host();
  };
  EXPECT_EQ(gradient(DPC_UNARY_ABS, 0, 0)[0], 0.0f);
  Floats hardSwish = gradient(DPC_UNARY_HARD_SWISH, 0, 0);
  EXPECT_EQ(hardSwish[1], -0.5f);
  EXPECT_EQ(hardSwish[2], 1.5f);
  EXPECT_EQ(gradient(DPC_UNARY_LEAKY_RELU, 0.01f, 0)[0], 0.01f);
  Floats hardSigmoid = gradient(DPC_UNARY_HARD_SIGMOID, 1.0f / 6, 0.5f);
  EXPECT_FLOAT_EQ(hardSigmoid[0], 1.0f / 6);
  EXPECT_EQ(hardSigmoid[1], 0.0f);
  EXPECT_EQ(hardSigmoid[2], 0.0f);
  Buffer<float> big(Floats{-200.0f, 200.0f}), s(2);
  dpc_unary(DPC_UNARY_SIGMOID, 0, 0, big.get(), s.get(), 2);
  EXPECT_EQ(s.host(), (Floats{0.0f, 1.0f}));
}

// Neg is forward only: its gradient is a neg of dy, built as such.
TEST_F(Unary, NegNegates) {
  Buffer<float> x(Floats{1.5f, -2.0f, 0.0f}), y(3);
  dpc_unary(DPC_UNARY_NEG, 0, 0, x.get(), y.get(), 3);
  Floats got = y.host();
  EXPECT_EQ(got, (Floats{-1.5f, 2.0f, -0.0f}));
  EXPECT_TRUE(std::signbit(got[2]));
}

//===----------------------------------------------------------------------===//
// Slices, clip, dropout, copy
//===----------------------------------------------------------------------===//

class Box : public TargetKernelTest {};

// A 3-d box with a step, read out and written back, against index loops.
TEST_F(Box, SliceAndInsertAgainstLoops) {
  const int64_t whole[3] = {3, 5, 4}, box[3] = {2, 2, 3};
  const int64_t offsets[3] = {1, 1, 0}, steps[3] = {1, 2, 1};
  Floats x = randomFloats(3 * 5 * 4, 51);
  auto at = [&](int64_t i, int64_t j, int64_t k) {
    return size_t(
        ((offsets[0] + i * steps[0]) * 5 + offsets[1] + j * steps[1]) * 4 +
        offsets[2] + k * steps[2]);
  };
  Doubles sliced, inBox(x.size(), 0.0);
  std::vector<bool> inside(x.size(), false);
  for (int64_t i = 0; i < 2; ++i)
    for (int64_t j = 0; j < 2; ++j)
      for (int64_t k = 0; k < 3; ++k) {
        sliced.push_back(x[at(i, j, k)]);
        inBox[at(i, j, k)] = x[at(i, j, k)];
        inside[at(i, j, k)] = true;
      }
  Buffer<float> dX(x), dBox(12);
  dpc_slice(dX.get(), whole, dBox.get(), box, 3, offsets, steps);
  expectClose(dBox.host(), sliced, Check::Selection);
  // Written back: the box's elements, and elsewhere the fill value (0 for
  // the slice's gradient, a constant pad's value) or what was there.
  for (auto [fillRest, fill] :
       {std::tuple<int64_t, float>{1, 0.0f}, {1, -2.5f}, {0, 0.0f}}) {
    SCOPED_TRACE("fill_rest " + std::to_string(fillRest) + ", fill " +
                 std::to_string(fill));
    Buffer<float> dWhole(Floats(x.size(), 7.0f));
    dpc_insert(dBox.get(), box, dWhole.get(), whole, 3, offsets, steps,
               fillRest, fill);
    Doubles want(x.size());
    for (size_t e = 0; e < x.size(); ++e)
      want[e] = inside[e] ? inBox[e] : fillRest ? fill : 7.0;
    expectClose(dWhole.host(), want, Check::Selection);
  }
}

class Clip : public TargetKernelTest {};

// Clip, and its gradient passing at the bounds themselves (PyTorch's clamp).
TEST_F(Clip, ValuesAndGradientAtTheBounds) {
  Buffer<float> x(Floats{-1.0f, 0.0f, 3.0f, 6.0f, 7.5f, NAN}),
      dy(Floats{1, 2, 3, 4, 5, 6}), y(6), dx(6);
  dpc_clip(x.get(), y.get(), 6, 0.0f, 6.0f);
  dpc_clip_grad(dy.get(), x.get(), dx.get(), 6, 0.0f, 6.0f);
  Floats got = y.host(), grad = dx.host();
  EXPECT_EQ(got[0], 0.0f);
  EXPECT_EQ(got[2], 3.0f);
  EXPECT_EQ(got[4], 6.0f);
  EXPECT_TRUE(std::isnan(got[5]));
  EXPECT_EQ(grad[0], 0.0f);
  EXPECT_EQ(grad[1], 2.0f);
  EXPECT_EQ(grad[2], 3.0f);
  EXPECT_EQ(grad[3], 4.0f);
  EXPECT_EQ(grad[4], 0.0f);
}

TEST_F(Clip, MatchesReference) {
  Floats x = randomFloats(60, 61), dy = randomFloats(60, 62);
  Doubles y(x.size()), dx(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    y[i] = std::min(std::max(double(x[i]), -0.25), 0.5);
    dx[i] = x[i] >= -0.25f && x[i] <= 0.5f ? dy[i] : 0.0;
  }
  Buffer<float> dX(x), dY(x.size()), dDy(dy), dDx(x.size());
  dpc_clip(dX.get(), dY.get(), int64_t(x.size()), -0.25f, 0.5f);
  dpc_clip_grad(dDy.get(), dX.get(), dDx.get(), int64_t(x.size()), -0.25f,
                0.5f);
  expectClose(dY.host(), y, Check::Selection);
  expectClose(dDx.host(), dx, Check::Selection);
}

class Dropout : public TargetKernelTest {};

// The mask: the keep rate within 3 sigma of 1 - p for several keys and
// rates, pairs of neighbours dropped together as often as independence
// says, kept elements scaled by exactly 1 / (1 - p), the same mask for the
// gradient (the kernel on dy under the same key), another mask under
// another key, and the identity under a negative key.
TEST_F(Dropout, MaskStatisticsScalingAndGradient) {
  const int64_t n = 200003;
  Floats x = randomFloats(size_t(n), 71, 0.5f, 1.5f),
         dy = randomFloats(size_t(n), 72);
  Buffer<float> dX(x), dDy(dy), dY(static_cast<size_t>(n)),
      dDx(static_cast<size_t>(n));
  for (float p : {0.1f, 0.3f, 0.5f}) {
    for (int64_t key : {int64_t(1), int64_t(0x5DEECE66D), int64_t(1) << 62}) {
      SCOPED_TRACE(::testing::Message() << "p " << p << " key " << key);
      dpc_dropout(dX.get(), dY.get(), n, p, key);
      dpc_dropout(dDy.get(), dDx.get(), n, p, key);
      Floats y = dY.host(), dx = dDx.host();
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
  Buffer<float> dA(static_cast<size_t>(n)), dB(static_cast<size_t>(n));
  dpc_dropout(dX.get(), dA.get(), n, 0.5f, 11);
  dpc_dropout(dX.get(), dB.get(), n, 0.5f, 12);
  Floats a = dA.host(), b = dB.host();
  int64_t same = 0;
  for (int64_t i = 0; i < n; ++i)
    same += (a[size_t(i)] == 0.0f) == (b[size_t(i)] == 0.0f);
  EXPECT_NEAR(double(same) / double(n), 0.5, 3 * std::sqrt(0.25 / double(n)));
  // Evaluation: the identity.
  dpc_dropout(dX.get(), dY.get(), n, 0.5f, -1);
  EXPECT_EQ(dY.host(), x);
}

// Every target drops exactly the elements Philox says (backends/common/
// Random.h), so that a stage split across targets keeps the same mask.
TEST_F(Dropout, MatchesThePhiloxMask) {
  const int64_t n = 100003;
  const float p = 0.3f;
  Floats x = randomFloats(size_t(n), 73, 0.5f, 1.5f);
  Doubles want(x.size());
  for (int64_t i = 0; i < n; ++i)
    want[size_t(i)] = dpc::random::dropoutKeeps(12345, uint64_t(i), p)
                          ? double(x[size_t(i)] * (1.0f / (1.0f - p)))
                          : 0.0;
  Buffer<float> dX(x), dY(x.size());
  dpc_dropout(dX.get(), dY.get(), n, p, 12345);
  expectClose(dY.host(), want, Check::Selection);
}

class Copy : public TargetKernelTest {};

TEST_F(Copy, CopiesBytes) {
  for (size_t n : {size_t(33), size_t(4097)}) {
    Floats x = randomFloats(n, 18);
    Buffer<float> src(x), dst(n);
    dpc_copy(src.get(), dst.get(), int64_t(n * sizeof(float)));
    EXPECT_EQ(dst.host(), x) << n << " floats";
  }
}

//===----------------------------------------------------------------------===//
// Pooling
//===----------------------------------------------------------------------===//

using Pool = TargetKernelShapesTest<PoolConfig>;

/// dpc_max_pool2d of x and dpc_max_pool2d_grad of dy: y and dx.
std::pair<Floats, Floats> runMaxPool(const PoolConfig &c, const Floats &x,
                                     const Floats &dy) {
  Shape ys = c.y();
  Buffer<float> dX(x), dY(countOf(ys)), dDy(dy), dDx(x.size());
  dpc_max_pool2d(dX.get(), c.x.data(), dY.get(), ys.data(), &c.params);
  dpc_max_pool2d_grad(dDy.get(), ys.data(), dX.get(), c.x.data(), dDx.get(),
                      &c.params);
  return {dY.host(), dDx.host()};
}

TEST_P(Pool, MaxFollowsTheFirstMaximum) {
  const PoolConfig &c = GetParam();
  Shape ys = c.y();
  // Values from a small set, so that windows have ties.
  Floats x = randomFloats(countOf(c.x), 19), dy = randomFloats(countOf(ys), 20);
  for (float &v : x)
    v = std::round(v * 3) / 3;
  Doubles y, dx;
  maxPool(c, x, dy, y, dx);
  auto [gotY, gotDx] = runMaxPool(c, x, dy);
  expectClose(gotY, y, Check::Selection);
  expectClose(gotDx, dx, Check::MaxPoolGrad);
}

/// A NaN in a window propagates, as in PyTorch's max_pool2d, on every
/// target alike: the window's maximum is NaN and its gradient goes to the
/// window's last NaN (backends/common/PoolMath.h). Every seventh input is
/// NaN, so that windows hold none, one or two; dy's values are small
/// integers, so that the gradients' sums are exact in any order.
TEST_P(Pool, MaxPropagatesNaNToTheLastNaN) {
  const PoolConfig &c = GetParam();
  Shape ys = c.y();
  Floats x = randomFloats(countOf(c.x), 21), dy(countOf(ys));
  for (size_t i = 3; i < x.size(); i += 7)
    x[i] = std::numeric_limits<float>::quiet_NaN();
  for (size_t i = 0; i < dy.size(); ++i)
    dy[i] = float(i % 13 + 1);
  Doubles y, dx;
  maxPool(c, x, dy, y, dx);
  auto [gotY, gotDx] = runMaxPool(c, x, dy);
  dpc::testing::expectClose(gotY, y, {Tolerance::Exact});
  dpc::testing::expectClose(gotDx, dx, {Tolerance::Exact});
}

TEST_P(Pool, AverageMatchesReferenceWithBothDivisors) {
  const PoolConfig &c = GetParam();
  Shape ys = c.y();
  Floats x = randomFloats(countOf(c.x), 17), dy = randomFloats(countOf(ys), 18);
  Buffer<float> dX(x), dDy(dy), dY(countOf(ys)), dDx(x.size());
  for (bool includePad : {false, true}) {
    SCOPED_TRACE(includePad ? "count_include_pad" : "without the padding");
    Doubles y, dx;
    avgPool(c, x, dy, includePad, y, dx);
    dpc_avg_pool_params params = c.avgParams(includePad);
    dpc_avg_pool2d(dX.get(), c.x.data(), dY.get(), ys.data(), &params);
    dpc_avg_pool2d_grad(dDy.get(), ys.data(), dDx.get(), c.x.data(), &params);
    expectClose(dY.host(), y, Check::AvgPool);
    expectClose(dDx.host(), dx, Check::AvgPool);
  }
}

/// A linear map's gradient is its adjoint: <dy, pool(x)> = <grad(dy), x>.
TEST_P(Pool, AverageGradientIsTheAdjoint) {
  const PoolConfig &c = GetParam();
  Shape ys = c.y();
  Floats x = randomFloats(countOf(c.x), 31), dy = randomFloats(countOf(ys), 32);
  Buffer<float> dX(x), dDy(dy), dY(countOf(ys)), dDx(x.size());
  for (bool includePad : {false, true}) {
    dpc_avg_pool_params params = c.avgParams(includePad);
    dpc_avg_pool2d(dX.get(), c.x.data(), dY.get(), ys.data(), &params);
    dpc_avg_pool2d_grad(dDy.get(), ys.data(), dDx.get(), c.x.data(), &params);
    double lhs = dot(dy, dY.host()), rhs = dot(dDx.host(), x);
    EXPECT_NEAR(lhs, rhs, 1e-4 * std::max(1.0, std::abs(lhs)))
        << "count_include_pad " << includePad;
  }
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, Pool,
    ::testing::Values(
        PoolConfig{"LeNet2x2", {4, 6, 28, 28}, {2, 2, 2, 2, 0, 0, 0, 0}},
        PoolConfig{"Plain2x2", {2, 3, 28, 28}, {2, 2, 2, 2, 0, 0, 0, 0}},
        PoolConfig{"Ceil2x2", {2, 3, 7, 7}, {2, 2, 2, 2, 0, 0, 0, 0}, true},
        PoolConfig{"Pad1Stride2", {1, 2, 9, 8}, {3, 3, 2, 2, 1, 1, 1, 1}},
        PoolConfig{"Overlap3x3Pad1", {2, 3, 13, 11}, {3, 3, 2, 2, 1, 1, 1, 1}},
        PoolConfig{
            "CeilAsymmetric", {1, 2, 10, 9}, {3, 2, 2, 3, 1, 0, 1, 0}, true},
        // Overlapping windows: gradients add up.
        PoolConfig{"Stride1", {2, 3, 9, 9}, {3, 3, 1, 1, 0, 0, 0, 0}},
        PoolConfig{"Stride1Small", {2, 2, 8, 8}, {3, 3, 1, 1, 0, 0, 0, 0}},
        PoolConfig{"AsymmetricPad", {1, 2, 8, 7}, {2, 3, 2, 2, 0, 1, 1, 1}}),
    byName);

class AvgPool : public TargetKernelTest {};

/// Hand-checked windows (the values torch.nn.functional.avg_pool2d gives):
/// 1..9 in a 3 x 3 plane, 2 x 2 windows at stride 2 with one pixel of
/// padding, then 1..16 in 4 x 4 with 3 x 3 windows, stride 2, pad 1 and
/// ceil mode, with and without counting the padding.
TEST_F(AvgPool, DivisorsFollowPyTorch) {
  struct Case {
    int64_t h, k, out;
    std::vector<float> withPad, withoutPad;
  };
  std::vector<Case> cases = {
      {3, 2, 2, {0.25f, 1.25f, 2.75f, 7.0f}, {1.0f, 2.5f, 5.5f, 7.0f}},
      {4,
       3,
       3,
       {14.0f / 9, 30.0f / 9, 2.0f, 57.0f / 9, 11.0f, 6.0f, 4.5f, 7.5f, 4.0f},
       {3.5f, 5.0f, 6.0f, 9.5f, 11.0f, 12.0f, 13.5f, 15.0f, 16.0f}}};
  for (const Case &c : cases) {
    Floats x(size_t(c.h * c.h));
    for (size_t i = 0; i < x.size(); ++i)
      x[i] = float(i + 1);
    int64_t xs[4] = {1, 1, c.h, c.h}, ys[4] = {1, 1, c.out, c.out};
    Buffer<float> dX(x), dY(size_t(c.out * c.out));
    for (int64_t include : {1, 0}) {
      dpc_avg_pool_params p = {{c.k, c.k, 2, 2, 1, 1, 1, 1}, include};
      dpc_avg_pool2d(dX.get(), xs, dY.get(), ys, &p);
      const Floats &want = include ? c.withPad : c.withoutPad;
      dpc::testing::expectClose(dY.host(), toDoubles(want),
                                {Tolerance::Relative, 1e-6});
    }
  }
}

class GlobalAvgPool : public TargetKernelTest {};

// The mean of each plane and the gradient spread over it, against loops and
// as the adjoint, for a small map and ResNet-18's last feature map.
TEST_F(GlobalAvgPool, MeanAndGradient) {
  const int64_t size = 49;
  for (int64_t planes : {int64_t(6), int64_t(2 * 512)}) {
    SCOPED_TRACE(std::to_string(planes) + " planes");
    Floats x = randomFloats(size_t(planes * size), 33),
           dy = randomFloats(size_t(planes), 34);
    Doubles y(size_t(planes), 0.0), dx(x.size());
    for (int64_t p = 0; p < planes; ++p)
      for (int64_t i = 0; i < size; ++i) {
        y[size_t(p)] += x[size_t(p * size + i)] / double(size);
        dx[size_t(p * size + i)] = dy[size_t(p)] / double(size);
      }
    Buffer<float> dX(x), dY(static_cast<size_t>(planes)), dDy(dy),
        dDx(x.size());
    dpc_global_avg_pool(dX.get(), planes, size, dY.get());
    dpc_global_avg_pool_grad(dDy.get(), planes, size, dDx.get());
    Floats gotY = dY.host(), gotDx = dDx.host();
    expectClose(gotY, y, Check::GlobalAvgPool);
    expectClose(gotDx, dx, Check::GlobalAvgPool);
    double lhs = dot(dy, gotY);
    EXPECT_NEAR(lhs, dot(gotDx, x), 1e-5 * std::max(1.0, std::fabs(lhs)));
  }
}

//===----------------------------------------------------------------------===//
// Batch normalization
//===----------------------------------------------------------------------===//

class BatchNorm : public TargetKernelTest {};

TEST_F(BatchNorm, StatisticsUpdateTheRunningOnesLikeTorch) {
  int64_t n = 3, c = 2, s = 5;
  Floats x = randomFloats(size_t(n * c * s), 41, -2, 3);
  Buffer<float> dX(x), runningMean(Floats{0.5f, -1.0f}),
      runningVar(Floats{2.0f, 0.25f}), stats(size_t(2 * c));
  dpc_batch_norm_stats(dX.get(), n, c, s, 1, runningMean.get(),
                       runningVar.get(), 0.9f, 1, stats.get());
  Doubles want(size_t(2 * c)), wantMean(2), wantVar(2);
  for (int64_t k = 0; k < c; ++k) {
    auto [mean, squares] = channelMoments(x, n, c, s, k);
    want[size_t(k)] = mean;
    want[size_t(c + k)] = squares / double(n * s);
    // The running variance folds in the unbiased estimate, as torch does.
    wantMean[size_t(k)] = 0.9 * (k ? -1.0 : 0.5) + 0.1 * mean;
    wantVar[size_t(k)] =
        0.9 * (k ? 0.25 : 2.0) + 0.1 * squares / double(n * s - 1);
  }
  expectClose(stats.host(), want, Check::BatchNormStats);
  expectClose(runningMean.host(), wantMean, Check::BatchNormStats);
  expectClose(runningVar.host(), wantVar, Check::BatchNormStats);

  // Evaluation normalizes with the running statistics and leaves them be.
  Floats before = runningMean.host();
  dpc_batch_norm_stats(dX.get(), n, c, s, 1, runningMean.get(),
                       runningVar.get(), 0.9f, 0, stats.get());
  EXPECT_EQ(runningMean.host(), before);
  expectClose(stats.host(), {wantMean[0], wantMean[1], wantVar[0], wantVar[1]},
              Check::BatchNormStats);
}

TEST_F(BatchNorm, ForwardAndGradientsMatchFiniteDifferences) {
  int64_t n = 3, c = 2, s = 5;
  float epsilon = 1e-3f;
  Floats x = randomFloats(size_t(n * c * s), 42, -2, 3);
  Floats scale = {1.5f, -0.7f}, bias = {0.2f, 0.4f};
  Floats dy = randomFloats(x.size(), 43);
  Buffer<float> dX(x), dScale(scale), dBias(bias), dDy(dy),
      runningMean(Floats(2, 0.0f)), runningVar(Floats(2, 1.0f)), stats(4),
      dY(x.size()), dDx(x.size()), dDscale(2), dDbias(2);
  dpc_batch_norm_stats(dX.get(), n, c, s, 1, runningMean.get(),
                       runningVar.get(), 0.9f, 1, stats.get());
  dpc_batch_norm(dX.get(), stats.get(), dScale.get(), dBias.get(), n, c, s, 1,
                 epsilon, dY.get());
  dpc_batch_norm_grad_input(dDy.get(), dX.get(), stats.get(), dScale.get(), n,
                            c, s, 1, epsilon, dDx.get());
  dpc_batch_norm_grad_scale(dDy.get(), dX.get(), stats.get(), n, c, s, 1,
                            epsilon, dDscale.get());
  dpc_batch_norm_grad_bias(dDy.get(), n, c, s, 1, dDbias.get());

  Doubles xd = toDoubles(x), sd = toDoubles(scale), bd = toDoubles(bias);
  expectClose(dY.host(), batchNorm(xd, sd, bd, n, c, s, epsilon),
              Check::BatchNorm);
  // The loss sum(dy * y) and its central differences in double.
  auto loss = [&] {
    Doubles out = batchNorm(xd, sd, bd, n, c, s, epsilon);
    double sum = 0;
    for (size_t i = 0; i < out.size(); ++i)
      sum += dy[i] * out[i];
    return sum;
  };
  Doubles wantDx(x.size()), wantDscale(2), wantDbias(2);
  for (size_t i = 0; i < x.size(); ++i)
    wantDx[i] = centralDifference(xd, i, loss);
  for (size_t k = 0; k < 2; ++k) {
    wantDscale[k] = centralDifference(sd, k, loss);
    wantDbias[k] = centralDifference(bd, k, loss);
  }
  expectClose(dDx.host(), wantDx, Check::BatchNormGradInput);
  expectClose(dDscale.host(), wantDscale, Check::BatchNormGradWeights);
  expectClose(dDbias.host(), wantDbias, Check::BatchNormGradWeights);
}

// A ResNet-sized layer against the closed-form gradients, training then
// evaluation.
TEST_F(BatchNorm, TrainingAndEvaluationMatchReference) {
  int64_t n = 8, c = 16, s = 7 * 7;
  float epsilon = 1e-5f, momentum = 0.9f;
  Floats x = randomFloats(size_t(n * c * s), 21, -2.0f, 3.0f);
  Floats dy = randomFloats(x.size(), 22);
  Floats scale = randomFloats(size_t(c), 23, 0.5f, 1.5f);
  Floats bias = randomFloats(size_t(c), 24);
  Floats runMean = randomFloats(size_t(c), 25);
  Floats runVar = randomFloats(size_t(c), 26, 0.5f, 2.0f);
  double m = double(n * s);
  size_t channels = size_t(c);
  Doubles stats(2 * channels), newMean(channels), newVar(channels);
  for (int64_t k = 0; k < c; ++k) {
    auto [mean, squares] = channelMoments(x, n, c, s, k);
    stats[size_t(k)] = mean;
    stats[size_t(c + k)] = squares / m;
    newMean[size_t(k)] = momentum * runMean[size_t(k)] + (1 - momentum) * mean;
    newVar[size_t(k)] =
        momentum * runVar[size_t(k)] + (1 - momentum) * squares / (m - 1);
  }
  Doubles dx, dscale, dbias;
  batchNormGrads(x, dy, scale, n, c, s, epsilon, dx, dscale, dbias);

  Buffer<float> dX(x), dDy(dy), dScale(scale), dBias(bias), dRunMean(runMean),
      dRunVar(runVar), dStats(stats.size()), dY(x.size()), dDx(x.size()),
      dDscale(channels), dDbias(channels);
  dpc_batch_norm_stats(dX.get(), n, c, s, 1, dRunMean.get(), dRunVar.get(),
                       momentum, 1, dStats.get());
  dpc_batch_norm(dX.get(), dStats.get(), dScale.get(), dBias.get(), n, c, s, 1,
                 epsilon, dY.get());
  dpc_batch_norm_grad_input(dDy.get(), dX.get(), dStats.get(), dScale.get(), n,
                            c, s, 1, epsilon, dDx.get());
  dpc_batch_norm_grad_scale(dDy.get(), dX.get(), dStats.get(), n, c, s, 1,
                            epsilon, dDscale.get());
  dpc_batch_norm_grad_bias(dDy.get(), n, c, s, 1, dDbias.get());
  expectClose(dStats.host(), stats, Check::BatchNormStats);
  expectClose(dRunMean.host(), newMean, Check::BatchNormStats);
  expectClose(dRunVar.host(), newVar, Check::BatchNormStats);
  expectClose(dY.host(),
              batchNorm(toDoubles(x), toDoubles(scale), toDoubles(bias), n, c,
                        s, epsilon),
              Check::BatchNorm);
  expectClose(dDx.host(), dx, Check::BatchNormGradInput);
  expectClose(dDscale.host(), dscale, Check::BatchNormGradWeights);
  expectClose(dDbias.host(), dbias, Check::BatchNormGradWeights);

  // Evaluation: the running statistics, unchanged.
  dpc_batch_norm_stats(dX.get(), n, c, s, 1, dRunMean.get(), dRunVar.get(),
                       momentum, 0, dStats.get());
  Doubles running(newMean);
  running.insert(running.end(), newVar.begin(), newVar.end());
  expectClose(dStats.host(), running, Check::BatchNormStats);
  expectClose(dRunMean.host(), newMean, Check::BatchNormStats);
}

//===----------------------------------------------------------------------===//
// Layer normalization
//===----------------------------------------------------------------------===//

struct LayerNormConfig {
  const char *name;
  int64_t rows, size;
  bool affine;
  float epsilon;
};
void PrintTo(const LayerNormConfig &c, std::ostream *os) { *os << c.name; }

using LayerNorm = TargetKernelShapesTest<LayerNormConfig>;

TEST_P(LayerNorm, ForwardAndGradientsMatchFiniteDifferences) {
  const LayerNormConfig &c = GetParam();
  int64_t rows = c.rows, size = c.size;
  Floats x = randomFloats(size_t(rows * size), 61, -2, 3);
  x[1] += 40.0f; // an offset row: the variance must not cancel
  Floats scale =
      c.affine ? randomFloats(size_t(size), 62, 0.5f, 1.5f) : Floats();
  Floats bias = c.affine ? randomFloats(size_t(size), 63) : Floats();
  Floats dy = randomFloats(x.size(), 64);
  Buffer<float> dX(x), dDy(dy), dScale(scale), dBias(bias), dY(x.size()),
      dDx(x.size());
  const float *scaleOrNull = c.affine ? dScale.get() : nullptr;
  dpc_layer_norm(dX.get(), scaleOrNull, c.affine ? dBias.get() : nullptr, rows,
                 size, c.epsilon, dY.get());
  dpc_layer_norm_grad_input(dDy.get(), dX.get(), scaleOrNull, rows, size,
                            c.epsilon, dDx.get());

  Doubles xd = toDoubles(x), sd = toDoubles(scale), bd = toDoubles(bias);
  expectClose(dY.host(), layerNorm(xd, sd, bd, rows, size, c.epsilon),
              Check::LayerNorm);
  auto loss = [&] {
    Doubles out = layerNorm(xd, sd, bd, rows, size, c.epsilon);
    double sum = 0;
    for (size_t i = 0; i < out.size(); ++i)
      sum += dy[i] * out[i];
    return sum;
  };
  Doubles wantDx(x.size());
  for (size_t i = 0; i < x.size(); ++i)
    wantDx[i] = centralDifference(xd, i, loss);
  expectClose(dDx.host(), wantDx, Check::LayerNormGrads);
  if (!c.affine)
    return;
  // The weight gradients: the scale's kernel, and the bias's sum_to_shape
  // of dy to the normalized shape, as autodiff builds it.
  Buffer<float> dDscale(static_cast<size_t>(size)),
      dDbias(static_cast<size_t>(size));
  dpc_layer_norm_grad_scale(dDy.get(), dX.get(), rows, size, c.epsilon,
                            dDscale.get());
  int64_t dyShape[2] = {rows, size}, biasShape[2] = {1, size};
  dpc_sum_to_shape(dDy.get(), dyShape, dDbias.get(), biasShape, 2, 1.0f);
  Doubles wantDscale(static_cast<size_t>(size)),
      wantDbias(static_cast<size_t>(size));
  for (size_t j = 0; j < size_t(size); ++j) {
    wantDscale[j] = centralDifference(sd, j, loss);
    wantDbias[j] = centralDifference(bd, j, loss);
  }
  expectClose(dDscale.host(), wantDscale, Check::LayerNormGrads);
  expectClose(dDbias.host(), wantDbias, Check::LayerNormGrads);
}

// Rows longer and shorter than a warp, not multiples of 32; with and
// without scale and bias.
INSTANTIATE_TEST_SUITE_P(
    Shapes, LayerNorm,
    ::testing::Values(
        LayerNormConfig{"rows6_size10_affine", 6, 10, true, 1e-5f},
        LayerNormConfig{"rows4_size33_plain", 4, 33, false, 1e-5f},
        LayerNormConfig{"rows1_size7_eps01", 1, 7, true, 0.1f},
        LayerNormConfig{"rows5_size1_affine", 5, 1, true, 1e-3f},
        LayerNormConfig{"rows37_size200_affine", 37, 200, true, 1e-5f},
        LayerNormConfig{"rows5_size7_plain", 5, 7, false, 1e-5f},
        LayerNormConfig{"rows300_size33_affine", 300, 33, true, 1e-5f}),
    byName);

//===----------------------------------------------------------------------===//
// LSTM
//===----------------------------------------------------------------------===//

class Lstm : public TargetKernelTest {};

// The forward against the double reference; the backward's gate and cell
// gradients, turned into every operand's gradient as nn.lstm's gradient
// rule does, against central differences of the reference under the loss
// sum(states * dstates) over the h and c parts (the gates' part of dstates
// is random and must be ignored).
TEST_F(Lstm, ForwardAndGradientsMatchFiniteDifferences) {
  LstmSizes n;
  int64_t T = n.steps, B = n.batch, I = n.input, H = n.hidden;
  Floats x = randomFloats(size_t(T * B * I), 41, -1, 1);
  Floats w = randomFloats(size_t(4 * H * I), 42, -0.8f, 0.8f);
  Floats r = randomFloats(size_t(4 * H * H), 43, -0.8f, 0.8f);
  Floats bias = randomFloats(size_t(8 * H), 44, -0.5f, 0.5f);
  Floats h0 = randomFloats(size_t(B * H), 45, -1, 1);
  Floats c0 = randomFloats(size_t(B * H), 46, -1, 1);
  Buffer<float> dX(x), dW(w), dR(r), dBias(bias), dH0(h0), dC0(c0),
      dStates(size_t(T * B * 6 * H));
  dpc_lstm(dX.get(), dW.get(), dR.get(), dBias.get(), dH0.get(), dC0.get(), T,
           B, I, H, 0, dStates.get());
  Floats states = dStates.host();
  std::vector<Doubles> operands = {toDoubles(x),  toDoubles(w),
                                   toDoubles(r),  toDoubles(bias),
                                   toDoubles(h0), toDoubles(c0)};
  auto reference = [&] {
    return lstm(n, operands[0], operands[1], operands[2], operands[3],
                operands[4], operands[5]);
  };
  expectClose(states, reference(), Check::Lstm);

  Floats dstates = randomFloats(states.size(), 47, -1, 1);
  auto loss = [&] {
    Doubles s = reference();
    double sum = 0;
    for (size_t e = 0; e < s.size(); ++e)
      if (int64_t(e) % (6 * H) < 2 * H)
        sum += s[e] * dstates[e];
    return sum;
  };
  Buffer<float> dDstates(dstates), dOut(size_t(T * B * 5 * H));
  dpc_lstm_grad(dDstates.get(), dStates.get(), dR.get(), dC0.get(), T, B, H, 0,
                dOut.get());
  Floats out = dOut.host();
  auto dz = [&](int64_t t, int64_t b, int64_t g) {
    return double(out[size_t((t * B + b) * 5 * H + g)]);
  };
  auto hPrev = [&](int64_t t, int64_t b, int64_t k) {
    return t == 0 ? double(h0[size_t(b * H + k)])
                  : double(states[size_t(((t - 1) * B + b) * 6 * H + k)]);
  };
  std::vector<Doubles> grads(6);
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

  for (size_t o = 0; o < 6; ++o)
    for (size_t e = 0; e < operands[o].size(); ++e) {
      double numeric = centralDifference(operands[o], e, loss);
      EXPECT_NEAR(grads[o][e], numeric, 1e-4 * std::max(1.0, std::abs(numeric)))
          << "operand " << o << ", element " << e;
    }
}

TEST_F(Lstm, WithoutBiasIsAZeroBias) {
  LstmSizes n;
  int64_t T = n.steps, B = n.batch, I = n.input, H = n.hidden;
  Buffer<float> x(randomFloats(size_t(T * B * I), 51)),
      w(randomFloats(size_t(4 * H * I), 52)),
      r(randomFloats(size_t(4 * H * H), 53)), zero(Floats(size_t(8 * H), 0.0f)),
      h0(randomFloats(size_t(B * H), 54)), c0(randomFloats(size_t(B * H), 55)),
      a(size_t(T * B * 6 * H)), b(size_t(T * B * 6 * H));
  dpc_lstm(x.get(), w.get(), r.get(), nullptr, h0.get(), c0.get(), T, B, I, H,
           0, a.get());
  dpc_lstm(x.get(), w.get(), r.get(), zero.get(), h0.get(), c0.get(), T, B, I,
           H, 0, b.get());
  EXPECT_EQ(a.host(), b.host());
}

//===----------------------------------------------------------------------===//
// Losses
//===----------------------------------------------------------------------===//

class SoftmaxCrossEntropy : public TargetKernelTest {};

TEST_F(SoftmaxCrossEntropy, LossAndGradientMatchReference) {
  struct Case {
    int64_t n, c;
    float spread, scale;
  };
  for (Case k :
       {Case{16, 10, 5.0f, 1.0f / 64}, Case{7, 10, 3.0f, 1.0f / 7},
        // Stability: huge logits.
        Case{64, 10, 1000.0f, 1.0f / 64}, Case{5, 1000, 5.0f, 1.0f / 5}}) {
    SCOPED_TRACE("n " + std::to_string(k.n) + ", c " + std::to_string(k.c));
    Floats logits = randomFloats(size_t(k.n * k.c), 17, -k.spread, k.spread);
    logits[3] = 80.0f; // exp(80) overflows float without the max shift
    std::vector<int64_t> labels(size_t(k.n));
    for (int64_t i = 0; i < k.n; ++i)
      labels[size_t(i)] = (i * 7 + 3) % k.c;
    Doubles grad;
    double loss = softmaxCrossEntropy(logits, labels, k.n, k.c, kNoIgnoredLabel,
                                      k.scale, grad);
    Buffer<float> dLogits(logits), dLoss(1), dGrad(logits.size());
    Buffer<int64_t> dLabels(labels);
    dpc_softmax_cross_entropy(dLogits.get(), dLabels.get(), k.n, k.c, k.scale,
                              dLoss.get());
    dpc_softmax_cross_entropy_grad(dLogits.get(), dLabels.get(), k.n, k.c,
                                   k.scale, dGrad.get());
    expectClose(dLoss.host(), {loss}, Check::Loss);
    expectClose(dGrad.host(), grad, Check::Loss);
  }
}

// torch's ignore_index: the ignored rows add nothing and get a zero
// gradient, whether the index is outside the classes (-100) or one of them.
TEST_F(SoftmaxCrossEntropy, IgnoredRowsAddNothing) {
  struct Case {
    int64_t n, c, every, ignoredClass;
    float spread, scale;
  };
  for (Case k :
       {Case{12, 6, 3, 3, 4.0f, 0.125f}, Case{40, 37, 4, 5, 6.0f, 1.0f / 29}}) {
    Floats logits = randomFloats(size_t(k.n * k.c), 22, -k.spread, k.spread);
    for (int64_t ignore : {int64_t(-100), k.ignoredClass}) {
      SCOPED_TRACE("n " + std::to_string(k.n) + ", ignore_index " +
                   std::to_string(ignore));
      std::vector<int64_t> labels(size_t(k.n));
      for (int64_t i = 0; i < k.n; ++i)
        labels[size_t(i)] = i % k.every == 1 ? ignore : (i * 7 + 3) % k.c;
      Doubles grad;
      double loss =
          softmaxCrossEntropy(logits, labels, k.n, k.c, ignore, k.scale, grad);
      Buffer<float> dLogits(logits), dLoss(1), dGrad(logits.size());
      Buffer<int64_t> dLabels(labels);
      dpc_softmax_cross_entropy_ignore(dLogits.get(), dLabels.get(), k.n, k.c,
                                       ignore, k.scale, dLoss.get());
      dpc_softmax_cross_entropy_ignore_grad(dLogits.get(), dLabels.get(), k.n,
                                            k.c, ignore, k.scale, dGrad.get());
      expectClose(dLoss.host(), {loss}, Check::Loss);
      expectClose(dGrad.host(), grad, Check::Loss);
    }
  }
}

// torch's label_smoothing, with and without ignored rows: the kernels'
// closed form against the cross-entropy with the smoothed target.
TEST_F(SoftmaxCrossEntropy, LabelSmoothingMatchesTheSmoothedTarget) {
  const int64_t n = 24, c = 11;
  Floats logits = randomFloats(size_t(n * c), 31, -6.0f, 6.0f);
  for (float smoothing : {0.1f, 0.5f}) {
    for (bool ignoring : {false, true}) {
      SCOPED_TRACE("smoothing " + std::to_string(smoothing) +
                   (ignoring ? ", ignoring -100" : ""));
      const int64_t ignore = ignoring ? -100 : kNoIgnoredLabel;
      std::vector<int64_t> labels(static_cast<size_t>(n));
      for (int64_t i = 0; i < n; ++i)
        labels[size_t(i)] = ignoring && i % 5 == 2 ? ignore : (i * 7 + 3) % c;
      const float scale = 1.0f / 19;
      Doubles grad;
      double loss = softmaxCrossEntropy(logits, labels, n, c, ignore, scale,
                                        grad, smoothing);
      Buffer<float> dLogits(logits), dLoss(1), dGrad(logits.size());
      Buffer<int64_t> dLabels(labels);
      dpc_softmax_cross_entropy_smoothed(dLogits.get(), dLabels.get(), n, c,
                                         ignoring, ignore, smoothing, scale,
                                         dLoss.get());
      dpc_softmax_cross_entropy_smoothed_grad(dLogits.get(), dLabels.get(), n,
                                              c, ignoring, ignore, smoothing,
                                              scale, dGrad.get());
      expectClose(dLoss.host(), {loss}, Check::Loss);
      expectClose(dGrad.host(), grad, Check::Loss);
      // Smoothing moves every target of a counted row by at least e / c, so
      // the unsmoothed gradient is that far off somewhere.
      Doubles plainGrad;
      softmaxCrossEntropy(logits, labels, n, c, ignore, scale, plainGrad);
      Floats got = dGrad.host();
      double apart = 0;
      for (size_t k = 0; k < got.size(); ++k)
        apart = std::max(apart, std::fabs(got[k] - plainGrad[k]));
      EXPECT_GT(apart, 0.5 * scale * smoothing / double(c));
    }
  }
}

class MseLoss : public TargetKernelTest {};

TEST_F(MseLoss, LossAndGradientMatchReference) {
  // Past one block's 1024 threads, so that threads sum several elements.
  for (int64_t n : {int64_t(7), int64_t(24), int64_t(3000)}) {
    SCOPED_TRACE("n " + std::to_string(n));
    Floats prediction = randomFloats(size_t(n), 23, -3, 3);
    Floats target = randomFloats(size_t(n), 24, -3, 3);
    // 1 / (2 microbatches x n elements): the minibatch mean's share.
    float scale = 1.0f / float(2 * n);
    Doubles grad;
    double loss = mseLoss(prediction, target, scale, grad);
    Buffer<float> dP(prediction), dT(target), dLoss(1),
        dGrad(static_cast<size_t>(n));
    dpc_mse_loss(dP.get(), dT.get(), n, scale, dLoss.get());
    dpc_mse_loss_grad(dP.get(), dT.get(), n, scale, dGrad.get());
    expectClose(dLoss.host(), {loss}, Check::Loss);
    expectClose(dGrad.host(), grad, Check::Loss);
  }
}

TEST_F(MseLoss, ExactTargetsGiveZeroLossAndGradient) {
  Buffer<float> prediction(Floats{1.5f, -2.0f, 0.25f}), loss(1), grad(3);
  dpc_mse_loss(prediction.get(), prediction.get(), 3, 0.5f, loss.get());
  dpc_mse_loss_grad(prediction.get(), prediction.get(), 3, 0.5f, grad.get());
  EXPECT_EQ(loss.host(), Floats{0.0f});
  EXPECT_EQ(grad.host(), Floats(3, 0.0f));
  // One element off by 2: scale * 4, and 2 * scale * 2 on that element.
  Buffer<float> target(Floats{1.5f, -4.0f, 0.25f});
  dpc_mse_loss(prediction.get(), target.get(), 3, 0.5f, loss.get());
  dpc_mse_loss_grad(prediction.get(), target.get(), 3, 0.5f, grad.get());
  EXPECT_EQ(loss.host(), Floats{2.0f});
  EXPECT_EQ(grad.host(), (Floats{0.0f, 2.0f, 0.0f}));
}

//===----------------------------------------------------------------------===//
// Gather (embedding) and masks
//===----------------------------------------------------------------------===//

class Gather : public TargetKernelTest {};

TEST_F(Gather, RowsAndScatteredGradientMatchLoops) {
  int64_t rows = 7, width = 3;
  Floats table = randomFloats(size_t(rows * width), 31);
  // Repeats (rows 2 and 6 twice) and a negative index (-1 is row 6).
  std::vector<int64_t> indices = {2, 0, 6, 2, -1, 5};
  int64_t n = int64_t(indices.size());
  Floats dy = randomFloats(size_t(n * width), 32);
  Doubles rowsRead(size_t(n * width));
  // The gradient adds each row of dy into the row it was read from, in the
  // order of the indices (bit for bit: the sums do not depend on threads);
  // rows nothing read are zero.
  Floats dtable(size_t(rows * width), 0.0f);
  for (int64_t i = 0; i < n; ++i) {
    int64_t row = gatherRow(indices[size_t(i)], rows);
    for (int64_t j = 0; j < width; ++j) {
      rowsRead[size_t(i * width + j)] = table[size_t(row * width + j)];
      dtable[size_t(row * width + j)] += dy[size_t(i * width + j)];
    }
  }
  Buffer<float> dTable(table), dOut(size_t(n * width)), dDy(dy),
      dDtable(table.size());
  Buffer<int64_t> dIndices(indices);
  dpc_gather(dTable.get(), dIndices.get(), rows, width, n, dOut.get());
  dpc_gather_grad(dDy.get(), dIndices.get(), rows, width, n, dDtable.get());
  expectClose(dOut.host(), rowsRead, Check::Selection);
  EXPECT_EQ(dDtable.host(), dtable);
}

class Masks : public TargetKernelTest {};

TEST_F(Masks, CompareCastAndLogicBroadcast) {
  // ids == pad over [2, 3] against a scalar; x < a row [3].
  using Bytes = std::vector<uint8_t>;
  int64_t idsShape[] = {2, 3}, one[] = {1, 1}, rowShape[] = {1, 3};
  Buffer<int64_t> ids(std::vector<int64_t>{4, 0, 7, 0, 0, 2}),
      pad(std::vector<int64_t>{0});
  Buffer<float> x(Floats{1, 2, 3, 4, 5, 6}), row(Floats{2, 2, 7});
  Buffer<uint8_t> eq(6), lt(6), ge(6), both(6), negated(6);
  dpc_compare(DPC_COMPARE_EQ, DPC_DTYPE_I64, ids.get(), idsShape, pad.get(),
              one, eq.get(), idsShape, 2);
  EXPECT_EQ(eq.host(), (Bytes{0, 1, 0, 1, 1, 0}));
  dpc_compare(DPC_COMPARE_LT, DPC_DTYPE_F32, x.get(), idsShape, row.get(),
              rowShape, lt.get(), idsShape, 2);
  EXPECT_EQ(lt.host(), (Bytes{1, 0, 1, 0, 0, 1}));
  dpc_compare(DPC_COMPARE_GE, DPC_DTYPE_F32, x.get(), idsShape, row.get(),
              rowShape, ge.get(), idsShape, 2);
  EXPECT_EQ(ge.host(), (Bytes{0, 1, 0, 1, 1, 0}));
  dpc_compare(DPC_COMPARE_OR, DPC_DTYPE_BOOL, eq.get(), idsShape, lt.get(),
              idsShape, both.get(), idsShape, 2);
  EXPECT_EQ(both.host(), (Bytes{1, 1, 1, 1, 1, 1}));
  dpc_compare(DPC_COMPARE_AND, DPC_DTYPE_BOOL, eq.get(), idsShape, lt.get(),
              idsShape, both.get(), idsShape, 2);
  EXPECT_EQ(both.host(), (Bytes{0, 0, 0, 0, 0, 0}));
  dpc_not(eq.get(), negated.get(), 6);
  EXPECT_EQ(negated.host(), (Bytes{1, 0, 1, 0, 0, 1}));
  // Casts: float to bool is != 0, bool to float 0/1, float to int truncates.
  Buffer<float> f(Floats{0.0f, -0.5f, 2.75f, -3.5f}), back(4);
  Buffer<uint8_t> b(4);
  Buffer<int64_t> i(4);
  dpc_cast(DPC_DTYPE_F32, DPC_DTYPE_BOOL, f.get(), b.get(), 4);
  EXPECT_EQ(b.host(), (Bytes{0, 1, 1, 1}));
  dpc_cast(DPC_DTYPE_BOOL, DPC_DTYPE_F32, b.get(), back.get(), 4);
  EXPECT_EQ(back.host(), (Floats{0, 1, 1, 1}));
  dpc_cast(DPC_DTYPE_F32, DPC_DTYPE_I64, f.get(), i.get(), 4);
  EXPECT_EQ(i.host(), (std::vector<int64_t>{0, 0, 2, -3}));
}

/// dpc_cast's edge cases, the same on every target (backends/common/Cast.h):
/// float to int64 truncates, NaN gives 0 and values beyond int64 saturate;
/// to bool NaN and -0 are != 0 and == 0; int64 to float rounds to nearest.
TEST_F(Masks, CastEdgeCasesAreTheSameOnEveryTarget) {
  using Bytes = std::vector<uint8_t>;
  using Ints = std::vector<int64_t>;
  const float inf = std::numeric_limits<float>::infinity();
  Floats f = {std::numeric_limits<float>::quiet_NaN(),
              inf,
              -inf,
              1e19f,
              -1e19f,
              -9223372036854775808.0f,
              2.75f,
              -2.75f,
              -0.0f,
              1e-45f};
  int64_t n = int64_t(f.size());
  Buffer<float> dF(f);
  Buffer<int64_t> dI(f.size());
  Buffer<uint8_t> dB(f.size());
  dpc_cast(DPC_DTYPE_F32, DPC_DTYPE_I64, dF.get(), dI.get(), n);
  Ints want;
  for (float v : f)
    want.push_back(castToInt64(v));
  EXPECT_EQ(dI.host(), want);
  EXPECT_EQ(dI.host()[0], 0) << "NaN";
  EXPECT_EQ(dI.host()[1], std::numeric_limits<int64_t>::max()) << "inf";
  EXPECT_EQ(dI.host()[5], std::numeric_limits<int64_t>::min()) << "-2^63";
  dpc_cast(DPC_DTYPE_F32, DPC_DTYPE_BOOL, dF.get(), dB.get(), n);
  EXPECT_EQ(dB.host(), (Bytes{1, 1, 1, 1, 1, 1, 1, 1, 0, 1}));

  Ints ints = {std::numeric_limits<int64_t>::max(),
               std::numeric_limits<int64_t>::min(), 16777217, -16777219, 0};
  Buffer<int64_t> dInts(ints);
  Buffer<float> dBack(ints.size());
  Buffer<uint8_t> dIntBools(ints.size());
  dpc_cast(DPC_DTYPE_I64, DPC_DTYPE_F32, dInts.get(), dBack.get(),
           int64_t(ints.size()));
  EXPECT_EQ(dBack.host(),
            (Floats{9223372036854775808.0f, -9223372036854775808.0f,
                    16777216.0f, -16777220.0f, 0.0f}));
  dpc_cast(DPC_DTYPE_I64, DPC_DTYPE_BOOL, dInts.get(), dIntBools.get(),
           int64_t(ints.size()));
  EXPECT_EQ(dIntBools.host(), (Bytes{1, 1, 1, 1, 0}));
  Buffer<uint8_t> bools(Bytes{0, 1});
  Buffer<int64_t> boolInts(2);
  dpc_cast(DPC_DTYPE_BOOL, DPC_DTYPE_I64, bools.get(), boolInts.get(), 2);
  EXPECT_EQ(boolInts.host(), (Ints{0, 1}));
}

// masked_fill of [B, T, T] scores by a causal mask [1, T, T] and -inf, and by
// a padding mask [B, 1, T] broadcast over rows and -1e9, with the gradients
// of both branches.
TEST_F(Masks, WhereAndItsGradientsMatchLoops) {
  const int64_t b = 2, t = 3;
  std::vector<uint8_t> causal(size_t(t * t)), padding = { 0, 1, 0, 1, 1, 0 };
  for (int64_t i = 0; i < t; ++i)
    for (int64_t j = 0; j < t; ++j)
      causal[size_t(i * t + j)] = j > i;
  struct Case {
    const char *name;
    std::vector<uint8_t> mask;
    Shape maskShape;
    float fill;
  };
  for (const Case &c : {Case{"causal",
                             causal,
                             {1, t, t},
                             -std::numeric_limits<float>::infinity()},
                        Case{"padding", padding, {b, 1, t}, -1e9f}}) {
    SCOPED_TRACE(c.name);
    Floats scores = randomFloats(size_t(b * t * t), 41, -1, 1);
    Floats dy = randomFloats(scores.size(), 42, -1, 1);
    Shape yShape = {b, t, t}, scalar = {1, 1, 1};
    Buffer<uint8_t> dMask(c.mask);
    Buffer<float> dFill(Floats{c.fill}), dScores(scores), dY(scores.size()),
        dDy(dy), dTrue(dy.size()), dFalse(dy.size());
    dpc_where(dMask.get(), c.maskShape.data(), dFill.get(), scalar.data(),
              dScores.get(), yShape.data(), dY.get(), yShape.data(), 3);
    dpc_where_grad(dMask.get(), c.maskShape.data(), dDy.get(), dTrue.get(),
                   yShape.data(), 3, 1);
    dpc_where_grad(dMask.get(), c.maskShape.data(), dDy.get(), dFalse.get(),
                   yShape.data(), 3, 0);
    Doubles y(scores.size()), gTrue(dy.size()), gFalse(dy.size());
    for (size_t e = 0; e < scores.size(); ++e) {
      bool masked = c.mask[broadcastIndex(e, yShape, c.maskShape)];
      y[e] = masked ? c.fill : scores[e];
      gTrue[e] = masked ? dy[e] : 0.0;
      gFalse[e] = masked ? 0.0 : dy[e];
    }
    expectClose(dY.host(), y, Check::Selection);
    expectClose(dTrue.host(), gTrue, Check::Selection);
    expectClose(dFalse.host(), gFalse, Check::Selection);
  }
}

//===----------------------------------------------------------------------===//
// Gradient accumulation and optimizer steps (the target's Device)
//===----------------------------------------------------------------------===//

class Optimizer : public TargetKernelTest {};

TEST_F(Optimizer, SgdMatchesTorchSemantics) {
  dpc::runtime::Device &device = *targetDevice();
  const size_t n = 1000;
  const float lr = 0.05f, momentum = 0.9f, decay = 1e-3f;
  Floats p = randomFloats(n, 19);
  Doubles refP = toDoubles(p), refV(n, 0.0);
  Buffer<float> dP(p), dV(Floats(n, 0.0f)), dAcc(Floats(n, 0.0f));
  for (uint32_t step = 0; step < 3; ++step) {
    // Two microbatches' gradients accumulated, then one step.
    Floats g1 = randomFloats(n, 20 + step), g2 = randomFloats(n, 40 + step);
    Buffer<float> dG1(g1), dG2(g2);
    device.accumulate(dAcc.get(), dG1.get(), n);
    device.accumulate(dAcc.get(), dG2.get(), n);
    device.sgdStep(dP.get(), dV.get(), dAcc.get(), n, lr, momentum, decay);
    Doubles g(n);
    for (size_t i = 0; i < n; ++i)
      g[i] = double(g1[i]) + g2[i];
    sgdStep(refP, refV, g, lr, momentum, decay);
  }
  expectClose(dP.host(), refP, Check::Optimizer);
  expectClose(dV.host(), refV, Check::Optimizer);
  expectClose(dAcc.host(), Doubles(n, 0.0), Check::Selection);

  // Plain SGD needs no momentum buffer.
  Floats q = randomFloats(n, 60), g = randomFloats(n, 61);
  Buffer<float> dQ(q), dAcc2(g);
  device.sgdStep(dQ.get(), nullptr, dAcc2.get(), n, lr, 0.0f, 0.0f);
  Doubles refQ = toDoubles(q), unused;
  sgdStep(refQ, unused, toDoubles(g), lr, 0.0, 0.0);
  expectClose(dQ.host(), refQ, Check::Optimizer);
}

TEST_F(Optimizer, AdamMatchesTorchSemantics) {
  dpc::runtime::Device &device = *targetDevice();
  const size_t n = 1000;
  const double lr = 1e-3, beta1 = 0.9, beta2 = 0.999, eps = 1e-8, decay = 1e-2;
  Floats p = randomFloats(n, 23);
  Doubles refP = toDoubles(p), refM(n, 0.0), refV(n, 0.0);
  Buffer<float> dP(p), dM(Floats(n, 0.0f)), dV(Floats(n, 0.0f)),
      dAcc(Floats(n, 0.0f));
  for (int t = 1; t <= 4; ++t) {
    Floats g = randomFloats(n, 70 + uint32_t(t));
    Buffer<float> dG(g);
    device.accumulate(dAcc.get(), dG.get(), n);
    device.adamStep(dP.get(), dM.get(), dV.get(), dAcc.get(), n,
                    dpc::runtime::AdamStep(float(lr), float(beta1),
                                           float(beta2), float(eps),
                                           float(decay), t));
    adamStep(refP, refM, refV, toDoubles(g), lr, beta1, beta2, eps, decay, t);
  }
  expectClose(dP.host(), refP, Check::Optimizer);
  expectClose(dM.host(), refM, Check::Optimizer);
  expectClose(dV.host(), refV, Check::Optimizer);
  expectClose(dAcc.host(), Doubles(n, 0.0), Check::Selection);
}

//===----------------------------------------------------------------------===//
// Resize
//===----------------------------------------------------------------------===//

using Resize = TargetKernelShapesTest<ResizeConfig>;

/// nn.resize's ABI parameters for config `c` (its scales are thousandths).
dpc_resize_params resizeParams(const ResizeConfig &c) {
  dpc_resize_params p{c.mode, c.coordinates, c.rounding, {0, 0, 0}, {1, 1, 1}};
  for (size_t a = 0; a < c.scales.size(); ++a) {
    p.scale_num[a] = std::lround(c.scales[a] * 1000);
    p.scale_den[a] = 1000;
  }
  return p;
}

// The forward against the double reference, the gradient against the
// reference's scatter and against central differences of the forward.
TEST_P(Resize, ForwardAndGradientMatchReferenceAndFiniteDifferences) {
  const ResizeConfig &c = GetParam();
  Floats x = randomFloats(countOf(c.x), 91, -2, 2);
  Floats dy = randomFloats(countOf(c.y), 92);
  dpc_resize_params params = resizeParams(c);
  int64_t rank = int64_t(c.x.size());
  Buffer<float> dX(x), dY(countOf(c.y)), dDy(dy), dDx(x.size());
  dpc_resize(dX.get(), c.x.data(), dY.get(), c.y.data(), rank, &params);
  dpc_resize_grad(dDy.get(), c.y.data(), dDx.get(), c.x.data(), rank, &params);
  Doubles xd = toDoubles(x);
  expectClose(dY.host(), resize(c, xd), Check::Resize);
  expectClose(dDx.host(), resizeGrad(c, dy), Check::Resize);
  auto loss = [&] {
    Doubles y = resize(c, xd);
    double sum = 0;
    for (size_t i = 0; i < y.size(); ++i)
      sum += dy[i] * y[i];
    return sum;
  };
  Doubles numeric(x.size());
  for (size_t i = 0; i < x.size(); ++i)
    numeric[i] = centralDifference(xd, i, loss);
  expectClose(dDx.host(), numeric, Check::Resize);
}

// Each mode, coordinate transformation and rounding rule, 1-D to 3-D, up
// and down, by scales and by sizes (scale 0).
INSTANTIATE_TEST_SUITE_P(
    Shapes, Resize,
    ::testing::Values(
        ResizeConfig{"BilinearHalfPixelX2",
                     {2, 3, 5, 7},
                     {2, 3, 10, 14},
                     1,
                     0,
                     0,
                     {2, 2}},
        ResizeConfig{"BilinearAlignCornersSizes",
                     {1, 2, 4, 5},
                     {1, 2, 7, 9},
                     1,
                     2,
                     0,
                     {0, 0}},
        ResizeConfig{"BilinearDownByScales",
                     {1, 1, 4, 6},
                     {1, 1, 2, 3},
                     1,
                     0,
                     0,
                     {0.6, 0.6}},
        ResizeConfig{
            "LinearPytorchHalfPixelDown", {2, 2, 9}, {2, 2, 4}, 1, 1, 0, {0}},
        ResizeConfig{"LinearToOne", {1, 2, 6}, {1, 2, 1}, 1, 1, 0, {0}},
        ResizeConfig{"TrilinearAsymmetric",
                     {1, 1, 3, 3, 4},
                     {1, 1, 6, 6, 8},
                     1,
                     3,
                     0,
                     {2, 2, 2}},
        ResizeConfig{"NearestFloorAsymmetricX2",
                     {2, 3, 5, 4},
                     {2, 3, 10, 8},
                     0,
                     3,
                     2,
                     {2, 2}},
        ResizeConfig{"NearestRoundPreferFloor",
                     {1, 2, 3, 4},
                     {1, 2, 9, 5},
                     0,
                     0,
                     0,
                     {3, 0}},
        ResizeConfig{"NearestCeil3d",
                     {1, 2, 3, 4, 5},
                     {1, 2, 5, 6, 7},
                     0,
                     0,
                     3,
                     {0, 0, 0}},
        ResizeConfig{
            "NearestRoundPreferCeilTf", {2, 1, 7}, {2, 1, 3}, 0, 4, 1, {0}},
        ResizeConfig{"NearestAlignCornersDown",
                     {1, 3, 8, 6},
                     {1, 3, 3, 4},
                     0,
                     2,
                     2,
                     {0, 0}}),
    byName);

} // namespace
