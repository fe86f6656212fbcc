//===- CudaKernelTest.cpp - What only the CUDA kernels promise ------------===//
//
// Linked into dpc-cuda-kernel-tests beside the conformance suite: the
// kernels enqueue on the library's current stream (CudaKernels.h), and an
// embedding index outside the table gives a NaN row where the CPU kernel
// stops the run. Without a GPU every test skips and says why.
//
//===----------------------------------------------------------------------===//

#include "test/unittests/kernels/Reference.h"
#include "test/unittests/kernels/TargetDevice.h"

#include "dpc/runtime/CudaKernels.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

using namespace dpc::testing;

namespace {

class CudaKernels : public TargetKernelTest {};

TEST_F(CudaKernels, KernelsFollowTheCurrentStream) {
  Floats x = randomFloats(1 << 20, 21);
  Buffer<float> dX(x), dY(x.size());
  targetDevice()->synchronize();
  cudaStream_t stream, previous = dpc_cuda_stream();
  ASSERT_EQ(cudaStreamCreate(&stream), cudaSuccess);
  dpc_cuda_set_stream(stream);
  EXPECT_EQ(dpc_cuda_stream(), stream);
  dpc_relu(dX.get(), dY.get(), int64_t(x.size()));
  // Switching back waits for the relu on `stream`.
  dpc_cuda_set_stream(previous);
  Doubles want(x.size());
  for (size_t i = 0; i < x.size(); ++i)
    want[i] = x[i] > 0 ? x[i] : 0.0;
  expectClose(dY.host(), want, {Tolerance::RelativeToRms, 0});
  cudaStreamDestroy(stream);
}

TEST_F(CudaKernels, GatherGivesNaNForAnIndexOutsideTheTable) {
  int64_t rows = 7, width = 3;
  Floats table = randomFloats(size_t(rows * width), 31);
  // Repeats, a negative index, and one outside the table (its row is NaN,
  // and its gradient goes nowhere).
  std::vector<int64_t> indices = {2, 0, 6, 2, -1, 5, 9};
  int64_t n = int64_t(indices.size());
  Buffer<float> dTable(table), dOut(size_t(n * width));
  Buffer<int64_t> dIndices(indices);
  dpc_gather(dTable.get(), dIndices.get(), rows, width, n, dOut.get());
  Floats out = dOut.host();
  for (int64_t i = 0; i + 1 < n; ++i) {
    int64_t row = gatherRow(indices[size_t(i)], rows);
    for (int64_t j = 0; j < width; ++j)
      EXPECT_EQ(out[size_t(i * width + j)], table[size_t(row * width + j)]);
  }
  EXPECT_TRUE(std::isnan(out[size_t((n - 1) * width)]));

  Floats dy = randomFloats(size_t(n * width), 32);
  Buffer<float> dDy(dy), dDtable(size_t(rows * width));
  dpc_gather_grad(dDy.get(), dIndices.get(), rows, width, n, dDtable.get());
  Floats want(size_t(rows * width), 0.0f);
  for (int64_t i = 0; i + 1 < n; ++i) {
    int64_t row = gatherRow(indices[size_t(i)], rows);
    for (int64_t j = 0; j < width; ++j)
      want[size_t(row * width + j)] += dy[size_t(i * width + j)];
  }
  // Summed in index order, as the loop above: bit for bit.
  EXPECT_EQ(dDtable.host(), want);
}

} // namespace
