//===- Random.h - A fully specified random number generator -----*- C++ -*-===//
//
// The sampler and synthetic data must give the same numbers on every rank,
// compiler and standard library. std::shuffle and std::uniform_*_distribution
// are implementation-defined, so the runtime uses SplitMix64 and its own
// Fisher-Yates shuffle instead.
//
//===----------------------------------------------------------------------===//

#ifndef DPC_LIB_RUNTIME_RANDOM_H
#define DPC_LIB_RUNTIME_RANDOM_H

#include <cstdint>

namespace dpc::runtime::detail {

class SplitMix64 {
public:
  explicit SplitMix64(uint64_t seed) : state(seed) {}

  uint64_t next() {
    uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }

  /// Uniform in [0, bound) without modulo bias (rejection sampling).
  uint64_t below(uint64_t bound) {
    uint64_t limit = -bound % bound; // 2^64 mod bound
    for (;;) {
      uint64_t x = next();
      if (x >= limit)
        return x % bound;
    }
  }

  /// Uniform float in [0, 1) with 24 random bits, exactly representable.
  float unitFloat() { return static_cast<float>(next() >> 40) * 0x1p-24f; }

  /// Moves past `n` draws without computing them: the state only counts.
  void skip(uint64_t n) { state += n * 0x9e3779b97f4a7c15ULL; }

  uint64_t position() const { return state; }

private:
  uint64_t state;
};

/// Mixes two values into one seed so that (seed, epoch) pairs do not collide.
inline uint64_t mixSeed(uint64_t a, uint64_t b) {
  SplitMix64 g(a ^ (b * 0xd1b54a32d192ed03ULL));
  return g.next();
}

} // namespace dpc::runtime::detail

#endif // DPC_LIB_RUNTIME_RANDOM_H
