//===- TargetClones.h - Functions built for AVX-512 too ---------*- C++ -*-===//
//
// DPC_AVX512_CLONES before a function builds it twice, for x86-64-v4
// (AVX-512) and the baseline, and the loader picks the one the CPU runs
// (GCC's target_clones). Elsewhere (Clang, which the fuzz and sanitizer
// builds use, or another architecture) it builds the function once.
//
//===----------------------------------------------------------------------===//

#ifndef DPC_SUPPORT_TARGETCLONES_H
#define DPC_SUPPORT_TARGETCLONES_H

#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
#define DPC_AVX512_CLONES                                                      \
  __attribute__((target_clones("arch=x86-64-v4", "default")))
#else
#define DPC_AVX512_CLONES
#endif

#endif // DPC_SUPPORT_TARGETCLONES_H
