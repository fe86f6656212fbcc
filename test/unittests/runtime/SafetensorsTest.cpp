//===- SafetensorsTest.cpp - Weights and checkpoints ----------------------===//

#include "dpc/runtime/Safetensors.h"
#include "dpc/runtime/Error.h"

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
