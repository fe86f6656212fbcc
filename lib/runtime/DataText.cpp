//===- DataText.cpp - Text: windows or documents --------------------------===//
//
// `text:FILE[,stride=N][,vocab=ascii64|bytes][,docs=fortune|line|blank]`:
// a text as token ids, a byte a token, for next-token prediction. Without
// docs=, fixed windows of the model's length T cut every stride tokens;
// with it, a sample a document, padded to T with labels the loss ignores.
// The train split is the first 90% of the text (or of its documents), the
// test split the rest.
//
//===----------------------------------------------------------------------===//

#include "dpc/runtime/Data.h"

#include "DataSources.h"
#include "dpc/runtime/Error.h"

#include <algorithm>
#include <fstream>
#include <iterator>
#include <sys/stat.h>

namespace dpc::runtime {

using namespace data_detail;

std::vector<int64_t> textTokens(const std::vector<uint8_t> &bytes,
                                TextVocab vocab) {
  std::vector<int64_t> tokens(bytes.size());
  for (size_t i = 0; i < bytes.size(); ++i) {
    int64_t c = bytes[i];
    if (vocab == TextVocab::Bytes) {
      tokens[i] = c;
      continue;
    }
    // Python's bytes.upper(): ASCII letters only, whatever the locale.
    if (c >= 'a' && c <= 'z')
      c -= 'a' - 'A';
    tokens[i] = c >= 32 && c < 96 ? c - 32 : 0;
  }
  return tokens;
}

int64_t textVocabSize(TextVocab vocab) {
  return vocab == TextVocab::Bytes ? 256 : 64;
}

int64_t textWindowCount(int64_t tokens, int64_t length, int64_t stride) {
  // A window needs its T tokens and the one after its last for a label.
  if (length <= 0 || stride <= 0 || tokens < length + 1)
    return 0;
  return (tokens - length - 1) / stride + 1;
}

static bool blankLine(const uint8_t *begin, const uint8_t *end) {
  return std::all_of(
      begin, end, [](uint8_t c) { return c == ' ' || c == '\t' || c == '\r'; });
}

std::vector<std::string> textDocuments(const std::vector<uint8_t> &bytes,
                                       TextDocs mode) {
  std::vector<std::string> documents;
  std::string current;
  bool open = false; // whether `current` holds at least one line
  auto finish = [&] {
    if (open && !current.empty())
      documents.push_back(current);
    current.clear();
    open = false;
  };
  const uint8_t *data = bytes.data(), *end = data + bytes.size();
  for (const uint8_t *line = data; line < end;) {
    const uint8_t *stop = std::find(line, end, uint8_t('\n'));
    std::string text(line, stop);
    line = stop == end ? end : stop + 1;
    switch (mode) {
    case TextDocs::Windows:
      throw Error("textDocuments: no docs= mode");
    case TextDocs::Line:
      if (!blankLine(reinterpret_cast<const uint8_t *>(text.data()),
                     reinterpret_cast<const uint8_t *>(text.data()) +
                         text.size()))
        documents.push_back(text);
      break;
    case TextDocs::Fortune:
      if (text == "%" || text == "%\r") {
        finish();
        break;
      }
      current += (open ? "\n" : "") + text;
      open = true;
      break;
    case TextDocs::Blank:
      if (blankLine(reinterpret_cast<const uint8_t *>(text.data()),
                    reinterpret_cast<const uint8_t *>(text.data()) +
                        text.size())) {
        finish();
        break;
      }
      current += (open ? "\n" : "") + text;
      open = true;
      break;
    }
  }
  finish();
  return documents;
}

static const char *docsName(TextDocs mode) {
  switch (mode) {
  case TextDocs::Fortune:
    return "fortune";
  case TextDocs::Line:
    return "line";
  case TextDocs::Blank:
    return "blank";
  case TextDocs::Windows:
    break;
  }
  return "windows";
}

// Documents as samples: the train split is the first 90% of the documents
// of at least 2 tokens, the test split the rest; a document longer than the
// model's length T plus one is cut to its first T + 1 tokens.
static Dataset textDocumentSamples(const DataSpec &spec, Split split,
                                   const ModelDataShape &model,
                                   const std::vector<uint8_t> &bytes) {
  const std::string &path = spec.textPath;
  std::vector<std::string> documents;
  for (std::string &document : textDocuments(bytes, spec.textDocs))
    if (document.size() >= 2) // a token a byte
      documents.push_back(std::move(document));
  const int64_t total = int64_t(documents.size());
  if (total == 0)
    throw InputError(spec.text + ": " + path +
                     " holds no document of at least 2 tokens (docs=" +
                     docsName(spec.textDocs) + ")");
  const int64_t cut = total - total / 10;
  const int64_t begin = split == Split::Train ? 0 : cut;
  const int64_t end = split == Split::Train ? cut : total;
  if (begin == end)
    throw InputError(spec.text + ": " + path + " holds " +
                     std::to_string(total) +
                     " documents of at least 2 tokens, none for the test "
                     "split (the last 10%, rounded down)");
  const int64_t maxLength = model.sampleShape[0];
  const int64_t count = end - begin;
  std::vector<int64_t> ids(size_t(count * maxLength), 0);
  std::vector<int64_t> labels(size_t(count * maxLength), *model.ignoreIndex);
  std::vector<int64_t> lengths(static_cast<size_t>(count));
  for (int64_t k = 0; k < count; ++k) {
    const std::string &document = documents[size_t(begin + k)];
    std::vector<int64_t> tokens = textTokens(
        std::vector<uint8_t>(document.begin(), document.end()), spec.textVocab);
    int64_t length = std::min(int64_t(tokens.size()) - 1, maxLength);
    std::copy(tokens.begin(), tokens.begin() + length,
              &ids[size_t(k * maxLength)]);
    std::copy(tokens.begin() + 1, tokens.begin() + length + 1,
              &labels[size_t(k * maxLength)]);
    lengths[size_t(k)] = length;
  }
  return Dataset::fromTokenSequences(maxLength, std::move(ids),
                                     std::move(labels), std::move(lengths),
                                     model.numClasses);
}

// A text's windows for a model reading [B, T] token ids: the train split
// from the first 90% of the tokens, the test split from the rest, so that
// evaluation never reads a training window's tokens however they overlap.
static Dataset loadText(const DataSpec &spec, Split split,
                        const ModelDataShape &model, uint64_t, bool) {
  const std::string &path = spec.textPath;
  if (spec.textDocs != TextDocs::Windows)
    checkSequenceModel(spec, model,
                       std::string("docs=") + docsName(spec.textDocs));
  if (model.sampleShape.size() != 1 || !model.integerInputs)
    throw InputError(
        spec.text +
        ": text data needs a model reading token ids of shape "
        "[B, T], but this one reads " +
        (model.integerInputs ? "integer ids" : "floats") + " of shape [B" +
        (model.sampleShape.empty() ? "" : ", " + shapeText(model.sampleShape)) +
        "]");
  const int64_t length = model.sampleShape[0];
  if (model.labelShape != std::vector<int64_t>{length})
    throw InputError(spec.text +
                     ": text data has a label per position (next-token "
                     "prediction), but the model's loss expects " +
                     (model.labelShape.empty() ? std::string("one a sample")
                                               : shapeText(model.labelShape)));
  const int64_t vocab = textVocabSize(spec.textVocab);
  if (model.numClasses < vocab)
    throw InputError(
        spec.text + ": the " +
        (spec.textVocab == TextVocab::Bytes ? "bytes" : "ascii64") +
        " vocabulary has " + std::to_string(vocab) +
        " tokens but the model predicts " + std::to_string(model.numClasses) +
        " classes");
  struct stat info;
  if (::stat(path.c_str(), &info) != 0)
    throw InputError(spec.text + ": cannot read " + path + ": " + errnoText());
  if (!S_ISREG(info.st_mode))
    throw InputError(spec.text + ": " + path + " is not a regular file");
  std::ifstream in(path, std::ios::binary);
  std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)),
                             std::istreambuf_iterator<char>());
  if (in.bad())
    throw InputError(spec.text + ": cannot read " + path + ": " + errnoText());
  if (spec.textDocs != TextDocs::Windows)
    return textDocumentSamples(spec, split, model, bytes);
  std::vector<int64_t> tokens = textTokens(bytes, spec.textVocab);

  const int64_t total = int64_t(tokens.size());
  const int64_t cut = total - total / 10;
  const int64_t stride = spec.textStride > 0 ? spec.textStride : length;
  const int64_t begin = split == Split::Train ? 0 : cut;
  const int64_t end = split == Split::Train ? cut : total;
  const int64_t windows = textWindowCount(end - begin, length, stride);
  if (windows == 0)
    throw InputError(
        spec.text + ": " + path + " holds " + std::to_string(total) +
        " tokens, too few for one window of " + std::to_string(length) +
        " tokens and its next token in the " +
        (split == Split::Train ? "train split (the first 90%: "
                               : "test split (the last 10%: ") +
        std::to_string(end - begin) + " tokens)");
  std::vector<int64_t> ids(size_t(windows * length));
  std::vector<int64_t> labels(size_t(windows * length));
  for (int64_t w = 0; w < windows; ++w) {
    const int64_t *window = &tokens[size_t(begin + w * stride)];
    std::copy(window, window + length, &ids[size_t(w * length)]);
    std::copy(window + 1, window + length + 1, &labels[size_t(w * length)]);
  }
  return Dataset::fromInts({length}, std::move(ids), std::move(labels),
                           model.numClasses, {length});
}

static void parseTextSpec(const DataSpecParts &cut, DataSpec &spec) {
  const std::vector<std::string> &parts = cut.options;
  const std::string usage =
      "data spec '" + spec.text +
      "': expected text:FILE[,stride=N][,vocab=ascii64|bytes]"
      "[,docs=fortune|line|blank]";
  if (parts[0].empty())
    throw Error(usage);
  spec.textPath = parts[0];
  for (size_t i = 1; i < parts.size(); ++i) {
    const std::string &option = parts[i];
    if (option.rfind("stride=", 0) == 0) {
      spec.textStride = positiveOption(option, 7, usage);
    } else if (option == "vocab=ascii64") {
      spec.textVocab = TextVocab::Ascii64;
    } else if (option == "vocab=bytes") {
      spec.textVocab = TextVocab::Bytes;
    } else if (option.rfind("docs=", 0) == 0) {
      std::string mode = option.substr(5);
      if (mode == "fortune")
        spec.textDocs = TextDocs::Fortune;
      else if (mode == "line")
        spec.textDocs = TextDocs::Line;
      else if (mode == "blank")
        spec.textDocs = TextDocs::Blank;
      else
        throw InputError("data spec '" + spec.text + "': unknown docs= mode '" +
                         mode + "' for " + spec.textPath +
                         "; expected docs=fortune, docs=line or docs=blank");
    } else {
      throw Error(usage + "; unknown option '" + option + "'");
    }
  }
  if (spec.textDocs != TextDocs::Windows && spec.textStride > 0)
    throw InputError("data spec '" + spec.text +
                     "': stride= cuts fixed windows and docs= one sample "
                     "a document; give one of them");
}

DataSourceKind data_detail::dataSourceKindText() {
  DataSourceKind kind;
  kind.name = "text";
  kind.prefixes = {"text"};
  kind.order = 30;
  kind.usage = "text:FILE";
  kind.help =
      "text:FILE[,stride=N|,docs=fortune|line|blank][,vocab=ascii64|bytes]";
  kind.classLabels = true;
  kind.parse = parseTextSpec;
  kind.load = loadText;
  return kind;
}

} // namespace dpc::runtime
