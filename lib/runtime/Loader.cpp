//===- Loader.cpp - Loader threads that read microbatches ahead -----------===//
//
// One mutex guards the slots. A worker claims the next unread sample of
// the earliest slot that has one, reads it without the lock into the slot's
// buffer (each sample its own part, so workers never share bytes), and
// counts it done. A slot is reassigned only when no worker is still reading
// into it (claimed == done), which the taker waits for.
//
//===----------------------------------------------------------------------===//

#include "dpc/runtime/Loader.h"

#include "dpc/runtime/Error.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <mutex>
#include <thread>

namespace dpc::runtime {

namespace {

struct Slot {
  int64_t seq = -1;
  InputLoader::Batch batch;
  std::vector<float> values;
  size_t claimed = 0, done = 0;
  std::exception_ptr error;

  bool hasWork() const { return seq >= 0 && claimed < batch.indices.size(); }
  bool idle() const { return claimed == done; }
  bool complete() const { return seq >= 0 && done == batch.indices.size(); }
};

double nowMs() {
  using namespace std::chrono;
  return duration<double, std::milli>(steady_clock::now().time_since_epoch())
      .count();
}

} // namespace

struct InputLoader::State {
  const Dataset &data;
  const Plan plan;
  std::vector<Slot> slots;
  std::vector<std::thread> workers;
  std::mutex mutex;
  std::condition_variable work, progress;
  bool stopping = false;

  State(const Dataset &data, int depth, Plan plan)
      : data(data), plan(std::move(plan)), slots(size_t(depth)) {}

  /// The slot with the lowest seq that has an unclaimed sample.
  Slot *nextWork() {
    Slot *best = nullptr;
    for (Slot &s : slots)
      if (s.hasWork() && (!best || s.seq < best->seq))
        best = &s;
    return best;
  }

  void run() {
    std::unique_lock<std::mutex> lock(mutex);
    for (;;) {
      work.wait(lock, [&] { return stopping || nextWork(); });
      if (stopping)
        return;
      Slot &slot = *nextWork();
      size_t i = slot.claimed++;
      int64_t index = slot.batch.indices[i];
      int64_t epoch = slot.batch.epoch;
      float *out = slot.values.data() + i * size_t(data.sampleElements());
      lock.unlock();
      std::exception_ptr error;
      try {
        data.gatherInputs({index}, out, epoch);
      } catch (...) {
        error = std::current_exception();
      }
      lock.lock();
      if (error && !slot.error)
        slot.error = error;
      ++slot.done;
      progress.notify_all();
    }
  }

  /// Gives `slot` microbatch `seq` once no worker reads into it.
  void assign(std::unique_lock<std::mutex> &lock, Slot &slot, int64_t seq) {
    if (slot.seq == seq)
      return;
    progress.wait(lock, [&] { return slot.idle(); });
    slot.seq = seq;
    slot.batch = plan(seq);
    slot.values.resize(slot.batch.indices.size() *
                       size_t(data.sampleElements()));
    slot.claimed = slot.done = 0;
    slot.error = nullptr;
    work.notify_all();
  }
};

InputLoader::InputLoader(const Dataset &data, int threads, int depth, Plan plan)
    : state(
          std::make_unique<State>(data, std::max(depth, 1), std::move(plan))) {
  for (int t = 0; t < std::max(threads, 1); ++t)
    state->workers.emplace_back([s = state.get()] { s->run(); });
}

InputLoader::~InputLoader() {
  {
    std::lock_guard<std::mutex> lock(state->mutex);
    state->stopping = true;
  }
  state->work.notify_all();
  for (std::thread &t : state->workers)
    t.join();
}

double InputLoader::take(int64_t seq, float *out) {
  State &s = *state;
  const double start = nowMs();
  std::unique_lock<std::mutex> lock(s.mutex);
  const int64_t depth = int64_t(s.slots.size());
  Slot &slot = s.slots[size_t(seq % depth)];
  if (slot.seq != seq)
    for (int64_t d = 0; d < depth; ++d)
      s.assign(lock, s.slots[size_t((seq + d) % depth)], seq + d);
  s.progress.wait(lock, [&] { return slot.complete(); });
  const double waited = nowMs() - start;
  if (slot.error) {
    std::exception_ptr error = slot.error;
    slot.seq = -1;
    std::rethrow_exception(error);
  }
  std::memcpy(out, slot.values.data(), slot.values.size() * sizeof(float));
  s.assign(lock, slot, seq + depth);
  return waited;
}

int InputLoader::threads() const { return int(state->workers.size()); }
int InputLoader::depth() const { return int(state->slots.size()); }

int defaultLoaderThreads(int computeThreads) {
  return std::max(1, computeThreads / 2);
}

int computeThreadsOfProcess() {
  if (const char *value = std::getenv("OMP_NUM_THREADS")) {
    int n = std::atoi(value);
    if (n > 0)
      return n;
  }
  return std::max(1u, std::thread::hardware_concurrency());
}

} // namespace dpc::runtime
