// The saved document index of tokens:FILE,eot=ID (TokenIndex.h): written by
// the first load and mapped by the next without a scan, rebuilt when the
// token file changed or the index is corrupt, kept out of the cache folder
// when the file's own folder takes it, and the same samples either way.

#include "lib/runtime/TokenIndex.h"
#include "dpc/runtime/Data.h"
#include "dpc/runtime/Error.h"
#include "dpc/support/MappedFile.h"

#include "test/unittests/runtime/ErrorOf.h"
#include "test/unittests/runtime/TempDir.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <ctime>
#include <fcntl.h>
#include <fstream>
#include <string>
#include <sys/stat.h>
#include <utility>
#include <vector>

using namespace dpc::runtime;
using dpc::support::MappedFile;
using dpc::test::TempDir;
using ::testing::HasSubstr;

namespace {

constexpr uint16_t kEot = 9;

/// `ids` as a uint16 token file, its modification time `age` seconds ago
/// (0: left as written, too recent for an index to be saved).
void writeTokens(const std::string &path, const std::vector<uint16_t> &ids,
                 int age) {
  std::ofstream(path, std::ios::binary)
      .write(reinterpret_cast<const char *>(ids.data()),
             std::streamsize(ids.size() * sizeof(uint16_t)));
  if (age == 0)
    return;
  timespec times[2];
  times[0].tv_sec = times[1].tv_sec = std::time(nullptr) - age;
  times[0].tv_nsec = times[1].tv_nsec = 0;
  ASSERT_EQ(::utimensat(AT_FDCWD, path.c_str(), times, 0), 0);
}

/// 40 documents of 2 to 6 tokens (and empty ones between), ids below 9.
std::vector<uint16_t> corpus(int shift) {
  std::vector<uint16_t> ids;
  for (int d = 0; d < 40; ++d) {
    for (int t = 0; t < 2 + (d + shift) % 5; ++t)
      ids.push_back(uint16_t((d * 7 + t + shift) % 9));
    ids.push_back(kEot);
    if (d % 9 == 0)
      ids.push_back(kEot);
  }
  return ids;
}

/// The index's documents as (begin, span) pairs.
std::vector<std::pair<int64_t, int64_t>> documents(const DocumentIndex &i) {
  std::vector<std::pair<int64_t, int64_t>> all;
  for (int64_t d = 0; d < i.size(); ++d)
    all.emplace_back(i.begin(d), i.span(d));
  return all;
}

struct IndexFile {
  ino_t inode;
  timespec mtime;
};

IndexFile statOf(const std::string &path) {
  struct stat info;
  EXPECT_EQ(::stat(path.c_str(), &info), 0) << path;
  return {info.st_ino, info.st_mtim};
}

bool sameFile(const IndexFile &a, const IndexFile &b) {
  return a.inode == b.inode && a.mtime.tv_sec == b.mtime.tv_sec &&
         a.mtime.tv_nsec == b.mtime.tv_nsec;
}

bool exists(const std::string &path) {
  struct stat info;
  return ::stat(path.c_str(), &info) == 0;
}

std::shared_ptr<const DocumentIndex> load(const std::string &path,
                                          const TokenIndexPlaces &places) {
  MappedFile tokens(path);
  return loadDocumentIndex(tokens, 2, kEot, places);
}

TEST(TokenIndex, WrittenByTheFirstLoadAndReusedWithoutAScan) {
  TempDir dir;
  const std::string file = dir.file("c.bin");
  const std::string saved = file + ".eot9.uint16.dpcidx";
  writeTokens(file, corpus(0), 60);
  TokenIndexPlaces places{true, dir.file("cache")};

  auto first = load(file, places);
  EXPECT_TRUE(first->scanned);
  EXPECT_EQ(first->savedPath(), saved);
  ASSERT_TRUE(exists(saved));
  EXPECT_FALSE(exists(dir.file("cache"))); // beside the file was writable
  EXPECT_EQ(first->size(), 40);
  EXPECT_EQ(first->maxId(), 8);
  const IndexFile written = statOf(saved);

  auto second = load(file, places);
  EXPECT_FALSE(second->scanned);
  EXPECT_EQ(second->savedPath(), saved);
  EXPECT_EQ(documents(*second), documents(*first));
  EXPECT_TRUE(sameFile(statOf(saved), written)); // not written again

  // Another end-of-text id is another index.
  MappedFile tokens(file);
  auto other = loadDocumentIndex(tokens, 2, 0, places);
  EXPECT_TRUE(other->scanned);
  EXPECT_EQ(other->savedPath(), file + ".eot0.uint16.dpcidx");
}

TEST(TokenIndex, UnderTheCacheFolderWhenNotBesideTheFile) {
  TempDir dir;
  const std::string file = dir.file("c.bin");
  writeTokens(file, corpus(0), 60);
  TokenIndexPlaces places{false, dir.file("cache/dpc/token-index")};
  auto first = load(file, places);
  EXPECT_TRUE(first->scanned);
  EXPECT_THAT(first->savedPath(),
              HasSubstr(dir.path + "/cache/dpc/token-index/c.bin-"));
  EXPECT_FALSE(exists(file + ".eot9.uint16.dpcidx"));
  auto second = load(file, places);
  EXPECT_FALSE(second->scanned);
  EXPECT_EQ(second->savedPath(), first->savedPath());
}

TEST(TokenIndex, NoIndexSavedForAFileJustWritten) {
  TempDir dir;
  const std::string file = dir.file("c.bin");
  writeTokens(file, corpus(0), 0);
  auto index = load(file, {true, ""});
  EXPECT_TRUE(index->scanned);
  EXPECT_EQ(index->savedPath(), "");
  EXPECT_EQ(index->size(), 40);
  EXPECT_FALSE(exists(file + ".eot9.uint16.dpcidx"));
}

TEST(TokenIndex, AChangedFileIsScannedAgain) {
  TempDir dir;
  const std::string file = dir.file("c.bin");
  writeTokens(file, corpus(0), 60);
  auto before = documents(*load(file, {true, ""}));

  // The same size, other documents, an older modification time.
  std::vector<uint16_t> changed = corpus(1);
  changed.resize(corpus(0).size(), 1);
  writeTokens(file, changed, 120);
  auto after = load(file, {true, ""});
  EXPECT_TRUE(after->scanned);
  EXPECT_NE(documents(*after), before);
  EXPECT_FALSE(load(file, {true, ""})->scanned);

  // Rewritten in place with its modification time put back: the change
  // time still differs.
  struct stat info;
  ASSERT_EQ(::stat(file.c_str(), &info), 0);
  writeTokens(file, corpus(0), 0);
  timespec times[2] = {info.st_atim, info.st_mtim};
  ASSERT_EQ(::utimensat(AT_FDCWD, file.c_str(), times, 0), 0);
  auto restored = load(file, {true, ""});
  EXPECT_TRUE(restored->scanned);
  EXPECT_EQ(documents(*restored), before);
}

TEST(TokenIndex, ACorruptIndexIsRebuilt) {
  TempDir dir;
  const std::string file = dir.file("c.bin");
  const std::string saved = file + ".eot9.uint16.dpcidx";
  writeTokens(file, corpus(0), 60);
  auto good = documents(*load(file, {true, ""}));
  struct stat info;
  ASSERT_EQ(::stat(saved.c_str(), &info), 0);
  const size_t size = size_t(info.st_size);
  ASSERT_EQ(size, 96 + 12 * good.size());

  // A byte of a document's start, the header's document count, its largest
  // id (which the vocabulary check trusts), the magic, a truncated file:
  // each rebuilt, the same documents again.
  const std::vector<std::pair<size_t, char>> edits = {
      {96 + 8 * 5, 3}, {72, 41}, {80, 2}, {0, 'X'}};
  for (const auto &[offset, value] : edits) {
    {
      std::fstream out(saved, std::ios::in | std::ios::out | std::ios::binary);
      out.seekp(std::streamoff(offset));
      out.put(value);
    }
    auto rebuilt = load(file, {true, ""});
    EXPECT_TRUE(rebuilt->scanned) << "byte " << offset;
    EXPECT_EQ(documents(*rebuilt), good) << "byte " << offset;
    EXPECT_FALSE(load(file, {true, ""})->scanned) << "byte " << offset;
  }
  ASSERT_EQ(::truncate(saved.c_str(), off_t(size - 4)), 0);
  auto rebuilt = load(file, {true, ""});
  EXPECT_TRUE(rebuilt->scanned);
  EXPECT_EQ(documents(*rebuilt), good);
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

/// Every sample of a split, inputs then labels, padded to 4.
std::vector<int64_t> samples(const std::string &file, Split split) {
  Dataset data = loadDataset(parseDataSpec("tokens:" + file + ",eot=9"), split,
                             tokenModel(4, 10));
  std::vector<int64_t> indices(size_t(data.size()));
  for (size_t i = 0; i < indices.size(); ++i)
    indices[i] = int64_t(indices.size() - 1 - i);
  std::vector<int64_t> x(indices.size() * 4), y(indices.size() * 4);
  data.gatherIntInputsPadded(indices, data.size(), 4, x.data());
  data.gatherLabelsPadded(indices, data.size(), 4, -100, y.data());
  x.insert(x.end(), y.begin(), y.end());
  return x;
}

TEST(TokenIndex, TheSameSamplesWithAndWithoutAnIndex) {
  TempDir dir;
  const std::string fresh = dir.file("fresh.bin"), old = dir.file("old.bin");
  writeTokens(fresh, corpus(2), 0); // no index: scanned, held in memory
  writeTokens(old, corpus(2), 60);
  for (Split split : {Split::Train, Split::Test}) {
    std::vector<int64_t> scanned = samples(fresh, split);
    EXPECT_EQ(samples(old, split), scanned); // the first load writes it
    const IndexFile written = statOf(old + ".eot9.uint16.dpcidx");
    EXPECT_EQ(samples(old, split), scanned); // the next one maps it
    EXPECT_TRUE(sameFile(statOf(old + ".eot9.uint16.dpcidx"), written));
  }
  EXPECT_FALSE(exists(fresh + ".eot9.uint16.dpcidx"));
}

TEST(TokenIndex, AnIdOutsideTheVocabularyIsNamedWithAnIndexToo) {
  TempDir dir;
  const std::string file = dir.file("bad.bin");
  std::vector<uint16_t> ids = corpus(0);
  ids[30] = 12;
  writeTokens(file, ids, 60);
  const std::string spec = "tokens:" + file + ",eot=9";
  auto message = [&] {
    return inputErrorOf([&] {
      loadDataset(parseDataSpec(spec), Split::Train, tokenModel(4, 10));
    });
  };
  // Token 30 is in the seventh document (the empty one after the first is
  // not counted).
  const std::string expected =
      spec + ": " + file +
      ": token id 12 at token 30 (document 6) is outside the model's "
      "vocabulary of 10";
  EXPECT_EQ(message(), expected);
  ASSERT_TRUE(exists(file + ".eot9.uint16.dpcidx"));
  EXPECT_EQ(message(), expected); // from the saved index's largest id
  // A model with room for it reads the same index.
  EXPECT_EQ(
      loadDataset(parseDataSpec(spec), Split::Train, tokenModel(4, 13)).size(),
      36);
}

} // namespace
