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

std::vector<int64_t> Sampler::microbatchIndices(int64_t step,
                                                int64_t microbatch) {
  if (step < 0)
    throw Error("sampler: negative step " + std::to_string(step));
  if (microbatch < 0 || microbatch >= cfg.microbatches)
    throw Error("sampler: microbatch " + std::to_string(microbatch) +
                " out of range (" + std::to_string(cfg.microbatches) +
                " microbatches)");
  const std::vector<int64_t> &perm = orderOf(epochOf(step));
  int64_t begin =
      (step % steps) * minibatchSize() + microbatch * cfg.microbatchSize;
  std::vector<int64_t> indices;
  indices.reserve(size_t(cfg.microbatchSize));
  for (int64_t k = begin; k < begin + cfg.microbatchSize; ++k)
    indices.push_back(perm[size_t(std::min(k, cfg.numSamples - 1))]);
  return indices;
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
