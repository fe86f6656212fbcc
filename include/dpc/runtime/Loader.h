//===- Loader.h - Loader threads that read microbatches ahead ---*- C++ -*-===//
//
// Data whose samples cost real work to read (an image folder decodes a
// JPEG a sample) is read by a pool of loader threads of its own, apart from
// the compute threads, into a bounded queue of the microbatches the rank
// loads next. The first stage's executor takes microbatch after microbatch
// from it; taking one that is not complete waits, and that wait is what the
// metrics record as the step's load wait (the loader is the bottleneck).
// The samples and their augmentation are the same as a synchronous gather
// (they depend on the sample and the epoch only); only when they are read
// changes.
//
// Microbatches are numbered by `seq` = step * M + microbatch. The plan
// function, called on the taking thread only (it may use a Sampler, which
// is not thread-safe), says which samples and epoch a seq holds. The queue
// holds `depth` microbatches: seq's slot is reused for seq + depth once
// seq is taken, and a take outside the window (a resume, a jump) starts the
// window over.
//
//===----------------------------------------------------------------------===//

#ifndef DPC_RUNTIME_LOADER_H
#define DPC_RUNTIME_LOADER_H

#include "dpc/runtime/Data.h"

#include <functional>
#include <memory>

namespace dpc::runtime {

class InputLoader {
public:
  struct Batch {
    std::vector<int64_t> indices;
    int64_t epoch = 0;
  };
  using Plan = std::function<Batch(int64_t seq)>;

  /// Reads `data`'s float inputs (input 0) on `threads` threads, up to
  /// `depth` microbatches ahead.
  InputLoader(const Dataset &data, int threads, int depth, Plan plan);
  ~InputLoader();
  InputLoader(const InputLoader &) = delete;
  InputLoader &operator=(const InputLoader &) = delete;

  /// Copies microbatch `seq`'s inputs to `out` (its samples times
  /// sampleElements() floats); returns the milliseconds it waited for them.
  /// An error reading a sample (a corrupt image) is rethrown here.
  double take(int64_t seq, float *out);

  int threads() const;
  int depth() const;

private:
  struct State;
  std::unique_ptr<State> state;
};

/// The loader threads of a rank whose compute uses `computeThreads`
/// threads: half of them, at least 1 (they share the rank's cores; a loader
/// thread sleeps while the queue is full).
int defaultLoaderThreads(int computeThreads);

/// The compute threads of this process: OMP_NUM_THREADS when set (dpc run
/// sets it to the cores / ranks), otherwise the cores.
int computeThreadsOfProcess();

} // namespace dpc::runtime

#endif // DPC_RUNTIME_LOADER_H
