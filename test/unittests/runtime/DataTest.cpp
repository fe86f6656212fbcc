//===- DataTest.cpp - IDX, npy, data specs and datasets -------------------===//

#include "dpc/runtime/Data.h"
#include "dpc/runtime/Error.h"
#include "lib/runtime/Random.h"

#include "test/unittests/runtime/ErrorOf.h"
#include "test/unittests/runtime/TempDir.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <zlib.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <numeric>
#include <string>
#include <unistd.h>

using namespace dpc::runtime;
using ::testing::HasSubstr;

namespace {

using dpc::test::TempDir;

void writeBytes(const std::string &path, const std::vector<uint8_t> &bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char *>(bytes.data()),
            std::streamsize(bytes.size()));
}

void writeGzip(const std::string &path, const std::vector<uint8_t> &bytes) {
  gzFile file = gzopen(path.c_str(), "wb");
  ASSERT_NE(file, nullptr);
  ASSERT_EQ(gzwrite(file, bytes.data(), unsigned(bytes.size())),
            int(bytes.size()));
  gzclose(file);
}

void appendBigEndian(std::vector<uint8_t> &out, uint32_t v) {
  for (int shift = 24; shift >= 0; shift -= 8)
    out.push_back(uint8_t(v >> shift));
}

std::vector<uint8_t> idxImages(uint32_t count, uint32_t h, uint32_t w) {
  std::vector<uint8_t> bytes = {0, 0, 8, 3};
  appendBigEndian(bytes, count);
  appendBigEndian(bytes, h);
  appendBigEndian(bytes, w);
  for (uint32_t i = 0; i < count * h * w; ++i)
    bytes.push_back(uint8_t(i * 7));
  return bytes;
}

std::vector<uint8_t> idxLabels(uint32_t count) {
  std::vector<uint8_t> bytes = {0, 0, 8, 1};
  appendBigEndian(bytes, count);
  for (uint32_t i = 0; i < count; ++i)
    bytes.push_back(uint8_t(i % 10));
  return bytes;
}

} // namespace

TEST(Idx, ParsesImages) {
  IdxArray array = parseIdx(idxImages(2, 3, 4), 3, "x");
  EXPECT_EQ(array.dims, (std::vector<int64_t>{2, 3, 4}));
  ASSERT_EQ(array.data.size(), 24u);
  EXPECT_EQ(array.data[5], 35);
}

TEST(Idx, RejectsBadMagic) {
  std::string message =
      errorOf([] { parseIdx(idxLabels(3), 3, "labels.idx"); });
  EXPECT_THAT(message, HasSubstr("labels.idx: bad magic 0x00000801"));
  EXPECT_THAT(message, HasSubstr("expected 0x00000803"));
}

TEST(Idx, RejectsTruncatedData) {
  std::vector<uint8_t> bytes = idxImages(2, 3, 4);
  bytes.pop_back();
  EXPECT_THAT(errorOf([&] { parseIdx(bytes, 3, "img"); }),
              HasSubstr("img: truncated: 23 bytes of data, header says 24"));
}

TEST(Idx, RejectsTruncatedHeader) {
  std::vector<uint8_t> bytes = {0, 0, 8, 3, 0, 0};
  EXPECT_THAT(errorOf([&] { parseIdx(bytes, 3, "img"); }),
              HasSubstr("truncated IDX header"));
}

TEST(Idx, ReadsGzipAndPlainFiles) {
  TempDir dir;
  writeGzip(dir.file("a.gz"), idxImages(2, 2, 2));
  writeBytes(dir.file("b"), idxImages(2, 2, 2));
  EXPECT_EQ(readIdxFile(dir.file("a.gz"), 3).data,
            readIdxFile(dir.file("b"), 3).data);
}

TEST(Idx, TruncatedGzipNamesTheFile) {
  TempDir dir;
  writeGzip(dir.file("a.gz"), idxImages(50, 28, 28));
  std::ifstream in(dir.file("a.gz"), std::ios::binary);
  std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), {});
  bytes.resize(bytes.size() / 2);
  writeBytes(dir.file("cut.gz"), bytes);
  EXPECT_THAT(errorOf([&] { readIdxFile(dir.file("cut.gz"), 3); }),
              HasSubstr(dir.file("cut.gz") + ": corrupt or truncated gzip"));
}

TEST(Idx, MissingFileNamesThePath) {
  EXPECT_THAT(errorOf([] { readIdxFile("/nonexistent/x.gz", 3); }),
              HasSubstr("/nonexistent/x.gz: No such file or directory"));
}

TEST(Npy, RoundTripsFloatAndInt64) {
  TempDir dir;
  std::vector<float> x = {0.5f, -1.0f, 2.25f, 3.0f, 4.0f, 5.0f};
  writeNpyFile(dir.file("x.npy"), "<f4", {3, 2}, x.data(), x.size() * 4);
  NpyArray array = readNpyFile(dir.file("x.npy"));
  EXPECT_EQ(array.descr, "<f4");
  EXPECT_EQ(array.shape, (std::vector<int64_t>{3, 2}));
  ASSERT_EQ(array.data.size(), 24u);
  float back[6];
  std::memcpy(back, array.data.data(), 24);
  EXPECT_EQ(back[2], 2.25f);

  std::vector<int64_t> y = {7};
  writeNpyFile(dir.file("y.npy"), "<i8", {1}, y.data(), 8);
  EXPECT_EQ(readNpyFile(dir.file("y.npy")).shape, (std::vector<int64_t>{1}));
}

TEST(Npy, RejectsMalformedFiles) {
  std::vector<uint8_t> notNpy = {'h', 'e', 'l', 'l', 'o', 0, 0, 0, 0, 0, 0};
  EXPECT_THAT(errorOf([&] { parseNpy(notNpy, "f.npy"); }),
              HasSubstr("f.npy: not a .npy file"));

  TempDir dir;
  std::vector<float> x(4);
  writeNpyFile(dir.file("x.npy"), "<f4", {4}, x.data(), 16);
  std::ifstream in(dir.file("x.npy"), std::ios::binary);
  std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), {});
  bytes.pop_back();
  EXPECT_THAT(errorOf([&] { parseNpy(bytes, "x.npy"); }),
              HasSubstr("x.npy: truncated: 15 bytes of data"));

  std::vector<uint8_t> c8(16);
  writeNpyFile(dir.file("c.npy"), "<c8", {2}, c8.data(), 16);
  EXPECT_THAT(errorOf([&] { readNpyFile(dir.file("c.npy")); }),
              HasSubstr("unsupported npy dtype '<c8'"));
}

TEST(DataSpec, ParsesEveryKind) {
  DataSpec idx = parseDataSpec("fashion-mnist:/data/fm");
  EXPECT_EQ(idx.kind, "idx");
  EXPECT_EQ(idx.format, "fashion-mnist");
  EXPECT_EQ(idx.dir, "/data/fm");
  DataSpec npy = parseDataSpec("npy:a.npy,b.npy");
  EXPECT_EQ(npy.kind, "npy");
  EXPECT_EQ(npy.inputsPath, "a.npy");
  EXPECT_EQ(npy.labelsPath, "b.npy");
  DataSpec inputsOnly = parseDataSpec("npy:a.npy");
  EXPECT_EQ(inputsOnly.inputsPath, "a.npy");
  EXPECT_EQ(inputsOnly.labelsPath, "");
  // synthetic holds its count in its own options: none, the split's default.
  ModelDataShape model{{2}, 3};
  EXPECT_EQ(loadDataset(parseDataSpec("synthetic"), Split::Train, model).size(),
            4096);
  EXPECT_EQ(
      loadDataset(parseDataSpec("synthetic:128"), Split::Train, model).size(),
      128);
}

TEST(DataSpec, RejectsMalformedSpecs) {
  EXPECT_THAT(errorOf([] { parseDataSpec("cifar:/x"); }),
              HasSubstr("unknown kind 'cifar'"));
  EXPECT_THAT(errorOf([] { parseDataSpec("mnist:"); }),
              HasSubstr("expected mnist:DIR"));
  EXPECT_THAT(errorOf([] { parseDataSpec("npy:a.npy,"); }),
              HasSubstr("expected npy:INPUTS.npy,LABELS.npy"));
  EXPECT_THAT(errorOf([] { parseDataSpec("npy:"); }),
              HasSubstr("expected npy:INPUTS.npy,LABELS.npy"));
  EXPECT_THAT(errorOf([] { parseDataSpec("synthetic:ten"); }),
              HasSubstr("positive sample count"));
}

TEST(Dataset, LoadsIdxDirectoryAndScalesPixels) {
  TempDir dir;
  writeGzip(dir.file("train-images-idx3-ubyte.gz"), idxImages(5, 28, 28));
  writeBytes(dir.file("train-labels-idx1-ubyte"), idxLabels(5));
  Dataset data = loadDataset(parseDataSpec("mnist:" + dir.path), Split::Train,
                             {{1, 28, 28}, 10});
  EXPECT_EQ(data.size(), 5);
  EXPECT_EQ(data.sampleShape(), (std::vector<int64_t>{1, 28, 28}));
  std::vector<float> x(2 * 784);
  data.gatherInputs({4, 0}, x.data());
  // Sample 4 starts at byte 4*784, whose value is (4*784*7) mod 256.
  EXPECT_EQ(x[0], float(uint8_t(4 * 784 * 7)) / 255.0f);
  EXPECT_EQ(x[784 + 1], 7.0f / 255.0f);
  int64_t y[2];
  data.gatherLabels({4, 3}, y);
  EXPECT_EQ(y[0], 4);
  EXPECT_EQ(y[1], 3);
}

TEST(Dataset, IdxErrorsNameFiles) {
  TempDir dir;
  EXPECT_THAT(errorOf([&] {
                loadDataset(parseDataSpec("fashion-mnist:" + dir.path),
                            Split::Test, {});
              }),
              HasSubstr("missing " + dir.path + "/t10k-images-idx3-ubyte"));
  writeGzip(dir.file("train-images-idx3-ubyte.gz"), idxImages(5, 28, 28));
  writeGzip(dir.file("train-labels-idx1-ubyte.gz"), idxLabels(4));
  EXPECT_THAT(errorOf([&] {
                loadDataset(parseDataSpec("mnist:" + dir.path), Split::Train,
                            {});
              }),
              HasSubstr("5 images in " + dir.path +
                        "/train-images-idx3-ubyte.gz but 4 labels"));
}

TEST(Dataset, RejectsShapeAndLabelMismatch) {
  TempDir dir;
  writeGzip(dir.file("train-images-idx3-ubyte.gz"), idxImages(5, 28, 28));
  writeGzip(dir.file("train-labels-idx1-ubyte.gz"), idxLabels(5));
  DataSpec spec = parseDataSpec("mnist:" + dir.path);
  EXPECT_THAT(
      errorOf([&] { loadDataset(spec, Split::Train, {{3, 32, 32}, 10}); }),
      HasSubstr("samples have shape 1x28x28 but the model expects "
                "3x32x32"));
  EXPECT_THAT(
      errorOf([&] { loadDataset(spec, Split::Train, {{1, 28, 28}, 3}); }),
      HasSubstr("label 3 of sample 3 is not below the 3 classes"));
}

TEST(Dataset, LoadsNpy) {
  TempDir dir;
  std::vector<float> x = {1, 2, 3, 4, 5, 6};
  std::vector<int64_t> y = {1, 0, 1};
  writeNpyFile(dir.file("x.npy"), "<f4", {3, 2}, x.data(), 24);
  writeNpyFile(dir.file("y.npy"), "<i8", {3}, y.data(), 24);
  Dataset data = loadDataset(
      parseDataSpec("npy:" + dir.file("x.npy") + "," + dir.file("y.npy")),
      Split::Train, {{2}, 2});
  EXPECT_EQ(data.size(), 3);
  float row[2];
  data.gatherInputs({2}, row);
  EXPECT_EQ(row[0], 5);
  EXPECT_EQ(row[1], 6);

  writeNpyFile(dir.file("y2.npy"), "<i8", {2}, y.data(), 16);
  EXPECT_THAT(errorOf([&] {
                loadDataset(parseDataSpec("npy:" + dir.file("x.npy") + "," +
                                          dir.file("y2.npy")),
                            Split::Train, {});
              }),
              HasSubstr("3 samples in " + dir.file("x.npy") + " but 2 labels"));
  writeNpyFile(dir.file("xc.npy"), "<c8", {3}, y.data(), 24);
  EXPECT_THAT(errorOf([&] {
                loadDataset(parseDataSpec("npy:" + dir.file("xc.npy") + "," +
                                          dir.file("y.npy")),
                            Split::Train, {});
              }),
              HasSubstr("unsupported npy dtype '<c8'"));
}

TEST(Dataset, LoadsTokenIdsWithALabelPerPosition) {
  TempDir dir;
  // Three sequences of four ids, int32 on disk; next-token labels as int64.
  std::vector<int32_t> ids = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
  std::vector<int64_t> next = {2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13};
  writeNpyFile(dir.file("ids.npy"), "<i4", {3, 4}, ids.data(), 48);
  writeNpyFile(dir.file("next.npy"), "<i8", {3, 4}, next.data(), 96);
  DataSpec spec =
      parseDataSpec("npy:" + dir.file("ids.npy") + "," + dir.file("next.npy"));
  ModelDataShape model{{4}, 16, /*integerInputs=*/true, /*labelShape=*/{4}};
  Dataset data = loadDataset(spec, Split::Train, model);
  EXPECT_EQ(data.size(), 3);
  EXPECT_TRUE(data.integerInputs());
  EXPECT_EQ(data.labelElements(), 4);
  int64_t x[8], y[8];
  data.gatherIntInputs({2, 0}, x);
  data.gatherLabels({2, 0}, y);
  EXPECT_THAT(x, ::testing::ElementsAre(9, 10, 11, 12, 1, 2, 3, 4));
  EXPECT_THAT(y, ::testing::ElementsAre(10, 11, 12, 13, 2, 3, 4, 5));
  float floats[4];
  EXPECT_THAT(errorOf([&] { data.gatherInputs({0}, floats); }),
              HasSubstr("the inputs are integer token ids, not floats"));
  EXPECT_THAT(errorOf([&] { data.label(0); }),
              HasSubstr("a sample has 4 labels, not one"));

  // What the model reads must match: ids, a label per position, the
  // vocabulary.
  EXPECT_THAT(
      errorOf([&] { loadDataset(spec, Split::Train, {{4}, 16, false, {4}}); }),
      HasSubstr("the inputs are integer token ids but the model "
                "reads floats"));
  EXPECT_THAT(
      errorOf([&] { loadDataset(spec, Split::Train, {{4}, 16, true, {}}); }),
      HasSubstr("a sample has labels of shape 4 but the model's loss expects "
                "one label a sample"));
  EXPECT_THAT(
      errorOf([&] { loadDataset(spec, Split::Train, {{4}, 13, true, {4}}); }),
      HasSubstr("label 13 of sample 2 is outside [0, 13)"));
}

// --loss mse: float targets of the model's output shape, read as they are;
// targets of another shape, or class labels, are the user's mistake (exit
// 2), said in one line naming both shapes.
TEST(Dataset, LoadsFloatTargetsForARegression) {
  TempDir dir;
  std::vector<float> x = {1, 2, 3, 4, 5, 6};
  std::vector<float> t = {0.5f, -1, 2.25f, 3, -0.125f, 7};
  writeNpyFile(dir.file("x.npy"), "<f4", {3, 2}, x.data(), 24);
  writeNpyFile(dir.file("t.npy"), "<f4", {3, 2}, t.data(), 24);
  DataSpec spec =
      parseDataSpec("npy:" + dir.file("x.npy") + "," + dir.file("t.npy"));
  ModelDataShape model{{2}, 2, false, /*labelShape=*/{2}};
  model.floatLabels = true;
  Dataset data = loadDataset(spec, Split::Train, model);
  EXPECT_EQ(data.size(), 3);
  EXPECT_TRUE(data.floatLabels());
  EXPECT_EQ(data.labelElements(), 2);
  float targets[4];
  data.gatherFloatLabels({2, 0}, targets);
  EXPECT_THAT(targets, ::testing::ElementsAre(-0.125f, 7.0f, 0.5f, -1.0f));
  int64_t ids[2];
  EXPECT_THAT(errorOf([&] { data.gatherLabels({0}, ids); }),
              HasSubstr("the labels are float targets, not class ids"));

  ModelDataShape wider = model;
  wider.labelShape = {8};
  EXPECT_EQ(inputErrorOf([&] { loadDataset(spec, Split::Train, wider); }),
            dir.file("t.npy") +
                ": targets of shape [3, 2] do not match the model's output "
                "[N, 8] (--loss mse takes a float target per output element)");
  std::vector<int64_t> classes = {0, 1, 1};
  writeNpyFile(dir.file("y.npy"), "<i8", {3}, classes.data(), 24);
  DataSpec labelled =
      parseDataSpec("npy:" + dir.file("x.npy") + "," + dir.file("y.npy"));
  EXPECT_THAT(inputErrorOf([&] { loadDataset(labelled, Split::Train, model); }),
              HasSubstr("--loss mse needs float32 ('<f4') targets, got '<i8'"));
  // And the other way round: a classifier handed float targets.
  EXPECT_THAT(
      inputErrorOf(
          [&] { loadDataset(spec, Split::Train, {{2}, 2, false, {}}); }),
      HasSubstr("float32 labels are targets for --loss mse, but this model's "
                "loss takes int64 class ids"));
  EXPECT_THAT(inputErrorOf([&] {
                loadDataset(parseDataSpec("fashion-mnist:" + dir.path),
                            Split::Train, model);
              }),
              HasSubstr("the data has class labels but the model's loss takes "
                        "float targets"));

  // Synthetic data draws targets of the output's shape.
  Dataset synthetic =
      loadDataset(parseDataSpec("synthetic:5"), Split::Train, model, 1);
  EXPECT_TRUE(synthetic.floatLabels());
  EXPECT_EQ(synthetic.size(), 5);
  EXPECT_EQ(synthetic.labelShape(), std::vector<int64_t>{2});
}

TEST(DataSpec, ParsesTextOptions) {
  DataSpec plain = parseDataSpec("text:/t/a.txt");
  EXPECT_EQ(plain.kind, "text");
  EXPECT_EQ(plain.textPath, "/t/a.txt");
  EXPECT_EQ(plain.textStride, 0);
  EXPECT_EQ(plain.textVocab, TextVocab::Ascii64);
  DataSpec options = parseDataSpec("text:a.txt,vocab=bytes,stride=3");
  EXPECT_EQ(options.textPath, "a.txt");
  EXPECT_EQ(options.textStride, 3);
  EXPECT_EQ(options.textVocab, TextVocab::Bytes);
  EXPECT_THAT(errorOf([] { parseDataSpec("text:"); }),
              HasSubstr("expected text:FILE[,stride=N][,vocab=ascii64|bytes]"));
  for (const char *bad : {"text:a,stride=0", "text:a,stride=-2",
                          "text:a,stride=", "text:a,stride=2x",
                          "text:a,stride=99999999999999999999"})
    EXPECT_THAT(errorOf([&] { parseDataSpec(bad); }),
                HasSubstr("with a positive stride"))
        << bad;
  EXPECT_THAT(errorOf([] { parseDataSpec("text:a,vocab=utf8"); }),
              HasSubstr("unknown option 'vocab=utf8'"));
}

TEST(Dataset, TextTokensAreTheOraclesAscii64) {
  // text.py: upper-case, bytes 32-95 to 0-63, anything else (newlines,
  // '{', DEL, UTF-8 bytes) to 0; bytes keep their values.
  std::string text = "Hi z{\n~\x7f\xc3\xa9_ ";
  std::vector<uint8_t> bytes(text.begin(), text.end());
  EXPECT_THAT(textTokens(bytes, TextVocab::Ascii64),
              ::testing::ElementsAre('H' - 32, 'I' - 32, 0, 'Z' - 32, 0, 0, 0,
                                     0, 0, 0, '_' - 32, 0));
  EXPECT_THAT(textTokens(bytes, TextVocab::Bytes),
              ::testing::ElementsAre('H', 'i', ' ', 'z', '{', '\n', '~', 0x7f,
                                     0xc3, 0xa9, '_', ' '));
  EXPECT_EQ(textVocabSize(TextVocab::Ascii64), 64);
  EXPECT_EQ(textVocabSize(TextVocab::Bytes), 256);
  EXPECT_EQ(textWindowCount(10, 4, 4), 2); // starts 0 and 4; 8 lacks a label
  EXPECT_EQ(textWindowCount(9, 4, 4), 2);
  EXPECT_EQ(textWindowCount(8, 4, 4), 1);
  EXPECT_EQ(textWindowCount(10, 4, 1), 6);
  EXPECT_EQ(textWindowCount(4, 4, 1), 0);
}

TEST(Dataset, LoadsTextWindowsWithNextTokenLabels) {
  TempDir dir;
  // 40 bytes: the train split is the first 36 tokens, the test split the
  // last 4.
  std::string text = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789abcd";
  writeBytes(dir.file("a.txt"), std::vector<uint8_t>(text.begin(), text.end()));
  ModelDataShape model{{4}, 64, /*integerInputs=*/true, /*labelShape=*/{4}};
  auto id = [](char c) { return int64_t(c) - 32; };

  Dataset train = loadDataset(parseDataSpec("text:" + dir.file("a.txt")),
                              Split::Train, model);
  EXPECT_EQ(train.size(), 8); // starts 0, 4, ..., 28; 32 + 4 would need 37
  EXPECT_EQ(train.labelShape(), std::vector<int64_t>{4});
  int64_t x[8], y[8];
  train.gatherIntInputs({7, 0}, x);
  train.gatherLabels({7, 0}, y);
  EXPECT_THAT(x, ::testing::ElementsAre(id('2'), id('3'), id('4'), id('5'),
                                        id('A'), id('B'), id('C'), id('D')));
  EXPECT_THAT(y, ::testing::ElementsAre(id('3'), id('4'), id('5'), id('6'),
                                        id('B'), id('C'), id('D'), id('E')));

  // A stride below the length overlaps the windows.
  Dataset strided =
      loadDataset(parseDataSpec("text:" + dir.file("a.txt") + ",stride=3"),
                  Split::Train, model);
  EXPECT_EQ(strided.size(), 11); // starts 0, 3, ..., 30 (30 + 4 < 36)
  strided.gatherIntInputs({1}, x);
  EXPECT_THAT(std::vector<int64_t>(x, x + 4),
              ::testing::ElementsAre(id('D'), id('E'), id('F'), id('G')));

  // The test split: the last 4 tokens hold no window of 4 and a label.
  EXPECT_THAT(errorOf([&] {
                loadDataset(parseDataSpec("text:" + dir.file("a.txt")),
                            Split::Test, model);
              }),
              HasSubstr(dir.file("a.txt") + " holds 40 tokens, too few for "
                                            "one window of 4 tokens and its "
                                            "next token in the test split"));
  ModelDataShape shorter{{3}, 64, true, {3}};
  Dataset test = loadDataset(parseDataSpec("text:" + dir.file("a.txt")),
                             Split::Test, shorter);
  EXPECT_EQ(test.size(), 1);
  test.gatherIntInputs({0}, x);
  test.gatherLabels({0}, y);
  EXPECT_THAT(std::vector<int64_t>(x, x + 3),
              ::testing::ElementsAre(id('A'), id('B'), id('C')));
  EXPECT_THAT(std::vector<int64_t>(y, y + 3),
              ::testing::ElementsAre(id('B'), id('C'), id('D')));

  // Bytes: ids are the byte values.
  ModelDataShape bytesModel{{4}, 256, true, {4}};
  Dataset raw =
      loadDataset(parseDataSpec("text:" + dir.file("a.txt") + ",vocab=bytes"),
                  Split::Train, bytesModel);
  raw.gatherIntInputs({0}, x);
  EXPECT_THAT(std::vector<int64_t>(x, x + 4),
              ::testing::ElementsAre('A', 'B', 'C', 'D'));
}

TEST(Dataset, TextErrorsNameTheFileAndAreInputErrors) {
  TempDir dir;
  writeBytes(dir.file("short.txt"), {'a', 'b', 'c'});
  ModelDataShape model{{4}, 64, true, {4}};
  std::string missing = dir.file("missing.txt");
  EXPECT_THAT(inputErrorOf([&] {
                loadDataset(parseDataSpec("text:" + missing), Split::Train,
                            model);
              }),
              HasSubstr("cannot read " + missing + ": No such file"));
  EXPECT_THAT(inputErrorOf([&] {
                loadDataset(parseDataSpec("text:" + dir.path), Split::Train,
                            model);
              }),
              HasSubstr(dir.path + " is not a regular file"));
  std::string shortFile = dir.file("short.txt");
  EXPECT_THAT(inputErrorOf([&] {
                loadDataset(parseDataSpec("text:" + shortFile), Split::Train,
                            model);
              }),
              HasSubstr(shortFile + " holds 3 tokens, too few for one window "
                                    "of 4 tokens"));
  EXPECT_THAT(inputErrorOf([&] {
                loadDataset(parseDataSpec("text:" + shortFile), Split::Train,
                            {{1, 28, 28}, 10, false, {}});
              }),
              HasSubstr("text:" + shortFile +
                        ": text data needs a model reading token ids of "
                        "shape [B, T], but this one reads floats of shape "
                        "[B, 1x28x28]"));
  EXPECT_THAT(inputErrorOf([&] {
                loadDataset(parseDataSpec("text:" + shortFile), Split::Train,
                            {{4}, 10, true, {}});
              }),
              HasSubstr("text data has a label per position"));
  EXPECT_THAT(inputErrorOf([&] {
                loadDataset(parseDataSpec("text:" + shortFile), Split::Train,
                            {{4}, 48, true, {4}});
              }),
              HasSubstr("text:" + shortFile +
                        ": the ascii64 vocabulary has 64 tokens but the "
                        "model predicts 48 classes"));
  EXPECT_THAT(inputErrorOf([&] {
                loadDataset(parseDataSpec("text:" + shortFile + ",vocab=bytes"),
                            Split::Train, model);
              }),
              HasSubstr("the bytes vocabulary has 256 tokens but the model "
                        "predicts 64 classes"));
}

TEST(Dataset, SyntheticTokenIdsStayInTheVocabulary) {
  ModelDataShape model{{8}, 5, /*integerInputs=*/true, /*labelShape=*/{8}};
  Dataset data =
      loadDataset(parseDataSpec("synthetic:16"), Split::Train, model, 3);
  EXPECT_TRUE(data.integerInputs());
  std::vector<int64_t> all(16);
  std::iota(all.begin(), all.end(), 0);
  std::vector<int64_t> x(16 * 8), y(16 * 8);
  data.gatherIntInputs(all, x.data());
  data.gatherLabels(all, y.data());
  for (size_t i = 0; i < x.size(); ++i) {
    EXPECT_GE(x[i], 0);
    EXPECT_LT(x[i], 5);
    EXPECT_GE(y[i], 0);
    EXPECT_LT(y[i], 5);
  }
}

TEST(Dataset, LoadsNpyInputsWithoutLabels) {
  TempDir dir;
  std::vector<float> x = {1, 2, 3, 4, 5, 6};
  writeNpyFile(dir.file("x.npy"), "<f4", {3, 2}, x.data(), 24);
  Dataset data = loadDataset(parseDataSpec("npy:" + dir.file("x.npy")),
                             Split::Test, {{2}, 0});
  EXPECT_EQ(data.size(), 3);
  EXPECT_FALSE(data.hasLabels());
  float row[2];
  data.gatherInputs({1}, row);
  EXPECT_EQ(row[0], 3);
  EXPECT_EQ(row[1], 4);
  int64_t label;
  EXPECT_THAT(errorOf([&] { data.gatherLabels({0}, &label); }),
              HasSubstr("has no labels"));
}

TEST(Dataset, SyntheticIsSeededAndShaped) {
  ModelDataShape model{{1, 4, 4}, 3};
  DataSpec spec = parseDataSpec("synthetic:32");
  Dataset a = loadDataset(spec, Split::Train, model, 7);
  Dataset b = loadDataset(spec, Split::Train, model, 7);
  Dataset c = loadDataset(spec, Split::Train, model, 8);
  Dataset test = loadDataset(spec, Split::Test, model, 7);
  EXPECT_EQ(a.size(), 32);
  EXPECT_EQ(a.sampleShape(), model.sampleShape);
  std::vector<int64_t> all(32);
  for (int i = 0; i < 32; ++i)
    all[size_t(i)] = i;
  std::vector<float> xa(32 * 16), xb(32 * 16), xc(32 * 16), xt(32 * 16);
  a.gatherInputs(all, xa.data());
  b.gatherInputs(all, xb.data());
  c.gatherInputs(all, xc.data());
  test.gatherInputs(all, xt.data());
  EXPECT_EQ(xa, xb);
  EXPECT_NE(xa, xc);
  EXPECT_NE(xa, xt);
  for (float v : xa) {
    EXPECT_GE(v, 0.0f);
    EXPECT_LT(v, 1.0f);
  }
  for (int64_t i = 0; i < 32; ++i)
    EXPECT_LT(a.label(i), 3);
  EXPECT_THAT(errorOf([&] { loadDataset(spec, Split::Train, {}); }),
              HasSubstr("synthetic data needs the model's input shape"));
}

// Synthetic float inputs are computed as they are gathered, in any order,
// and are the values drawn one after the other from the train split's
// stream, as the data set generated them up front before.
TEST(Dataset, SyntheticInputsAreTheStreamsDraws) {
  ModelDataShape model{{3, 7}, 4};
  const int64_t count = 40, elements = 21;
  Dataset data =
      loadDataset(parseDataSpec("synthetic:40"), Split::Train, model, 11);
  detail::SplitMix64 random(detail::mixSeed(11, 0x7261696e));
  std::vector<float> expected(static_cast<size_t>(count * elements));
  for (float &x : expected)
    x = random.unitFloat();
  std::vector<int64_t> expectedLabels(static_cast<size_t>(count));
  for (int64_t &y : expectedLabels)
    y = int64_t(random.below(4));
  std::vector<int64_t> order(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i)
    order[size_t(i)] = (i * 17 + 5) % count;
  std::vector<float> x(static_cast<size_t>(count * elements));
  std::vector<int64_t> y(static_cast<size_t>(count));
  data.gatherInputs(order, x.data());
  data.gatherLabels(order, y.data());
  for (int64_t i = 0; i < count; ++i) {
    int64_t sample = order[size_t(i)];
    EXPECT_EQ(y[size_t(i)], expectedLabels[size_t(sample)]) << sample;
    for (int64_t j = 0; j < elements; ++j)
      ASSERT_EQ(x[size_t(i * elements + j)],
                expected[size_t(sample * elements + j)])
          << sample << ", " << j;
  }
}

// A rank that reads labels only (the last stage) gets the labels of the
// whole data set without generating its inputs, which it cannot gather.
TEST(Dataset, SyntheticWithoutInputsHasTheSameLabels) {
  ModelDataShape model{{1, 4, 4}, 5};
  DataSpec spec = parseDataSpec("synthetic:64");
  for (Split split : {Split::Train, Split::Test}) {
    Dataset whole = loadDataset(spec, split, model, 7);
    Dataset labels = loadDataset(spec, split, model, 7, /*readsInputs=*/false);
    EXPECT_TRUE(whole.hasInputs());
    EXPECT_FALSE(labels.hasInputs());
    ASSERT_EQ(labels.size(), 64);
    EXPECT_EQ(labels.sampleShape(), model.sampleShape);
    std::vector<int64_t> all(64);
    for (int i = 0; i < 64; ++i)
      all[size_t(i)] = i;
    std::vector<int64_t> a(64), b(64);
    whole.gatherLabels(all, a.data());
    labels.gatherLabels(all, b.data());
    EXPECT_EQ(a, b);
    std::vector<float> x(16);
    EXPECT_THAT(errorOf([&] { labels.gatherInputs({0}, x.data()); }),
                HasSubstr("without its inputs"));
  }
  // Float targets (--loss mse) load whole either way.
  ModelDataShape mse{{3}, 0};
  mse.floatLabels = true;
  mse.labelShape = {2};
  EXPECT_TRUE(loadDataset(spec, Split::Train, mse, 7, false).hasInputs());
}

// The installed Fashion-MNIST (Debian dataset-fashion-mnist) loads with the
// sizes and first labels the dataset documents.
TEST(Dataset, FashionMnistWhenInstalled) {
  const std::string dir = "/usr/share/datasets/fashion-mnist";
  if (access((dir + "/train-labels-idx1-ubyte.gz").c_str(), R_OK) != 0)
    GTEST_SKIP() << "dataset-fashion-mnist not installed";
  ModelDataShape model{{1, 28, 28}, 10};
  Dataset train =
      loadDataset(parseDataSpec("fashion-mnist:" + dir), Split::Train, model);
  Dataset test =
      loadDataset(parseDataSpec("fashion-mnist:" + dir), Split::Test, model);
  EXPECT_EQ(train.size(), 60000);
  EXPECT_EQ(test.size(), 10000);
  EXPECT_EQ(train.label(0), 9); // ankle boot
  EXPECT_EQ(train.label(1), 0); // t-shirt/top
  EXPECT_EQ(test.label(0), 9);
  std::vector<float> x(784);
  train.gatherInputs({0}, x.data());
  float maxPixel = 0;
  for (float v : x)
    maxPixel = std::max(maxPixel, v);
  EXPECT_GT(maxPixel, 0.5f);
  EXPECT_LE(maxPixel, 1.0f);
}

//===----------------------------------------------------------------------===//
// Variable-length sequences: text docs=, npy lengths=, padded gathers
//===----------------------------------------------------------------------===//

namespace {

std::vector<uint8_t> bytesOf(const std::string &text) {
  return std::vector<uint8_t>(text.begin(), text.end());
}

int64_t id(char c) { return int64_t(c) - 32; }

/// A token model of length 4 whose loss ignores -100.
const ModelDataShape kSequenceModel{{4}, 64, true, {4}, int64_t(-100)};

} // namespace

TEST(TextDocuments, SplitsInEveryMode) {
  using ::testing::ElementsAre;
  EXPECT_THAT(textDocuments(bytesOf("first\nquote\n%\nsecond\n%\r\n\n%\nthird"),
                            TextDocs::Fortune),
              ElementsAre("first\nquote", "second", "third"));
  // A "%" inside a line, or with more on its line, separates nothing.
  EXPECT_THAT(textDocuments(bytesOf("50% off\n%%\n%\n"), TextDocs::Fortune),
              ElementsAre("50% off\n%%"));
  EXPECT_THAT(textDocuments(bytesOf("para one\nstill one\n\n  \npara two\r\n"
                                    "\r\nthree\n"),
                            TextDocs::Blank),
              ElementsAre("para one\nstill one", "para two\r", "three"));
  EXPECT_THAT(textDocuments(bytesOf("a\n\n b \n\t\nlast"), TextDocs::Line),
              ElementsAre("a", " b ", "last"));
  for (TextDocs mode : {TextDocs::Fortune, TextDocs::Line, TextDocs::Blank})
    EXPECT_TRUE(textDocuments({}, mode).empty());
  EXPECT_TRUE(textDocuments(bytesOf("\n \n"), TextDocs::Line).empty());
  EXPECT_TRUE(textDocuments(bytesOf("\n \n"), TextDocs::Blank).empty());
  // Blank lines inside a quote belong to it.
  EXPECT_THAT(textDocuments(bytesOf("\n \n"), TextDocs::Fortune),
              ElementsAre("\n "));
}

TEST(DataSpec, ParsesDocsAndLengths) {
  DataSpec docs = parseDataSpec("text:a.txt,docs=fortune,vocab=bytes");
  EXPECT_EQ(docs.textPath, "a.txt");
  EXPECT_EQ(docs.textDocs, TextDocs::Fortune);
  EXPECT_EQ(docs.textVocab, TextVocab::Bytes);
  EXPECT_EQ(parseDataSpec("text:a.txt,docs=line").textDocs, TextDocs::Line);
  EXPECT_EQ(parseDataSpec("text:a.txt,docs=blank").textDocs, TextDocs::Blank);
  EXPECT_EQ(parseDataSpec("text:a.txt").textDocs, TextDocs::Windows);
  EXPECT_THAT(inputErrorOf([] { parseDataSpec("text:/x/f.txt,docs=para"); }),
              HasSubstr("unknown docs= mode 'para' for /x/f.txt; expected "
                        "docs=fortune, docs=line or docs=blank"));
  EXPECT_THAT(
      inputErrorOf([] { parseDataSpec("text:f.txt,docs=line,stride=2"); }),
      HasSubstr("give one of them"));

  DataSpec npy = parseDataSpec("npy:t.npy,l.npy,lengths=n.npy");
  EXPECT_EQ(npy.inputsPath, "t.npy");
  EXPECT_EQ(npy.labelsPath, "l.npy");
  EXPECT_EQ(npy.lengthsPath, "n.npy");
  EXPECT_EQ(parseDataSpec("npy:t.npy,l.npy").lengthsPath, "");
  EXPECT_THAT(inputErrorOf([] { parseDataSpec("npy:t.npy,lengths=n.npy"); }),
              HasSubstr("lengths= needs labels"));
  EXPECT_THAT(inputErrorOf([] { parseDataSpec("npy:t.npy,l.npy,lengths="); }),
              HasSubstr("lengths=LENGTHS.npy; got 'lengths='"));
  // Three files are two inputs and labels (DataInputsTest.cpp); an empty
  // one is malformed.
  EXPECT_THAT(errorOf([] { parseDataSpec("npy:t.npy,,x.npy"); }),
              HasSubstr("expected npy:INPUTS.npy,LABELS.npy"));
}

TEST(Dataset, LoadsOneSamplePerDocument) {
  TempDir dir;
  // Ten documents of at least 2 tokens (a blank line and "X" are not): the
  // train split is the first nine, the test split the last.
  writeBytes(dir.file("d.txt"),
             bytesOf("AB\n\nX\nCDEFGHIJ\n \t\nKLM\nNOPQR\nST\nUVW\nXYZ0\n"
                     "12345\n67\n89AB\n"));
  DataSpec spec = parseDataSpec("text:" + dir.file("d.txt") + ",docs=line");
  Dataset train = loadDataset(spec, Split::Train, kSequenceModel);
  ASSERT_EQ(train.size(), 9);
  EXPECT_TRUE(train.variableLength());
  EXPECT_EQ(train.sampleShape(), std::vector<int64_t>{4});
  std::vector<int64_t> lengths;
  for (int64_t i = 0; i < train.size(); ++i)
    lengths.push_back(train.sequenceLength(i));
  // CDEFGHIJ is cut to its first 5 tokens; NOPQR and 12345 just fit.
  EXPECT_THAT(lengths, ::testing::ElementsAre(1, 4, 2, 4, 1, 2, 3, 4, 1));

  // Stored padded: input 0 and label the ignore index past the length.
  int64_t x[8], y[8];
  train.gatherIntInputs({0, 1}, x);
  train.gatherLabels({0, 1}, y);
  EXPECT_THAT(x, ::testing::ElementsAre(id('A'), 0, 0, 0, id('C'), id('D'),
                                        id('E'), id('F')));
  EXPECT_THAT(y, ::testing::ElementsAre(id('B'), -100, -100, -100, id('D'),
                                        id('E'), id('F'), id('G')));

  // Padded to 2 positions and 3 rows: the third row all pad.
  int64_t px[6], py[6];
  std::fill(px, px + 6, -9);
  std::fill(py, py + 6, -9);
  train.gatherIntInputsPadded({2, 0}, 3, 2, px);
  train.gatherLabelsPadded({2, 0}, 3, 2, 7, py);
  EXPECT_THAT(px, ::testing::ElementsAre(id('K'), id('L'), id('A'), 0, 0, 0));
  EXPECT_THAT(py, ::testing::ElementsAre(id('L'), id('M'), id('B'), 7, 7, 7));
  EXPECT_THAT(errorOf([&] { train.gatherIntInputsPadded({1}, 1, 2, px); }),
              HasSubstr("sample 1 of length 4 does not fit a padded length "
                        "of 2"));
  EXPECT_THAT(errorOf([&] { train.gatherIntInputsPadded({0, 2}, 1, 2, px); }),
              HasSubstr("2 samples do not fit 1 rows"));
  EXPECT_THAT(errorOf([&] { train.gatherLabelsPadded({0}, 1, 5, 7, py); }),
              HasSubstr("padded length 5 outside 1..4"));

  Dataset test = loadDataset(spec, Split::Test, kSequenceModel);
  ASSERT_EQ(test.size(), 1);
  EXPECT_EQ(test.sequenceLength(0), 3);
  test.gatherIntInputsPadded({0}, 1, 4, px);
  EXPECT_THAT(std::vector<int64_t>(px, px + 4),
              ::testing::ElementsAre(id('8'), id('9'), id('A'), 0));

  // Paragraphs and fortunes through the loader.
  std::string paragraphs, fortunes;
  for (int k = 0; k < 20; ++k) {
    paragraphs += "WORD " + std::string(size_t(k % 3 + 1), 'A') + "\nMORE\n\n";
    fortunes += "QUOTE " + std::to_string(k) + "\n%\n";
  }
  writeBytes(dir.file("p.txt"), bytesOf(paragraphs));
  writeBytes(dir.file("f.txt"), bytesOf(fortunes));
  ModelDataShape longer{{16}, 64, true, {16}, int64_t(-1)};
  Dataset para =
      loadDataset(parseDataSpec("text:" + dir.file("p.txt") + ",docs=blank"),
                  Split::Train, longer);
  EXPECT_EQ(para.size(), 18);
  EXPECT_EQ(para.sequenceLength(0), 10); // "WORD A\nMORE" less one
  EXPECT_EQ(para.sequenceLength(2), 12);
  Dataset quotes =
      loadDataset(parseDataSpec("text:" + dir.file("f.txt") + ",docs=fortune"),
                  Split::Test, longer);
  EXPECT_EQ(quotes.size(), 2);
  EXPECT_EQ(quotes.sequenceLength(1), 7); // "QUOTE 19" less one
  int64_t label[16];
  quotes.gatherLabelsPadded({1}, 1, 16, -1, label);
  EXPECT_EQ(label[6], id('9'));
  EXPECT_EQ(label[7], -1);
}

TEST(Dataset, DocumentErrorsNameTheFileAndAreInputErrors) {
  TempDir dir;
  std::string none = dir.file("none.txt"), few = dir.file("few.txt");
  writeBytes(none, bytesOf("a\nb\n\nc\n"));
  writeBytes(few, bytesOf("one\ntwo\nthree\nfour\nfive\n"));
  auto load = [&](const std::string &spec, Split split,
                  const ModelDataShape &model) {
    return [=] { loadDataset(parseDataSpec(spec), split, model); };
  };
  EXPECT_THAT(inputErrorOf(load("text:" + none + ",docs=line", Split::Train,
                                kSequenceModel)),
              HasSubstr("text:" + none + ",docs=line: " + none +
                        " holds no document of at least 2 tokens (docs=line)"));
  EXPECT_THAT(inputErrorOf(load("text:" + few + ",docs=line", Split::Test,
                                kSequenceModel)),
              HasSubstr(few + " holds 5 documents of at least 2 tokens, none "
                              "for the test split"));
  EXPECT_EQ(loadDataset(parseDataSpec("text:" + few + ",docs=line"),
                        Split::Train, kSequenceModel)
                .size(),
            5);
  EXPECT_THAT(inputErrorOf(load("text:" + few + ",docs=line", Split::Train,
                                {{1, 28, 28}, 10, false, {}})),
              HasSubstr("text:" + few +
                        ",docs=line: docs=line needs a token model reading ids "
                        "[B, T] with a label per position, but this one reads "
                        "floats of shape [B, 1x28x28] with one label a "
                        "sample"));
  EXPECT_THAT(inputErrorOf(load("text:" + few + ",docs=blank", Split::Train,
                                {{4}, 64, true, {}, int64_t(-100)})),
              HasSubstr("docs=blank needs a token model reading ids [B, T] "
                        "with a label per position, but this one reads "
                        "integer ids of shape [B, 4] with one label a sample"));
  EXPECT_THAT(inputErrorOf(load("text:" + few + ",docs=fortune", Split::Train,
                                {{4}, 64, true, {4}})),
              HasSubstr("docs=fortune pads samples to the model's length 4 "
                        "and needs a loss that skips the padding (dpc compile "
                        "--ignore-index P)"));
  EXPECT_THAT(inputErrorOf(load("text:" + few + ",docs=line,vocab=bytes",
                                Split::Train, kSequenceModel)),
              HasSubstr("the bytes vocabulary has 256 tokens but the model "
                        "predicts 64 classes"));
  EXPECT_THAT(
      inputErrorOf(load("text:" + dir.file("missing.txt") + ",docs=line",
                        Split::Train, kSequenceModel)),
      HasSubstr("cannot read " + dir.file("missing.txt")));
}

TEST(Dataset, LoadsNpyWithLengths) {
  TempDir dir;
  // Past each length the files hold anything (99, 77): padding replaces it.
  std::vector<int32_t> ids = {1, 2, 99, 99, 5, 6, 7, 8, 9, 99, 99, 99};
  std::vector<int64_t> labels = {2, 3, 77, 77, 6, 7, 8, 9, 10, 77, 77, 77};
  std::vector<int64_t> lengths = {2, 4, 1};
  writeNpyFile(dir.file("t.npy"), "<i4", {3, 4}, ids.data(), 48);
  writeNpyFile(dir.file("l.npy"), "<i8", {3, 4}, labels.data(), 96);
  writeNpyFile(dir.file("n.npy"), "<i8", {3}, lengths.data(), 24);
  auto spec = [&](const std::string &lengthsFile,
                  const std::string &labelsFile = "l.npy") {
    return parseDataSpec("npy:" + dir.file("t.npy") + "," +
                         dir.file(labelsFile) +
                         ",lengths=" + dir.file(lengthsFile));
  };
  ModelDataShape model{{4}, 16, true, {4}, int64_t(-100)};
  Dataset data = loadDataset(spec("n.npy"), Split::Train, model);
  ASSERT_EQ(data.size(), 3);
  EXPECT_TRUE(data.variableLength());
  EXPECT_EQ(data.sequenceLength(0), 2);
  EXPECT_EQ(data.sequenceLength(2), 1);
  int64_t x[12], y[12];
  std::fill(x, x + 12, -9);
  std::fill(y, y + 12, -9);
  data.gatherIntInputs({0, 2}, x);
  data.gatherLabels({0, 2}, y);
  EXPECT_THAT(std::vector<int64_t>(x, x + 8),
              ::testing::ElementsAre(1, 2, 0, 0, 9, 0, 0, 0));
  EXPECT_THAT(std::vector<int64_t>(y, y + 8),
              ::testing::ElementsAre(2, 3, -100, -100, 10, -100, -100, -100));
  data.gatherIntInputsPadded({2, 0}, 2, 2, x);
  data.gatherLabelsPadded({2, 0}, 2, 2, -5, y);
  EXPECT_THAT(std::vector<int64_t>(x, x + 4),
              ::testing::ElementsAre(9, 0, 1, 2));
  EXPECT_THAT(std::vector<int64_t>(y, y + 4),
              ::testing::ElementsAre(10, -5, 2, 3));

  auto write = [&](const std::string &name, std::vector<int64_t> values,
                   std::vector<int64_t> shape) {
    writeNpyFile(dir.file(name), "<i8", shape, values.data(),
                 values.size() * 8);
  };
  write("long.npy", {2, 5, 1}, {3});
  EXPECT_THAT(
      inputErrorOf([&] { loadDataset(spec("long.npy"), Split::Train, model); }),
      HasSubstr(dir.file("long.npy") +
                ": length 5 of sample 1 is outside 1..4"));
  write("zero.npy", {0, 4, 1}, {3});
  EXPECT_THAT(
      inputErrorOf([&] { loadDataset(spec("zero.npy"), Split::Train, model); }),
      HasSubstr(dir.file("zero.npy") +
                ": length 0 of sample 0 is outside 1..4"));
  write("two.npy", {2, 4}, {2});
  EXPECT_THAT(
      inputErrorOf([&] { loadDataset(spec("two.npy"), Split::Train, model); }),
      HasSubstr(dir.file("two.npy") +
                ": lengths of shape 2 for 3 "
                "samples in " +
                dir.file("t.npy")));
  write("flat.npy", {1, 2, 3}, {3});
  EXPECT_THAT(inputErrorOf([&] {
                loadDataset(spec("n.npy", "flat.npy"), Split::Train, model);
              }),
              HasSubstr(dir.file("flat.npy") + ": labels of shape 3 for token "
                                               "ids of shape 3x4"));
  // Labels within a length are checked against the classes.
  write("big.npy", {2, 3, 0, 0, 6, 7, 8, 9, 16, 0, 0, 0}, {3, 4});
  EXPECT_THAT(inputErrorOf([&] {
                loadDataset(spec("n.npy", "big.npy"), Split::Train, model);
              }),
              HasSubstr(dir.file("big.npy") +
                        ": label 16 of sample 2 is outside [0, 16)"));
  EXPECT_THAT(inputErrorOf([&] {
                loadDataset(spec("n.npy"), Split::Train, {{4}, 16, true, {4}});
              }),
              HasSubstr("lengths= pads samples to the model's length 4"));
  EXPECT_THAT(inputErrorOf([&] {
                loadDataset(spec("n.npy"), Split::Train,
                            {{4}, 16, true, {}, int64_t(-100)});
              }),
              HasSubstr("lengths= needs a token model reading ids [B, T] with "
                        "a label per position"));
}

TEST(Dataset, FixedLengthDataGathersPadded) {
  TempDir dir;
  std::vector<int64_t> ids = {1, 2, 3, 4, 5, 6, 7, 8};
  writeNpyFile(dir.file("t.npy"), "<i8", {2, 4}, ids.data(), 64);
  Dataset data = loadDataset(
      parseDataSpec("npy:" + dir.file("t.npy") + "," + dir.file("t.npy")),
      Split::Train, {{4}, 16, true, {4}});
  EXPECT_FALSE(data.variableLength());
  EXPECT_EQ(data.sequenceLength(1), 4);
  int64_t x[12], y[12];
  std::fill(x, x + 12, -9);
  std::fill(y, y + 12, -9);
  data.gatherIntInputsPadded({1}, 3, 4, x);
  data.gatherLabelsPadded({1}, 3, 4, -1, y);
  EXPECT_THAT(std::vector<int64_t>(x, x + 12),
              ::testing::ElementsAre(5, 6, 7, 8, 0, 0, 0, 0, 0, 0, 0, 0));
  EXPECT_THAT(
      std::vector<int64_t>(y, y + 12),
      ::testing::ElementsAre(5, 6, 7, 8, -1, -1, -1, -1, -1, -1, -1, -1));
  EXPECT_THAT(errorOf([&] { data.gatherIntInputsPadded({0}, 1, 3, x); }),
              HasSubstr("sample 0 of length 4 does not fit"));
  EXPECT_EQ(lengthHistogram(data), "lengths: all 4");
}

TEST(Dataset, LengthHistogram) {
  std::vector<int64_t> lengths = {1, 2, 3, 5, 9, 12};
  Dataset data =
      Dataset::fromTokenSequences(16, std::vector<int64_t>(6 * 16, 1),
                                  std::vector<int64_t>(6 * 16, 1), lengths, 4);
  EXPECT_EQ(lengthHistogram(data),
            "lengths of 6 samples: mean 5.3, max 12 of 16, mean/max 0.44; "
            "<=1 17%, <=2 17%, <=4 17%, <=8 17%, <=12 33%");
  EXPECT_EQ(lengthHistogram(data, 3),
            "lengths of 6 samples: mean 5.3, max 12 of 16, mean/max 0.44; "
            "<=4 50%, <=8 17%, <=12 33%");
  EXPECT_THAT(
      errorOf([] { Dataset::fromTokenSequences(2, {1, 1}, {1, 1}, {3}, 4); }),
      HasSubstr("sequence length 3 of sample 0 is outside 1..2"));
  EXPECT_THAT(errorOf([] {
                Dataset::fromTokenSequences(2, {1, 1}, {1, 1}, {1, 1}, 4);
              }),
              HasSubstr("2 sequence lengths for 1 samples"));
}
