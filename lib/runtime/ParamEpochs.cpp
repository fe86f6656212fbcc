//===- ParamEpochs.cpp - When parameter buffers were last written ---------===//

#include "dpc/runtime/ParamEpochs.h"

#include <mutex>
#include <unordered_map>

namespace dpc::runtime {

namespace {

/// Buffers by address, and the counter their epochs come from. Ranks run
/// one per process, but tests run several executors on threads of one.
struct Registry {
  std::mutex mutex;
  std::unordered_map<const void *, uint64_t> epochs;
  uint64_t last = 0;
};

Registry &registry() {
  static Registry r;
  return r;
}

} // namespace

void markParamWritten(const void *data) {
  Registry &r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  r.epochs[data] = ++r.last;
}

void forgetParamBuffer(const void *data) {
  Registry &r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  r.epochs.erase(data);
}

uint64_t paramEpoch(const void *data) {
  Registry &r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  auto it = r.epochs.find(data);
  return it == r.epochs.end() ? 0 : it->second;
}

} // namespace dpc::runtime
