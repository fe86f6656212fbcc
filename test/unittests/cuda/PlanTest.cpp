//===- PlanTest.cpp - Host-side planning of the CUDA kernels --------------===//
//
// The shape logic that decides how a kernel is launched runs on the host, so
// it is tested here on every machine, with or without a GPU.
//
//===----------------------------------------------------------------------===//

#include "backends/cuda/runtime/Internal.h"
#include "dpc/runtime/CudaKernels.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <stdexcept>

using namespace dpc::cuda;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

namespace {

[[noreturn]] void throwingHandler(const char *message) {
  throw std::runtime_error(message);
}

class Plan : public ::testing::Test {
protected:
  void SetUp() override { dpc_cuda_set_error_handler(throwingHandler); }
  void TearDown() override { dpc_cuda_set_error_handler(nullptr); }
};

} // namespace

TEST_F(Plan, BroadcastMergesBiasOverRows) {
  int64_t a[] = {8, 4, 5}, b[] = {1, 1, 5}, y[] = {8, 4, 5};
  BroadcastPlan plan = planBroadcast(a, b, y, 3);
  EXPECT_THAT(plan.shape, ElementsAre(32, 5));
  EXPECT_THAT(plan.aStrides, ElementsAre(5, 1));
  EXPECT_THAT(plan.bStrides, ElementsAre(0, 1));
  EXPECT_EQ(plan.count, 160);
}

TEST_F(Plan, BroadcastBothSidesAndUnitDims) {
  int64_t a[] = {2, 1, 3, 1}, b[] = {1, 4, 1, 1}, y[] = {2, 4, 3, 1};
  BroadcastPlan plan = planBroadcast(a, b, y, 4);
  EXPECT_THAT(plan.shape, ElementsAre(2, 4, 3));
  EXPECT_THAT(plan.aStrides, ElementsAre(3, 0, 1));
  EXPECT_THAT(plan.bStrides, ElementsAre(0, 1, 0));
}

TEST_F(Plan, BroadcastSameShapeIsOneDimension) {
  int64_t s[] = {3, 4, 5};
  BroadcastPlan plan = planBroadcast(s, s, s, 3);
  EXPECT_THAT(plan.shape, ElementsAre(60));
}

TEST_F(Plan, BroadcastMismatchReportsShapes) {
  int64_t a[] = {2, 3}, b[] = {2, 4}, y[] = {2, 4};
  try {
    planBroadcast(a, b, y, 2);
    FAIL() << "expected an error";
  } catch (const std::runtime_error &e) {
    EXPECT_THAT(e.what(),
                HasSubstr("cuda: dpc_binary: shapes [2, 3] and [2, 4] "
                          "do not broadcast to [2, 4]"));
  }
}

TEST_F(Plan, AddMismatchFailsBeforeTouchingTheDevice) {
  int64_t a[] = {2, 3}, b[] = {5, 3}, y[] = {2, 3};
  EXPECT_THROW(
      dpc_binary(DPC_BINARY_ADD, nullptr, a, nullptr, b, nullptr, y, 2),
      std::runtime_error);
}

TEST_F(Plan, ReduceBiasGradient) {
  int64_t x[] = {8, 16, 5, 5}, y[] = {1, 16, 1, 1};
  ReducePlan plan = planReduce(x, y, 4);
  EXPECT_THAT(plan.keptSizes, ElementsAre(16));
  EXPECT_THAT(plan.keptStrides, ElementsAre(25));
  EXPECT_THAT(plan.reducedSizes, ElementsAre(8, 25));
  EXPECT_THAT(plan.reducedStrides, ElementsAre(400, 1));
  EXPECT_EQ(plan.outputs, 16);
  EXPECT_EQ(plan.reduced, 200);
}

TEST_F(Plan, ReduceMergesAdjacentDims) {
  int64_t x[] = {2, 3, 4, 5}, y[] = {1, 1, 4, 5};
  ReducePlan plan = planReduce(x, y, 4);
  EXPECT_THAT(plan.keptSizes, ElementsAre(20));
  EXPECT_THAT(plan.reducedSizes, ElementsAre(6));
  EXPECT_THAT(plan.reducedStrides, ElementsAre(20));
}

TEST_F(Plan, ReduceRejectsBadTarget) {
  int64_t x[] = {2, 3}, y[] = {2, 2};
  EXPECT_THROW(planReduce(x, y, 2), std::runtime_error);
}

TEST_F(Plan, TransposeOfTheLastTwoDims) {
  int64_t x[] = {8, 28, 16}, perm[] = {0, 2, 1};
  TransposePlan plan = planTranspose(x, perm, 3);
  EXPECT_THAT(plan.sizes, ElementsAre(8, 16, 28));
  EXPECT_THAT(plan.strides, ElementsAre(448, 1, 16));
  EXPECT_EQ(plan.count, 8 * 28 * 16);
}

// Heads moved before tokens: batch and heads stay apart, the feature
// dimension stays contiguous; unit dimensions drop out.
TEST_F(Plan, TransposeMergesRunsAndDropsUnitDims) {
  int64_t x[] = {2, 5, 3, 4}, perm[] = {0, 2, 1, 3};
  TransposePlan heads = planTranspose(x, perm, 4);
  EXPECT_THAT(heads.sizes, ElementsAre(2, 3, 5, 4));
  EXPECT_THAT(heads.strides, ElementsAre(60, 4, 12, 1));
  int64_t y[] = {2, 1, 3, 4}, keep[] = {1, 0, 2, 3};
  TransposePlan merged = planTranspose(y, keep, 4);
  EXPECT_THAT(merged.sizes, ElementsAre(24));
  EXPECT_THAT(merged.strides, ElementsAre(1));
}

TEST_F(Plan, TransposeRejectsARepeatedDimension) {
  int64_t x[] = {2, 3}, perm[] = {0, 0};
  EXPECT_THAT([&] { planTranspose(x, perm, 2); },
              ::testing::ThrowsMessage<std::runtime_error>(
                  HasSubstr("dpc_transpose: [0, 0] is not a permutation")));
}

TEST_F(Plan, GemmStrategies) {
  // Plain and batched products.
  EXPECT_EQ(planGemm(1, 4, 5, 6, false, false, 0, 0, false),
            GemmStrategy::Batched);
  EXPECT_EQ(planGemm(8, 4, 5, 6, false, true, 24, 0, false),
            GemmStrategy::Batched);
  // Weight gradient of a batched matmul: x^T dy over the batch.
  EXPECT_EQ(planGemm(8, 6, 5, 4, true, false, 24, 20, true),
            GemmStrategy::FoldBatchIntoK);
  EXPECT_EQ(planGemm(8, 4, 5, 6, false, false, 0, 0, true),
            GemmStrategy::ScaleByBatch);
  EXPECT_EQ(planGemm(3, 4, 5, 6, false, true, 24, 30, true),
            GemmStrategy::Chain);
  EXPECT_EQ(planGemm(16, 4, 5, 6, false, true, 24, 30, true),
            GemmStrategy::BatchedThenSum);
  // A strided (not contiguous) stack cannot fold.
  EXPECT_EQ(planGemm(16, 6, 5, 4, true, false, 48, 20, true),
            GemmStrategy::BatchedThenSum);
}
