//===- Bf16.h - bfloat16 conversions ----------------------------*- C++ -*-===//
//
// bfloat16 is the upper half of an IEEE float32. The conversions round to
// nearest even, as oneDNN's reorders do, so a value packed here for a
// transfer and one converted inside a oneDNN primitive agree bit for bit.
// NaNs stay NaNs (quietened); infinities and signed zeros are kept.
//
//===----------------------------------------------------------------------===//

#ifndef DPC_RUNTIME_BF16_H
#define DPC_RUNTIME_BF16_H

#include <cstdint>
#include <cstring>

namespace dpc::runtime {

inline uint16_t floatToBf16(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  if ((bits & 0x7fffffffu) > 0x7f800000u)
    return uint16_t((bits >> 16) | 0x40u);
  bits += 0x7fffu + ((bits >> 16) & 1u);
  return uint16_t(bits >> 16);
}

inline float bf16ToFloat(uint16_t value) {
  uint32_t bits = uint32_t(value) << 16;
  float result;
  std::memcpy(&result, &bits, sizeof result);
  return result;
}

inline void floatsToBf16(const float *src, uint16_t *dst, int64_t count) {
  for (int64_t i = 0; i < count; ++i)
    dst[i] = floatToBf16(src[i]);
}

inline void bf16ToFloats(const uint16_t *src, float *dst, int64_t count) {
  for (int64_t i = 0; i < count; ++i)
    dst[i] = bf16ToFloat(src[i]);
}

} // namespace dpc::runtime

#endif // DPC_RUNTIME_BF16_H
