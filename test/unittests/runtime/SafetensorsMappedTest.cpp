//===- SafetensorsMappedTest.cpp - Mapped and streamed weights ------------===//
//
// readSafetensors hands out views into the mapped file, writeSafetensors
// streams (mapped tensors included) and must write the bytes
// serializeSafetensors does, and float16, bfloat16 and float64 weights
// widen to float exactly as the ranks load them.
//
//===----------------------------------------------------------------------===//

#include "dpc/runtime/Error.h"
#include "dpc/runtime/Safetensors.h"
#include "dpc/support/MappedFile.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>

using namespace dpc::runtime;
using ::testing::HasSubstr;

namespace {

std::string tempDir() {
  char pattern[] = "/tmp/dpc-mapped-XXXXXX";
  return mkdtemp(pattern);
}

std::vector<uint8_t> readFile(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

Tensor typed(DType dtype, std::vector<int64_t> shape, const void *data,
             size_t size) {
  Tensor t;
  t.dtype = dtype;
  t.shape = std::move(shape);
  t.bytes.assign(static_cast<const uint8_t *>(data),
                 static_cast<const uint8_t *>(data) + size);
  return t;
}

} // namespace

TEST(SafetensorsMapped, ReadGivesViewsIntoTheFile) {
  std::string dir = tempDir();
  std::vector<float> w(1000);
  for (size_t i = 0; i < w.size(); ++i)
    w[i] = float(i) * 0.5f - 7;
  TensorFile file;
  file.tensors["w"] = Tensor::fromF32({10, 100}, w.data());
  file.metadata["stage"] = "0";
  writeSafetensors(dir + "/a.safetensors", file);

  TensorFile back = readSafetensors(dir + "/a.safetensors");
  const Tensor &t = back.tensors.at("w");
  ASSERT_TRUE(t.file) << "a read tensor should be a view into the mapping";
  EXPECT_TRUE(t.bytes.empty());
  EXPECT_EQ(t.size(), w.size() * sizeof(float));
  EXPECT_EQ(t.toF32(), w);
  // Giving the pages back loses nothing: they come in again on reading.
  t.release();
  EXPECT_EQ(std::memcmp(t.data(), w.data(), t.size()), 0);
  EXPECT_EQ(back.metadata.at("stage"), "0");
  std::filesystem::remove_all(dir);
}

TEST(SafetensorsMapped, StreamedWriteEqualsTheSerializedImage) {
  std::string dir = tempDir();
  // A mapped source bigger than one 64 MiB piece, as a model's external
  // data would be, beside held tensors.
  size_t count = (size_t(64) << 20) / sizeof(float) + 12345;
  {
    std::vector<float> big(count);
    for (size_t i = 0; i < count; ++i)
      big[i] = float(i % 9973) - 4000.0f;
    std::ofstream out(dir + "/source.bin", std::ios::binary);
    out.write("pad!", 4);
    out.write(reinterpret_cast<const char *>(big.data()),
              std::streamsize(count * sizeof(float)));
  }
  auto source =
      std::make_shared<const dpc::support::MappedFile>(dir + "/source.bin");
  TensorFile file;
  file.tensors["big"] =
      Tensor::mapped(DType::F32, {int64_t(count)}, source, 4, "big");
  float small[3] = {1, 2, 3};
  file.tensors["a.small"] = Tensor::fromF32({3}, small);
  file.metadata["source"] = "model.onnx";

  writeSafetensors(dir + "/streamed.safetensors", file);
  std::vector<uint8_t> expected = serializeSafetensors(file);
  EXPECT_TRUE(readFile(dir + "/streamed.safetensors") == expected)
      << "the streamed file differs from the serialized image";
  // And it reads back with its checksums checked.
  TensorFile back = readSafetensors(dir + "/streamed.safetensors");
  EXPECT_EQ(back.tensors.at("big").toF32()[count - 1],
            float((count - 1) % 9973) - 4000.0f);
  std::filesystem::remove_all(dir);
}

TEST(SafetensorsMapped, MappedTensorMustFitItsFile) {
  std::string dir = tempDir();
  {
    std::ofstream out(dir + "/short.bin", std::ios::binary);
    out.write("12345678", 8);
  }
  auto source =
      std::make_shared<const dpc::support::MappedFile>(dir + "/short.bin");
  try {
    Tensor::mapped(DType::F32, {4}, source, 0, "w");
    FAIL() << "a tensor past the file's end was accepted";
  } catch (const Error &e) {
    EXPECT_THAT(e.what(), HasSubstr("tensor 'w' needs 16 bytes at offset 0"));
    EXPECT_THAT(e.what(), HasSubstr("the file has 8 bytes"));
  }
  std::filesystem::remove_all(dir);
}

TEST(SafetensorsMapped, HalfBfloatAndDoubleWidenToFloat) {
  // 1, -2, 0.5, the smallest half subnormal, infinity.
  uint16_t half[5] = {0x3c00, 0xc000, 0x3800, 0x0001, 0x7c00};
  std::vector<float> fromHalf =
      typed(DType::F16, {5}, half, sizeof half).toF32();
  EXPECT_EQ(fromHalf[0], 1.0f);
  EXPECT_EQ(fromHalf[1], -2.0f);
  EXPECT_EQ(fromHalf[2], 0.5f);
  EXPECT_EQ(fromHalf[3], std::ldexp(1.0f, -24));
  EXPECT_TRUE(std::isinf(fromHalf[4]));

  // bfloat16 is float's upper half: 1.5 is 0x3fc0.
  uint16_t bf[2] = {0x3fc0, 0xc120};
  std::vector<float> fromBf = typed(DType::BF16, {2}, bf, sizeof bf).toF32();
  EXPECT_EQ(fromBf[0], 1.5f);
  EXPECT_EQ(fromBf[1], -10.0f);

  double d[2] = {0.1, -3.0};
  std::vector<float> fromDouble = typed(DType::F64, {2}, d, sizeof d).toF32();
  EXPECT_EQ(fromDouble[0], 0.1f);
  EXPECT_EQ(fromDouble[1], -3.0f);

  int64_t ids[1] = {7};
  EXPECT_THROW(Tensor::fromI64({1}, ids).toF32(), Error);
}
