//===- Cast.h - Host and device element conversions of dpc_cast -*- C++ -*-===//
//
// dpc_cast's conversions between the ABI's element types (dpc_dtype:
// float32, int64, bool as one byte), compiled for the host and for the GPU
// alike, so that the CPU and CUDA kernels convert every value the same way,
// edge cases included: to bool is x != 0 (NaN is true); float to int64
// truncates toward zero, NaN gives 0 and values beyond int64's range
// saturate (what the conversion instruction gives on a GPU; C++ leaves it
// undefined); int64 to float rounds to nearest.
//
//===----------------------------------------------------------------------===//

#ifndef DPC_BACKENDS_COMMON_CAST_H
#define DPC_BACKENDS_COMMON_CAST_H

#include "dpc/runtime/Abi.h"

#include <stdint.h>
#include <type_traits>

#if defined(__CUDACC__)
#define DPC_CAST __host__ __device__ inline
#else
#define DPC_CAST inline
#endif

namespace dpc::cast {

/// `x` converted to int64: truncated toward zero, NaN 0, saturated beyond
/// [-2^63, 2^63).
DPC_CAST int64_t floatToInt64(float x) {
  if (x != x)
    return 0;
  if (x >= 9223372036854775808.0f)
    return INT64_MAX;
  if (x < -9223372036854775808.0f)
    return INT64_MIN;
  return static_cast<int64_t>(x);
}

/// `x` (float, int64_t or uint8_t for bool) converted to `To`.
template <typename To, typename From> DPC_CAST To convert(From x) {
  if constexpr (std::is_same_v<To, uint8_t>)
    return x != From(0) ? 1 : 0;
  else if constexpr (std::is_same_v<To, int64_t> && std::is_same_v<From, float>)
    return floatToInt64(x);
  else
    return static_cast<To>(x);
}

/// Calls `apply(T{})` with the C type of element type `dtype` (float,
/// int64_t, uint8_t); false when `dtype` is no dpc_dtype.
template <typename Apply> bool dispatchDtype(int64_t dtype, Apply &&apply) {
  switch (dtype) {
  case DPC_DTYPE_F32:
    apply(float{});
    return true;
  case DPC_DTYPE_I64:
    apply(int64_t{});
    return true;
  case DPC_DTYPE_BOOL:
    apply(uint8_t{});
    return true;
  }
  return false;
}

} // namespace dpc::cast

#undef DPC_CAST

#endif // DPC_BACKENDS_COMMON_CAST_H
