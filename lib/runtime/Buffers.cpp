//===- Buffers.cpp - The executor's device memory -------------------------===//

#include "Buffers.h"

#include "AbiError.h"

#include <algorithm>

namespace dpc::runtime {

BufferPool::~BufferPool() {
  for (auto &[size, p] : freeList)
    device.deallocate(p);
}

void *BufferPool::get(size_t bytes) {
  bytes = alignBytes(std::max<size_t>(bytes, 1));
  if (meter)
    meter->add(int64_t(bytes));
  auto it = freeList.find(bytes);
  if (it == freeList.end())
    return device.allocate(bytes);
  void *p = it->second;
  freeList.erase(it);
  return p;
}

void BufferPool::put(void *p, size_t bytes) {
  bytes = alignBytes(std::max<size_t>(bytes, 1));
  if (meter)
    meter->remove(int64_t(bytes));
  freeList.emplace(bytes, p);
}

Scratch::~Scratch() {
  for (auto &b : blockList)
    device.deallocate(b.first);
}

void *Scratch::alloc(size_t bytes) {
  bytes = alignBytes(std::max<size_t>(bytes, 1));
  if (blockList.empty() || used + bytes > blockList.back().second) {
    size_t size = std::max(bytes, size_t(1) << 20);
    blockList.emplace_back(device.allocate(size), size);
    used = 0;
  }
  void *p = static_cast<uint8_t *>(blockList.back().first) + used;
  used += bytes;
  taken += bytes;
  if (meter)
    meter->add(int64_t(bytes));
  return p;
}

void Scratch::reset() {
  if (blockList.size() > 1) {
    size_t total = 0;
    for (auto &b : blockList) {
      total += b.second;
      device.deallocate(b.first);
    }
    blockList.clear();
    blockList.emplace_back(device.allocate(total), total);
  }
  if (meter)
    meter->remove(int64_t(taken));
  used = 0;
  taken = 0;
}

const void *downloadFrom(Device &device, const void *src, size_t bytes,
                         std::vector<uint8_t> &staging) {
  if (device.hostAccessible())
    return src;
  staging.resize(bytes);
  device.copyToHost(staging.data(), src, bytes);
  return staging.data();
}

std::string StashStore::describe(const ManifestStash &spec) {
  return "stash key " + std::to_string(spec.key) +
         (spec.name.empty() ? "" : " ('" + spec.name + "')");
}

void StashStore::stash(const ManifestStash &spec, int mb, int64_t bytes,
                       const void *data) {
  auto [it, fresh] = slotMap.try_emplace({spec.key, mb});
  if (!fresh)
    throw AbiError(describe(spec) + " was already stashed for this "
                                    "microbatch");
  it->second.buffer = Buffer(pool, size_t(bytes));
  it->second.stage = int(spec.stage);
  device.copy(it->second.buffer.data(), data, size_t(bytes));
  liveBytes += bytes;
  peak = std::max(peak, liveBytes);
}

const void *StashStore::restore(const ManifestStash &spec, int mb) const {
  auto it = slotMap.find({spec.key, mb});
  if (it == slotMap.end())
    throw AbiError(describe(spec) + " holds nothing for this microbatch "
                                    "(never stashed, or already released)");
  return it->second.buffer.data();
}

void StashStore::release(int mb, int stage) {
  for (auto it = slotMap.begin(); it != slotMap.end();) {
    if (it->first.second != mb || it->second.stage != stage) {
      ++it;
      continue;
    }
    liveBytes -= int64_t(it->second.buffer.size());
    it = slotMap.erase(it);
  }
}

std::string StashStore::leftover() const {
  if (slotMap.empty())
    return "";
  return "stash key " + std::to_string(slotMap.begin()->first.first) +
         " of mb " + std::to_string(slotMap.begin()->first.second) +
         " is still live (its backward never ran)";
}

} // namespace dpc::runtime
