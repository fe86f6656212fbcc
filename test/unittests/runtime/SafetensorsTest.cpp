//===- SafetensorsTest.cpp - Weights and checkpoints ----------------------===//

#include "dpc/runtime/Safetensors.h"
#include "dpc/runtime/Error.h"
#include "dpc/support/Crc32c.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <unistd.h>

using namespace dpc::runtime;
using ::testing::HasSubstr;

namespace {

/// A file image with `header` as its JSON header and `data` after it.
std::vector<uint8_t> image(const std::string &header,
                           const std::vector<uint8_t> &data) {
  std::vector<uint8_t> bytes(8 + header.size() + data.size());
  uint64_t n = header.size();
  for (int i = 0; i < 8; ++i)
    bytes[size_t(i)] = uint8_t(n >> (8 * i));
  std::copy(header.begin(), header.end(), bytes.begin() + 8);
  std::copy(data.begin(), data.end(), bytes.begin() + 8 + long(n));
  return bytes;
}

std::string parseError(const std::vector<uint8_t> &bytes) {
  try {
    parseSafetensors(bytes, "w.safetensors");
  } catch (const Error &e) {
    return e.what();
  }
  return "(no error)";
}

} // namespace

TEST(Safetensors, RoundTrip) {
  float w[6] = {1, 2, 3, 4, 5, -6.5f};
  int64_t steps[1] = {1234567890123LL};
  TensorFile file;
  file.tensors["fc1.weight"] = Tensor::fromF32({2, 3}, w);
  file.tensors["step"] = Tensor::fromI64({1}, steps);
  file.tensors["empty"] = Tensor::fromF32({0, 4}, nullptr);
  file.metadata["format"] = "pt";

  std::vector<uint8_t> bytes = serializeSafetensors(file);
  uint64_t headerSize = 0;
  std::memcpy(&headerSize, bytes.data(), 8);
  EXPECT_EQ((8 + headerSize) % 8, 0u) << "data must start 8-byte aligned";

  TensorFile back = parseSafetensors(bytes, "mem");
  ASSERT_EQ(back.tensors.size(), 3u);
  EXPECT_EQ(back.tensors["fc1.weight"].shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(back.tensors["fc1.weight"].toF32(),
            (std::vector<float>{1, 2, 3, 4, 5, -6.5f}));
  EXPECT_EQ(back.tensors["step"].toI64()[0], 1234567890123LL);
  EXPECT_EQ(back.tensors["empty"].numElements(), 0);
  EXPECT_EQ(back.metadata["format"], "pt");
  EXPECT_THROW(back.tensors["step"].toF32(), Error);
}

// A file as other writers (the Python safetensors package, the oracle)
// produce it: offsets in header order, not sorted by name.
TEST(Safetensors, ReadsForeignLayout) {
  std::vector<uint8_t> data(16);
  float a = 2.5f;
  int64_t b = -3;
  std::memcpy(&data[0], &b, 8);
  std::memcpy(&data[8], &a, 4);
  std::string header =
      R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[8,12]},)"
      R"("b":{"dtype":"I64","shape":[],"data_offsets":[0,8]},)"
      R"("c":{"dtype":"BF16","shape":[2],"data_offsets":[12,16]}})";
  TensorFile file = parseSafetensors(image(header, data), "x");
  EXPECT_EQ(file.tensors["a"].toF32()[0], 2.5f);
  EXPECT_EQ(file.tensors["b"].toI64()[0], -3);
  EXPECT_EQ(file.tensors["b"].numElements(), 1);
  EXPECT_EQ(file.tensors["c"].dtype, DType::BF16);
}

TEST(Safetensors, RejectsMalformedFiles) {
  std::vector<uint8_t> four(4);
  EXPECT_THAT(parseError({1, 2, 3}), HasSubstr("truncated safetensors file"));
  std::vector<uint8_t> overrun = image("{}", {});
  overrun[0] = 200;
  EXPECT_THAT(parseError(overrun),
              HasSubstr("header length 200 overruns the file"));
  EXPECT_THAT(parseError(image("[1,2]", {})),
              HasSubstr("w.safetensors: header is not a JSON object"));
  EXPECT_THAT(parseError(image("{not json", {})),
              HasSubstr("header is not a JSON object"));
  EXPECT_THAT(
      parseError(image(
          R"({"t":{"dtype":"Q8","shape":[1],"data_offsets":[0,4]}})", four)),
      HasSubstr("tensor 't' has unsupported dtype \"Q8\""));
  EXPECT_THAT(
      parseError(image(
          R"({"t":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", four)),
      HasSubstr("data_offsets [0, 8] outside the 4 data bytes"));
  EXPECT_THAT(
      parseError(image(
          R"({"t":{"dtype":"F32","shape":[2],"data_offsets":[0,4]}})", four)),
      HasSubstr("tensor 't' has 4 bytes, its dtype and shape need 8"));
  EXPECT_THAT(parseError(image(R"({"t":{"dtype":"F32","shape":[1]}})", four)),
              HasSubstr("needs dtype, shape and data_offsets"));
  EXPECT_THAT(
      parseError(image(
          R"({"t":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}})", four)),
      HasSubstr("shape must hold non-negative integers"));
  std::vector<uint8_t> six(6);
  EXPECT_THAT(parseError(image(
                  R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
                  R"("b":{"dtype":"F32","shape":[1],"data_offsets":[2,6]}})",
                  six)),
              HasSubstr("tensors overlap"));
  EXPECT_THAT(parseError(image(R"({"__metadata__":{"k":1}})", {})),
              HasSubstr("metadata value of 'k' must be a string"));
}

TEST(Safetensors, WritesFilesAtomically) {
  char pattern[] = "/tmp/dpc-st-test-XXXXXX";
  std::string dir = mkdtemp(pattern);
  std::string path = checkpointPath(dir, 2);
  EXPECT_EQ(path, dir + "/stage2.safetensors");
  float w[2] = {1, 2};
  TensorFile file;
  file.tensors["w"] = Tensor::fromF32({2}, w);
  writeSafetensors(path, file);
  EXPECT_EQ(readSafetensors(path).tensors["w"].toF32(),
            (std::vector<float>{1, 2}));
  // No temporary file left behind.
  EXPECT_EQ(std::system(("test $(ls '" + dir + "' | wc -l) -eq 1").c_str()), 0);
  try {
    readSafetensors(dir + "/missing.safetensors");
    ADD_FAILURE() << "expected an error";
  } catch (const Error &e) {
    EXPECT_THAT(e.what(),
                HasSubstr(dir + "/missing.safetensors: No such file"));
  }
  try {
    writeSafetensors(dir + "/no/such/dir/x.safetensors", file);
    ADD_FAILURE() << "expected an error";
  } catch (const Error &e) {
    EXPECT_THAT(e.what(), HasSubstr("x.safetensors: cannot create"));
  }
  std::system(("rm -rf '" + dir + "'").c_str());
}

TEST(Safetensors, WriterRejectsInconsistentTensor) {
  TensorFile file;
  Tensor bad;
  bad.dtype = DType::F32;
  bad.shape = {3};
  bad.bytes.resize(8);
  file.tensors["bad"] = bad;
  EXPECT_THROW(serializeSafetensors(file), Error);
}

// A checkpoint is a file anyone can edit: its "stages" metadata is a
// decimal count, not whatever atoi makes of it ("99999999999" overflowed).
TEST(Safetensors, CheckpointStageCountMustBeACount) {
  char pattern[] = "/tmp/dpc-st-test-XXXXXX";
  std::string dir = mkdtemp(pattern);
  float w[1] = {1};
  for (const char *bad : {"99999999999", "0x2", " 2", "0", "two"}) {
    TensorFile file;
    file.tensors["w"] = Tensor::fromF32({1}, w);
    file.metadata["stages"] = bad;
    writeSafetensors(checkpointPath(dir, 0), file);
    try {
      readCheckpoint(dir, /*optimizerState=*/false);
      ADD_FAILURE() << "expected an error for " << bad;
    } catch (const Error &e) {
      EXPECT_THAT(e.what(), HasSubstr(std::string("stage0.safetensors: bad "
                                                  "\"stages\" metadata '") +
                                      bad + "'"));
    }
  }
  std::system(("rm -rf '" + dir + "'").c_str());
}

// Known answers of CRC-32C (RFC 3720's test vectors and the common check
// value), and chaining: the checksum of a+b continues from that of a.
TEST(Safetensors, Crc32cKnownAnswers) {
  EXPECT_EQ(dpc::support::crc32c("123456789", 9), 0xE3069283u);
  std::vector<uint8_t> zeros(32, 0), ones(32, 0xFF), up(32);
  for (size_t i = 0; i < up.size(); ++i)
    up[i] = uint8_t(i);
  EXPECT_EQ(dpc::support::crc32c(zeros.data(), 32), 0x8A9136AAu);
  EXPECT_EQ(dpc::support::crc32c(ones.data(), 32), 0x62A8AB43u);
  EXPECT_EQ(dpc::support::crc32c(up.data(), 32), 0x46DD794Eu);
  EXPECT_EQ(dpc::support::crc32c(up.data() + 13, 19,
                                 dpc::support::crc32c(up.data(), 13)),
            0x46DD794Eu);
  EXPECT_EQ(dpc::support::crc32c(nullptr, 0), 0u);
  // The tables give the same answers where the crc32 instruction is used.
  EXPECT_EQ(dpc::support::crc32cPortable("123456789", 9), 0xE3069283u);
  EXPECT_EQ(dpc::support::crc32cPortable(up.data(), 32), 0x46DD794Eu);
}

// The crc32 instruction's path (where the CPU has one) and the tables' agree
// on every length and alignment, chained or not.
TEST(Safetensors, Crc32cPathsAgree) {
  std::vector<uint8_t> bytes(1000);
  for (size_t i = 0; i < bytes.size(); ++i)
    bytes[i] = uint8_t(i * 2654435761u >> 13);
  for (size_t start = 0; start < 9; ++start)
    for (size_t size : {0, 1, 7, 8, 9, 63, 64, 65, 500, 991}) {
      const uint8_t *p = bytes.data() + start;
      uint32_t seed = uint32_t(size * 40503u);
      EXPECT_EQ(dpc::support::crc32c(p, size, seed),
                dpc::support::crc32cPortable(p, size, seed))
          << "start " << start << ", size " << size;
    }
}

namespace {
TensorFile checksummedFile() {
  float w[6] = {1, 2, 3, 4, 5, -6.5f};
  int64_t steps[1] = {42};
  TensorFile file;
  file.tensors["fc1.weight"] = Tensor::fromF32({2, 3}, w);
  file.tensors["step"] = Tensor::fromI64({1}, steps);
  file.tensors["empty"] = Tensor::fromF32({0}, nullptr);
  file.metadata["stage"] = "1";
  return file;
}

// The offset of the first data byte of `tensor` in a serialised image.
size_t dataOffset(const std::vector<uint8_t> &bytes, const std::string &tensor,
                  const std::string &name) {
  uint64_t headerSize = 0;
  std::memcpy(&headerSize, bytes.data(), 8);
  std::string header(bytes.begin() + 8, bytes.begin() + 8 + long(headerSize));
  size_t at = header.find("\"" + tensor + "\"");
  size_t offsets = header.find("data_offsets\":[", at);
  EXPECT_NE(at, std::string::npos) << name;
  return 8 + headerSize +
         std::stoul(header.substr(offsets + std::strlen("data_offsets\":[")));
}
} // namespace

// What dpc writes carries a checksum per tensor, read back and checked; the
// checksum keys do not leak into the metadata a caller sees.
TEST(Safetensors, ChecksumsRoundTrip) {
  TensorFile file = checksummedFile();
  file.metadata["crc32c:fc1.weight"] = "00000000"; // a caller's stale one
  std::vector<uint8_t> bytes = serializeSafetensors(file);
  std::string text(bytes.begin(), bytes.end());
  EXPECT_THAT(text, HasSubstr("\"crc32c:fc1.weight\":\""));
  EXPECT_THAT(text, HasSubstr("\"crc32c:step\":\""));
  EXPECT_THAT(text, HasSubstr("\"crc32c:empty\":\"00000000\""));
  TensorFile back = parseSafetensors(bytes, "mem");
  EXPECT_EQ(back.metadata,
            (std::map<std::string, std::string>{{"stage", "1"}}));
  EXPECT_EQ(back.tensors["fc1.weight"].toF32()[5], -6.5f);
  EXPECT_EQ(back.tensors["step"].toI64()[0], 42);
  EXPECT_EQ(serializeSafetensors(back), bytes);
}

// Any single flipped bit of any tensor's data is found, and the error names
// the file and the tensor.
TEST(Safetensors, ChecksumFindsFlippedBits) {
  std::vector<uint8_t> bytes = serializeSafetensors(checksummedFile());
  for (const char *tensor : {"fc1.weight", "step"}) {
    size_t begin = dataOffset(bytes, tensor, tensor);
    size_t size = std::string(tensor) == "step" ? 8 : 24;
    for (size_t i = begin; i < begin + size; ++i)
      for (int bit = 0; bit < 8; ++bit) {
        std::vector<uint8_t> flipped = bytes;
        flipped[i] ^= uint8_t(1 << bit);
        EXPECT_THAT(parseError(flipped),
                    HasSubstr(std::string("w.safetensors: tensor '") + tensor +
                              "' fails its CRC-32C checksum (stored "))
            << "byte " << i << " bit " << bit;
      }
  }
}

TEST(Safetensors, ChecksumsInTheHeaderMustBeConsistent) {
  std::vector<uint8_t> four(4);
  float one = 1;
  std::memcpy(four.data(), &one, 4);
  std::string crc = "\"crc32c:t\":\"" + [] {
    char text[9];
    float value = 1;
    std::snprintf(text, sizeof text, "%08x",
                  dpc::support::crc32c(&value, sizeof value));
    return std::string(text);
  }() + "\"";
  std::string tensor =
      R"("t":{"dtype":"F32","shape":[1],"data_offsets":[0,4]})";
  EXPECT_EQ(
      parseSafetensors(
          image("{" + tensor + ",\"__metadata__\":{" + crc + "}}", four), "x")
          .tensors["t"]
          .toF32()[0],
      1.0f);
  // Without any checksum, as other tools write it: loads.
  EXPECT_EQ(
      parseSafetensors(image("{" + tensor + "}", four), "x").tensors.size(),
      1u);
  EXPECT_THAT(
      parseError(image("{" + tensor +
                           R"(,"u":{"dtype":"F32","shape":[0],)"
                           R"("data_offsets":[4,4]},"__metadata__":{)" +
                           crc + "}}",
                       four)),
      HasSubstr("tensor 'u' has no checksum though the file's other tensors"));
  EXPECT_THAT(
      parseError(image(
          "{" + tensor + R"(,"__metadata__":{"crc32c:t":"0x1234"}})", four)),
      HasSubstr("tensor 't' has a malformed checksum '0x1234'"));
  EXPECT_THAT(parseError(image("{" + tensor + R"(,"__metadata__":{)" + crc +
                                   R"(,"crc32c:v":"00000000"}})",
                               four)),
              HasSubstr("a checksum names tensor 'v', which the file does not "
                        "hold"));
}

// A written file that a byte on disk changed: the reader names the path.
TEST(Safetensors, CorruptFileOnDiskNamesPathAndTensor) {
  char pattern[] = "/tmp/dpc-st-test-XXXXXX";
  std::string dir = mkdtemp(pattern);
  std::string path = dir + "/stage0.safetensors";
  writeSafetensors(path, checksummedFile());
  std::vector<uint8_t> bytes = serializeSafetensors(checksummedFile());
  size_t at = dataOffset(bytes, "fc1.weight", path) + 5;
  {
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(long(at));
    f.put(char(bytes[at] ^ 0x10));
  }
  try {
    readSafetensors(path);
    ADD_FAILURE() << "expected an error";
  } catch (const Error &e) {
    EXPECT_THAT(e.what(), HasSubstr(path + ": tensor 'fc1.weight' fails its "
                                           "CRC-32C checksum"));
  }
  std::system(("rm -rf '" + dir + "'").c_str());
}

// A checkpoint merges every stage's file by tensor name, optimizer state
// included on request, so that a build with another split resumes from it;
// files that disagree on the step they were written after are refused.
TEST(Safetensors, CheckpointMergesStagesByName) {
  char pattern[] = "/tmp/dpc-st-test-XXXXXX";
  std::string dir = mkdtemp(pattern);
  auto stageFile = [](const char *param, float value, const char *step) {
    TensorFile file;
    file.tensors[param] = Tensor::fromF32({1}, &value);
    file.tensors[std::string("momentum.") + param] =
        Tensor::fromF32({1}, &value);
    file.metadata["stages"] = "2";
    file.metadata["step"] = step;
    file.metadata["optimizer"] = "sgd";
    return file;
  };
  writeSafetensors(checkpointPath(dir, 0), stageFile("a", 1, "10"));
  writeSafetensors(checkpointPath(dir, 1), stageFile("b", 2, "10"));
  // A leftover of a run with more stages is not part of this checkpoint.
  writeSafetensors(checkpointPath(dir, 2), stageFile("c", 3, "4"));

  TensorFile params = readCheckpoint(dir, /*optimizerState=*/false);
  EXPECT_EQ(params.tensors.size(), 2u);
  EXPECT_EQ(params.tensors["b"].toF32(), std::vector<float>{2});
  TensorFile all = readCheckpoint(dir, /*optimizerState=*/true);
  EXPECT_EQ(all.tensors.size(), 4u);
  EXPECT_EQ(all.tensors["momentum.a"].toF32(), std::vector<float>{1});
  EXPECT_EQ(all.metadata["step"], "10");
  EXPECT_EQ(all.metadata.count("stage"), 0u);

  writeSafetensors(checkpointPath(dir, 1), stageFile("b", 2, "9"));
  try {
    readCheckpoint(dir, /*optimizerState=*/true);
    ADD_FAILURE() << "expected an error";
  } catch (const Error &e) {
    EXPECT_THAT(e.what(), HasSubstr("stage1.safetensors: \"step\" is '9' but "
                                    "stage0's is '10'"));
  }
  writeSafetensors(checkpointPath(dir, 1), stageFile("a", 2, "10"));
  try {
    readCheckpoint(dir, /*optimizerState=*/false);
    ADD_FAILURE() << "expected an error";
  } catch (const Error &e) {
    EXPECT_THAT(e.what(), HasSubstr("stage1.safetensors: tensor 'a' is in "
                                    "another stage's checkpoint too"));
  }
  std::system(("rm -rf '" + dir + "'").c_str());
}
