//===- SamplerTest.cpp - Deterministic minibatch sampling -----------------===//

#include "dpc/runtime/Sampler.h"
#include "dpc/runtime/Error.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

using namespace dpc::runtime;

TEST(Sampler, FileOrderWithoutShuffle) {
  Sampler sampler({/*numSamples=*/100, /*microbatches=*/4,
                   /*microbatchSize=*/3, /*shuffle=*/false, /*seed=*/1});
  EXPECT_EQ(sampler.stepsPerEpoch(), 8); // 100 / 12, the tail dropped
  EXPECT_EQ(sampler.microbatchIndices(0, 0), (std::vector<int64_t>{0, 1, 2}));
  EXPECT_EQ(sampler.microbatchIndices(0, 3), (std::vector<int64_t>{9, 10, 11}));
  EXPECT_EQ(sampler.microbatchIndices(2, 1),
            (std::vector<int64_t>{27, 28, 29}));
  // Step 8 is the first of epoch 1: back to the start of the file.
  EXPECT_EQ(sampler.epochOf(8), 1);
  EXPECT_EQ(sampler.microbatchIndices(8, 0), (std::vector<int64_t>{0, 1, 2}));
  std::vector<int64_t> all = sampler.minibatchIndices(1);
  ASSERT_EQ(all.size(), 12u);
  EXPECT_EQ(all.front(), 12);
  EXPECT_EQ(all.back(), 23);
}

TEST(Sampler, ShuffleIsAPermutationPerEpoch) {
  Sampler sampler({64, 2, 4, true, 42});
  std::set<int64_t> seen;
  for (int64_t step = 0; step < sampler.stepsPerEpoch(); ++step)
    for (int64_t k = 0; k < 2; ++k)
      for (int64_t i : sampler.microbatchIndices(step, k))
        seen.insert(i);
  EXPECT_EQ(seen.size(), 64u);
  EXPECT_EQ(*seen.begin(), 0);
  EXPECT_EQ(*seen.rbegin(), 63);
  EXPECT_NE(sampler.minibatchIndices(0), sampler.minibatchIndices(8));
}

// The first and last stage build their own samplers; they must agree, in
// any order of queries.
TEST(Sampler, IndependentSamplersAgree) {
  SamplerConfig config{1000, 4, 16, true, 123};
  Sampler first(config), last(config);
  std::vector<std::vector<int64_t>> fromFirst, fromLast;
  for (int64_t step = 0; step < 40; ++step)
    for (int64_t k = 0; k < 4; ++k)
      fromFirst.push_back(first.microbatchIndices(step, k));
  for (int64_t step = 39; step >= 0; --step)
    for (int64_t k = 3; k >= 0; --k)
      fromLast.push_back(last.microbatchIndices(step, k));
  std::reverse(fromLast.begin(), fromLast.end());
  EXPECT_EQ(fromFirst, fromLast);
}

TEST(Sampler, SeedChangesOrder) {
  Sampler a({1000, 1, 10, true, 1}), b({1000, 1, 10, true, 2});
  EXPECT_NE(a.minibatchIndices(0), b.minibatchIndices(0));
}

// Pinned values: a change here changes which samples every run trains on,
// so it must be deliberate.
TEST(Sampler, ShuffleIsPinned) {
  Sampler sampler({10, 1, 5, true, 0});
  EXPECT_EQ(sampler.minibatchIndices(0), (std::vector<int64_t>{0, 1, 4, 6, 3}));
  EXPECT_EQ(sampler.minibatchIndices(1), (std::vector<int64_t>{9, 8, 7, 2, 5}));
}

TEST(Sampler, RejectsTooSmallDatasets) {
  try {
    Sampler sampler({10, 4, 16, false, 0});
    FAIL() << "expected an error";
  } catch (const Error &e) {
    EXPECT_STREQ(e.what(), "sampler: the dataset has 10 samples, fewer than "
                           "one minibatch of 4 x 16");
  }
  Sampler ok({64, 4, 16, false, 0});
  EXPECT_THROW(ok.microbatchIndices(0, 4), Error);
  EXPECT_THROW(ok.microbatchIndices(-1, 0), Error);
}

TEST(Sampler, PadLastCoversEverySample) {
  SamplerConfig config{/*numSamples=*/7, /*microbatches=*/1,
                       /*microbatchSize=*/3, /*shuffle=*/false, /*seed=*/0};
  config.padLast = true;
  Sampler sampler(config);
  EXPECT_EQ(sampler.stepsPerEpoch(), 3); // 3 + 3 + 1 padded to 3
  EXPECT_EQ(sampler.microbatchIndices(1, 0), (std::vector<int64_t>{3, 4, 5}));
  EXPECT_EQ(sampler.microbatchIndices(2, 0), (std::vector<int64_t>{6, 6, 6}));
  // Fewer samples than one microbatch still make one (padded) step.
  config.numSamples = 2;
  Sampler small(config);
  EXPECT_EQ(small.stepsPerEpoch(), 1);
  EXPECT_EQ(small.microbatchIndices(0, 0), (std::vector<int64_t>{0, 1, 1}));
}

// Above materializeLimit samples the order is a keyed bijection computed
// per index: every sample exactly once an epoch (odd sizes included, which
// cycle walking folds into range), the same for independent samplers,
// another order each epoch and seed, and O(1) memory for any size.
TEST(Sampler, LazyShuffleIsAPermutationPerEpoch) {
  for (int64_t n : {2, 3, 1000, 4099}) {
    SamplerConfig config{n, 1, 1, true, 7};
    config.materializeLimit = 1;
    Sampler sampler(config), other(config);
    std::vector<int64_t> epoch0, epoch1;
    for (int64_t step = 0; step < n; ++step) {
      epoch0.push_back(sampler.microbatchIndices(step, 0)[0]);
      epoch1.push_back(sampler.microbatchIndices(n + step, 0)[0]);
      EXPECT_EQ(other.microbatchIndices(step, 0)[0], epoch0.back());
    }
    std::vector<int64_t> sorted = epoch0;
    std::sort(sorted.begin(), sorted.end());
    for (int64_t i = 0; i < n; ++i)
      ASSERT_EQ(sorted[size_t(i)], i) << "n " << n;
    if (n > 3)
      EXPECT_NE(epoch0, epoch1) << "n " << n;
  }
  SamplerConfig seeded{1000, 1, 10, true, 8};
  seeded.materializeLimit = 1;
  SamplerConfig base{1000, 1, 10, true, 7};
  base.materializeLimit = 1;
  EXPECT_NE(Sampler(seeded).minibatchIndices(0),
            Sampler(base).minibatchIndices(0));
  // Ten billion samples: no permutation is held, any index is at hand.
  SamplerConfig huge{10'000'000'000, 4, 16, true, 3};
  Sampler big(huge);
  std::vector<int64_t> indices = big.microbatchIndices(123'456'789, 2);
  ASSERT_EQ(indices.size(), 16u);
  for (int64_t i : indices) {
    EXPECT_GE(i, 0);
    EXPECT_LT(i, huge.numSamples);
  }
  EXPECT_EQ(indices, Sampler(huge).microbatchIndices(123'456'789, 2));
}
