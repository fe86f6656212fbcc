//===- HalfFloat.h - 16-bit floats read as float ----------------*- C++ -*-===//
//
// IEEE half (float16) and bfloat16 values widened to float, exactly (every
// value of either is a float). Host code that reads 16-bit data uses these:
// float16 .npy datasets, and float16 or bfloat16 weights (an ONNX model's
// initializers, a safetensors file) loaded into float32 parameters.
//
//===----------------------------------------------------------------------===//

#ifndef DPC_SUPPORT_HALFFLOAT_H
#define DPC_SUPPORT_HALFFLOAT_H

#include <cmath>
#include <cstdint>
#include <cstring>

namespace dpc::support {

inline float halfToFloat(uint16_t h) {
  uint32_t sign = uint32_t(h >> 15) << 31;
  int exponent = (h >> 10) & 0x1f;
  uint32_t mantissa = h & 0x3ffu;
  float magnitude;
  if (exponent == 0)
    magnitude = std::ldexp(float(mantissa), -24); // zero and subnormals
  else if (exponent == 31)
    magnitude = mantissa ? NAN : INFINITY;
  else
    magnitude = std::ldexp(float(mantissa | 0x400u), exponent - 25);
  uint32_t bits;
  std::memcpy(&bits, &magnitude, 4);
  bits |= sign;
  float value;
  std::memcpy(&value, &bits, 4);
  return value;
}

/// bfloat16 is float's upper half.
inline float bf16ToFloat(uint16_t b) {
  uint32_t bits = uint32_t(b) << 16;
  float value;
  std::memcpy(&value, &bits, 4);
  return value;
}

} // namespace dpc::support

#endif // DPC_SUPPORT_HALFFLOAT_H
