//===- DeviceTest.cpp - The host device -----------------------------------===//
//
// The CPU target's Device: allocation, copies, and the optimizer loops the
// executor runs on it, against torch.optim.SGD's formulas written out here.
// (The CUDA device has the same tests in test/unittests/cuda, on a GPU.)
//
//===----------------------------------------------------------------------===//

#include "dpc/runtime/Device.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <vector>

using namespace dpc::runtime;

namespace {

TEST(HostDevice, AllocatesAlignedHostMemory) {
  std::unique_ptr<Device> d = createHostDevice();
  EXPECT_EQ(d->description(), "host");
  EXPECT_TRUE(d->hostAccessible());
  for (size_t bytes : {0, 1, 63, 64, 1000, 1 << 20}) {
    void *p = d->allocate(bytes);
    ASSERT_NE(p, nullptr) << bytes;
    EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % 64, 0u) << bytes;
    d->deallocate(p);
  }
  d->deallocate(nullptr);
}

TEST(HostDevice, CopiesAndSets) {
  std::unique_ptr<Device> d = createHostDevice();
  std::vector<float> in = {1, 2, 3, 4, 5}, out(5, -1);
  auto *a = static_cast<float *>(d->allocate(5 * sizeof(float)));
  auto *b = static_cast<float *>(d->allocate(5 * sizeof(float)));
  d->copyFromHost(a, in.data(), 5 * sizeof(float));
  d->copy(b, a, 5 * sizeof(float));
  d->memset(a, 0, 2 * sizeof(float));
  d->copyToHost(out.data(), b, 5 * sizeof(float));
  EXPECT_EQ(out, in);
  d->copyToHost(out.data(), a, 5 * sizeof(float));
  EXPECT_EQ(out, (std::vector<float>{0, 0, 3, 4, 5}));
  // Zero bytes touch nothing, whatever the pointers.
  d->copy(nullptr, nullptr, 0);
  d->memset(nullptr, 0, 0);
  d->synchronize();
  d->deallocate(a);
  d->deallocate(b);
}

TEST(HostDevice, AccumulateAdds) {
  std::unique_ptr<Device> d = createHostDevice();
  std::vector<float> acc = {1, 2, 3}, x = {0.5f, -2, 4};
  d->accumulate(acc.data(), x.data(), 3);
  d->accumulate(acc.data(), x.data(), 3);
  EXPECT_EQ(acc, (std::vector<float>{2, -2, 11}));
}

// torch.optim.SGD(lr, momentum, weight_decay), dampening 0, no Nesterov:
// g = grad + wd * p; v = g on the first step, then momentum * v + g;
// p -= lr * v.
TEST(HostDevice, SgdStepIsTorchSgd) {
  std::unique_ptr<Device> d = createHostDevice();
  const float lr = 0.1f, momentum = 0.9f, wd = 0.01f;
  std::vector<float> p = {1, -2, 3}, v(3, 0), acc(3);
  std::vector<float> wantP = p, wantV(3, 0);
  for (int step = 0; step < 3; ++step) {
    std::vector<float> grad = {0.5f * float(step + 1), -1, 0.25f};
    acc = grad;
    d->sgdStep(p.data(), v.data(), acc.data(), 3, lr, momentum, wd);
    for (size_t k = 0; k < 3; ++k) {
      float g = grad[k] + wd * wantP[k];
      wantV[k] = step == 0 ? g : momentum * wantV[k] + g;
      wantP[k] -= lr * wantV[k];
    }
    EXPECT_EQ(p, wantP) << "step " << step;
    EXPECT_EQ(v, wantV) << "step " << step;
    EXPECT_EQ(acc, (std::vector<float>(3, 0.0f))) << "the accumulator is "
                                                     "cleared";
  }
}

// torch.optim.Adam(lr, betas, eps, weight_decay), no AMSGrad, against the
// textbook form in double: m_hat = m / (1 - beta1^t),
// v_hat = v / (1 - beta2^t), p -= lr * m_hat / (sqrt(v_hat) + eps).
TEST(HostDevice, AdamStepIsTorchAdam) {
  std::unique_ptr<Device> d = createHostDevice();
  const float lr = 0.01f, beta1 = 0.8f, beta2 = 0.95f, eps = 1e-4f, wd = 0.1f;
  std::vector<float> p = {1, -2, 3, 0}, m(4, 0), v(4, 0), acc(4);
  std::vector<double> wantP(p.begin(), p.end()), wantM(4, 0), wantV(4, 0);
  for (int t = 1; t <= 5; ++t) {
    std::vector<float> grad = {0.5f * float(t), -1, 0.25f, 0};
    acc = grad;
    d->adamStep(p.data(), m.data(), v.data(), acc.data(), 4,
                AdamStep(lr, beta1, beta2, eps, wd, t));
    for (size_t k = 0; k < 4; ++k) {
      double g = grad[k] + double(wd) * wantP[k];
      wantM[k] = beta1 * wantM[k] + (1 - double(beta1)) * g;
      wantV[k] = beta2 * wantV[k] + (1 - double(beta2)) * g * g;
      double mHat = wantM[k] / (1 - std::pow(double(beta1), t));
      double vHat = wantV[k] / (1 - std::pow(double(beta2), t));
      wantP[k] -= lr * mHat / (std::sqrt(vHat) + eps);
      EXPECT_NEAR(p[k], wantP[k], 1e-6) << "step " << t << " element " << k;
      EXPECT_NEAR(m[k], wantM[k], 1e-6) << "step " << t << " element " << k;
      EXPECT_NEAR(v[k], wantV[k], 1e-6) << "step " << t << " element " << k;
    }
    EXPECT_EQ(acc, (std::vector<float>(4, 0.0f))) << "the accumulator is "
                                                     "cleared";
  }
  // A zero gradient on a zero weight leaves it where it is.
  EXPECT_EQ(p[3], 0.0f);
}

// torch.optim.AdamW: the weight decays by lr * weight_decay of itself before
// the update, and the moments see the plain gradient.
TEST(HostDevice, DecoupledAdamStepIsTorchAdamW) {
  std::unique_ptr<Device> d = createHostDevice();
  const double lr = 0.01;
  const float beta1 = 0.8f, beta2 = 0.95f, eps = 1e-4f, wd = 0.5f;
  std::vector<float> p = {1, -2, 3, 0}, m(4, 0), v(4, 0), acc(4);
  std::vector<double> wantP(p.begin(), p.end()), wantM(4, 0), wantV(4, 0);
  for (int t = 1; t <= 5; ++t) {
    std::vector<float> grad = {0.5f * float(t), -1, 0.25f, 0};
    acc = grad;
    d->adamStep(p.data(), m.data(), v.data(), acc.data(), 4,
                AdamStep(lr, beta1, beta2, eps, wd, t, /*decoupled=*/true));
    for (size_t k = 0; k < 4; ++k) {
      wantP[k] *= 1 - lr * double(wd);
      double g = grad[k];
      wantM[k] = beta1 * wantM[k] + (1 - double(beta1)) * g;
      wantV[k] = beta2 * wantV[k] + (1 - double(beta2)) * g * g;
      double mHat = wantM[k] / (1 - std::pow(double(beta1), t));
      double vHat = wantV[k] / (1 - std::pow(double(beta2), t));
      wantP[k] -= lr * mHat / (std::sqrt(vHat) + eps);
      EXPECT_NEAR(p[k], wantP[k], 1e-6) << "step " << t << " element " << k;
      EXPECT_NEAR(v[k], wantV[k], 1e-6) << "step " << t << " element " << k;
    }
  }
  // The L2 form would have moved it by its decayed gradient instead: after
  // five steps the two differ by far more than the bound above.
  std::vector<float> l2 = {1, -2, 3, 0}, m2(4, 0), v2(4, 0);
  for (int t = 1; t <= 5; ++t) {
    acc = {0.5f * float(t), -1, 0.25f, 0};
    d->adamStep(l2.data(), m2.data(), v2.data(), acc.data(), 4,
                AdamStep(lr, beta1, beta2, eps, wd, t));
  }
  EXPECT_GT(std::fabs(l2[2] - p[2]), 1e-3);
}

TEST(HostDevice, SgdWithoutMomentumLeavesTheBufferAlone) {
  std::unique_ptr<Device> d = createHostDevice();
  std::vector<float> p = {1, 2}, v = {7, 7}, acc = {1, -1};
  d->sgdStep(p.data(), v.data(), acc.data(), 2, 0.5f, 0, 0);
  EXPECT_EQ(p, (std::vector<float>{0.5f, 2.5f}));
  EXPECT_EQ(v, (std::vector<float>{7, 7}));
  EXPECT_EQ(acc, (std::vector<float>{0, 0}));
}

TEST(Transport, NamesRoundTrip) {
  for (Transport t : {Transport::Auto, Transport::Nccl, Transport::HostStaging,
                      Transport::Mpi})
    EXPECT_EQ(parseTransport(transportName(t)), t) << transportName(t);
  EXPECT_EQ(parseTransport("NCCL"), std::nullopt);
  EXPECT_EQ(parseTransport(""), std::nullopt);
}

} // namespace
