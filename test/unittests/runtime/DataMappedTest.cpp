// The memory-mapped sources: npy: of every dtype, scaled and normalized,
// in shards, and tokens: windows of a binary token file, each checked
// against values computed here, and the refusals of bad files.

#include "dpc/runtime/Data.h"
#include "dpc/runtime/Error.h"

#include "test/unittests/runtime/ErrorOf.h"
#include "test/unittests/runtime/NpyFile.h"
#include "test/unittests/runtime/TempDir.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <numeric>
#include <string>
#include <unistd.h>
#include <vector>

using namespace dpc::runtime;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

namespace {

using dpc::test::TempDir;
using dpc::test::writeNpy;

template <typename T>
void writeRaw(const std::string &path, const std::vector<T> &values) {
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char *>(values.data()),
            std::streamsize(values.size() * sizeof(T)));
}

ModelDataShape imageModel(std::vector<int64_t> shape, int64_t classes) {
  ModelDataShape model;
  model.sampleShape = std::move(shape);
  model.numClasses = classes;
  return model;
}

ModelDataShape tokenModel(int64_t length, int64_t vocab) {
  ModelDataShape model;
  model.sampleShape = {length};
  model.numClasses = vocab;
  model.integerInputs = true;
  model.labelShape = {length};
  return model;
}

TEST(MappedNpy, ScalesAndNormalizesUint8ImagesPerChannel) {
  TempDir dir;
  // Two samples of 2 channels x 2 pixels.
  std::vector<uint8_t> pixels = {0, 255, 51, 102, 7, 8, 9, 10};
  writeNpy(dir.file("x.npy"), "|u1", {2, 2, 2}, pixels);
  writeNpy(dir.file("y.npy"), "<i2", {2}, std::vector<int16_t>{1, 0});
  std::string files = dir.file("x.npy") + "," + dir.file("y.npy");

  Dataset scaled = loadDataset(parseDataSpec("npy:" + files + ",scale=255"),
                               Split::Train, imageModel({2, 2}, 2));
  float x[8];
  scaled.gatherInputs({0, 1}, x);
  for (int i = 0; i < 8; ++i)
    EXPECT_EQ(x[i], float(pixels[size_t(i)]) / 255.0f) << i;
  int64_t y[2];
  scaled.gatherLabels({0, 1}, y);
  EXPECT_THAT(y, ElementsAre(1, 0));

  Dataset normalized = loadDataset(
      parseDataSpec("npy:" + files + ",scale=255,mean=0.5/0.25,std=0.5/2"),
      Split::Train, imageModel({2, 2}, 2));
  normalized.gatherInputs({0}, x);
  const float mean[2] = {0.5f, 0.25f}, stddev[2] = {0.5f, 2.0f};
  for (int i = 0; i < 4; ++i)
    EXPECT_EQ(x[i],
              (float(pixels[size_t(i)]) / 255.0f - mean[i / 2]) / stddev[i / 2])
        << i;

  EXPECT_THAT(errorOf([&] {
                loadDataset(parseDataSpec("npy:" + files +
                                          ",mean=0.1/0.2/0.3,std=1/1/1"),
                            Split::Train, imageModel({2, 2}, 2));
              }),
              HasSubstr("3 means and stds for samples of shape 2x2"));
  EXPECT_THAT(errorOf([&] { parseDataSpec("npy:" + files + ",mean=0.5"); }),
              HasSubstr("mean= and std= go together"));
  EXPECT_THAT(errorOf([&] { parseDataSpec("npy:" + files + ",scale=0"); }),
              HasSubstr("scale= takes one positive number"));
}

TEST(MappedNpy, ReadsFloat16AndIntegerDtypes) {
  TempDir dir;
  // 1, -2, 0.5, the largest half and the smallest subnormal.
  std::vector<uint16_t> halves = {0x3C00, 0xC000, 0x3800,
                                  0x7BFF, 0x0001, 0x0000};
  writeNpy(dir.file("h.npy"), "<f2", {2, 3}, halves);
  writeNpy(dir.file("l.npy"), "|u1", {2}, std::vector<uint8_t>{2, 1});
  Dataset data = loadDataset(
      parseDataSpec("npy:" + dir.file("h.npy") + "," + dir.file("l.npy")),
      Split::Train, imageModel({3}, 3));
  float x[6];
  data.gatherInputs({0, 1}, x);
  EXPECT_THAT(x, ElementsAre(1.0f, -2.0f, 0.5f, 65504.0f, 0x1p-24f, 0.0f));

  // uint16 token ids with int32 labels, a label per position.
  writeNpy(dir.file("ids.npy"), "<u2", {2, 2},
           std::vector<uint16_t>{60000, 1, 2, 3});
  writeNpy(dir.file("next.npy"), "<i4", {2, 2},
           std::vector<int32_t>{1, 2, 3, 4});
  Dataset tokens = loadDataset(
      parseDataSpec("npy:" + dir.file("ids.npy") + "," + dir.file("next.npy")),
      Split::Train, tokenModel(2, 60001));
  int64_t ids[4];
  tokens.gatherIntInputs({0, 1}, ids);
  EXPECT_THAT(ids, ElementsAre(60000, 1, 2, 3));
}

TEST(MappedNpy, ReadsShardsAsOneArrayInSortedOrder) {
  TempDir dir;
  writeNpy(dir.file("x-1.npy"), "<f4", {1, 2}, std::vector<float>{5, 6});
  writeNpy(dir.file("x-0.npy"), "<f4", {2, 2}, std::vector<float>{1, 2, 3, 4});
  writeNpy(dir.file("y-0.npy"), "<i8", {1}, std::vector<int64_t>{0});
  writeNpy(dir.file("y-1.npy"), "<i8", {2}, std::vector<int64_t>{1, 2});
  Dataset data = loadDataset(
      parseDataSpec("npy:" + dir.file("x-*.npy") + "," + dir.file("y-*.npy")),
      Split::Train, imageModel({2}, 3));
  ASSERT_EQ(data.size(), 3);
  float x[6];
  data.gatherInputs({2, 0, 1}, x);
  EXPECT_THAT(x, ElementsAre(5, 6, 1, 2, 3, 4));
  int64_t y[3];
  data.gatherLabels({2, 0, 1}, y);
  EXPECT_THAT(y, ElementsAre(2, 0, 1));

  writeNpy(dir.file("z-0.npy"), "<f4", {1, 2}, std::vector<float>{1, 2});
  writeNpy(dir.file("z-1.npy"), "<f4", {1, 3}, std::vector<float>{1, 2, 3});
  EXPECT_THAT(errorOf([&] {
                loadDataset(parseDataSpec("npy:" + dir.file("z-*.npy")),
                            Split::Train, {});
              }),
              HasSubstr(dir.file("z-1.npy") + ": shard of dtype '<f4' and "
                                              "shape 1x3 does not continue"));
  EXPECT_THAT(errorOf([&] {
                loadDataset(parseDataSpec("npy:" + dir.file("w-*.npy")),
                            Split::Train, {});
              }),
              HasSubstr(dir.file("w-*.npy") + ": no file matches"));
}

TEST(MappedNpy, ChecksLabelsOfAGatheredSample) {
  TempDir dir;
  writeNpy(dir.file("x.npy"), "<f4", {2, 1}, std::vector<float>{1, 2});
  writeNpy(dir.file("y.npy"), "<i8", {2}, std::vector<int64_t>{0, 5});
  EXPECT_THAT(
      errorOf([&] {
        loadDataset(
            parseDataSpec("npy:" + dir.file("x.npy") + "," + dir.file("y.npy")),
            Split::Train, imageModel({1}, 3));
      }),
      HasSubstr(dir.file("y.npy") + ": label 5 of sample 1 is outside [0, 3)"));
}

/// The process's resident set, VmRSS of /proc/self/status, in bytes.
int64_t residentBytes() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line))
    if (line.rfind("VmRSS:", 0) == 0)
      return std::stoll(line.substr(6)) * 1024;
  return -1;
}

// #37: a rank's resident memory does not grow with the data set. 512 MiB
// of float32 rows (4 KiB each), written out (in the page cache, as after a
// first epoch), all gathered: the pages read are given back as the reader
// goes, so the resident set grows by far less than the array.
TEST(MappedNpy, GatheringEveryRowKeepsTheResidentSetBounded) {
  TempDir dir;
  constexpr int64_t kRows = 131072, kColumns = 1024;
  {
    std::string header = "{'descr': '<f4', 'fortran_order': False, "
                         "'shape': (" +
                         std::to_string(kRows) + ", " +
                         std::to_string(kColumns) + "), }";
    header.append(64 - (10 + header.size() + 1) % 64, ' ');
    header += '\n';
    std::ofstream out(dir.file("x.npy"), std::ios::binary);
    out.write("\x93NUMPY\x01\x00", 8);
    const uint16_t length = uint16_t(header.size());
    out.write(reinterpret_cast<const char *>(&length), 2);
    out << header;
    std::vector<float> row(kColumns);
    for (int64_t r = 0; r < kRows; ++r) {
      std::fill(row.begin(), row.end(), float(r));
      out.write(reinterpret_cast<const char *>(row.data()),
                std::streamsize(row.size() * sizeof(float)));
    }
  }
  writeNpy(dir.file("y.npy"), "<i8", {kRows}, std::vector<int64_t>(kRows, 1));
  Dataset data = loadDataset(
      parseDataSpec("npy:" + dir.file("x.npy") + "," + dir.file("y.npy")),
      Split::Train, imageModel({kColumns}, 2));
  constexpr int64_t kBatch = 256;
  std::vector<float> batch(size_t(kBatch * kColumns));
  std::vector<int64_t> indices(kBatch);
  const int64_t before = residentBytes();
  ASSERT_GT(before, 0);
  int64_t peak = before;
  for (int64_t first = 0; first < kRows; first += kBatch) {
    std::iota(indices.begin(), indices.end(), first);
    data.gatherInputs(indices, batch.data());
    ASSERT_EQ(batch[size_t(kBatch * kColumns - 1)], float(first + kBatch - 1));
    peak = std::max(peak, residentBytes());
  }
  EXPECT_LT(peak - before, int64_t(64) << 20)
      << "the resident set grew by " << ((peak - before) >> 20)
      << " MiB reading a 512 MiB array";
}

TEST(Tokens, WindowsOfAMappedFileWithNextTokenLabels) {
  TempDir dir;
  // 100 tokens: the train split is the first 90, the test split the rest.
  std::vector<uint16_t> ids(100);
  std::iota(ids.begin(), ids.end(), uint16_t(0));
  writeRaw(dir.file("t.bin"), ids);
  DataSpec spec = parseDataSpec("tokens:" + dir.file("t.bin"));
  EXPECT_EQ(spec.kind, "tokens");
  Dataset train = loadDataset(spec, Split::Train, tokenModel(4, 100));
  // Windows at 0, 4, ..., each needing its next token inside the split.
  EXPECT_EQ(train.size(), (90 - 4 - 1) / 4 + 1);
  int64_t x[8], y[8];
  train.gatherIntInputs({3, 0}, x);
  train.gatherLabels({3, 0}, y);
  EXPECT_THAT(x, ElementsAre(12, 13, 14, 15, 0, 1, 2, 3));
  EXPECT_THAT(y, ElementsAre(13, 14, 15, 16, 1, 2, 3, 4));
  Dataset test = loadDataset(spec, Split::Test, tokenModel(4, 100));
  EXPECT_EQ(test.size(), (10 - 4 - 1) / 4 + 1);
  test.gatherIntInputs({1}, x);
  EXPECT_THAT(std::vector<int64_t>(x, x + 4), ElementsAre(94, 95, 96, 97));

  Dataset strided =
      loadDataset(parseDataSpec("tokens:" + dir.file("t.bin") + ",stride=1"),
                  Split::Train, tokenModel(4, 100));
  EXPECT_EQ(strided.size(), 90 - 4);

  std::vector<uint32_t> wide = {70000, 1, 70001, 2, 3, 4, 5, 6, 7, 8, 9, 10};
  writeRaw(dir.file("w.bin"), wide);
  Dataset big = loadDataset(
      parseDataSpec("tokens:" + dir.file("w.bin") + ",dtype=uint32,seq=2"),
      Split::Train, tokenModel(2, 70002));
  big.gatherIntInputs({0}, x);
  EXPECT_THAT(std::vector<int64_t>(x, x + 2), ElementsAre(70000, 1));
}

TEST(Tokens, RefusesFilesAndModelsThatDoNotFit) {
  TempDir dir;
  std::vector<uint16_t> ids(40, 1);
  ids[21] = 77;
  writeRaw(dir.file("t.bin"), ids);
  DataSpec spec = parseDataSpec("tokens:" + dir.file("t.bin"));
  EXPECT_THAT(
      errorOf([&] { loadDataset(spec, Split::Train, tokenModel(4, 50)); }),
      HasSubstr(dir.file("t.bin") + ": token id 77 at token 21 "
                                    "(sample 5) is outside the "
                                    "model's vocabulary of 50"));
  std::vector<uint8_t> odd(41);
  writeRaw(dir.file("odd.bin"), odd);
  EXPECT_THAT(errorOf([&] {
                loadDataset(parseDataSpec("tokens:" + dir.file("odd.bin")),
                            Split::Train, tokenModel(4, 50));
              }),
              HasSubstr("holds 41 bytes, not a whole number of 16-bit token "
                        "ids"));
  EXPECT_THAT(errorOf([&] {
                loadDataset(
                    parseDataSpec("tokens:" + dir.file("t.bin") + ",seq=8"),
                    Split::Train, tokenModel(4, 100));
              }),
              HasSubstr("seq=8 but the model reads windows of 4 tokens"));
  EXPECT_THAT(errorOf([&] {
                loadDataset(spec, Split::Train, imageModel({1, 28, 28}, 10));
              }),
              HasSubstr("token data needs a model reading token ids"));
  EXPECT_THAT(errorOf([&] {
                loadDataset(parseDataSpec("tokens:" + dir.file("none.bin")),
                            Split::Train, tokenModel(4, 100));
              }),
              HasSubstr(dir.file("none.bin") + ": No such file"));
  EXPECT_THAT(errorOf([&] { parseDataSpec("tokens:a.bin,dtype=int8"); }),
              HasSubstr("unknown option 'dtype=int8'"));
}

} // namespace
