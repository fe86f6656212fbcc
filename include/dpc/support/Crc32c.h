//===- Crc32c.h - CRC-32C checksums -----------------------------*- C++ -*-===//
//
// CRC-32C (Castagnoli polynomial, reflected, as iSCSI, ext4 and Btrfs use
// it) of a byte range. dpc stores one per tensor in the safetensors files it
// writes, so that a flipped bit on disk is found when the file is read
// instead of training on it. Eight bytes a step: on x86-64 CPUs with SSE4.2
// through the crc32 instruction (which computes this very polynomial),
// elsewhere through tables; both give the same value on every build and
// host (Crc32cTest checks them against each other and known vectors).
//
//===----------------------------------------------------------------------===//

#ifndef DPC_SUPPORT_CRC32C_H
#define DPC_SUPPORT_CRC32C_H

#include <cstddef>
#include <cstdint>

namespace dpc::support {

/// The CRC-32C of `size` bytes at `data`, continuing from `crc` (0 for a
/// fresh checksum): crc32c(b, crc32c(a)) == crc32c(a followed by b).
uint32_t crc32c(const void *data, size_t size, uint32_t crc = 0);

/// The same by the tables alone, whatever the CPU has.
uint32_t crc32cPortable(const void *data, size_t size, uint32_t crc = 0);

} // namespace dpc::support

#endif // DPC_SUPPORT_CRC32C_H
