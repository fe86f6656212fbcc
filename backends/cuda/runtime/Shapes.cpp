//===- Shapes.cpp - Host-side planning of broadcasts, reductions, GEMMs ---===//
//
// The kernels index with one division per dimension, so the fewer the
// dimensions the faster they run: adjacent dimensions that broadcast (or
// reduce) the same way are merged before launching, which turns the common
// cases (bias over channels, a sum over the batch) into rank 2 or 3.
//
//===----------------------------------------------------------------------===//

#include "backends/cuda/runtime/Internal.h"

#include <algorithm>

namespace dpc::cuda {

static std::string shapeText(const int64_t *shape, int64_t rank) {
  std::string text = "[";
  for (int64_t d = 0; d < rank; ++d)
    text += (d ? ", " : "") + std::to_string(shape[d]);
  return text + "]";
}

BroadcastPlan planBroadcast(const int64_t *aShape, const int64_t *bShape,
                            const int64_t *yShape, int64_t rank) {
  BroadcastPlan plan;
  std::vector<bool> aBroadcast, bBroadcast;
  for (int64_t d = 0; d < rank; ++d) {
    int64_t y = yShape[d], a = aShape[d], b = bShape[d];
    if (y < 0 || (a != y && a != 1) || (b != y && b != 1))
      fail("dpc_binary: shapes " + shapeText(aShape, rank) + " and " +
           shapeText(bShape, rank) + " do not broadcast to " +
           shapeText(yShape, rank));
    plan.count *= y;
    if (y == 1)
      continue;
    bool aB = a != y, bB = b != y;
    if (!plan.shape.empty() && aBroadcast.back() == aB &&
        bBroadcast.back() == bB) {
      plan.shape.back() *= y;
      continue;
    }
    plan.shape.push_back(y);
    aBroadcast.push_back(aB);
    bBroadcast.push_back(bB);
  }
  size_t n = plan.shape.size();
  plan.aStrides.assign(n, 0);
  plan.bStrides.assign(n, 0);
  int64_t aRun = 1, bRun = 1;
  for (size_t i = n; i-- > 0;) {
    if (!aBroadcast[i]) {
      plan.aStrides[i] = aRun;
      aRun *= plan.shape[i];
    }
    if (!bBroadcast[i]) {
      plan.bStrides[i] = bRun;
      bRun *= plan.shape[i];
    }
  }
  return plan;
}

ReducePlan planReduce(const int64_t *xShape, const int64_t *yShape,
                      int64_t rank) {
  ReducePlan plan;
  // Built from the innermost dimension outwards, where the strides are
  // known, then reversed.
  int64_t stride = 1;
  int lastKind = -1; // 0 kept, 1 reduced
  for (int64_t d = rank; d-- > 0;) {
    int64_t x = xShape[d], y = yShape[d];
    if (x < 0 || (y != x && y != 1))
      fail("dpc_sum_to_shape: cannot sum " + shapeText(xShape, rank) + " to " +
           shapeText(yShape, rank));
    if (x == 1) {
      continue;
    }
    int kind = y == 1 ? 1 : 0;
    std::vector<int64_t> &sizes = kind ? plan.reducedSizes : plan.keptSizes;
    std::vector<int64_t> &strides =
        kind ? plan.reducedStrides : plan.keptStrides;
    if (kind == lastKind) {
      sizes.back() *= x;
    } else {
      sizes.push_back(x);
      strides.push_back(stride);
    }
    (kind ? plan.reduced : plan.outputs) *= x;
    stride *= x;
    lastKind = kind;
  }
  std::reverse(plan.keptSizes.begin(), plan.keptSizes.end());
  std::reverse(plan.keptStrides.begin(), plan.keptStrides.end());
  std::reverse(plan.reducedSizes.begin(), plan.reducedSizes.end());
  std::reverse(plan.reducedStrides.begin(), plan.reducedStrides.end());
  return plan;
}

TransposePlan planTranspose(const int64_t *xShape, const int64_t *perm,
                            int64_t rank) {
  std::vector<int64_t> xStrides(size_t(std::max<int64_t>(rank, 0)), 1);
  for (int64_t d = rank - 2; d >= 0; --d)
    xStrides[size_t(d)] = xStrides[size_t(d + 1)] * xShape[d + 1];
  std::vector<bool> seen(xStrides.size(), false);
  TransposePlan plan;
  for (int64_t d = 0; d < rank; ++d) {
    int64_t p = perm[d];
    if (p < 0 || p >= rank || seen[size_t(p)])
      fail("dpc_transpose: " + shapeText(perm, rank) +
           " is not a permutation of " + std::to_string(rank) + " dimensions");
    seen[size_t(p)] = true;
    int64_t size = xShape[p], stride = xStrides[size_t(p)];
    plan.count *= size;
    if (size == 1)
      continue;
    // Contiguous with the previous result dimension in the input too: one
    // dimension of both sizes.
    if (!plan.sizes.empty() && plan.strides.back() == stride * size) {
      plan.sizes.back() *= size;
      plan.strides.back() = stride;
    } else {
      plan.sizes.push_back(size);
      plan.strides.push_back(stride);
    }
  }
  return plan;
}

GemmStrategy planGemm(int64_t batch, int64_t m, int64_t n, int64_t k,
                      bool transposeA, bool transposeB, int64_t aStride,
                      int64_t bStride, bool accumulate) {
  if (!accumulate || batch <= 1)
    return GemmStrategy::Batched;
  if (aStride == 0 && bStride == 0)
    return GemmStrategy::ScaleByBatch;
  // sum_b A_b^T B_b = [A_0; A_1; ...]^T [B_0; B_1; ...] when both stacks are
  // contiguous: the weight gradient of a matmul over a batched input.
  if (transposeA && !transposeB && aStride == m * k && bStride == k * n)
    return GemmStrategy::FoldBatchIntoK;
  if (batch <= 4)
    return GemmStrategy::Chain;
  return GemmStrategy::BatchedThenSum;
}

} // namespace dpc::cuda
