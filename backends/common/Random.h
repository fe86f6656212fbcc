//===- Random.h - Counter-based random numbers for dropout ------*- C++ -*-===//
//
// Dropout draws its mask from Philox4x32-10 (Salmon et al., SC'11), a
// counter-based generator: the bits for element i are a pure function of
// (key, i), so the forward and the backward pass of a microbatch compute the
// same mask without storing it, on the CPU and the GPU alike, and the mask
// does not depend on how the model is split into stages or scheduled. The
// key comes from the run's seed, the step, the microbatch and the op
// (dpc_random_key, in the executor).
//
//===----------------------------------------------------------------------===//

#ifndef DPC_BACKENDS_COMMON_RANDOM_H
#define DPC_BACKENDS_COMMON_RANDOM_H

#include <cstdint>

#if defined(__CUDACC__)
#define DPC_RANDOM __host__ __device__ inline
#else
#define DPC_RANDOM inline
#endif

namespace dpc::random {

DPC_RANDOM uint32_t mulhi(uint32_t a, uint32_t b) {
  return uint32_t((uint64_t(a) * uint64_t(b)) >> 32);
}

/// Philox4x32 with 10 rounds: four 32-bit outputs of counter `c` under key
/// `k`; the constants are the generator's published multipliers and Weyl
/// increments.
DPC_RANDOM void philox4x32(uint32_t c[4], uint32_t k0, uint32_t k1) {
  for (int round = 0; round < 10; ++round) {
    uint32_t hi0 = mulhi(0xD2511F53u, c[0]), lo0 = 0xD2511F53u * c[0];
    uint32_t hi1 = mulhi(0xCD9E8D57u, c[2]), lo1 = 0xCD9E8D57u * c[2];
    uint32_t next[4] = {hi1 ^ c[1] ^ k0, lo1, hi0 ^ c[3] ^ k1, lo0};
    c[0] = next[0];
    c[1] = next[1];
    c[2] = next[2];
    c[3] = next[3];
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
}

/// Whether dropout keeps element `index` under `key` at drop rate `ratio`:
/// a uniform draw in [0, 1) from 24 bits of the element's Philox output
/// (one block of four serves four consecutive elements) at least `ratio`.
DPC_RANDOM bool dropoutKeeps(uint64_t key, uint64_t index, float ratio) {
  uint32_t c[4] = {uint32_t(index >> 2), uint32_t(index >> 34), 0x64706321u,
                   0u};
  philox4x32(c, uint32_t(key), uint32_t(key >> 32));
  float u = float(c[index & 3] >> 8) * (1.0f / 16777216.0f);
  return u >= ratio;
}

} // namespace dpc::random

#undef DPC_RANDOM

#endif // DPC_BACKENDS_COMMON_RANDOM_H
