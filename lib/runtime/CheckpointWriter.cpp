//===- CheckpointWriter.cpp - Checkpoints off the training path -----------===//

#include "CheckpointWriter.h"

#include <chrono>
#include <utility>

namespace dpc::runtime {

CheckpointWriter::~CheckpointWriter() {
  if (worker.joinable())
    worker.join();
}

void CheckpointWriter::waitForWrite() {
  if (worker.joinable())
    worker.join();
  if (std::exception_ptr e = std::exchange(failure, nullptr))
    std::rethrow_exception(e);
}

void CheckpointWriter::writeInBackground(std::string path, TensorFile file) {
  waitForWrite();
  worker = std::thread([this, path = std::move(path), file = std::move(file)] {
    auto start = std::chrono::steady_clock::now();
    try {
      writeCheckpointFile(path, file);
    } catch (...) {
      failure = std::current_exception();
    }
    writeMs = std::chrono::duration<double, std::milli>(
                  std::chrono::steady_clock::now() - start)
                  .count();
  });
}

} // namespace dpc::runtime
