//===- Buffers.h - The executor's device memory -----------------*- C++ -*-===//
//
// Every buffer the generated code sees comes from the rank's Device. The
// executor asks for the same sizes every microbatch of every step (transfer
// packs, stash slots, loaded inputs and labels), so a BufferPool recycles
// them by size, a Buffer gives its bytes back to the pool, and dpc_alloc's
// Scratch is a bump allocator reset after every segment. StashStore keeps
// the slots dpc_stash fills until the microbatch's backward is over.
//
//===----------------------------------------------------------------------===//

#ifndef DPC_LIB_RUNTIME_BUFFERS_H
#define DPC_LIB_RUNTIME_BUFFERS_H

#include "dpc/runtime/Device.h"
#include "dpc/runtime/Manifest.h"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace dpc::runtime {

/// Every buffer and every tensor in a transfer pack starts at a multiple of
/// this.
constexpr size_t kBufferAlign = 64;

inline size_t alignBytes(size_t n) {
  return (n + kBufferAlign - 1) / kBufferAlign * kBufferAlign;
}

/// Bytes of device memory in use and the most at once: what the buffer
/// pool has handed out (parameters with their gradients and optimizer
/// state, stash slots, transfer packs, loaded data) plus what dpc_alloc has
/// given the running segment. Buffers the pool keeps for reuse and the
/// scratch block's unused rest are not in use. This is what dpc compile's
/// plan-memory predicts per rank (plan.json's planned_peak_bytes).
class MemoryMeter {
public:
  void add(int64_t bytes) {
    live += bytes;
    peak = std::max(peak, live);
  }
  void remove(int64_t bytes) { live -= bytes; }
  int64_t bytes() const { return live; }
  int64_t peakBytes() const { return peak; }

private:
  int64_t live = 0, peak = 0;
};

/// Freed buffers by rounded size; a request of a size seen before takes
/// one of them instead of allocating. With a meter, what is handed out
/// counts as in use until it is given back.
class BufferPool {
public:
  explicit BufferPool(Device &device, MemoryMeter *meter = nullptr)
      : device(device), meter(meter) {}
  ~BufferPool();
  BufferPool(const BufferPool &) = delete;
  BufferPool &operator=(const BufferPool &) = delete;

  void *get(size_t bytes);
  void put(void *p, size_t bytes);
  /// Buffers given back and not taken again.
  size_t idle() const { return freeList.size(); }

private:
  Device &device;
  MemoryMeter *meter;
  std::multimap<size_t, void *> freeList;
};

/// `bytes` bytes of a pool, given back when the Buffer goes.
class Buffer {
public:
  Buffer() = default;
  Buffer(BufferPool &pool, size_t bytes)
      : pool(&pool), ptr(static_cast<uint8_t *>(pool.get(bytes))),
        bytes(bytes) {}
  Buffer(Buffer &&other) noexcept { *this = std::move(other); }
  Buffer &operator=(Buffer &&other) noexcept {
    release();
    pool = other.pool;
    ptr = other.ptr;
    bytes = other.bytes;
    other.ptr = nullptr;
    return *this;
  }
  ~Buffer() { release(); }
  uint8_t *data() const { return ptr; }
  float *floats() const { return reinterpret_cast<float *>(ptr); }
  size_t size() const { return bytes; }
  explicit operator bool() const { return ptr != nullptr; }

private:
  void release() {
    if (ptr)
      pool->put(ptr, bytes);
    ptr = nullptr;
  }
  BufferPool *pool = nullptr;
  uint8_t *ptr = nullptr;
  size_t bytes = 0;
};

/// dpc_alloc memory: a bump allocator reset after every segment. When a
/// segment overflows the first block, the next reset merges the blocks into
/// one, so from the second microbatch on a segment allocates nothing. With
/// a meter, what the segment took counts as in use until the reset.
class Scratch {
public:
  explicit Scratch(Device &device, MemoryMeter *meter = nullptr)
      : device(device), meter(meter) {}
  ~Scratch();
  Scratch(const Scratch &) = delete;
  Scratch &operator=(const Scratch &) = delete;

  void *alloc(size_t bytes);
  void reset();
  /// The blocks allocated from the device (1 after a reset).
  size_t blocks() const { return blockList.size(); }

private:
  Device &device;
  MemoryMeter *meter;
  std::vector<std::pair<void *, size_t>> blockList;
  size_t used = 0;
  /// Bytes handed out since the reset, over every block.
  size_t taken = 0;
};

/// Fills `bytes` bytes of device memory at `dst` by calling `fill` with host
/// memory to write: `dst` itself when the host can write it, else `staging`,
/// which is copied up afterwards.
template <typename Fill>
void uploadTo(Device &device, void *dst, size_t bytes,
              std::vector<uint8_t> &staging, Fill fill) {
  if (device.hostAccessible()) {
    fill(dst);
    return;
  }
  staging.resize(bytes);
  fill(staging.data());
  device.copyFromHost(dst, staging.data(), bytes);
}

/// `bytes` bytes of device memory at `src`, readable by the host until the
/// next download into the same `staging`.
const void *downloadFrom(Device &device, const void *src, size_t bytes,
                         std::vector<uint8_t> &staging);

/// The values dpc_stash keeps per (stash key, microbatch), each in a slot of
/// the size the microbatch's shape gives the key, until the backward of the
/// key's stage for that microbatch has finished.
class StashStore {
public:
  StashStore(Device &device, BufferPool &pool) : device(device), pool(pool) {}

  /// Copies `bytes` bytes at `data` into a new slot. Throws AbiError when
  /// the microbatch has one for the key already.
  void stash(const ManifestStash &spec, int mb, int64_t bytes,
             const void *data);
  /// The slot's values; throws AbiError when there is none.
  const void *restore(const ManifestStash &spec, int mb) const;
  /// Frees the slots of `stage`'s keys for microbatch mb.
  void release(int mb, int stage);

  /// Bytes in slots now, and at most so far.
  int64_t bytes() const { return liveBytes; }
  int64_t peakBytes() const { return peak; }
  size_t slots() const { return slotMap.size(); }
  /// What is still stashed ("stash key 3 of mb 1 is still live ..."), or ""
  /// when nothing is.
  std::string leftover() const;

  /// "stash key 3 ('x')" for messages.
  static std::string describe(const ManifestStash &spec);

private:
  struct Slot {
    Buffer buffer;
    int stage = 0;
  };
  Device &device;
  BufferPool &pool;
  std::map<std::pair<int64_t, int>, Slot> slotMap; // key, mb
  int64_t liveBytes = 0;
  int64_t peak = 0;
};

} // namespace dpc::runtime

#endif // DPC_LIB_RUNTIME_BUFFERS_H
