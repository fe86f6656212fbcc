//===- Data.cpp - Training data: specs, loading, what sources share -------===//
//
// Readers are strict: a dataset that is truncated or mislabeled would train
// silently on garbage, so every size in a header is checked against the bytes
// that follow it, and every error names the file.
//
// The data lives in files by concern, over the private header
// DataSources.h: this file holds what every source kind shares (reading a
// file that may be gzipped, the options several kinds take, the table of
// kinds, the spec parser that dispatches through it, the checks of the data
// against the model in loadDataset); Dataset.cpp the in-memory dataset;
// each Data<Kind>.cpp (DataIdx.cpp, DataNpy.cpp, DataText.cpp,
// DataTokens.cpp, DataImageFolder.cpp, DataSynthetic.cpp) a source kind,
// its row of the table (DataKinds.h) with its parser and loader.
//
//===----------------------------------------------------------------------===//

#include "dpc/runtime/Data.h"

#include "DataSources.h"
#include "dpc/runtime/DataKinds.h"
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
// Options several kinds take
//===----------------------------------------------------------------------===//

int64_t data_detail::positiveOption(const std::string &option,
                                    size_t nameLength,
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

std::vector<double> data_detail::numberList(const std::string &option,
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

//===----------------------------------------------------------------------===//
// The table of kinds, specs and loading
//===----------------------------------------------------------------------===//

const std::vector<DataSourceKind> &dataSourceKinds() {
  static const std::vector<DataSourceKind> kinds = [] {
    std::vector<DataSourceKind> rows = {
#define DPC_DATA_KIND(Kind) dataSourceKind##Kind(),
#include "DataKinds.inc"
#undef DPC_DATA_KIND
    };
    std::stable_sort(rows.begin(), rows.end(),
                     [](const DataSourceKind &a, const DataSourceKind &b) {
                       return a.order < b.order;
                     });
    return rows;
  }();
  return kinds;
}

/// The kinds' `field`s as a list: "a, b or c".
static std::string kindList(std::string DataSourceKind::*field) {
  const std::vector<DataSourceKind> &kinds = dataSourceKinds();
  std::string list;
  for (size_t i = 0; i < kinds.size(); ++i)
    list += (i == 0                  ? ""
             : i + 1 == kinds.size() ? " or "
                                     : ", ") +
            kinds[i].*field;
  return list;
}

std::string dataKindsUsage() { return kindList(&DataSourceKind::usage); }

std::string dataKindsHelp() { return kindList(&DataSourceKind::help); }

DataSpec parseDataSpec(const std::string &text) {
  DataSpecParts parts;
  size_t colon = text.find(':');
  parts.prefix = text.substr(0, colon);
  parts.hasColon = colon != std::string::npos;
  parts.rest = parts.hasColon ? text.substr(colon + 1) : "";
  for (size_t begin = 0;;) {
    size_t comma = parts.rest.find(',', begin);
    parts.options.push_back(parts.rest.substr(begin, comma - begin));
    if (comma == std::string::npos)
      break;
    begin = comma + 1;
  }
  for (const DataSourceKind &kind : dataSourceKinds()) {
    if (std::find(kind.prefixes.begin(), kind.prefixes.end(), parts.prefix) ==
        kind.prefixes.end())
      continue;
    DataSpec spec;
    spec.text = text;
    spec.kind = kind.name;
    kind.parse(parts, spec);
    return spec;
  }
  throw Error("data spec '" + text + "': unknown kind '" + parts.prefix +
              "'; expected " + dataKindsUsage());
}

Dataset loadDataset(const DataSpec &spec, Split split,
                    const ModelDataShape &model, uint64_t seed,
                    bool readsInputs) {
  const std::vector<DataSourceKind> &kinds = dataSourceKinds();
  auto kind =
      std::find_if(kinds.begin(), kinds.end(), [&](const DataSourceKind &row) {
        return row.name == spec.kind;
      });
  if (kind == kinds.end())
    throw Error("data spec '" + spec.text + "': unknown kind '" + spec.kind +
                "'");
  if (model.floatLabels && kind->classLabels)
    throw InputError(spec.text +
                     ": the data has class labels but the model's loss takes "
                     "float targets (--loss mse; give "
                     "npy:INPUTS.npy,TARGETS.npy)");
  Dataset data = kind->load(spec, split, model, seed, readsInputs);
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
