//===- CheckpointWriterTest.cpp - Checkpoints off the training path -------===//
//
// CheckpointWriter writes a checkpoint's copy on its own thread: the file it
// leaves is the one writeSafetensors writes, a write waits for the one
// before it (so the last one submitted is the one on disk), and a failed
// write is reported by the next call, naming the file.
//
//===----------------------------------------------------------------------===//

#include "lib/runtime/CheckpointWriter.h"

#include "dpc/runtime/Error.h"
#include "test/unittests/runtime/ErrorOf.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

using namespace dpc::runtime;
using ::testing::HasSubstr;

namespace {

/// A checkpoint-like file of `count` floats, each `value`, after `step`.
TensorFile stateAt(int64_t step, float value, size_t count = 1 << 16) {
  TensorFile file;
  std::vector<float> data(count, value);
  file.tensors["fc.weight"] = Tensor::fromF32({int64_t(count)}, data.data());
  file.metadata["step"] = std::to_string(step);
  return file;
}

std::string tempDir() {
  char pattern[] = "/tmp/dpc-ckpt-writer-XXXXXX";
  const char *dir = ::mkdtemp(pattern);
  EXPECT_NE(dir, nullptr);
  return dir ? dir : "";
}

std::vector<char> bytesOf(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

TEST(CheckpointWriter, WritesWhatWriteSafetensorsWrites) {
  std::string dir = tempDir();
  writeSafetensors(dir + "/direct.safetensors", stateAt(3, 1.5f));
  CheckpointWriter writer;
  writer.writeInBackground(dir + "/background.safetensors", stateAt(3, 1.5f));
  writer.waitForWrite();
  EXPECT_EQ(bytesOf(dir + "/background.safetensors"),
            bytesOf(dir + "/direct.safetensors"));
  EXPECT_GE(writer.lastWriteMs(), 0.0);
  std::system(("rm -rf " + dir).c_str());
}

TEST(CheckpointWriter, TheLastWriteSubmittedIsTheOneOnDisk) {
  std::string dir = tempDir();
  std::string path = dir + "/stage0.safetensors";
  {
    CheckpointWriter writer;
    for (int64_t step = 1; step <= 5; ++step)
      writer.writeInBackground(path, stateAt(step, float(step)));
    // The destructor waits for the write in flight.
  }
  TensorFile file = readSafetensors(path);
  EXPECT_EQ(file.metadata.at("step"), "5");
  const float *values =
      reinterpret_cast<const float *>(file.tensors.at("fc.weight").data());
  EXPECT_EQ(values[0], 5.0f);
  std::system(("rm -rf " + dir).c_str());
}

TEST(CheckpointWriter, AFailedWriteIsReportedByTheNextCall) {
  std::string path = "/nonexistent-dpc-dir/stage1.safetensors";
  CheckpointWriter writer;
  writer.writeInBackground(path, stateAt(2, 1.0f, 4));
  std::string message = errorOf([&] { writer.waitForWrite(); });
  // The file written whole before it is renamed into place.
  EXPECT_THAT(message,
              HasSubstr("/nonexistent-dpc-dir/stage1.next.safetensors: "
                        "cannot create"));
  // Reported once: the writer is usable again.
  EXPECT_EQ(errorOf([&] { writer.waitForWrite(); }), "");

  writer.writeInBackground(path, stateAt(3, 1.0f, 4));
  EXPECT_THAT(
      errorOf([&] { writer.writeInBackground(path, stateAt(4, 1.0f, 4)); }),
      HasSubstr("/nonexistent-dpc-dir/stage1.next.safetensors"));
  // The fourth was not started: the third's failure stopped it.
  EXPECT_EQ(errorOf([&] { writer.waitForWrite(); }), "");
}

} // namespace
