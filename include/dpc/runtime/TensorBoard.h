//===- TensorBoard.h - TensorBoard event files ------------------*- C++ -*-===//
//
// `dpc run --tensorboard DIR`: the last stage writes the scalars of every
// step's metrics (loss, learning rate, gradient norm, throughput) and the
// evaluation's to DIR/events.out.tfevents.<seconds>.<host>, the file
// TensorBoard's event reader loads: TFRecord framing (each record its
// length, the length's masked CRC-32C, the bytes, their masked CRC-32C) of
// tensorflow.Event protocol buffers, the first naming the file version
// "brain.Event:2", each later one a Summary of simple_value scalars.
//
// The three messages are written by hand in protobuf's wire format (six
// fields in all) rather than through libprotobuf, which the rank runtime
// does not link; test/e2e/tensorboard.test reads the files back with
// Python's protobuf against the messages' field numbers and checks every
// CRC and value.
//
// Plain C++: no MPI, no MLIR.
//
//===----------------------------------------------------------------------===//

#ifndef DPC_RUNTIME_TENSORBOARD_H
#define DPC_RUNTIME_TENSORBOARD_H

#include <cstdint>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

namespace dpc::runtime {

/// The masked CRC-32C (dpc/support/Crc32c.h) that TFRecord stores.
uint32_t maskedCrc32c(const void *data, size_t size);

class TensorBoardWriter {
public:
  /// Creates DIR (and its parents) and the event file in it, and writes the
  /// file-version event. Throws Error naming the path when it cannot.
  explicit TensorBoardWriter(const std::string &dir);
  ~TensorBoardWriter();
  TensorBoardWriter(const TensorBoardWriter &) = delete;
  TensorBoardWriter &operator=(const TensorBoardWriter &) = delete;

  /// One event at `step` holding the scalars (tag, value); flushed.
  void scalars(int64_t step,
               const std::vector<std::pair<std::string, double>> &values);
  const std::string &path() const { return filePath; }

private:
  void record(const std::string &bytes);

  std::string filePath;
  std::FILE *file = nullptr;
};

} // namespace dpc::runtime

#endif // DPC_RUNTIME_TENSORBOARD_H
