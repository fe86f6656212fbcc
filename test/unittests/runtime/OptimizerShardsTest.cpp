//===- OptimizerShardsTest.cpp - A sharded optimizer (ZeRO stage 1) -------===//
//
// Which flat elements each replica owns (uneven sizes, parameters split
// between replicas, replicas that own nothing), and ParamStore sharded over
// replicas that run as threads of one process: its Adam steps, with the
// gradient reduce-scatter and the weight all-gather, give the unsharded
// store's weights bit for bit; parameters no update touches keep each
// replica's own values; and checkpoints hold the whole state, so that a
// sharded run resumes on another replica count or unsharded, and back. On
// the host, and on a device the host may not read with the collectives in
// device memory and the all-gather as a sum over zeroed ranges (the CUDA
// target's NCCL path).
//
//===----------------------------------------------------------------------===//

#include "lib/runtime/OptimizerShards.h"
#include "lib/runtime/ParamStore.h"

#include "test/unittests/runtime/ErrorOf.h"
#include "test/unittests/runtime/StagingDevice.h"

#include <gtest/gtest.h>

#include <condition_variable>
#include <mutex>
#include <thread>

using namespace dpc::runtime;

namespace {

using Ranges = std::vector<ElementRange>;

Ranges rangesOf(const OptimizerShards &s) {
  Ranges r;
  for (int k = 0; k < s.replicas(); ++k)
    r.push_back(s.range(k));
  return r;
}

TEST(OptimizerShardsTest, SplitsTheFlatParametersEvenly) {
  // Parameters of 6 and 3 elements: 9 in all.
  OptimizerShards two({6, 3}, 0, 2);
  EXPECT_EQ(two.total(), 9u);
  EXPECT_EQ(rangesOf(two), (Ranges{{0, 4}, {4, 9}}));
  EXPECT_EQ(two.rangeSizes(), (std::vector<size_t>{4, 5}));
  // Parameter 0 is split; parameter 1 lies in replica 1's range.
  EXPECT_EQ(two.owned(0, 0), (ElementRange{0, 4}));
  EXPECT_EQ(two.owned(0, 1), (ElementRange{4, 6}));
  EXPECT_TRUE(two.owned(1, 0).empty());
  EXPECT_EQ(two.owned(1, 1), (ElementRange{0, 3}));
  EXPECT_EQ(two.offset(1), 6u);

  OptimizerShards four({6, 3}, 3, 4);
  EXPECT_EQ(four.rangeSizes(), (std::vector<size_t>{2, 2, 2, 3}));
  EXPECT_TRUE(four.owned(0).empty()); // replica 3 owns none of it
  EXPECT_EQ(four.owned(1), (ElementRange{0, 3}));
  EXPECT_EQ(four.owned(0, 2), (ElementRange{4, 6}));
  EXPECT_TRUE(four.sharded());
  EXPECT_FALSE(OptimizerShards({6, 3}, 0, 1).sharded());
}

TEST(OptimizerShardsTest, EveryElementHasExactlyOneOwner) {
  std::vector<size_t> counts = {1, 7, 0, 13, 2, 5};
  for (int replicas = 1; replicas <= 9; ++replicas) {
    OptimizerShards s(counts, 0, replicas);
    std::vector<int> owners(s.total(), 0);
    size_t largest = 0;
    for (int r = 0; r < replicas; ++r) {
      largest = std::max(largest, s.range(r).size());
      for (size_t k = 0; k < counts.size(); ++k) {
        ElementRange o = s.owned(k, r);
        ASSERT_LE(o.end, counts[k]);
        for (size_t e = o.begin; e < o.end; ++e)
          ++owners[s.offset(k) + e];
      }
    }
    for (int n : owners)
      EXPECT_EQ(n, 1) << replicas << " replicas";
    EXPECT_EQ(largest, OptimizerShards::largestRange(28, replicas));
  }
  // More replicas than elements: some own nothing.
  OptimizerShards many({3}, 0, 4);
  EXPECT_EQ(many.rangeSizes(), (std::vector<size_t>{0, 1, 1, 1}));
  EXPECT_EQ(errorOf([] { OptimizerShards({3}, 2, 2); }),
            "optimizer shards: replica 2 of 2");
}

/// The replicas of one stage as threads: each collective waits for all of
/// them and combines their buffers in replica order.
class ThreadGroup {
public:
  explicit ThreadGroup(int size) : size(size), buffers(size) {}

  /// Every member's `data` (`count` floats) at once, to `combine`, which
  /// member `rank` runs on all of them after the others arrived; returns
  /// when every member's `combine` has run.
  void collective(int rank, float *data,
                  const std::function<void(std::vector<float *> &)> &combine) {
    std::unique_lock<std::mutex> lock(mutex);
    buffers[size_t(rank)] = data;
    arrive(lock);
    std::vector<float *> all = buffers;
    lock.unlock();
    combine(all);
    lock.lock();
    arrive(lock);
  }

  const int size;

private:
  void arrive(std::unique_lock<std::mutex> &lock) {
    int generation = gen;
    if (++arrived == size) {
      arrived = 0;
      ++gen;
      changed.notify_all();
      return;
    }
    changed.wait(lock, [&] { return gen != generation; });
  }
  std::mutex mutex;
  std::condition_variable changed;
  int arrived = 0, gen = 0;
  std::vector<float *> buffers;
};

class ThreadCommunicator : public Communicator {
public:
  /// `summingGather`: the all-gather of Communicator's default, a sum over
  /// ranges the others zeroed (what the CUDA target's NCCL communicator
  /// does).
  ThreadCommunicator(ThreadGroup &group, int rank, bool summingGather)
      : group(group), self(rank), summingGather(summingGather) {}
  int rank() const override { return self; }
  int size() const override { return group.size; }
  Request isend(const void *, size_t, int, int) override { return {}; }
  Request irecv(void *, size_t, int, int) override { return {}; }
  void wait(Request &) override {}
  bool test(Request &) override { return true; }
  /// Replica order, as a rank that accumulated every gradient adds them.
  void allreduceSum(float *data, size_t count) override {
    std::vector<float> sum(count, 0.0f);
    group.collective(self, data, [&](std::vector<float *> &all) {
      for (float *member : all)
        for (size_t k = 0; k < count; ++k)
          sum[k] += member[k];
    });
    std::copy(sum.begin(), sum.end(), data);
    ++allreduces;
  }
  // reduceScatterSum keeps Communicator's default (an all-reduce).
  /// Each member's own range only, so that a caller that did not zero the
  /// others would be caught.
  void allgatherRanges(float *data,
                       const std::vector<size_t> &counts) override {
    ++gathers;
    if (summingGather)
      return Communicator::allgatherRanges(data, counts);
    std::vector<float> out(total(counts));
    group.collective(self, data, [&](std::vector<float *> &all) {
      size_t at = 0;
      for (size_t r = 0; r < counts.size(); at += counts[r++])
        std::copy(all[r] + at, all[r] + at + counts[r], out.data() + at);
    });
    std::copy(out.begin(), out.end(), data);
  }
  void barrier() override {}
  std::unique_ptr<Communicator> split(int, int) override { return nullptr; }
  [[noreturn]] void abort(const std::string &message, int) override {
    throw Error(message);
  }
  int allreduces = 0, gathers = 0;

private:
  ThreadGroup &group;
  int self;
  bool summingGather;
};

/// w (3x2) and b (3), which Adam updates, and s (2), a running statistic
/// that no update touches.
RankManifest adamManifest() {
  RankManifest m;
  m.optimizer = Optimizer::Adam;
  m.params = {{0, "w", {3, 2}}, {1, "b", {3}}, {2, "s", {2}}};
  return m;
}

TensorFile initialWeights() {
  TensorFile file;
  float w[6] = {1, 2, 3, 4, 5, 6}, b[3] = {0.5f, -0.5f, 1}, s[2] = {0, 0};
  file.tensors["w"] = Tensor::fromF32({3, 2}, w);
  file.tensors["b"] = Tensor::fromF32({3}, b);
  file.tensors["s"] = Tensor::fromF32({2}, s);
  return file;
}

/// Replica `r`'s gradient of parameter `id` in step `step`: different on
/// every replica, element and step, and in eighths, so that sums in any
/// order are exact.
std::vector<float> gradientOf(int64_t id, size_t n, int r, int step) {
  std::vector<float> g(n);
  for (size_t e = 0; e < n; ++e)
    g[e] = 0.125f * float(e + 1) * float(r + 1) - 0.25f * float(id + step);
  return g;
}

/// On the host, and on a device the host may not read with the collectives
/// in device memory and the all-gather as the NCCL communicator's default,
/// a sum (the CUDA target's paths).
class ShardedStoreTest : public ::testing::TestWithParam<bool> {
protected:
  std::unique_ptr<Device> makeDevice() {
    if (GetParam())
      return std::make_unique<StagingDevice>();
    return createHostDevice();
  }

  /// Steps [from, to) of Adam on `replicas` replicas of the gradients of
  /// `gradReplicas` (each replica r of `replicas` accumulates the gradients
  /// of the replicas r, r + replicas, ... of those), starting from `start`
  /// (a checkpoint, or the initial weights); returns replica 0's
  /// checkpoint and the values of s on every replica.
  TensorFile train(int replicas, int gradReplicas, int from, int to,
                   const TensorFile &start, bool resume,
                   std::vector<std::vector<float>> *stats = nullptr) {
    RankManifest m = adamManifest();
    ThreadGroup group(replicas);
    std::vector<TensorFile> files(static_cast<size_t>(replicas));
    std::vector<std::vector<float>> s(static_cast<size_t>(replicas));
    std::vector<std::string> errors(static_cast<size_t>(replicas));
    auto replica = [&](int r) {
      try {
        bool onDevice = GetParam();
        ThreadCommunicator comm(group, r, /*summingGather=*/onDevice);
        std::unique_ptr<Device> device = makeDevice();
        BufferPool pool(*device);
        ParamStore store(m, *device, pool, r, replicas);
        store.load(start, "start", resume);
        for (int step = from; step < to; ++step) {
          for (int g = r; g < gradReplicas; g += replicas)
            for (const ManifestParam &p : m.params) {
              if (p.name == "s")
                continue;
              std::vector<float> grad =
                  gradientOf(p.id, size_t(p.elements()), g, step);
              Buffer up(pool, grad.size() * sizeof(float));
              device->copyFromHost(up.data(), grad.data(),
                                   grad.size() * sizeof(float));
              store.accumulate(store.get(p.id), up.floats());
            }
          // The running statistic: each replica's own value.
          float stat = float(r + step);
          device->copyFromHost(store.get(2).value.data(), &stat, sizeof stat);
          if (replicas > 1)
            store.sumGradients(comm, onDevice);
          store.beginUpdate();
          store.adamStep(0, 0.01f, 0.9f, 0.999f, 1e-8f, 0.01f);
          store.adamStep(1, 0.01f, 0.9f, 0.999f, 1e-8f, 0.01f);
          if (store.sharded())
            store.gatherWeights(comm, onDevice);
          store.endUpdate();
        }
        files[size_t(r)] = store.checkpoint(to, &comm);
        s[size_t(r)] = store.value(2);
        EXPECT_EQ(comm.gathers,
                  (to - from) * int(replicas > 1) + 2 * int(store.sharded()));
      } catch (const std::exception &e) {
        errors[size_t(r)] = e.what();
      }
    };
    std::vector<std::thread> threads;
    for (int r = 0; r < replicas; ++r)
      threads.emplace_back(replica, r);
    for (std::thread &t : threads)
      t.join();
    for (const std::string &e : errors)
      EXPECT_EQ(e, "");
    // Every replica gathers the same whole checkpoint (but for s, its own).
    for (int r = 1; r < replicas; ++r)
      expectSameTensors(files[size_t(r)], files[0], "s");
    if (stats)
      *stats = s;
    return files[0];
  }

  static void expectSameTensors(const TensorFile &a, const TensorFile &b,
                                const std::string &except = "") {
    ASSERT_EQ(a.tensors.size(), b.tensors.size());
    for (const auto &[name, t] : a.tensors) {
      ASSERT_TRUE(b.tensors.count(name)) << name;
      if (name == except)
        continue;
      EXPECT_EQ(t.toF32(), b.tensors.at(name).toF32()) << name;
    }
  }
};

INSTANTIATE_TEST_SUITE_P(Devices, ShardedStoreTest, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool> &info) {
                           return info.param ? "Staged" : "Host";
                         });

TEST_P(ShardedStoreTest, ShardedAdamIsUnshardedAdamBitForBit) {
  TensorFile one = train(1, 3, 0, 4, initialWeights(), false);
  for (int replicas : {2, 3}) {
    std::vector<std::vector<float>> stats;
    TensorFile sharded =
        train(replicas, 3, 0, 4, initialWeights(), false, &stats);
    // The weights, both Adam moments of every parameter, the update count.
    for (const char *name :
         {"w", "b", "exp_avg.w", "exp_avg.b", "exp_avg_sq.w", "exp_avg_sq.b"})
      EXPECT_EQ(sharded.tensors.at(name).toF32(), one.tensors.at(name).toF32())
          << name << " on " << replicas << " replicas";
    EXPECT_EQ(sharded.metadata.at("optimizer_updates"), "4");
    // s was never updated: each replica kept its own.
    for (int r = 0; r < replicas; ++r)
      EXPECT_EQ(stats[size_t(r)][0], float(r + 3)) << "replica " << r;
  }
}

TEST_P(ShardedStoreTest, CheckpointsResumeOnAnyReplicaCount) {
  // Two steps on 2 sharded replicas, then two more on 3 sharded replicas
  // or unsharded on one, against four unsharded steps; and back from an
  // unsharded checkpoint to 4 sharded replicas (one owns part of w only).
  TensorFile four = train(1, 6, 0, 4, initialWeights(), false);
  TensorFile half = train(2, 6, 0, 2, initialWeights(), false);
  TensorFile onThree = train(3, 6, 2, 4, half, true);
  TensorFile onOne = train(1, 6, 2, 4, half, true);
  TensorFile unsharded = train(1, 6, 0, 2, initialWeights(), false);
  TensorFile onFour = train(4, 6, 2, 4, unsharded, true);
  for (const char *name : {"w", "b", "exp_avg.w", "exp_avg_sq.b"}) {
    std::vector<float> expected = four.tensors.at(name).toF32();
    EXPECT_EQ(onThree.tensors.at(name).toF32(), expected) << name;
    EXPECT_EQ(onOne.tensors.at(name).toF32(), expected) << name;
    EXPECT_EQ(onFour.tensors.at(name).toF32(), expected) << name;
  }
  // The sharded checkpoint is the unsharded one, state included.
  expectSameTensors(half, unsharded);
}

TEST_P(ShardedStoreTest, AShardedCheckpointNeedsTheReplicas) {
  RankManifest m = adamManifest();
  std::unique_ptr<Device> device = makeDevice();
  BufferPool pool(*device);
  ParamStore store(m, *device, pool, 1, 2);
  EXPECT_EQ(errorOf([&] { store.checkpoint(0); }),
            "a sharded optimizer's checkpoint needs the stage's replicas to "
            "gather its state");
}

} // namespace
