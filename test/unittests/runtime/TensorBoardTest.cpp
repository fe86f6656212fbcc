//===- TensorBoardTest.cpp - TensorBoard event files ----------------------===//
//
// The TFRecord framing and CRC-32C of the event files (the protocol buffer
// contents are read back by Python's protobuf in e2e/tensorboard.test).
//
//===----------------------------------------------------------------------===//

#include "dpc/runtime/TensorBoard.h"
#include "dpc/runtime/Error.h"
#include "dpc/runtime/Metrics.h"

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <unistd.h>

using namespace dpc::runtime;
namespace fs = std::filesystem;

namespace {

/// The records of a TFRecord file, each checked against its two CRCs.
std::vector<std::string> readRecords(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  std::string all((std::istreambuf_iterator<char>(in)),
                  std::istreambuf_iterator<char>());
  std::vector<std::string> records;
  size_t at = 0;
  while (at < all.size()) {
    EXPECT_GE(all.size() - at, 16u) << "a truncated record at " << at;
    if (all.size() - at < 16)
      break;
    uint64_t length;
    uint32_t lengthCrc, dataCrc;
    std::memcpy(&length, all.data() + at, 8);
    std::memcpy(&lengthCrc, all.data() + at + 8, 4);
    EXPECT_EQ(lengthCrc, maskedCrc32c(all.data() + at, 8));
    std::string data = all.substr(at + 12, length);
    std::memcpy(&dataCrc, all.data() + at + 12 + length, 4);
    EXPECT_EQ(dataCrc, maskedCrc32c(data.data(), data.size()));
    records.push_back(data);
    at += 16 + length;
  }
  return records;
}

fs::path scratchDir(const char *name) {
  fs::path dir = fs::temp_directory_path() / (std::string("dpc-tb-") + name +
                                              "-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  return dir;
}

TEST(TensorBoard, TheMaskIsTFRecords) {
  // CRC-32C's check value, rotated right by 15 bits plus 0xa282ead8.
  uint32_t c = 0xE3069283u;
  EXPECT_EQ(maskedCrc32c("123456789", 9),
            ((c >> 15) | (c << 17)) + 0xA282EAD8u);
}

TEST(TensorBoard, EveryRecordIsFramedWithItsCrcs) {
  fs::path dir = scratchDir("frames");
  std::string path;
  {
    TensorBoardWriter writer(dir.string());
    path = writer.path();
    writer.scalars(1, {{"loss", 2.5}, {"lr", 1e-3}});
    writer.scalars(2, {{"loss", 2.25}});
  }
  EXPECT_EQ(fs::path(path).parent_path(), dir);
  EXPECT_EQ(fs::path(path).filename().string().rfind("events.out.tfevents.", 0),
            0u);
  std::vector<std::string> records = readRecords(path);
  ASSERT_EQ(records.size(), 3u);
  EXPECT_NE(records[0].find("brain.Event:2"), std::string::npos);
  EXPECT_NE(records[1].find("loss"), std::string::npos);
  EXPECT_NE(records[1].find("lr"), std::string::npos);
  EXPECT_EQ(records[2].find("lr"), std::string::npos);
  fs::remove_all(dir);
}

TEST(TensorBoard, MetricsRecordsBecomeScalarsAtTheirStep) {
  fs::path dir = scratchDir("metrics");
  {
    MetricsWriter writer("", false, dir.string());
    writer.write({{"step", 7}, {"loss", 1.5}, {"compute_ms", {1.0, 2.0}}});
    writer.writeEvalAccuracy(0.75, 100);
    writer.write({{"rank", 1}, {"peak_bytes", 4096}});
  }
  ASSERT_EQ(std::distance(fs::directory_iterator(dir), {}), 1);
  std::vector<std::string> records =
      readRecords(fs::directory_iterator(dir)->path().string());
  ASSERT_EQ(records.size(), 4u);
  // Event.step = 7 (field 2, varint): key 0x10, value 0x07, in all three.
  for (size_t i : {1u, 2u, 3u})
    EXPECT_NE(records[i].find(std::string("\x10\x07", 2)), std::string::npos)
        << i;
  EXPECT_NE(records[1].find("loss"), std::string::npos);
  EXPECT_EQ(records[1].find("compute_ms"), std::string::npos);
  EXPECT_NE(records[2].find("eval_accuracy"), std::string::npos);
  EXPECT_NE(records[3].find("rank1/peak_bytes"), std::string::npos);
  fs::remove_all(dir);
}

TEST(TensorBoard, AnUnwritableDirectoryIsAnError) {
  EXPECT_THROW(TensorBoardWriter("/proc/dpc-no-such-dir"), Error);
}

} // namespace
