//===- Data.cpp - Training data: specs, loading, what sources share -------===//
//
// Readers are strict: a dataset that is truncated or mislabeled would train
// silently on garbage, so every size in a header is checked against the bytes
// that follow it, and every error names the file.
//
// The data lives in files by concern, over the private header
// DataSources.h: this file holds what every source kind shares (reading a
// file that may be gzipped, the spec parser, the checks of the data against
// the model in loadDataset); Dataset.cpp the in-memory dataset; DataIdx.cpp,
// DataNpy.cpp, DataText.cpp, DataTokens.cpp, DataImageFolder.cpp and
// DataSynthetic.cpp a source kind each.
//
//===----------------------------------------------------------------------===//

#include "dpc/runtime/Data.h"

#include "DataSources.h"
#include "dpc/runtime/Error.h"

#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <sys/stat.h>

namespace dpc::runtime {

namespace data_detail {

std::string errnoText() { return std::strerror(errno); }

bool fileExists(const std::string &path) {
  struct stat info;
  return ::stat(path.c_str(), &info) == 0 && S_ISREG(info.st_mode);
}

int64_t product(const std::vector<int64_t> &shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

std::string shapeText(const std::vector<int64_t> &shape) {
  std::string s;
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? "x" : "") + std::to_string(shape[i]);
  return s;
}

// Variable-length samples pad past their length with labels the loss must
// skip, so they need a model reading [B, T] ids, predicting a class per
// position, whose loss has an ignore index.
void checkSequenceModel(const DataSpec &spec, const ModelDataShape &model,
                        const std::string &what) {
  if (model.sampleShape.empty())
    return;
  bool tokens = model.sampleShape.size() == 1 && model.integerInputs &&
                model.labelShape == model.sampleShape && !model.floatLabels;
  if (!tokens)
    throw InputError(
        spec.text + ": " + what +
        " needs a token model reading ids [B, T] with a label "
        "per position, but this one reads " +
        (model.integerInputs ? "integer ids" : "floats") + " of shape [B" +
        (model.sampleShape.empty() ? "" : ", " + shapeText(model.sampleShape)) +
        "] with " +
        (model.labelShape.empty() ? std::string("one label a sample")
                                  : "labels " + shapeText(model.labelShape)));
  if (!model.ignoreIndex)
    throw InputError(spec.text + ": " + what +
                     " pads samples to the model's length " +
                     std::to_string(model.sampleShape[0]) +
                     " and needs a loss that skips the padding (dpc compile "
                     "--ignore-index P)");
}

} // namespace data_detail

using namespace data_detail;

std::vector<uint8_t> readMaybeGzipFile(const std::string &path) {
  struct stat info;
  if (::stat(path.c_str(), &info) != 0)
    throw Error(path + ": " + errnoText());
  if (!S_ISREG(info.st_mode))
    throw Error(path + ": not a regular file");
  gzFile file = gzopen(path.c_str(), "rb");
  if (!file)
    throw Error(path + ": cannot open: " + errnoText());
  std::vector<uint8_t> bytes;
  // The compressed size is a lower bound of the inflated one for data this
  // compressible; reserving it saves most reallocations.
  bytes.reserve(static_cast<size_t>(info.st_size));
  uint8_t chunk[1 << 16];
  for (;;) {
    int n = gzread(file, chunk, sizeof(chunk));
    if (n < 0) {
      int code = 0;
      std::string message = gzerror(file, &code);
      gzclose(file);
      throw Error(path + ": corrupt or truncated gzip data (" + message + ")");
    }
    if (n == 0)
      break;
    bytes.insert(bytes.end(), chunk, chunk + n);
  }
  // gzread reports a stream cut short only through gzerror at the end.
  int code = Z_OK;
  const char *message = gzerror(file, &code);
  if (code != Z_OK && code != Z_STREAM_END) {
    std::string text = message;
    gzclose(file);
    throw Error(path + ": corrupt or truncated gzip data (" + text + ")");
  }
  gzclose(file);
  return bytes;
}

//===----------------------------------------------------------------------===//
// Specs and loading
//===----------------------------------------------------------------------===//

/// A positive integer option's value ("stride=8" -> 8); throws `usage`
/// with the option otherwise.
static int64_t positiveOption(const std::string &option, size_t nameLength,
                              const std::string &usage) {
  const std::string name = option.substr(0, nameLength - 1);
  std::string value = option.substr(nameLength);
  char *end = nullptr;
  errno = 0;
  long long n = std::strtoll(value.c_str(), &end, 10);
  if (value.empty() || value[0] < '0' || value[0] > '9' || *end != '\0' ||
      errno == ERANGE || n <= 0)
    throw Error(usage + " with a positive " + name + ", got '" + option + "'");
  return n;
}

/// "0.5/0.25" -> {0.5, 0.25}: finite numbers separated by '/'; throws
/// `usage` otherwise.
static std::vector<double> numberList(const std::string &option,
                                      size_t nameLength,
                                      const std::string &usage) {
  std::vector<double> values;
  std::string rest = option.substr(nameLength);
  for (size_t begin = 0;;) {
    size_t slash = rest.find('/', begin);
    std::string item = rest.substr(begin, slash - begin);
    char *end = nullptr;
    double value = std::strtod(item.c_str(), &end);
    if (item.empty() || *end != '\0' || !std::isfinite(value))
      throw Error(usage + "; '" + option +
                  "' is not a number or numbers "
                  "separated by '/'");
    values.push_back(value);
    if (slash == std::string::npos)
      return values;
    begin = slash + 1;
  }
}

static void parseNpySpec(const std::vector<std::string> &parts,
                         DataSpec &spec) {
  const std::string usage =
      "data spec '" + spec.text +
      "': expected npy:INPUTS.npy,LABELS.npy, npy:INPUTS.npy or, for a "
      "model of several inputs, npy:A.npy,B.npy,...,LABELS.npy or "
      "npy:NAME=A.npy,...,LABELS.npy";
  spec.kind = DataSpec::Kind::Npy;
  std::vector<std::string> files;
  for (const std::string &part : parts) {
    if (part.rfind("scale=", 0) == 0) {
      std::vector<double> scale = numberList(part, 6, usage);
      if (scale.size() != 1 || scale[0] <= 0)
        throw Error(usage + "; scale= takes one positive number, got '" + part +
                    "'");
      spec.npyScale = scale[0];
      continue;
    }
    if (part.rfind("mean=", 0) == 0) {
      spec.npyMean = numberList(part, 5, usage);
      continue;
    }
    if (part.rfind("std=", 0) == 0) {
      spec.npyStd = numberList(part, 4, usage);
      for (double d : spec.npyStd)
        if (d <= 0)
          throw Error(usage + "; std= takes positive numbers, got '" + part +
                      "'");
      continue;
    }
    // NAME=PATH gives the graph input NAME its array (a '/' before the '='
    // makes it a path).
    size_t equals = part.find('=');
    if (part.rfind("lengths=", 0) != 0 && equals != std::string::npos &&
        equals > 0 && part.find('/') > equals) {
      if (equals + 1 == part.size())
        throw InputError(usage + "; '" + part + "' names no file");
      for (const auto &[name, path] : spec.namedInputPaths)
        if (name == part.substr(0, equals))
          throw InputError(usage + "; input '" + name + "' is given twice");
      spec.namedInputPaths.emplace_back(part.substr(0, equals),
                                        part.substr(equals + 1));
      continue;
    }
    if (part.rfind("lengths=", 0) != 0) {
      files.push_back(part);
      continue;
    }
    if (part.size() == 8 || !spec.lengthsPath.empty())
      throw InputError(usage + ",lengths=LENGTHS.npy; got '" + part + "'");
    spec.lengthsPath = part.substr(8);
  }
  if (!spec.namedInputPaths.empty()) {
    // Named inputs, then at most one file: the labels.
    if (files.size() > 1 || !spec.lengthsPath.empty() || spec.npyScale != 1.0 ||
        !spec.npyMean.empty() || !spec.npyStd.empty())
      throw InputError("data spec '" + spec.text +
                       "': with inputs by name (npy:NAME=A.npy,...,"
                       "LABELS.npy), name every input and give the labels "
                       "last, unnamed; lengths=, scale=, mean= and std= "
                       "do not apply");
    if (!files.empty())
      spec.labelsPath = files[0];
    return;
  }
  if (files.empty() ||
      std::any_of(files.begin(), files.end(),
                  [](const std::string &file) { return file.empty(); }))
    throw Error(usage);
  if (spec.npyMean.size() != spec.npyStd.size())
    throw Error(usage + "; mean= and std= go together, with as many values");
  spec.inputsPath = files[0];
  if (files.size() >= 2)
    spec.labelsPath = files.back();
  if (files.size() > 2)
    spec.moreInputPaths.assign(files.begin() + 1, files.end() - 1);
  if (!spec.moreInputPaths.empty() &&
      (!spec.lengthsPath.empty() || spec.npyScale != 1.0 ||
       !spec.npyMean.empty()))
    throw InputError("data spec '" + spec.text +
                     "': lengths=, scale=, mean= and std= apply to one "
                     "input; several inputs (npy:A.npy,B.npy,...,LABELS.npy) "
                     "take none of them");
  if (!spec.lengthsPath.empty() && spec.labelsPath.empty())
    throw InputError(
        "data spec '" + spec.text +
        "': lengths= needs labels: npy:TOKENS.npy,LABELS.npy,lengths=" +
        spec.lengthsPath);
  if (!spec.lengthsPath.empty() &&
      (spec.npyScale != 1.0 || !spec.npyMean.empty()))
    throw InputError("data spec '" + spec.text +
                     "': scale=, mean= and std= apply to float inputs, not "
                     "to the token ids of lengths=");
}

static void parseTextSpec(const std::vector<std::string> &parts,
                          DataSpec &spec) {
  const std::string usage =
      "data spec '" + spec.text +
      "': expected text:FILE[,stride=N][,vocab=ascii64|bytes]"
      "[,docs=fortune|line|blank]";
  if (parts[0].empty())
    throw Error(usage);
  spec.kind = DataSpec::Kind::Text;
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

static void parseTokensSpec(const std::vector<std::string> &parts,
                            DataSpec &spec) {
  const std::string usage =
      "data spec '" + spec.text +
      "': expected tokens:FILE[,dtype=uint16|uint32][,seq=N][,stride=N]"
      "[,eot=ID]";
  if (parts[0].empty())
    throw Error(usage);
  spec.kind = DataSpec::Kind::Tokens;
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

static void parseImageFolderSpec(const std::vector<std::string> &parts,
                                 DataSpec &spec) {
  const std::string usage = "data spec '" + spec.text +
                            "': expected imagefolder:DIR[,resize=N]"
                            "[,mean=M1/M2/..,std=D1/D2/..][,augment=none]";
  if (parts[0].empty())
    throw Error(usage);
  spec.kind = DataSpec::Kind::ImageFolder;
  spec.imageDir = parts[0];
  for (size_t i = 1; i < parts.size(); ++i) {
    const std::string &option = parts[i];
    if (option.rfind("resize=", 0) == 0) {
      spec.imageResize = positiveOption(option, 7, usage);
    } else if (option == "augment=none") {
      spec.imageAugment = false;
    } else if (option.rfind("mean=", 0) == 0) {
      spec.npyMean = numberList(option, 5, usage);
    } else if (option.rfind("std=", 0) == 0) {
      spec.npyStd = numberList(option, 4, usage);
      for (double d : spec.npyStd)
        if (d <= 0)
          throw Error(usage + "; std= takes positive numbers, got '" + option +
                      "'");
    } else {
      throw Error(usage + "; unknown option '" + option + "'");
    }
  }
  if (spec.npyMean.size() != spec.npyStd.size())
    throw Error(usage + "; mean= and std= go together, with as many values");
}

DataSpec parseDataSpec(const std::string &text) {
  DataSpec spec;
  spec.text = text;
  size_t colon = text.find(':');
  std::string kind = text.substr(0, colon);
  std::string rest = colon == std::string::npos ? "" : text.substr(colon + 1);
  if (kind == "fashion-mnist" || kind == "mnist") {
    if (rest.empty())
      throw Error("data spec '" + text + "': expected " + kind + ":DIR");
    spec.kind = DataSpec::Kind::Idx;
    spec.format = kind;
    spec.dir = rest;
    return spec;
  }
  std::vector<std::string> parts;
  for (size_t begin = 0;;) {
    size_t comma = rest.find(',', begin);
    parts.push_back(rest.substr(begin, comma - begin));
    if (comma == std::string::npos)
      break;
    begin = comma + 1;
  }
  if (kind == "npy") {
    parseNpySpec(parts, spec);
    return spec;
  }
  if (kind == "text") {
    parseTextSpec(parts, spec);
    return spec;
  }
  if (kind == "tokens") {
    parseTokensSpec(parts, spec);
    return spec;
  }
  if (kind == "imagefolder") {
    parseImageFolderSpec(parts, spec);
    return spec;
  }
  if (kind == "synthetic") {
    spec.kind = DataSpec::Kind::Synthetic;
    if (colon != std::string::npos) {
      char *end = nullptr;
      long long n = std::strtoll(rest.c_str(), &end, 10);
      if (rest.empty() || *end != '\0' || n <= 0)
        throw Error("data spec '" + text +
                    "': expected synthetic or synthetic:SAMPLES with a "
                    "positive sample count");
      spec.syntheticSamples = n;
    }
    return spec;
  }
  throw Error("data spec '" + text + "': unknown kind '" + kind +
              "'; expected fashion-mnist:DIR, mnist:DIR, "
              "npy:INPUTS.npy[,LABELS.npy], text:FILE, tokens:FILE, "
              "imagefolder:DIR or synthetic[:SAMPLES]");
}

Dataset loadDataset(const DataSpec &spec, Split split,
                    const ModelDataShape &model, uint64_t seed,
                    bool readsInputs) {
  if (model.floatLabels &&
      (spec.kind == DataSpec::Kind::Idx || spec.kind == DataSpec::Kind::Text ||
       spec.kind == DataSpec::Kind::Tokens ||
       spec.kind == DataSpec::Kind::ImageFolder))
    throw InputError(spec.text +
                     ": the data has class labels but the model's loss takes "
                     "float targets (--loss mse; give "
                     "npy:INPUTS.npy,TARGETS.npy)");
  Dataset data;
  switch (spec.kind) {
  case DataSpec::Kind::Idx:
    data = loadIdx(spec, split, model);
    break;
  case DataSpec::Kind::Npy:
    data = loadNpy(spec, model);
    break;
  case DataSpec::Kind::Text:
    data = loadText(spec, split, model);
    break;
  case DataSpec::Kind::Tokens:
    data = loadTokens(spec, split, model);
    break;
  case DataSpec::Kind::ImageFolder:
    data = loadImageFolder(spec, split, model, seed, readsInputs);
    break;
  case DataSpec::Kind::Synthetic:
    data = makeSynthetic(spec, split, model, seed, readsInputs);
    break;
  }
  if (data.size() == 0)
    throw Error(spec.text + ": the dataset has no samples");
  if (model.sampleShape.empty())
    return data;
  if (model.inputs.size() > 1 && data.inputCount() != model.inputs.size())
    throw InputError(spec.text + ": the model reads " +
                     std::to_string(model.inputs.size()) +
                     " inputs and this data gives one a sample; give "
                     "npy:A.npy,B.npy,...,LABELS.npy, one array an input");
  if (data.sampleShape() != model.sampleShape)
    throw Error(spec.text + ": samples have shape " +
                shapeText(data.sampleShape()) + " but the model expects " +
                shapeText(model.sampleShape));
  if (data.integerInputs() != model.integerInputs)
    throw Error(spec.text + ": the inputs are " +
                (data.integerInputs() ? "integer token ids" : "floats") +
                " but the model reads " +
                (model.integerInputs ? "integer token ids" : "floats"));
  if (data.hasLabels() && data.floatLabels() != model.floatLabels)
    throw InputError(
        spec.text + ": the data has " +
        (data.floatLabels() ? "float targets" : "class labels") +
        " but the model's loss takes " +
        (model.floatLabels
             ? "float targets (--loss mse; give npy:INPUTS.npy,TARGETS.npy)"
             : "class labels (its loss is softmax-cross-entropy)"));
  if (data.hasLabels() && data.labelShape() != model.labelShape)
    throw Error(spec.text + ": a sample has labels of shape " +
                (data.labelShape().empty() ? std::string("scalar")
                                           : shapeText(data.labelShape())) +
                " but the model's loss expects " +
                (model.labelShape.empty() ? std::string("one label a sample")
                                          : shapeText(model.labelShape)));
  return data;
}

} // namespace dpc::runtime
