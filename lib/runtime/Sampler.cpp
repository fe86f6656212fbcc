//===- Sampler.cpp - Deterministic minibatch sampling ---------------------===//

#include "dpc/runtime/Sampler.h"

#include "Random.h"
#include "dpc/runtime/Error.h"

#include <algorithm>
#include <numeric>
#include <string>

namespace dpc::runtime {

Sampler::Sampler(const SamplerConfig &config) : cfg(config) {
  if (cfg.microbatches <= 0 || cfg.microbatchSize <= 0)
    throw Error("sampler: microbatches and microbatch size must be positive");
  if (cfg.padLast && cfg.numSamples > 0) {
    steps = (cfg.numSamples + minibatchSize() - 1) / minibatchSize();
    return;
  }
  if (cfg.numSamples < minibatchSize())
    throw Error("sampler: the dataset has " + std::to_string(cfg.numSamples) +
                " samples, fewer than one minibatch of " +
                std::to_string(cfg.microbatches) + " x " +
                std::to_string(cfg.microbatchSize));
  steps = cfg.numSamples / minibatchSize();
}

const std::vector<int64_t> &Sampler::orderOf(int64_t epoch) {
  if (epoch == cachedEpoch)
    return order;
  order.resize(size_t(cfg.numSamples));
  std::iota(order.begin(), order.end(), int64_t(0));
  if (cfg.shuffle) {
    detail::SplitMix64 random(detail::mixSeed(cfg.seed, uint64_t(epoch)));
    for (int64_t i = cfg.numSamples - 1; i > 0; --i)
      std::swap(order[size_t(i)], order[random.below(uint64_t(i) + 1)]);
  }
  cachedEpoch = epoch;
  return order;
}

namespace {

/// A bijection of [0, n) keyed by `key`: a four-round Feistel network on
/// the smallest even number of bits that holds n - 1, with cycle walking
/// (a value at or above n is permuted again until it falls inside; the
/// domain is under 4n, so a few rounds on average).
class FeistelPermutation {
public:
  FeistelPermutation(int64_t n, uint64_t key) : n(n), key(key) {
    while (bits < 64 && (uint64_t(1) << bits) < uint64_t(n))
      bits += 2;
    bits = std::max(bits, 2);
    half = bits / 2;
    mask = (uint64_t(1) << half) - 1;
  }
  int64_t operator()(int64_t index) const {
    uint64_t value = uint64_t(index);
    do
      value = rounds(value);
    while (value >= uint64_t(n));
    return int64_t(value);
  }

private:
  uint64_t rounds(uint64_t value) const {
    uint64_t left = value >> half, right = value & mask;
    for (uint64_t round = 0; round < 4; ++round) {
      uint64_t f = detail::mixSeed(key + round, right) & mask;
      uint64_t next = left ^ f;
      left = right;
      right = next;
    }
    return (left << half) | right;
  }

  int64_t n;
  uint64_t key;
  int bits = 0, half = 0;
  uint64_t mask = 0;
};

} // namespace

std::vector<int64_t> Sampler::orderSlice(int64_t epoch, int64_t begin,
                                         int64_t count) {
  std::vector<int64_t> indices;
  indices.reserve(size_t(count));
  // Positions past the last sample repeat it (padLast).
  auto position = [&](int64_t k) {
    return std::min(begin + k, cfg.numSamples - 1);
  };
  if (!cfg.shuffle) {
    for (int64_t k = 0; k < count; ++k)
      indices.push_back(position(k)); // file order: nothing to hold
  } else if (cfg.numSamples <= cfg.materializeLimit) {
    const std::vector<int64_t> &order = orderOf(epoch);
    for (int64_t k = 0; k < count; ++k)
      indices.push_back(order[size_t(position(k))]);
  } else {
    FeistelPermutation permute(cfg.numSamples,
                               detail::mixSeed(cfg.seed, uint64_t(epoch)));
    for (int64_t k = 0; k < count; ++k)
      indices.push_back(permute(position(k)));
  }
  return indices;
}

std::vector<int64_t> Sampler::microbatchIndices(int64_t step,
                                                int64_t microbatch) {
  if (step < 0)
    throw Error("sampler: negative step " + std::to_string(step));
  if (microbatch < 0 || microbatch >= cfg.microbatches)
    throw Error("sampler: microbatch " + std::to_string(microbatch) +
                " out of range (" + std::to_string(cfg.microbatches) +
                " microbatches)");
  int64_t begin =
      (step % steps) * minibatchSize() + microbatch * cfg.microbatchSize;
  return orderSlice(epochOf(step), begin, cfg.microbatchSize);
}

std::vector<int64_t> Sampler::minibatchIndices(int64_t step) {
  std::vector<int64_t> all;
  all.reserve(size_t(minibatchSize()));
  for (int64_t k = 0; k < cfg.microbatches; ++k) {
    std::vector<int64_t> part = microbatchIndices(step, k);
    all.insert(all.end(), part.begin(), part.end());
  }
  return all;
}

} // namespace dpc::runtime
