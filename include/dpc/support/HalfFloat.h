//===- HalfFloat.h - 16-bit floats read as float ----------------*- C++ -*-===//
//
// IEEE half (float16) and bfloat16 values widened to float, exactly (every
// value of either is a float), and floats narrowed to them, rounded to
// nearest even. Host code that reads 16-bit data uses these:
// float16 .npy datasets, and float16 or bfloat16 weights (an ONNX model's
// initializers, a safetensors file) loaded into float32 parameters.
//
//===----------------------------------------------------------------------===//

#ifndef DPC_SUPPORT_HALFFLOAT_H
#define DPC_SUPPORT_HALFFLOAT_H

#include <cmath>
#include <cstddef>
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

/// The float formats weights come in.
enum class FloatFormat { F32, F16, BF16, F64 };

/// `count` little-endian values of `format` at `data` widened to float into
/// `out` (float16 and bfloat16 exactly, float64 rounded to nearest).
inline void widenToFloat(FloatFormat format, const void *data, size_t count,
                         float *out) {
  auto bytes = static_cast<const unsigned char *>(data);
  auto widen = [&](auto element, auto convert) {
    for (size_t i = 0; i < count; ++i) {
      std::memcpy(&element, bytes + i * sizeof(element), sizeof(element));
      out[i] = convert(element);
    }
  };
  switch (format) {
  case FloatFormat::F32:
    if (count)
      std::memcpy(out, data, count * sizeof(float));
    return;
  case FloatFormat::F16:
    return widen(uint16_t{}, halfToFloat);
  case FloatFormat::BF16:
    return widen(uint16_t{}, bf16ToFloat);
  case FloatFormat::F64:
    return widen(double{}, [](double x) { return float(x); });
  }
}

/// float to bfloat16, rounded to nearest even; NaN stays NaN.
inline uint16_t floatToBf16(float x) {
  uint32_t bits;
  std::memcpy(&bits, &x, 4);
  if ((bits & 0x7fffffffu) > 0x7f800000u)
    return uint16_t((bits >> 16) | 0x40u);
  bits += 0x7fffu + ((bits >> 16) & 1u);
  return uint16_t(bits >> 16);
}

/// float to IEEE half, rounded to nearest even; beyond the largest half,
/// infinity; NaN stays NaN.
inline uint16_t floatToHalf(float x) {
  uint32_t bits;
  std::memcpy(&bits, &x, 4);
  uint16_t sign = uint16_t((bits >> 16) & 0x8000u);
  uint32_t magnitude = bits & 0x7fffffffu;
  if (magnitude > 0x7f800000u)
    return uint16_t(sign | 0x7e00u);
  if (magnitude >= 0x477ff000u) // rounds to 65520 or more
    return uint16_t(sign | 0x7c00u);
  if (magnitude < 0x38800000u) {
    // A subnormal half (or zero): the value in units of 2^-24, rounded.
    float scaled = std::fabs(x) * 16777216.0f; // exact: a power of two
    auto units = uint32_t(std::nearbyint(scaled));
    return uint16_t(sign | units);
  }
  // A normal half: rebias the exponent, round the 13 dropped bits.
  uint32_t rebiased = magnitude - (uint32_t(127 - 15) << 23);
  rebiased += 0xfffu + ((rebiased >> 13) & 1u);
  return uint16_t(sign | (rebiased >> 13));
}

} // namespace dpc::support

#endif // DPC_SUPPORT_HALFFLOAT_H
