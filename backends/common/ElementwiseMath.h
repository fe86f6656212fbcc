//===- ElementwiseMath.h - Host and device math of dpc_unary ----*- C++ -*-===//
//
// The elementwise functions of include/dpc/runtime/UnaryFunctions.def as
// types, one per row, with value(x, a, b) and grad(g, s, a, b) (a and b: the
// row's attributes, if any) compiled for the host and
// for the GPU alike, so the CPU and CUDA kernels compute the same formulas by
// construction. A kernel dispatches on the ABI code once, outside its loop,
// and runs the loop with the row's type as a template argument.
//
//===----------------------------------------------------------------------===//

#ifndef DPC_BACKENDS_COMMON_ELEMENTWISEMATH_H
#define DPC_BACKENDS_COMMON_ELEMENTWISEMATH_H

#include "dpc/runtime/UnaryFunctions.h"

#include <math.h>

#if defined(__CUDACC__)
#define DPC_ELEMENTWISE __host__ __device__ inline
#else
#define DPC_ELEMENTWISE inline
#endif

namespace dpc::elementwise {

/// 1 / (1 + exp(-x)) that exponentiates only non-positive values, so it
/// never overflows.
DPC_ELEMENTWISE float dpc_sigmoid(float x) {
  float e = expf(-fabsf(x));
  return x >= 0.0f ? 1.0f / (1.0f + e) : e / (1.0f + e);
}

#define DPC_UNARY_FUNCTION(CODE, NAME, SINCE, SAVED, VALUE, GRAD, FLOPS,       \
                           GRAD_FLOPS)                                         \
  struct NAME {                                                                \
    static DPC_ELEMENTWISE float value(float x, [[maybe_unused]] float a,      \
                                       [[maybe_unused]] float b) {             \
      return VALUE;                                                            \
    }                                                                          \
    static DPC_ELEMENTWISE float grad(float g, [[maybe_unused]] float s,       \
                                      [[maybe_unused]] float a,                \
                                      [[maybe_unused]] float b) {              \
      return GRAD;                                                             \
    }                                                                          \
  };
#include "dpc/runtime/UnaryFunctions.def"

/// Calls `apply(F{})` with the type of ABI code `fn`; false when no row has
/// that code.
template <typename Apply> bool dispatchUnary(int64_t fn, Apply &&apply) {
  switch (fn) {
#define DPC_UNARY_FUNCTION(CODE, NAME, ...)                                    \
  case DPC_UNARY_##CODE:                                                       \
    apply(NAME{});                                                             \
    return true;
#include "dpc/runtime/UnaryFunctions.def"
  }
  return false;
}

/// dispatchUnary for a gradient: also false for a function whose gradient
/// is no kernel of its own (SAVED None).
template <typename Apply> bool dispatchUnaryGrad(int64_t fn, Apply &&apply) {
  const runtime::UnaryFunctionInfo *info = runtime::lookupUnaryFunction(fn);
  if (!info || info->saved == runtime::UnarySaved::None)
    return false;
  return dispatchUnary(fn, static_cast<Apply &&>(apply));
}

} // namespace dpc::elementwise

#undef DPC_ELEMENTWISE

#endif // DPC_BACKENDS_COMMON_ELEMENTWISEMATH_H
