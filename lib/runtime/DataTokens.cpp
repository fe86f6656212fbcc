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
//===----------------------------------------------------------------------===//

#include "dpc/runtime/Data.h"

#include "DataSources.h"
#include "dpc/runtime/Error.h"
#include "dpc/support/MappedFile.h"

#include <cstring>
#include <memory>

namespace dpc::runtime {

using support::MappedFile;

using namespace data_detail;

namespace {

/// Files of up to this many tokens are checked whole at load.
constexpr int64_t kScanLimit = int64_t(1) << 26;

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
    for (int64_t t = 0; t < length; ++t) {
      out[t] = id(first + t);
      if (out[t] >= vocab)
        throw InputError(where(row) + ": token id " + std::to_string(out[t]) +
                         " at token " + std::to_string(first + t) +
                         " is outside the model's vocabulary of " +
                         std::to_string(vocab));
    }
  }
  std::string where(int64_t row) const override {
    return file->path() + ": sample " + std::to_string(row);
  }

  /// Token `index` of the file.
  int64_t id(int64_t index) const {
    const uint8_t *p = file->data() + size_t(index) * size_t(tokenBytes);
    if (tokenBytes == 2) {
      uint16_t v;
      std::memcpy(&v, p, 2);
      return v;
    }
    uint32_t v;
    std::memcpy(&v, p, 4);
    return v;
  }

private:
  std::shared_ptr<const MappedFile> file;
  int tokenBytes;
  int64_t begin, windows, length, stride, offset, vocab;
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

} // namespace

namespace data_detail {

Dataset loadTokens(const DataSpec &spec, Split split,
                   const ModelDataShape &model) {
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
  return Dataset::fromRows({length}, std::move(inputs), true, std::move(labels),
                           {length}, vocab, std::nullopt);
}

} // namespace data_detail

} // namespace dpc::runtime
