/* The machine's fp32 peak on one core, measured: independent chains of
 * fused multiply-adds on the widest vectors the compiler targets with
 * -march=native (AVX-512 where the core has it, AVX2 otherwise). Prints
 * GFLOPS (a multiply-add counts two). Used by bench/ to report MFU. */
#include <stdio.h>
#include <time.h>

#ifdef __AVX512F__
#define LANES 16 /* 32 zmm registers */
#define CHAINS 16
#else
#define LANES 8 /* 16 ymm registers: the chains, the multiplier, the addend */
#define CHAINS 10
#endif
typedef float vec __attribute__((vector_size(4 * LANES)));

static double seconds(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

int main(void) {
  vec acc[CHAINS];
  vec mul, add;
  for (int l = 0; l < LANES; ++l) {
    mul[l] = 0.9999f;
    add[l] = 1e-4f;
  }
  for (int c = 0; c < CHAINS; ++c)
    for (int l = 0; l < LANES; ++l)
      acc[c][l] = (float)(c + l);
  const long iterations = 100000000L;
  double best = 0.0;
  for (int trial = 0; trial < 3; ++trial) {
    double start = seconds();
    for (long i = 0; i < iterations / 10; ++i)
      for (int c = 0; c < CHAINS; ++c)
        acc[c] = acc[c] * mul + add;
    double elapsed = seconds() - start;
    double flops = 2.0 * LANES * CHAINS * (double)(iterations / 10);
    if (flops / elapsed > best)
      best = flops / elapsed;
  }
  float sink = 0.0f;
  for (int c = 0; c < CHAINS; ++c)
    for (int l = 0; l < LANES; ++l)
      sink += acc[c][l];
  printf("%.1f %g\n", best / 1e9, (double)sink);
  return 0;
}
