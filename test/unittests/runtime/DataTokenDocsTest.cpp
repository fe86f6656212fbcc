// tokens:FILE,eot=ID: one variable-length sample per document of a binary
// token file, checked against a hand-made file, and the refusals of a bad
// end-of-text id, of ids outside the vocabulary and of models that cannot
// take padded samples.

#include "dpc/runtime/Data.h"
#include "dpc/runtime/Error.h"

#include "test/unittests/runtime/ErrorOf.h"
#include "test/unittests/runtime/TempDir.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <string>
#include <vector>

using namespace dpc::runtime;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

namespace {

using dpc::test::TempDir;

constexpr uint16_t kEot = 9;

/// Documents joined by kEot, after a leading kEot (an empty first
/// document), without one at the end.
void writeDocuments(const std::string &path,
                    const std::vector<std::vector<uint16_t>> &documents) {
  std::vector<uint16_t> ids = {kEot};
  for (size_t d = 0; d < documents.size(); ++d) {
    if (d > 0)
      ids.push_back(kEot);
    ids.insert(ids.end(), documents[d].begin(), documents[d].end());
  }
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char *>(ids.data()),
            std::streamsize(ids.size() * sizeof(uint16_t)));
}

ModelDataShape tokenModel(int64_t length, int64_t vocab) {
  ModelDataShape model;
  model.sampleShape = {length};
  model.numClasses = vocab;
  model.integerInputs = true;
  model.labelShape = {length};
  model.ignoreIndex = -100;
  return model;
}

// Ten documents of at least 2 tokens (and three shorter ones, left out):
// the first nine train, the last one tests.
const std::vector<std::vector<uint16_t>> kDocuments = {
    {1, 2, 3}, {4},    {5, 6, 7, 8, 1, 2},
    {3, 4},    {},     {2, 3, 4},
    {1, 2},    {2, 3}, {3, 4},
    {4, 5},    {5, 6}, {6, 7},
    {8}};

TEST(TokenDocuments, OneSamplePerDocumentBetweenEndOfTextIds) {
  TempDir dir;
  writeDocuments(dir.file("d.bin"), kDocuments);
  DataSpec spec = parseDataSpec("tokens:" + dir.file("d.bin") + ",eot=9");
  EXPECT_EQ(spec.tokensEot, 9);
  Dataset train = loadDataset(spec, Split::Train, tokenModel(4, 10));
  ASSERT_TRUE(train.variableLength());
  ASSERT_EQ(train.size(), 9);
  // min(n - 1, T): {1, 2, 3} -> 2, {5, 6, 7, 8, 1, 2} cut to T = 4, ...
  std::vector<int64_t> lengths;
  for (int64_t i = 0; i < train.size(); ++i)
    lengths.push_back(train.sequenceLength(i));
  EXPECT_THAT(lengths, ElementsAre(2, 4, 1, 2, 1, 1, 1, 1, 1));

  int64_t x[12], y[12];
  train.gatherIntInputsPadded({1, 0}, 3, 4, x);
  EXPECT_THAT(x, ElementsAre(5, 6, 7, 8, 1, 2, 0, 0, 0, 0, 0, 0));
  train.gatherLabelsPadded({1, 0}, 3, 4, -100, y);
  EXPECT_THAT(
      y, ElementsAre(6, 7, 8, 1, 2, 3, -100, -100, -100, -100, -100, -100));
  // A shorter padded length that covers the samples: {3, 4} and {2, 3, 4}.
  train.gatherIntInputsPadded({2, 3}, 2, 2, x);
  EXPECT_THAT(std::vector<int64_t>(x, x + 4), ElementsAre(3, 0, 2, 3));
  train.gatherLabelsPadded({2, 3}, 2, 2, -100, y);
  EXPECT_THAT(std::vector<int64_t>(y, y + 4), ElementsAre(4, -100, 3, 4));
  // Unpadded gathers read whole rows, padded with 0 and the ignore index.
  train.gatherIntInputs({0}, x);
  train.gatherLabels({0}, y);
  EXPECT_THAT(std::vector<int64_t>(x, x + 4), ElementsAre(1, 2, 0, 0));
  EXPECT_THAT(std::vector<int64_t>(y, y + 4), ElementsAre(2, 3, -100, -100));

  Dataset test = loadDataset(spec, Split::Test, tokenModel(4, 10));
  ASSERT_EQ(test.size(), 1);
  EXPECT_EQ(test.sequenceLength(0), 1);
  test.gatherIntInputsPadded({0}, 1, 1, x);
  test.gatherLabelsPadded({0}, 1, 1, -100, y);
  EXPECT_EQ(x[0], 6);
  EXPECT_EQ(y[0], 7);

  // uint32 ids and eot=0.
  std::vector<uint32_t> wide = {70000, 70001, 0, 5, 6, 7};
  std::ofstream(dir.file("w.bin"), std::ios::binary)
      .write(reinterpret_cast<const char *>(wide.data()),
             std::streamsize(wide.size() * sizeof(uint32_t)));
  Dataset two = loadDataset(
      parseDataSpec("tokens:" + dir.file("w.bin") + ",dtype=uint32,eot=0"),
      Split::Train, tokenModel(3, 70002));
  ASSERT_EQ(two.size(), 2);
  two.gatherIntInputsPadded({0, 1}, 2, 2, x);
  EXPECT_THAT(std::vector<int64_t>(x, x + 4), ElementsAre(70000, 0, 5, 6));
}

TEST(TokenDocuments, RefusesBadIdsAndModels) {
  TempDir dir;
  writeDocuments(dir.file("d.bin"), kDocuments);
  const std::string file = dir.file("d.bin");
  auto inputErrorOf = [&](const std::string &text,
                          const ModelDataShape &model) {
    try {
      loadDataset(parseDataSpec(text), Split::Train, model);
    } catch (const InputError &e) {
      return std::string(e.what());
    }
    return std::string("no InputError");
  };
  // An end-of-text id the model cannot have: one line, before any scan.
  EXPECT_EQ(inputErrorOf("tokens:" + file + ",eot=10", tokenModel(4, 10)),
            "tokens:" + file +
                ",eot=10: eot=10 is outside the model's vocabulary of 10");
  // An id in a document beyond the vocabulary: the file, token, document.
  std::vector<std::vector<uint16_t>> bad = kDocuments;
  bad[2][3] = 12;
  writeDocuments(dir.file("bad.bin"), bad);
  EXPECT_THAT(inputErrorOf("tokens:" + dir.file("bad.bin") + ",eot=9",
                           tokenModel(4, 10)),
              HasSubstr(dir.file("bad.bin") +
                        ": token id 12 at token 10 (document 1) is outside "
                        "the model's vocabulary of 10"));
  ModelDataShape noIgnore = tokenModel(4, 10);
  noIgnore.ignoreIndex.reset();
  EXPECT_THAT(inputErrorOf("tokens:" + file + ",eot=9", noIgnore),
              HasSubstr("needs a loss that skips the padding"));
  // Too few documents for a test split.
  writeDocuments(dir.file("few.bin"), {{1, 2}, {3, 4}});
  EXPECT_THAT(errorOf([&] {
                loadDataset(
                    parseDataSpec("tokens:" + dir.file("few.bin") + ",eot=9"),
                    Split::Test, tokenModel(4, 10));
              }),
              HasSubstr("holds 2 documents of at least 2 tokens between "
                        "eot=9 ids, none for the test split"));
  EXPECT_THAT(errorOf([&] { parseDataSpec("tokens:a.bin,eot=9,stride=2"); }),
              HasSubstr("give one of them"));
  EXPECT_THAT(errorOf([&] { parseDataSpec("tokens:a.bin,eot=x"); }),
              HasSubstr("got 'eot=x'"));
}

} // namespace
