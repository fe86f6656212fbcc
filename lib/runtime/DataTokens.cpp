//===- DataTokens.cpp - A binary file of token ids: tokens:FILE -----------===//
//
// `tokens:FILE[,dtype=uint16|uint32][,seq=N][,stride=S]`: a flat file of
// little-endian token ids, the layout nanoGPT's prepare scripts (np.uint16
// .tofile) and Megatron's indexed datasets' .bin files use. The file is
// memory-mapped and never read whole: sample k is the window of T tokens
// at k * S of its split, its labels the T tokens one later, both read as
// the sample is gathered, so a corpus larger than memory trains with a
// rank's resident memory independent of its size. The train split is the
// first 90% of the tokens, the test split the rest, as text: cuts them.
// Ids are checked against the model's vocabulary as they are read, and,
// for files of up to kScanLimit tokens, all at load, before training.
//
// `eot=ID` makes one sample of each document instead, the ids between two
// end-of-text ids (and before the first, after the last), as text: docs=
// does for a text: the first load scans the file once for the ids and saves
// an index of the documents, 12 bytes a document (where it starts, 8 bytes,
// and its span, 4), which later loads map instead of scanning
// (TokenIndex.h); the largest id, saved with it, is checked against the
// vocabulary. The tokens stay in the file.
//
//===----------------------------------------------------------------------===//

#include "dpc/runtime/Data.h"

#include "DataSources.h"
#include "TokenIndex.h"
#include "dpc/runtime/Error.h"
#include "dpc/support/MappedFile.h"

#include <algorithm>
#include <cstring>
#include <memory>
#include <optional>
#include <sys/mman.h>
#include <unistd.h>
#include <vector>

namespace dpc::runtime {

using support::MappedFile;

using namespace data_detail;

namespace {

/// Files of up to this many tokens are checked whole at load.
constexpr int64_t kScanLimit = int64_t(1) << 26;

/// Unmaps the pages that hold bytes [offset, offset + size) of the file
/// from this process, rounded out to whole pages. The mapping is shared
/// and read-only, so the page cache keeps them and a later read maps them
/// again without I/O; but a rank's resident set stops counting the pages
/// it read, which otherwise (the kernel maps a large folio, up to the
/// read-ahead, 8 MB here, on each fault) grew by about 1 MB a window.
void unmapPages(const MappedFile &file, size_t offset, size_t size) {
  static const size_t page = size_t(::sysconf(_SC_PAGESIZE));
  if (size == 0 || offset >= file.size())
    return;
  size_t first = offset / page * page;
  size_t last = std::min(offset + size, file.size());
  last = (last + page - 1) / page * page;
  ::madvise(const_cast<uint8_t *>(file.data()) + first, last - first,
            MADV_DONTNEED);
}

/// The windows of one split of a mapped token file: inputs (offset 0) or
/// their next-token labels (offset 1).
class TokenWindows : public RowSource {
public:
  TokenWindows(std::shared_ptr<const MappedFile> file, int tokenBytes,
               int64_t begin, int64_t windows, int64_t length, int64_t stride,
               int64_t offset, int64_t vocab)
      : file(std::move(file)), tokenBytes(tokenBytes), begin(begin),
        windows(windows), length(length), stride(stride), offset(offset),
        vocab(vocab) {}

  int64_t rows() const override { return windows; }
  int64_t rowElements() const override { return length; }
  void readFloats(int64_t, float *) const override {
    throw Error(file->path() + ": token ids are not float inputs");
  }
  void readInts(int64_t row, int64_t *out) const override {
    if (row < 0 || row >= windows)
      throw Error(file->path() + ": window " + std::to_string(row) +
                  " out of range (" + std::to_string(windows) + " windows)");
    const int64_t first = begin + row * stride + offset;
    for (int64_t t = 0; t < length; ++t)
      out[t] = id(first + t);
    unmapPages(*file, size_t(first) * size_t(tokenBytes),
               size_t(length) * size_t(tokenBytes));
    for (int64_t t = 0; t < length; ++t)
      if (out[t] >= vocab)
        throw InputError(where(row) + ": token id " + std::to_string(out[t]) +
                         " at token " + std::to_string(first + t) +
                         " is outside the model's vocabulary of " +
                         std::to_string(vocab));
  }
  std::string where(int64_t row) const override {
    return file->path() + ": sample " + std::to_string(row);
  }

  /// Token `index` of the file.
  int64_t id(int64_t index) const {
    return tokenAt(file->data(), tokenBytes, index);
  }

private:
  std::shared_ptr<const MappedFile> file;
  int tokenBytes;
  int64_t begin, windows, length, stride, offset, vocab;
};

/// One split's documents of a mapped token file, each a row of T values:
/// inputs (offset 0) or their next-token labels (offset 1), padded past
/// the sample's length with `pad` (0 for inputs, the ignore index for
/// labels). The ids were checked at load.
class TokenDocuments : public RowSource {
public:
  TokenDocuments(std::shared_ptr<const MappedFile> file, int tokenBytes,
                 std::shared_ptr<const DocumentIndex> index, int64_t first,
                 int64_t count, int64_t length, int64_t offset, int64_t pad)
      : file(std::move(file)), index(std::move(index)), tokenBytes(tokenBytes),
        first(first), count(count), length(length), offset(offset), pad(pad) {}

  int64_t rows() const override { return count; }
  int64_t rowElements() const override { return length; }
  int64_t rowLength(int64_t row) const override {
    check(row);
    // min(n - 1, T) for a document of n >= 2 tokens.
    return std::min(index->span(first + row), length);
  }
  void readFloats(int64_t, float *) const override {
    throw Error(file->path() + ": token ids are not float inputs");
  }
  void readInts(int64_t row, int64_t *out) const override {
    const int64_t real = rowLength(row);
    const int64_t begin = index->begin(first + row) + offset;
    for (int64_t t = 0; t < real; ++t)
      out[t] = tokenAt(file->data(), tokenBytes, begin + t);
    unmapPages(*file, size_t(begin) * size_t(tokenBytes),
               size_t(real) * size_t(tokenBytes));
    std::fill(out + real, out + length, pad);
  }
  std::string where(int64_t row) const override {
    return file->path() + ": document " + std::to_string(first + row);
  }

private:
  void check(int64_t row) const {
    if (row < 0 || row >= count)
      throw Error(file->path() + ": document " + std::to_string(row) +
                  " out of range (" + std::to_string(count) + " documents)");
  }

  std::shared_ptr<const MappedFile> file;
  std::shared_ptr<const DocumentIndex> index;
  int tokenBytes;
  int64_t first, count, length, offset, pad;
};

/// Throws unless the model reads token ids [B, T] with a label per position.
int64_t sequenceLength(const DataSpec &spec, const ModelDataShape &model) {
  if (model.sampleShape.empty()) {
    if (spec.tokensSeq <= 0)
      throw InputError(spec.text + ": give seq=N, the window length, where "
                                   "no model says it");
    return spec.tokensSeq;
  }
  if (model.sampleShape.size() != 1 || !model.integerInputs ||
      model.labelShape != model.sampleShape || model.floatLabels)
    throw InputError(spec.text +
                     ": token data needs a model reading token "
                     "ids of shape [B, T] with a label per "
                     "position, but this one reads " +
                     (model.integerInputs ? "integer ids" : "floats") +
                     " of shape [B, " + shapeText(model.sampleShape) + "]");
  const int64_t length = model.sampleShape[0];
  if (spec.tokensSeq > 0 && spec.tokensSeq != length)
    throw InputError(spec.text + ": seq=" + std::to_string(spec.tokensSeq) +
                     " but the model reads windows of " +
                     std::to_string(length) + " tokens");
  return length;
}

/// tokens:FILE,eot=ID: a sample of each document, the last tenth of the
/// documents the test split.
Dataset loadTokenDocuments(const DataSpec &spec, Split split,
                           const ModelDataShape &model,
                           std::shared_ptr<const MappedFile> file,
                           int64_t length) {
  checkSequenceModel(spec, model, "eot=");
  const int64_t vocab =
      model.numClasses > 0 ? model.numClasses : (int64_t(1) << 32);
  if (spec.tokensEot >= vocab)
    throw InputError(spec.text + ": eot=" + std::to_string(spec.tokensEot) +
                     " is outside the model's vocabulary of " +
                     std::to_string(vocab));
  std::shared_ptr<const DocumentIndex> index = loadDocumentIndex(
      *file, spec.tokenBytes, spec.tokensEot, defaultTokenIndexPlaces());
  if (index->maxId() >= vocab) {
    std::optional<IdOutside> found =
        firstIdOutside(*file, spec.tokenBytes, spec.tokensEot, vocab);
    if (!found)
      throw Error(spec.tokensPath + ": its document index " +
                  index->savedPath() + " gives a largest id of " +
                  std::to_string(index->maxId()) +
                  " that the file does not hold; delete the index");
    const IdOutside &bad = *found;
    throw InputError(
        spec.text + ": " + spec.tokensPath + ": token id " +
        std::to_string(bad.id) + " at token " + std::to_string(bad.token) +
        " (document " + std::to_string(bad.documentsBefore) +
        ") is outside the model's vocabulary of " + std::to_string(vocab));
  }
  const int64_t documents = index->size();
  const int64_t cut = documents - documents / 10;
  const int64_t first = split == Split::Train ? 0 : cut;
  const int64_t count = split == Split::Train ? cut : documents - cut;
  if (count == 0)
    throw InputError(spec.text + ": " + spec.tokensPath + " holds " +
                     std::to_string(documents) +
                     " documents of at least 2 tokens between eot=" +
                     std::to_string(spec.tokensEot) + " ids, none for the " +
                     (split == Split::Train ? "train split"
                                            : "test split (the last tenth)"));
  // Without a model (tools), torch's default ignore index pads the labels.
  const int64_t ignore = model.ignoreIndex.value_or(-100);
  auto inputs = std::make_shared<const TokenDocuments>(
      file, spec.tokenBytes, index, first, count, length, 0, 0);
  auto labels = std::make_shared<const TokenDocuments>(
      file, spec.tokenBytes, index, first, count, length, 1, ignore);
  return Dataset::fromSequenceRows(length, std::move(inputs), std::move(labels),
                                   vocab, ignore);
}

} // namespace

static Dataset loadTokens(const DataSpec &spec, Split split,
                          const ModelDataShape &model, uint64_t, bool) {
  const int64_t length = sequenceLength(spec, model);
  std::shared_ptr<const MappedFile> file;
  try {
    file = std::make_shared<const MappedFile>(spec.tokensPath);
  } catch (const Error &e) {
    throw InputError(spec.text + ": " + e.what());
  }
  if (file->size() % size_t(spec.tokenBytes) != 0)
    throw InputError(spec.text + ": " + spec.tokensPath + " holds " +
                     std::to_string(file->size()) + " bytes, not a whole " +
                     "number of " + std::to_string(spec.tokenBytes * 8) +
                     "-bit token ids (dtype=uint" +
                     std::to_string(spec.tokenBytes * 8) + ")");
  const int64_t total = int64_t(file->size()) / spec.tokenBytes;
  if (spec.tokensEot >= 0)
    return loadTokenDocuments(spec, split, model, std::move(file), length);
  const int64_t cut = total - total / 10;
  const int64_t begin = split == Split::Train ? 0 : cut;
  const int64_t end = split == Split::Train ? cut : total;
  const int64_t stride = spec.textStride > 0 ? spec.textStride : length;
  const int64_t windows = textWindowCount(end - begin, length, stride);
  if (windows == 0)
    throw InputError(
        spec.text + ": " + spec.tokensPath + " holds " + std::to_string(total) +
        " tokens, too few for one window of " + std::to_string(length) +
        " tokens and its next token in the " +
        (split == Split::Train ? "train split (the first 90%: "
                               : "test split (the last 10%: ") +
        std::to_string(end - begin) + " tokens)");
  const int64_t vocab =
      model.numClasses > 0 ? model.numClasses : (int64_t(1) << 32);
  auto inputs = std::make_shared<const TokenWindows>(
      file, spec.tokenBytes, begin, windows, length, stride, 0, vocab);
  auto labels = std::make_shared<const TokenWindows>(
      file, spec.tokenBytes, begin, windows, length, stride, 1, vocab);
  if (end - begin <= kScanLimit && model.numClasses > 0)
    for (int64_t k = begin; k < end; ++k)
      if (inputs->id(k) >= vocab)
        throw InputError(
            spec.text + ": " + spec.tokensPath + ": token id " +
            std::to_string(inputs->id(k)) + " at token " + std::to_string(k) +
            " (sample " + std::to_string((k - begin) / stride) +
            ") is outside the model's vocabulary of " + std::to_string(vocab));
  unmapPages(*file, 0, file->size());
  file->advise(MappedFile::Access::Random);
  return Dataset::fromRows({length}, std::move(inputs), true, std::move(labels),
                           {length}, vocab, std::nullopt);
}

static void parseTokensSpec(const DataSpecParts &cut, DataSpec &spec) {
  const std::vector<std::string> &parts = cut.options;
  const std::string usage =
      "data spec '" + spec.text +
      "': expected tokens:FILE[,dtype=uint16|uint32][,seq=N][,stride=N]"
      "[,eot=ID]";
  if (parts[0].empty())
    throw Error(usage);
  spec.tokensPath = parts[0];
  for (size_t i = 1; i < parts.size(); ++i) {
    const std::string &option = parts[i];
    if (option == "dtype=uint16")
      spec.tokenBytes = 2;
    else if (option == "dtype=uint32")
      spec.tokenBytes = 4;
    else if (option.rfind("seq=", 0) == 0)
      spec.tokensSeq = positiveOption(option, 4, usage);
    else if (option.rfind("stride=", 0) == 0)
      spec.textStride = positiveOption(option, 7, usage);
    else if (option == "eot=0")
      spec.tokensEot = 0;
    else if (option.rfind("eot=", 0) == 0)
      spec.tokensEot = positiveOption(option, 4, usage);
    else
      throw Error(usage + "; unknown option '" + option + "'");
  }
  if (spec.tokensEot >= 0 && spec.textStride > 0)
    throw InputError("data spec '" + spec.text +
                     "': stride= cuts fixed windows and eot= one sample "
                     "a document; give one of them");
}

DataSourceKind data_detail::dataSourceKindTokens() {
  DataSourceKind kind;
  kind.name = "tokens";
  kind.prefixes = {"tokens"};
  kind.order = 40;
  kind.usage = "tokens:FILE";
  kind.help = "tokens:FILE[,dtype=uint16|uint32][,seq=N][,stride=N]";
  kind.classLabels = true;
  kind.parse = parseTokensSpec;
  kind.load = loadTokens;
  return kind;
}

} // namespace dpc::runtime
