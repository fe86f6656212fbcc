//===- CudaDeviceTest.cpp - The executor's memory on the GPU --------------===//
//
// The CUDA target's Device: what createTargetDevice does with and without a
// GPU, copies in every direction ordered with the kernels on the library's
// stream, and the optimizer steps against the host device's loops. Without
// a device every test but the first skips and says why.
//
//===----------------------------------------------------------------------===//

#include "dpc/runtime/CudaDevice.h"
#include "dpc/runtime/CudaKernels.h"
#include "dpc/runtime/Error.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

using namespace dpc::runtime;
using ::testing::HasSubstr;
using ::testing::StartsWith;

namespace {

std::string deviceMissing() {
  int count = 0;
  cudaError_t code = cudaGetDeviceCount(&count);
  if (code != cudaSuccess)
    return std::string("no CUDA device (") + cudaGetErrorString(code) + ")";
  if (count == 0)
    return "no CUDA device";
  return "";
}

std::vector<float> randomFloats(size_t n, unsigned seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (float &x : v)
    x = dist(gen);
  return v;
}

// Runs everywhere: a rank linked for CUDA either gets the GPU or stops with
// a message saying there is none.
TEST(CudaTargetDevice, IsTheGpuOrSaysThereIsNone) {
  if (!deviceMissing().empty()) {
    try {
      createTargetDevice();
      ADD_FAILURE() << "created a CUDA device without a GPU";
    } catch (const Error &e) {
      EXPECT_THAT(e.what(), StartsWith("no CUDA device ("));
    }
    return;
  }
  std::unique_ptr<Device> d = createTargetDevice();
  EXPECT_THAT(d->description(), StartsWith("cuda device "));
  EXPECT_FALSE(d->hostAccessible());
  EXPECT_NE(dpc_cuda_stream(), nullptr) << "the device's own stream";
}

class CudaDevice : public ::testing::Test {
protected:
  void SetUp() override {
    std::string why = deviceMissing();
    if (!why.empty())
      GTEST_SKIP() << why;
    device = createCudaDevice();
  }
  void TearDown() override {
    if (device)
      device->synchronize();
    device.reset();
  }

  float *floats(size_t n) {
    return static_cast<float *>(device->allocate(n * sizeof(float)));
  }
  std::vector<float> read(const float *p, size_t n) {
    std::vector<float> out(n);
    device->copyToHost(out.data(), p, n * sizeof(float));
    return out;
  }

  std::unique_ptr<Device> device;
};

TEST_F(CudaDevice, CopiesInEveryDirection) {
  for (size_t bytes : {0, 1, 63, 1000}) {
    void *p = device->allocate(bytes);
    ASSERT_NE(p, nullptr);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % 64, 0u) << bytes;
    device->deallocate(p);
  }
  device->deallocate(nullptr);

  const size_t n = 1000;
  std::vector<float> in = randomFloats(n, 1);
  float *a = floats(n), *b = floats(n);
  device->copyFromHost(a, in.data(), n * sizeof(float));
  // The host may reuse its buffer as soon as the upload returns.
  std::vector<float> overwritten = in;
  std::fill(in.begin(), in.end(), 0.0f);
  device->copy(b, a, n * sizeof(float));
  device->memset(a, 0, 10 * sizeof(float));
  EXPECT_EQ(read(b, n), overwritten);
  std::vector<float> head = read(a, 12);
  EXPECT_EQ(std::vector<float>(head.begin(), head.begin() + 10),
            std::vector<float>(10, 0.0f));
  EXPECT_EQ(head[10], overwritten[10]);
  device->deallocate(a);
  device->deallocate(b);
}

// The device's copies and the generated code's kernels share one stream:
// upload, relu, copy and download need no synchronization in between.
TEST_F(CudaDevice, CopiesAreOrderedWithKernels) {
  const size_t n = 1 << 20;
  std::vector<float> in = randomFloats(n, 2);
  float *x = floats(n), *y = floats(n), *z = floats(n);
  device->copyFromHost(x, in.data(), n * sizeof(float));
  dpc_relu(x, y, int64_t(n));
  device->copy(z, y, n * sizeof(float));
  dpc_relu(z, x, int64_t(n)); // overwrite x after the copy read y
  std::vector<float> got = read(z, n);
  for (size_t i = 0; i < n; ++i)
    ASSERT_EQ(got[i], std::max(in[i], 0.0f)) << i;
  for (float *p : {x, y, z})
    device->deallocate(p);
}

TEST_F(CudaDevice, AccumulateAndSgdMatchTheHost) {
  const size_t n = 5000;
  const float lr = 0.05f, momentum = 0.9f, wd = 1e-3f;
  std::unique_ptr<Device> host = createHostDevice();
  std::vector<float> p = randomFloats(n, 3), v(n, 0.0f), acc(n, 0.0f);
  float *dp = floats(n), *dv = floats(n), *dacc = floats(n), *dg = floats(n);
  device->copyFromHost(dp, p.data(), n * sizeof(float));
  device->memset(dv, 0, n * sizeof(float));
  device->memset(dacc, 0, n * sizeof(float));
  for (int step = 0; step < 3; ++step) {
    for (int mb = 0; mb < 2; ++mb) {
      std::vector<float> g = randomFloats(n, 10 * step + mb);
      device->copyFromHost(dg, g.data(), n * sizeof(float));
      device->accumulate(dacc, dg, n);
      host->accumulate(acc.data(), g.data(), n);
    }
    EXPECT_EQ(read(dacc, n), acc) << "a sum of two is exact";
    device->sgdStep(dp, dv, dacc, n, lr, momentum, wd);
    host->sgdStep(p.data(), v.data(), acc.data(), n, lr, momentum, wd);
  }
  // The GPU may fuse multiply-adds; the host does not.
  std::vector<float> gotP = read(dp, n), gotV = read(dv, n);
  for (size_t i = 0; i < n; ++i) {
    ASSERT_NEAR(gotP[i], p[i], 1e-6f * (1 + std::abs(p[i]))) << i;
    ASSERT_NEAR(gotV[i], v[i], 1e-6f * (1 + std::abs(v[i]))) << i;
  }
  EXPECT_EQ(read(dacc, n), std::vector<float>(n, 0.0f)) << "cleared";
  for (float *q : {dp, dv, dacc, dg})
    device->deallocate(q);
}

TEST_F(CudaDevice, AdamMatchesTheHost) {
  const size_t n = 5000;
  std::unique_ptr<Device> host = createHostDevice();
  std::vector<float> p = randomFloats(n, 5), m(n, 0.0f), v(n, 0.0f);
  float *dp = floats(n), *dm = floats(n), *dv = floats(n), *dacc = floats(n);
  device->copyFromHost(dp, p.data(), n * sizeof(float));
  for (float *q : {dm, dv})
    device->memset(q, 0, n * sizeof(float));
  for (int t = 1; t <= 3; ++t) {
    std::vector<float> g = randomFloats(n, 40 + t);
    device->copyFromHost(dacc, g.data(), n * sizeof(float));
    AdamStep step(1e-3f, 0.9f, 0.999f, 1e-8f, 1e-2f, t);
    device->adamStep(dp, dm, dv, dacc, n, step);
    host->adamStep(p.data(), m.data(), v.data(), g.data(), n, step);
  }
  std::vector<float> gotP = read(dp, n), gotM = read(dm, n), gotV = read(dv, n);
  for (size_t i = 0; i < n; ++i) {
    ASSERT_NEAR(gotP[i], p[i], 1e-6f * (1 + std::abs(p[i]))) << i;
    ASSERT_NEAR(gotM[i], m[i], 1e-6f * (1 + std::abs(m[i]))) << i;
    ASSERT_NEAR(gotV[i], v[i], 1e-6f * (1 + std::abs(v[i]))) << i;
  }
  EXPECT_EQ(read(dacc, n), std::vector<float>(n, 0.0f)) << "cleared";
  for (float *q : {dp, dm, dv, dacc})
    device->deallocate(q);
}

TEST_F(CudaDevice, FailuresGoToTheErrorHandler) {
  device->setErrorHandler(
      [](const std::string &message) { throw std::runtime_error(message); });
  try {
    device->allocate(size_t(1) << 60);
    ADD_FAILURE() << "allocated an exbibyte";
  } catch (const std::runtime_error &e) {
    EXPECT_THAT(e.what(), HasSubstr("allocating"));
    EXPECT_THAT(e.what(), HasSubstr("cuda device"));
  }
  // The failed allocation leaves the device usable.
  float *p = floats(4);
  device->memset(p, 0, 4 * sizeof(float));
  EXPECT_EQ(read(p, 4), std::vector<float>(4, 0.0f));
  device->deallocate(p);
  dpc_cuda_set_error_handler(nullptr);
}

} // namespace
