//===- CheckpointWriter.h - Checkpoints off the training path ---*- C++ -*-===//
//
// A rank's periodic checkpoint (--checkpoint-every) is a copy of its stage's
// parameters and optimizer state, taken between two steps, and a file
// written from that copy. The copy must be taken while no step runs; the
// write need not: CheckpointWriter writes it on a thread of its own while
// the rank trains on. One write is in flight at a time, and the copy for
// the next one is taken only once the previous write has finished
// (waitForWrite), so at most one extra copy of the stage's state is held.
// A write's failure is not lost: the next call rethrows it.
//
//===----------------------------------------------------------------------===//

#ifndef DPC_LIB_RUNTIME_CHECKPOINTWRITER_H
#define DPC_LIB_RUNTIME_CHECKPOINTWRITER_H

#include "dpc/runtime/Safetensors.h"

#include <exception>
#include <string>
#include <thread>

namespace dpc::runtime {

class CheckpointWriter {
public:
  CheckpointWriter() = default;
  CheckpointWriter(const CheckpointWriter &) = delete;
  CheckpointWriter &operator=(const CheckpointWriter &) = delete;
  /// Waits for the write in flight; its failure, if any, is dropped (call
  /// waitForWrite first to see it).
  ~CheckpointWriter();

  /// Waits for the write in flight and throws its Error, naming the file.
  void waitForWrite();

  /// Starts writing `file` to `path` (writeCheckpointFile: written whole,
  /// then renamed into place with the file it replaces kept as the
  /// previous one) on the writer's thread, after waitForWrite (whose
  /// Error, the previous write's, leaves this one unstarted).
  void writeInBackground(std::string path, TensorFile file);

  /// Milliseconds the last finished write took on the writer's thread.
  double lastWriteMs() const { return writeMs; }

private:
  std::thread worker;
  std::exception_ptr failure;
  double writeMs = 0;
};

} // namespace dpc::runtime

#endif // DPC_LIB_RUNTIME_CHECKPOINTWRITER_H
