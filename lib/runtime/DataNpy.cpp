//===- DataNpy.cpp - NumPy arrays: npy:INPUTS[,LABELS] --------------------===//
//
// `npy:INPUTS.npy[,LABELS.npy][,lengths=LENGTHS.npy]`: float32 inputs or
// int64/int32 token ids, with int class labels, float32 targets for
// --loss mse, or no labels; with lengths=, token sequences of each sample's
// real length padded to the longest. parseNpy checks the header's shape and
// dtype against the bytes that follow; writeNpyFile writes what the tests
// and the evaluation read back.
//
//===----------------------------------------------------------------------===//

#include "dpc/runtime/Data.h"

#include "DataSources.h"
#include "dpc/runtime/Error.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <fstream>

namespace dpc::runtime {

using namespace data_detail;

/// Finds `'key':` in a npy header dict and returns the text after the colon.
static std::string npyField(const std::string &header, const std::string &key,
                            const std::string &name) {
  size_t at = header.find("'" + key + "'");
  if (at == std::string::npos)
    throw Error(name + ": npy header has no '" + key + "'");
  at = header.find(':', at);
  if (at == std::string::npos)
    throw Error(name + ": malformed npy header");
  size_t begin = header.find_first_not_of(' ', at + 1);
  return begin == std::string::npos ? "" : header.substr(begin);
}

NpyArray parseNpy(const std::vector<uint8_t> &bytes, const std::string &name) {
  static const char kMagic[] = "\x93NUMPY";
  if (bytes.size() < 10 || std::memcmp(bytes.data(), kMagic, 6) != 0)
    throw Error(name + ": not a .npy file (bad magic)");
  int major = bytes[6];
  size_t headerLength, headerStart;
  if (major == 1) {
    headerLength = bytes[8] | (size_t(bytes[9]) << 8);
    headerStart = 10;
  } else if (major == 2 || major == 3) {
    if (bytes.size() < 12)
      throw Error(name + ": truncated npy header");
    headerLength = bytes[8] | (size_t(bytes[9]) << 8) |
                   (size_t(bytes[10]) << 16) | (size_t(bytes[11]) << 24);
    headerStart = 12;
  } else {
    throw Error(name + ": unsupported npy format version " +
                std::to_string(major));
  }
  if (bytes.size() < headerStart + headerLength)
    throw Error(name + ": truncated npy header");
  std::string header(bytes.begin() + headerStart,
                     bytes.begin() + headerStart + headerLength);

  NpyArray array;
  std::string descr = npyField(header, "descr", name);
  if (descr.size() < 2 || descr[0] != '\'')
    throw Error(name + ": malformed npy descr");
  array.descr = descr.substr(1, descr.find('\'', 1) - 1);
  if (npyField(header, "fortran_order", name).rfind("False", 0) != 0)
    throw Error(name + ": Fortran-order arrays are not supported; save with "
                       "numpy.ascontiguousarray");
  std::string shape = npyField(header, "shape", name);
  if (shape.empty() || shape[0] != '(' || shape.find(')') == std::string::npos)
    throw Error(name + ": malformed npy shape");
  shape = shape.substr(1, shape.find(')') - 1);
  uint64_t elements = 1;
  for (size_t pos = 0; pos < shape.size();) {
    size_t comma = shape.find(',', pos);
    std::string item = shape.substr(
        pos, comma == std::string::npos ? std::string::npos : comma - pos);
    item.erase(0, item.find_first_not_of(' '));
    if (!item.empty()) {
      char *end = nullptr;
      long long dim = std::strtoll(item.c_str(), &end, 10);
      if (dim < 0 || (*end != '\0' && *end != ' ' && *end != 'L'))
        throw Error(name + ": malformed npy shape");
      array.shape.push_back(dim);
      elements *= uint64_t(dim);
    }
    if (comma == std::string::npos)
      break;
    pos = comma + 1;
  }

  size_t itemSize = 0;
  if (array.descr == "<f4" || array.descr == "<i4")
    itemSize = 4;
  else if (array.descr == "<f8" || array.descr == "<i8")
    itemSize = 8;
  else if (array.descr == "|u1" || array.descr == "|i1")
    itemSize = 1;
  else
    throw Error(name + ": unsupported npy dtype '" + array.descr + "'");
  uint64_t expected = elements * itemSize;
  uint64_t payload = bytes.size() - headerStart - headerLength;
  if (payload != expected)
    throw Error(name + ": " + (payload < expected ? "truncated: " : "") +
                std::to_string(payload) + " bytes of data, shape and dtype " +
                "need " + std::to_string(expected));
  array.data.assign(bytes.begin() + headerStart + headerLength, bytes.end());
  return array;
}

NpyArray readNpyFile(const std::string &path) {
  return parseNpy(readMaybeGzipFile(path), path);
}

void writeNpyFile(const std::string &path, const std::string &descr,
                  const std::vector<int64_t> &shape, const void *data,
                  size_t bytes) {
  std::string header =
      "{'descr': '" + descr + "', 'fortran_order': False, 'shape': (";
  for (int64_t dim : shape)
    header += std::to_string(dim) + ", ";
  header += "), }";
  // Version 1.0 pads the header with spaces so that data starts 64-aligned.
  size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';
  std::ofstream out(path, std::ios::binary);
  if (!out)
    throw Error(path + ": cannot create: " + errnoText());
  out.write("\x93NUMPY\x01\x00", 8);
  uint16_t length = static_cast<uint16_t>(header.size());
  char le[2] = {char(length & 0xff), char(length >> 8)};
  out.write(le, 2);
  out << header;
  out.write(static_cast<const char *>(data), std::streamsize(bytes));
  if (!out)
    throw Error(path + ": write failed: " + errnoText());
}

// int64 or int32 values of a .npy array, widened to int64.
static std::vector<int64_t> npyInts(const NpyArray &array,
                                    const std::string &path,
                                    const std::string &what) {
  std::vector<int64_t> values(size_t(product(array.shape)));
  if (array.descr == "<i8") {
    std::memcpy(values.data(), array.data.data(), array.data.size());
  } else if (array.descr == "<i4") {
    for (size_t i = 0; i < values.size(); ++i) {
      int32_t v;
      std::memcpy(&v, &array.data[i * 4], 4);
      values[i] = v;
    }
  } else {
    throw Error(path + ": " + what + " must be int64 ('<i8') or int32, got '" +
                array.descr + "'");
  }
  return values;
}

// Float targets of a regression (--loss mse): one per element of the
// model's output, whose shape the data must have, sample by sample.
static Dataset npyTargets(const DataSpec &spec, const NpyArray &labels,
                          std::vector<int64_t> targetShape,
                          const ModelDataShape &model,
                          std::vector<int64_t> sampleShape, bool integerInputs,
                          std::vector<float> inputs) {
  if (labels.descr != "<f4")
    throw InputError(spec.labelsPath +
                     ": --loss mse needs float32 ('<f4') targets, got '" +
                     labels.descr + "'");
  if (integerInputs)
    throw InputError(spec.inputsPath + ": float targets (--loss mse) need "
                                       "float32 inputs, got token ids");
  auto bracketed = [](std::string first, const std::vector<int64_t> &dims) {
    std::string text = "[" + first;
    for (int64_t dim : dims)
      text += ", " + std::to_string(dim);
    return text + "]";
  };
  if (!model.sampleShape.empty() && targetShape != model.labelShape)
    throw InputError(spec.labelsPath + ": targets of shape " +
                     bracketed(std::to_string(labels.shape[0]), targetShape) +
                     " do not match the model's output " +
                     bracketed("N", model.labelShape) +
                     " (--loss mse takes a float target per output element)");
  std::vector<float> values(labels.data.size() / 4);
  std::memcpy(values.data(), labels.data.data(), labels.data.size());
  return Dataset::fromFloatTargets(std::move(sampleShape), std::move(inputs),
                                   std::move(values), std::move(targetShape));
}

// Token ids and labels [N, T] padded to T, with each sample's real length.
// Whatever the files hold past a sample's length is replaced by padding.
static Dataset loadNpySequences(const DataSpec &spec,
                                const ModelDataShape &model) {
  checkSequenceModel(spec, model, "lengths=");
  NpyArray inputs = readNpyFile(spec.inputsPath);
  NpyArray labels = readNpyFile(spec.labelsPath);
  NpyArray lengthArray = readNpyFile(spec.lengthsPath);
  if (inputs.shape.size() != 2 || inputs.shape[1] < 1)
    throw InputError(spec.inputsPath +
                     ": lengths= needs token ids [N, T], got shape " +
                     shapeText(inputs.shape));
  const int64_t count = inputs.shape[0], maxLength = inputs.shape[1];
  if (labels.shape != inputs.shape)
    throw InputError(spec.labelsPath + ": labels of shape " +
                     shapeText(labels.shape) + " for token ids of shape " +
                     shapeText(inputs.shape) + " in " + spec.inputsPath +
                     " (lengths= needs a label per position)");
  if (lengthArray.shape != std::vector<int64_t>{count})
    throw InputError(spec.lengthsPath + ": lengths of shape " +
                     shapeText(lengthArray.shape) + " for " +
                     std::to_string(count) + " samples in " + spec.inputsPath +
                     " (one length a sample)");
  std::vector<int64_t> ids = npyInts(inputs, spec.inputsPath, "token ids");
  std::vector<int64_t> labelValues = npyInts(labels, spec.labelsPath, "labels");
  std::vector<int64_t> lengths =
      npyInts(lengthArray, spec.lengthsPath, "lengths");
  const int64_t ignore = model.ignoreIndex.value_or(-100);
  for (int64_t i = 0; i < count; ++i) {
    int64_t length = lengths[size_t(i)];
    if (length < 1 || length > maxLength)
      throw InputError(spec.lengthsPath + ": length " + std::to_string(length) +
                       " of sample " + std::to_string(i) + " is outside 1.." +
                       std::to_string(maxLength));
    for (int64_t t = 0; t < maxLength; ++t) {
      int64_t &label = labelValues[size_t(i * maxLength + t)];
      if (t >= length) {
        label = ignore;
        continue;
      }
      if (model.ignoreIndex && label == *model.ignoreIndex)
        continue;
      if (label < 0 || (model.numClasses > 0 && label >= model.numClasses))
        throw InputError(spec.labelsPath + ": label " + std::to_string(label) +
                         " of sample " + std::to_string(i) +
                         " is outside [0, " + std::to_string(model.numClasses) +
                         ")");
    }
  }
  int64_t classes = model.numClasses;
  if (classes <= 0)
    for (int64_t label : labelValues)
      classes = std::max(classes, label + 1);
  return Dataset::fromTokenSequences(maxLength, std::move(ids),
                                     std::move(labelValues), std::move(lengths),
                                     classes);
}

namespace data_detail {

Dataset loadNpy(const DataSpec &spec, const ModelDataShape &model) {
  if (!spec.lengthsPath.empty())
    return loadNpySequences(spec, model);
  NpyArray inputs = readNpyFile(spec.inputsPath);
  bool integer = inputs.descr == "<i8" || inputs.descr == "<i4";
  if (inputs.descr != "<f4" && !integer)
    throw Error(spec.inputsPath +
                ": inputs must be float32 ('<f4') or "
                "int64/int32 token ids, got '" +
                inputs.descr + "'");
  if (inputs.shape.empty())
    throw Error(spec.inputsPath + ": inputs must have a sample dimension");
  std::vector<int64_t> sampleShape(inputs.shape.begin() + 1,
                                   inputs.shape.end());
  std::vector<float> values;
  std::vector<int64_t> ids;
  if (integer) {
    ids = npyInts(inputs, spec.inputsPath, "token ids");
  } else {
    values.resize(inputs.data.size() / 4);
    std::memcpy(values.data(), inputs.data.data(), inputs.data.size());
  }
  // loadDataset refuses an empty one.
  if (spec.labelsPath.empty()) {
    if (integer)
      throw Error(spec.inputsPath + ": integer inputs need labels "
                                    "(npy:INPUTS.npy,LABELS.npy)");
    return Dataset::unlabelled(sampleShape, std::move(values));
  }
  NpyArray labels = readNpyFile(spec.labelsPath);
  if (labels.shape.empty())
    throw Error(spec.labelsPath + ": labels must have a sample dimension");
  if (inputs.shape[0] != labels.shape[0])
    throw Error(spec.text + ": " + std::to_string(inputs.shape[0]) +
                " samples in " + spec.inputsPath + " but " +
                std::to_string(labels.shape[0]) + " labels in " +
                spec.labelsPath);
  std::vector<int64_t> labelShape(labels.shape.begin() + 1, labels.shape.end());
  if (model.floatLabels)
    return npyTargets(spec, labels, std::move(labelShape), model,
                      std::move(sampleShape), integer, std::move(values));
  if (labels.descr == "<f4")
    throw InputError(spec.labelsPath +
                     ": float32 labels are targets for --loss mse, but this "
                     "model's loss takes int64 class ids");
  std::vector<int64_t> labelValues = npyInts(labels, spec.labelsPath, "labels");
  int64_t perSample = product(labelShape);
  int64_t maxLabel = -1;
  for (size_t i = 0; i < labelValues.size(); ++i) {
    if (model.ignoreIndex && labelValues[i] == *model.ignoreIndex)
      continue;
    if (labelValues[i] < 0 ||
        (model.numClasses > 0 && labelValues[i] >= model.numClasses))
      throw Error(spec.labelsPath + ": label " +
                  std::to_string(labelValues[i]) + " of sample " +
                  std::to_string(int64_t(i) / std::max<int64_t>(perSample, 1)) +
                  " is outside [0, " + std::to_string(model.numClasses) + ")");
    maxLabel = std::max(maxLabel, labelValues[i]);
  }
  int64_t classes = model.numClasses > 0 ? model.numClasses : maxLabel + 1;
  if (integer)
    return Dataset::fromInts(sampleShape, std::move(ids),
                             std::move(labelValues), classes, labelShape);
  return Dataset::fromFloats(sampleShape, std::move(values),
                             std::move(labelValues), classes, labelShape);
}

} // namespace data_detail

} // namespace dpc::runtime
