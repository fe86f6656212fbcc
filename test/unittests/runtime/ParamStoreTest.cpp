//===- ParamStoreTest.cpp - Parameters and optimizer state on their own ---===//
//
// The parameter store without a schedule: SGD and Adam updates against
// torch's formulas, checkpoints written and read back (and refused),
// PipeDream's weight versions and their errors, the replicas' gradient sum,
// and the epochs every write gives a parameter buffer, on the host and on a
// device the host may not read.
//
//===----------------------------------------------------------------------===//

#include "lib/runtime/ParamStore.h"
#include "lib/runtime/AbiError.h"

#include "dpc/runtime/ParamEpochs.h"

#include "test/unittests/runtime/ErrorOf.h"
#include "test/unittests/runtime/StagingDevice.h"
#include "test/unittests/runtime/TorchOptim.h"

#include <gtest/gtest.h>

#include <cmath>

using namespace dpc::runtime;

namespace {

RankManifest paramManifest(Optimizer optimizer = Optimizer::Sgd) {
  RankManifest m;
  m.stage = 1;
  m.stages = 3;
  m.optimizer = optimizer;
  ManifestParam w, b;
  w.id = 0;
  w.name = "w";
  w.shape = {3, 2};
  b.id = 5;
  b.name = "b";
  b.shape = {3};
  m.params = {w, b};
  return m;
}

/// A communicator whose sum is what two replicas holding the same values
/// would get.
class DoublingCommunicator : public Communicator {
public:
  int rank() const override { return 0; }
  int size() const override { return 2; }
  Request isend(const void *, size_t, int, int) override { return {}; }
  Request irecv(void *, size_t, int, int) override { return {}; }
  void wait(Request &) override {}
  bool test(Request &) override { return true; }
  void allreduceSum(float *data, size_t count) override {
    for (size_t k = 0; k < count; ++k)
      data[k] *= 2;
    ++sums;
  }
  void barrier() override {}
  std::unique_ptr<Communicator> split(int, int) override { return nullptr; }
  [[noreturn]] void abort(const std::string &message, int) override {
    throw Error(message);
  }
  int sums = 0;
};

class ParamStoreTest : public ::testing::TestWithParam<bool> {
protected:
  Device &device() {
    return GetParam() ? static_cast<Device &>(staging) : *host;
  }
  /// w = 1..6, b = (0.5, -0.5, 1).
  TensorFile weights() {
    TensorFile file;
    float w[6] = {1, 2, 3, 4, 5, 6}, b[3] = {0.5f, -0.5f, 1};
    file.tensors["w"] = Tensor::fromF32({3, 2}, w);
    file.tensors["b"] = Tensor::fromF32({3}, b);
    return file;
  }
  /// Adds `g` to every element of the accumulator of parameter `id` (w's,
  /// 6 elements, unless told).
  void accumulate(ParamStore &store, float g, int64_t id = 0, size_t n = 6) {
    std::vector<float> grad(n, g);
    Buffer onDevice(pool, grad.size() * sizeof(float));
    device().copyFromHost(onDevice.data(), grad.data(),
                          grad.size() * sizeof(float));
    store.accumulate(store.get(id), onDevice.floats());
  }
  /// What dpc_param gives the generated code for w, element 0.
  float served0(ParamStore &store) {
    float v;
    device().copyToHost(&v, store.served(0), sizeof v);
    return v;
  }

  StagingDevice staging;
  std::unique_ptr<Device> host = createHostDevice();
  BufferPool pool{device()};
};

INSTANTIATE_TEST_SUITE_P(Devices, ParamStoreTest, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool> &info) {
                           return info.param ? "Staged" : "Host";
                         });

TEST_P(ParamStoreTest, StartsAtZeroAndLoadsByName) {
  RankManifest m = paramManifest();
  ParamStore store(m, device(), pool);
  EXPECT_EQ(store.value(5), (std::vector<float>{0, 0, 0}));
  store.load(weights(), "w.safetensors", false);
  EXPECT_EQ(store.value(5), (std::vector<float>{0.5f, -0.5f, 1}));
  EXPECT_EQ(errorOf([&] { store.value(1); }), "no parameter with id 1");
  EXPECT_EQ(errorOf([&] { store.get(1); }),
            "parameter id 1 is not in the manifest");
  EXPECT_THROW(store.get(1), AbiError);

  TensorFile wrong = weights();
  float b[4] = {};
  wrong.tensors["b"] = Tensor::fromF32({4}, b);
  EXPECT_EQ(errorOf([&] { store.load(wrong, "s1.safetensors", false); }),
            "s1.safetensors: tensor 'b' has shape [4], the model expects [3]");
  wrong.tensors.erase("b");
  EXPECT_EQ(errorOf([&] { store.load(wrong, "s1.safetensors", false); }),
            "s1.safetensors: no tensor 'b'");
}

TEST_P(ParamStoreTest, SgdIsTorchSgdAndItsCheckpointRoundTrips) {
  RankManifest m = paramManifest();
  ParamStore store(m, device(), pool);
  store.load(weights(), "w", false);
  // torch.optim.SGD(lr=0.1, momentum=0.9, weight_decay=0.01), by hand,
  // on a gradient of 2 accumulated from two microbatches.
  std::vector<float> w = {1, 2, 3, 4, 5, 6}, v(6, 0.0f);
  for (int step = 0; step < 2; ++step) {
    accumulate(store, 1);
    accumulate(store, 1);
    store.beginUpdate();
    store.sgdStep(0, 0.1f, 0.9f, 0.01f);
    store.endUpdate();
    torchSgdStep(w, v, 2.0f, 0.1f, 0.9f, 0.01f);
  }
  std::vector<float> got = store.value(0);
  for (size_t k = 0; k < 6; ++k)
    EXPECT_FLOAT_EQ(got[k], w[k]) << k;
  EXPECT_EQ(store.optimizerUpdates(), 2);
  EXPECT_EQ(errorOf([&] { store.adamStep(0, 0.1f, 0.9f, 0.99f, 1e-3f, 0); }),
            "the manifest's optimizer is sgd");

  TensorFile ckpt = store.checkpoint(7);
  EXPECT_EQ(ckpt.tensors.at("momentum.w").toF32(), v);
  EXPECT_EQ(ckpt.metadata.at("format"), "dpc-checkpoint");
  EXPECT_EQ(ckpt.metadata.at("stage"), "1");
  EXPECT_EQ(ckpt.metadata.at("stages"), "3");
  EXPECT_EQ(ckpt.metadata.at("optimizer"), "sgd");
  EXPECT_EQ(ckpt.metadata.at("optimizer_updates"), "2");
  EXPECT_EQ(ParamStore::checkpointStep(ckpt, "c"), 7);

  // Read back, the next update is the uninterrupted one's.
  ParamStore resumed(m, device(), pool);
  resumed.load(ckpt, "c", /*optimizerState=*/true);
  EXPECT_EQ(resumed.optimizerUpdates(), 2);
  EXPECT_EQ(resumed.checkpoint(7).tensors.at("momentum.w").toF32(), v);
  for (ParamStore *s : {&store, &resumed}) {
    accumulate(*s, 2);
    s->sgdStep(0, 0.1f, 0.9f, 0.01f);
  }
  EXPECT_EQ(resumed.value(0), store.value(0));
  // Without the optimizer state the momentum restarts.
  ParamStore fresh(m, device(), pool);
  fresh.load(ckpt, "c", false);
  EXPECT_EQ(fresh.checkpoint(0).tensors.at("momentum.w").toF32(),
            std::vector<float>(6, 0.0f));
  EXPECT_EQ(fresh.optimizerUpdates(), 0);
}

TEST_P(ParamStoreTest, AdamIsTorchAdamAndNeedsItsUpdateCount) {
  RankManifest m = paramManifest(Optimizer::Adam);
  ParamStore store(m, device(), pool);
  store.load(weights(), "w", false);
  // torch.optim.Adam(lr=0.1, betas=(0.9, 0.99), eps=1e-3,
  // weight_decay=0.01) in double.
  std::vector<double> w = {1, 2, 3, 4, 5, 6};
  TorchAdam adam{0.1, 0.9, 0.99, 1e-3, 0.01, {}, {}};
  for (int t = 1; t <= 3; ++t) {
    accumulate(store, 2);
    store.beginUpdate();
    store.adamStep(0, 0.1f, 0.9f, 0.99f, 1e-3f, 0.01f);
    store.endUpdate();
    adam.step(w, 2.0, t);
  }
  std::vector<float> got = store.value(0);
  for (size_t k = 0; k < 6; ++k)
    EXPECT_NEAR(got[k], w[k], 1e-5 * std::max(1.0, std::fabs(w[k]))) << k;
  EXPECT_EQ(errorOf([&] { store.sgdStep(0, 0.1f, 0, 0); }),
            "the manifest's optimizer is adam");

  TensorFile ckpt = store.checkpoint(3);
  EXPECT_EQ(ckpt.tensors.count("exp_avg.b"), 1u);
  EXPECT_EQ(ckpt.tensors.count("exp_avg_sq.b"), 1u);
  EXPECT_EQ(ckpt.tensors.count("momentum.b"), 0u);
  EXPECT_EQ(ckpt.metadata.at("optimizer_updates"), "3");

  ParamStore other(m, device(), pool);
  TensorFile countless = ckpt;
  countless.metadata.erase("optimizer_updates");
  EXPECT_EQ(errorOf([&] { other.load(countless, "a", true); }),
            "a: no \"optimizer_updates\" metadata, which Adam's bias "
            "correction needs");
  countless.metadata["optimizer_updates"] = "-1";
  EXPECT_EQ(errorOf([&] { other.load(countless, "a", true); }),
            "a: bad \"optimizer_updates\" metadata '-1'");
  // An SGD build refuses Adam's state (and a file without an optimizer is
  // SGD's).
  RankManifest sgd = paramManifest();
  ParamStore plain(sgd, device(), pool);
  EXPECT_EQ(errorOf([&] { plain.load(ckpt, "a", true); }),
            "a: written by a run with the adam optimizer; this build trains "
            "with sgd");
  countless.metadata.erase("optimizer");
  EXPECT_EQ(errorOf([&] { other.load(countless, "a", true); }),
            "a: written by a run with the sgd optimizer; this build trains "
            "with adam");
  TensorFile stepless = ckpt;
  stepless.metadata.erase("step");
  EXPECT_EQ(errorOf([&] { ParamStore::checkpointStep(stepless, "a"); }),
            "a: not a dpc checkpoint (no \"step\" metadata)");
}

TEST_P(ParamStoreTest, AdamWDecaysTheWeightApartFromTheMoments) {
  RankManifest m = paramManifest(Optimizer::AdamW);
  ParamStore store(m, device(), pool);
  store.load(weights(), "w", false);
  std::vector<double> w = {1, 2, 3, 4, 5, 6};
  TorchAdam adam{0.1, 0.9, 0.99, 1e-3, 0.0, {}, {}};
  for (int t = 1; t <= 3; ++t) {
    accumulate(store, 2);
    store.beginUpdate();
    store.adamStep(0, 0.1f, 0.9f, 0.99f, 1e-3f, 0.5f);
    store.endUpdate();
    for (double &x : w)
      x *= 1 - double(0.1f) * double(0.5f);
    adam.step(w, 2.0, t);
  }
  std::vector<float> got = store.value(0);
  for (size_t k = 0; k < 6; ++k)
    EXPECT_NEAR(got[k], w[k], 1e-5 * std::max(1.0, std::fabs(w[k]))) << k;
  TensorFile ckpt = store.checkpoint(3);
  EXPECT_EQ(ckpt.metadata.at("optimizer"), "adamw");
  EXPECT_EQ(ckpt.tensors.count("exp_avg_sq.b"), 1u);
  // Adam's state under AdamW's name: an Adam build refuses it.
  RankManifest plainAdam = paramManifest(Optimizer::Adam);
  ParamStore other(plainAdam, device(), pool);
  EXPECT_EQ(errorOf([&] { other.load(ckpt, "a", true); }),
            "a: written by a run with the adamw optimizer; this build trains "
            "with adam");
}

TEST_P(ParamStoreTest, TheScheduleSetsEachUpdatesRateAndResumesWithIt) {
  RankManifest m = paramManifest();
  LrSchedule schedule = LrSchedule::parse("step:every=2,gamma=0.5");
  ParamStore store(m, device(), pool);
  store.load(weights(), "w", false);
  store.setLrSchedule(schedule);
  EXPECT_FALSE(store.learningRate());
  std::vector<float> w = {1, 2, 3, 4, 5, 6}, v(6, 0.0f);
  const float rates[] = {0.1f, 0.1f, 0.05f};
  for (float rate : rates) {
    accumulate(store, 2);
    store.beginUpdate();
    store.sgdStep(0, 0.1f, 0, 0);
    store.endUpdate();
    torchSgdStep(w, v, 2.0f, rate, 0, 0);
    EXPECT_DOUBLE_EQ(*store.learningRate(), double(rate));
  }
  EXPECT_EQ(store.value(0), w);
  // A resumed store counts on from the checkpoint's updates: the fourth
  // update is still at half the rate, the fifth at a quarter.
  ParamStore resumed(m, device(), pool);
  resumed.load(store.checkpoint(3), "c", /*optimizerState=*/true);
  resumed.setLrSchedule(schedule);
  for (float rate : {0.05f, 0.025f}) {
    accumulate(resumed, 2);
    resumed.beginUpdate();
    resumed.sgdStep(0, 0.1f, 0, 0);
    resumed.endUpdate();
    torchSgdStep(w, v, 2.0f, rate, 0, 0);
  }
  EXPECT_EQ(resumed.value(0), w);
}

TEST_P(ParamStoreTest, GradientNormAndScaleCoverEveryParameter) {
  RankManifest m = paramManifest();
  ParamStore store(m, device(), pool);
  accumulate(store, 2);
  accumulate(store, 2, /*id=*/5, /*n=*/3);
  double elements = double(store.totalCount());
  EXPECT_DOUBLE_EQ(store.gradSquaredSum(), 4 * elements);
  store.scaleGradients(0.25f);
  EXPECT_DOUBLE_EQ(store.gradSquaredSum(), 0.25 * elements);
  for (float g : store.hostGradients())
    EXPECT_EQ(g, 0.5f);
}

TEST_P(ParamStoreTest, InferenceKeepsNoOptimizerState) {
  RankManifest m = paramManifest(Optimizer::Adam);
  m.inference = true;
  ParamStore store(m, device(), pool);
  store.load(weights(), "w", false);
  TensorFile ckpt = store.checkpoint(0);
  EXPECT_EQ(ckpt.tensors.size(), 2u);
}

TEST_P(ParamStoreTest, WeightVersionsServeWhatRestoreSelected) {
  RankManifest m = paramManifest();
  ParamStore store(m, device(), pool);
  store.load(weights(), "w", false);
  // Each update subtracts 1 from w (lr 1, gradient 1): version v has
  // w[0] = 1 - v.
  auto update = [&] {
    accumulate(store, 1);
    store.beginUpdate();
    store.sgdStep(0, 1.0f, 0, 0);
    store.endUpdate();
  };
  store.startWindow();
  store.selectVersion(0, "f0: ");
  EXPECT_EQ(served0(store), 1.0f);
  store.unselect();
  EXPECT_EQ(store.stashVersion(0, "s: "), 1u);
  update();
  EXPECT_EQ(store.liveVersion(), 1);
  EXPECT_EQ(errorOf([&] { store.selectVersion(0, "b1: "); }),
            "b1: uses weight version 0 but the live weights are version 1 "
            "and no RestoreWeights selected it");
  store.restoreVersion(0, "r: ");
  EXPECT_EQ(errorOf([&] { store.checkNoRestore("o: "); }),
            "o: RestoreWeights selected weight version 0 but no Forward or "
            "Backward used it");
  store.selectVersion(0, "b1: ");
  EXPECT_EQ(served0(store), 1.0f);
  store.unselect();
  EXPECT_EQ(served0(store), 0.0f);
  EXPECT_EQ(store.leftover(),
            "weight version 0 is still stashed (no FreeWeights)");

  EXPECT_EQ(errorOf([&] { store.stashVersion(0, "s: "); }),
            "s: copies the live weights as version 0 but they are version 1");
  EXPECT_EQ(store.stashVersion(1, "s: "), 2u);
  EXPECT_EQ(errorOf([&] { store.stashVersion(1, "s: "); }),
            "s: weight version 1 is already stashed");
  store.restoreVersion(1, "r: ");
  EXPECT_EQ(errorOf([&] { store.selectVersion(0, "b: "); }),
            "b: uses weight version 0 but RestoreWeights selected version 1");
  store.restoreVersion(1, "r: ");
  EXPECT_EQ(errorOf([&] { store.selectVersion(-1, "b: "); }),
            "b: RestoreWeights selected weight version 1 but this "
            "instruction names no version");
  store.freeVersion(0, "f: ");
  store.freeVersion(1, "f: ");
  EXPECT_EQ(errorOf([&] { store.freeVersion(1, "f: "); }),
            "f: weight version 1 is not stashed");
  EXPECT_EQ(errorOf([&] { store.restoreVersion(1, "r: "); }),
            "r: weight version 1 was never stashed, or was already freed");
  EXPECT_EQ(store.leftover(), "");
  // The next window starts from the live weights again.
  store.startWindow();
  EXPECT_EQ(store.liveVersion(), 0);
  EXPECT_EQ(store.stashVersion(0, "s: "), 1u);
}

// Kernels keep what they derive from a weight by its buffer's epoch: every
// write of a value, or of a stashed copy, must give the buffer a new one,
// and a released buffer must have none.
TEST_P(ParamStoreTest, EveryWriteGivesTheBufferANewEpoch) {
  RankManifest m = paramManifest();
  const void *w, *copy;
  uint64_t last;
  {
    ParamStore store(m, device(), pool);
    w = store.served(0);
    auto advanced = [&](const void *buffer) {
      uint64_t now = paramEpoch(buffer);
      bool newer = now > last;
      last = now;
      return newer;
    };
    last = paramEpoch(w);
    EXPECT_NE(last, 0u) << "a fresh store's values have no epoch";
    EXPECT_NE(paramEpoch(store.served(5)), 0u);
    EXPECT_NE(paramEpoch(store.served(5)), last);
    store.load(weights(), "w", false);
    EXPECT_TRUE(advanced(w)) << "load";
    accumulate(store, 1);
    EXPECT_FALSE(advanced(w)) << "a gradient is not a write of the value";
    store.beginUpdate();
    store.sgdStep(0, 1.0f, 0, 0);
    store.endUpdate();
    EXPECT_TRUE(advanced(w)) << "sgdStep";
    store.setValues(store.hostValues());
    EXPECT_TRUE(advanced(w)) << "setValues";

    store.startWindow();
    store.stashVersion(0, "s: ");
    store.restoreVersion(0, "r: ");
    store.selectVersion(0, "b: ");
    copy = store.served(0);
    store.unselect();
    EXPECT_NE(copy, w);
    EXPECT_NE(paramEpoch(copy), 0u) << "a stashed copy has no epoch";
    EXPECT_NE(paramEpoch(copy), paramEpoch(w));
    store.freeVersion(0, "f: ");
    EXPECT_EQ(paramEpoch(copy), 0u) << "a freed copy keeps its epoch";
  }
  EXPECT_EQ(paramEpoch(w), 0u) << "a destroyed store's values keep epochs";
  int local = 0;
  EXPECT_EQ(paramEpoch(&local), 0u);
}

TEST_P(ParamStoreTest, GradientSumGoesOutAndBackInOneMessage) {
  RankManifest m = paramManifest();
  DoublingCommunicator comm;
  // Through host memory (the host communicator) and in device memory (the
  // device's communicator), the sum lands in the accumulators.
  for (bool onDevice : {false, true}) {
    ParamStore store(m, device(), pool);
    accumulate(store, 1.5f);
    accumulate(store, 0.25f, 5, 3);
    store.sumGradients(comm, onDevice);
    store.sgdStep(0, 1.0f, 0, 0);
    store.sgdStep(5, 1.0f, 0, 0);
    EXPECT_EQ(store.value(0), std::vector<float>(6, -3.0f)) << onDevice;
    EXPECT_EQ(store.value(5), std::vector<float>(3, -0.5f)) << onDevice;
  }
  EXPECT_EQ(comm.sums, 2);
}

} // namespace
