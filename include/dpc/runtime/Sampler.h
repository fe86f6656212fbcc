//===- Sampler.h - Deterministic minibatch sampling -------------*- C++ -*-===//
//
// The first stage needs a microbatch's inputs and the last stage its labels;
// instead of sending labels down the pipeline, both compute the same sample
// indices from (seed, step, microbatch) alone. A step is one minibatch of M
// microbatches of B samples. Steps count from 0 across epochs: step t belongs
// to epoch t / stepsPerEpoch(). An epoch uses floor(N / (M*B)) whole
// minibatches (shapes are static, so a partial minibatch is dropped).
//
// Without shuffling, step t takes samples [t*M*B, (t+1)*M*B) of the epoch in
// file order, microbatch k the k-th B of them: exactly what a framework
// slicing the dataset in order sees. With shuffling, each epoch is a seeded
// permutation of all N samples, sliced the same way: for up to
// materializeLimit samples (2^24 by default) SplitMix64 + Fisher-Yates,
// identical on every platform and what the oracles replay; above it, where
// a permutation held in memory would grow with the data set (a 20 GB token
// corpus has over 10^9 windows), a keyed Feistel network on the indices'
// bits, cycle-walked into [0, N): the same on every rank and resume, in
// constant memory, one index computed per sample.
//
//===----------------------------------------------------------------------===//

#ifndef DPC_RUNTIME_SAMPLER_H
#define DPC_RUNTIME_SAMPLER_H

#include <cstdint>
#include <vector>

namespace dpc::runtime {

struct SamplerConfig {
  int64_t numSamples = 0;
  int64_t microbatches = 1;   // M
  int64_t microbatchSize = 1; // B
  bool shuffle = true;
  uint64_t seed = 0;
  /// Cover every sample: a last, partial minibatch is filled up by repeating
  /// the last sample (predictions, which drop the repeats), instead of being
  /// left out.
  bool padLast = false;
  /// Shuffled data sets of more samples than this permute lazily (above).
  int64_t materializeLimit = int64_t(1) << 24;
};

class Sampler {
public:
  /// Throws Error when the dataset holds less than one minibatch.
  explicit Sampler(const SamplerConfig &config);

  int64_t minibatchSize() const {
    return cfg.microbatches * cfg.microbatchSize;
  }
  int64_t stepsPerEpoch() const { return steps; }
  int64_t epochOf(int64_t step) const { return step / steps; }

  /// Dataset indices of microbatch `microbatch` of global step `step`.
  std::vector<int64_t> microbatchIndices(int64_t step, int64_t microbatch);
  /// All M*B indices of step `step`, microbatch after microbatch.
  std::vector<int64_t> minibatchIndices(int64_t step);

private:
  const std::vector<int64_t> &orderOf(int64_t epoch);
  /// The samples at positions [begin, begin + count) of epoch `epoch`'s
  /// order, a position past the last sample taking the last one.
  std::vector<int64_t> orderSlice(int64_t epoch, int64_t begin, int64_t count);

  SamplerConfig cfg;
  int64_t steps = 0;
  int64_t cachedEpoch = -1; // the permutation below belongs to this epoch
  std::vector<int64_t> order;
};

} // namespace dpc::runtime

#endif // DPC_RUNTIME_SAMPLER_H
