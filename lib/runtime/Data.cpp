//===- Data.cpp - Training data: IDX, npy, text, synthetic ----------------===//
//
// Readers are strict: a dataset that is truncated or mislabeled would train
// silently on garbage, so every size in a header is checked against the bytes
// that follow it, and every error names the file.
//
//===----------------------------------------------------------------------===//

#include "dpc/runtime/Data.h"

#include "Random.h"
#include "dpc/runtime/Error.h"
#include "dpc/support/TargetClones.h"

#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <sys/stat.h>

namespace dpc::runtime {

static std::string errnoText() { return std::strerror(errno); }

static bool fileExists(const std::string &path) {
  struct stat info;
  return ::stat(path.c_str(), &info) == 0 && S_ISREG(info.st_mode);
}

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
// IDX
//===----------------------------------------------------------------------===//

IdxArray parseIdx(const std::vector<uint8_t> &bytes, int expectedRank,
                  const std::string &name) {
  if (bytes.size() < 4)
    throw Error(name + ": truncated IDX header (" +
                std::to_string(bytes.size()) + " bytes)");
  uint32_t magic = (uint32_t(bytes[0]) << 24) | (uint32_t(bytes[1]) << 16) |
                   (uint32_t(bytes[2]) << 8) | uint32_t(bytes[3]);
  uint32_t expectedMagic = 0x0800u | uint32_t(expectedRank);
  if (magic != expectedMagic) {
    char text[96];
    std::snprintf(text, sizeof(text),
                  "bad magic 0x%08x, expected 0x%08x (unsigned bytes, %d "
                  "dimensions)",
                  magic, expectedMagic, expectedRank);
    throw Error(name + ": " + text);
  }
  size_t headerBytes = 4 + 4 * size_t(expectedRank);
  if (bytes.size() < headerBytes)
    throw Error(name + ": truncated IDX header (" +
                std::to_string(bytes.size()) + " bytes)");
  IdxArray array;
  uint64_t total = 1;
  for (int i = 0; i < expectedRank; ++i) {
    const uint8_t *p = &bytes[4 + 4 * i];
    uint32_t dim = (uint32_t(p[0]) << 24) | (uint32_t(p[1]) << 16) |
                   (uint32_t(p[2]) << 8) | uint32_t(p[3]);
    array.dims.push_back(dim);
    total *= dim;
  }
  uint64_t payload = bytes.size() - headerBytes;
  if (payload != total)
    throw Error(name + ": " + (payload < total ? "truncated: " : "") +
                std::to_string(payload) + " bytes of data, header says " +
                std::to_string(total));
  array.data.assign(bytes.begin() + headerBytes, bytes.end());
  return array;
}

IdxArray readIdxFile(const std::string &path, int expectedRank) {
  return parseIdx(readMaybeGzipFile(path), expectedRank, path);
}

//===----------------------------------------------------------------------===//
// npy
//===----------------------------------------------------------------------===//

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

//===----------------------------------------------------------------------===//
// Dataset
//===----------------------------------------------------------------------===//

static int64_t product(const std::vector<int64_t> &shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

void Dataset::setLabelShape(size_t values, std::vector<int64_t> shape,
                            int64_t inputCount) {
  labelDims = std::move(shape);
  labelCount = product(labelDims);
  if (labelCount <= 0)
    throw Error("dataset: a sample's labels must not be empty");
  if (int64_t(values) % labelCount != 0)
    throw Error("dataset: label count is not a multiple of a sample's " +
                std::to_string(labelCount) + " labels");
  count = int64_t(values) / labelCount;
  if (inputCount != elements * count)
    throw Error("dataset: input count does not match labels and shape");
}

void Dataset::setLabels(std::vector<int64_t> values, std::vector<int64_t> shape,
                        int64_t inputCount) {
  setLabelShape(values.size(), std::move(shape), inputCount);
  labels = std::move(values);
}

Dataset Dataset::shaped(std::vector<int64_t> sampleShape, int64_t numClasses) {
  Dataset d;
  d.shape = std::move(sampleShape);
  d.elements = product(d.shape);
  d.classes = numClasses;
  return d;
}

Dataset Dataset::fromBytes(std::vector<int64_t> sampleShape,
                           std::vector<uint8_t> pixels,
                           std::vector<int64_t> labels, int64_t numClasses) {
  Dataset d = shaped(std::move(sampleShape), numClasses);
  d.bytePixels = std::move(pixels);
  d.setLabels(std::move(labels), {}, int64_t(d.bytePixels.size()));
  return d;
}

Dataset Dataset::fromFloats(std::vector<int64_t> sampleShape,
                            std::vector<float> inputs,
                            std::vector<int64_t> labels, int64_t numClasses,
                            std::vector<int64_t> labelShape) {
  Dataset d = shaped(std::move(sampleShape), numClasses);
  d.floatInputs = std::move(inputs);
  d.setLabels(std::move(labels), std::move(labelShape),
              int64_t(d.floatInputs.size()));
  return d;
}

/// The `n` unitFloat() draws of SplitMix64(state), computed independently
/// of each other (draw k's state is state + k * the increment), which the
/// compiler vectorizes; the AVX-512 clone fills 784 floats in about 0.7 us.
DPC_AVX512_CLONES static void fillUnitFloats(uint64_t state, int64_t n,
                                             float *out) {
  for (int64_t k = 0; k < n; ++k) {
    uint64_t z = state + uint64_t(k + 1) * 0x9e3779b97f4a7c15ULL;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    out[k] = static_cast<float>((z ^ (z >> 31)) >> 40) * 0x1p-24f;
  }
}

Dataset Dataset::fromFloatStream(std::vector<int64_t> sampleShape,
                                 uint64_t stream, std::vector<int64_t> labels,
                                 int64_t numClasses,
                                 std::vector<int64_t> labelShape) {
  Dataset d = labelsOnly(std::move(sampleShape), std::move(labels), numClasses,
                         std::move(labelShape));
  d.withInputs = true;
  d.inputStream = stream;
  return d;
}

Dataset Dataset::labelsOnly(std::vector<int64_t> sampleShape,
                            std::vector<int64_t> labels, int64_t numClasses,
                            std::vector<int64_t> labelShape) {
  Dataset d = shaped(std::move(sampleShape), numClasses);
  d.withInputs = false;
  int64_t labelElements = product(labelShape);
  int64_t samples =
      labelElements > 0 ? int64_t(labels.size()) / labelElements : 0;
  d.setLabels(std::move(labels), std::move(labelShape), d.elements * samples);
  return d;
}

Dataset Dataset::fromInts(std::vector<int64_t> sampleShape,
                          std::vector<int64_t> inputs,
                          std::vector<int64_t> labels, int64_t numClasses,
                          std::vector<int64_t> labelShape) {
  Dataset d = shaped(std::move(sampleShape), numClasses);
  d.integer = true;
  d.intInputs = std::move(inputs);
  d.setLabels(std::move(labels), std::move(labelShape),
              int64_t(d.intInputs.size()));
  return d;
}

Dataset Dataset::fromFloatTargets(std::vector<int64_t> sampleShape,
                                  std::vector<float> inputs,
                                  std::vector<float> targets,
                                  std::vector<int64_t> targetShape) {
  Dataset d = shaped(std::move(sampleShape), 0);
  d.floatInputs = std::move(inputs);
  d.floatTargets = true;
  d.setLabelShape(targets.size(), std::move(targetShape),
                  int64_t(d.floatInputs.size()));
  d.targets = std::move(targets);
  return d;
}

Dataset Dataset::unlabelled(std::vector<int64_t> sampleShape,
                            std::vector<float> inputs) {
  Dataset d = shaped(std::move(sampleShape), 0);
  d.labelled = false;
  if (d.elements == 0 || inputs.size() % size_t(d.elements) != 0)
    throw Error("dataset: input count is not a multiple of the sample size");
  d.count = int64_t(inputs.size()) / d.elements;
  d.floatInputs = std::move(inputs);
  return d;
}

void Dataset::checkIndex(int64_t index) const {
  if (index < 0 || index >= size())
    throw Error("dataset: sample " + std::to_string(index) +
                " out of range (size " + std::to_string(size()) + ")");
}

int64_t Dataset::label(int64_t index) const {
  if (!labelled)
    throw Error("dataset: the data has no labels");
  checkIndex(index);
  if (floatTargets)
    throw Error("dataset: the labels are float targets, not classes");
  if (labelCount != 1)
    throw Error("dataset: a sample has " + std::to_string(labelCount) +
                " labels, not one");
  return labels[size_t(index)];
}

void Dataset::gatherInputs(const std::vector<int64_t> &indices,
                           float *out) const {
  if (!withInputs)
    throw Error("dataset: loaded without its inputs");
  if (integer)
    throw Error("dataset: the inputs are integer token ids, not floats");
  for (int64_t index : indices) {
    checkIndex(index);
    if (!bytePixels.empty()) {
      const uint8_t *in = &bytePixels[size_t(index * elements)];
      // float(byte) / 255.0f is one correctly rounded division, the same
      // value PyTorch computes for `x.float() / 255`.
      for (int64_t i = 0; i < elements; ++i)
        out[i] = static_cast<float>(in[i]) / 255.0f;
    } else if (inputStream) {
      fillUnitFloats(*inputStream +
                         uint64_t(index * elements) * 0x9e3779b97f4a7c15ULL,
                     elements, out);
    } else {
      std::memcpy(out, &floatInputs[size_t(index * elements)],
                  size_t(elements) * sizeof(float));
    }
    out += elements;
  }
}

void Dataset::gatherIntInputs(const std::vector<int64_t> &indices,
                              int64_t *out) const {
  if (!withInputs)
    throw Error("dataset: loaded without its inputs");
  if (!integer)
    throw Error("dataset: the inputs are floats, not integer token ids");
  for (int64_t index : indices) {
    checkIndex(index);
    std::memcpy(out, &intInputs[size_t(index * elements)],
                size_t(elements) * sizeof(int64_t));
    out += elements;
  }
}

void Dataset::gatherLabels(const std::vector<int64_t> &indices,
                           int64_t *out) const {
  if (!labelled)
    throw Error("dataset: the data has no labels");
  if (floatTargets)
    throw Error("dataset: the labels are float targets, not class ids");
  for (int64_t index : indices) {
    checkIndex(index);
    std::memcpy(out, &labels[size_t(index * labelCount)],
                size_t(labelCount) * sizeof(int64_t));
    out += labelCount;
  }
}

void Dataset::gatherFloatLabels(const std::vector<int64_t> &indices,
                                float *out) const {
  if (!labelled)
    throw Error("dataset: the data has no labels");
  if (!floatTargets)
    throw Error("dataset: the labels are class ids, not float targets");
  for (int64_t index : indices) {
    checkIndex(index);
    std::memcpy(out, &targets[size_t(index * labelCount)],
                size_t(labelCount) * sizeof(float));
    out += labelCount;
  }
}

Dataset Dataset::fromTokenSequences(int64_t maxLength,
                                    std::vector<int64_t> inputs,
                                    std::vector<int64_t> labels,
                                    std::vector<int64_t> lengths,
                                    int64_t numClasses) {
  Dataset d = fromInts({maxLength}, std::move(inputs), std::move(labels),
                       numClasses, {maxLength});
  if (int64_t(lengths.size()) != d.count)
    throw Error("dataset: " + std::to_string(lengths.size()) +
                " sequence lengths for " + std::to_string(d.count) +
                " samples");
  for (size_t i = 0; i < lengths.size(); ++i) {
    if (lengths[i] < 1 || lengths[i] > maxLength)
      throw Error("dataset: sequence length " + std::to_string(lengths[i]) +
                  " of sample " + std::to_string(i) + " is outside 1.." +
                  std::to_string(maxLength));
    // What a padded gather reads past the length must not depend on what
    // the source held there.
    std::fill(&d.intInputs[i * size_t(maxLength) + size_t(lengths[i])],
              &d.intInputs[(i + 1) * size_t(maxLength)], 0);
  }
  d.lengths = std::move(lengths);
  return d;
}

int64_t Dataset::sequenceLength(int64_t index) const {
  checkIndex(index);
  if (!lengths.empty())
    return lengths[size_t(index)];
  if (shape.empty())
    throw Error("dataset: a sample of scalars has no sequence length");
  return shape[0];
}

void Dataset::checkPadded(const std::vector<int64_t> &indices, int64_t rows,
                          int64_t length) const {
  if (shape.size() != 1)
    throw Error("dataset: padded gathers need samples of one dimension, not " +
                std::to_string(shape.size()));
  if (rows < int64_t(indices.size()))
    throw Error("dataset: " + std::to_string(indices.size()) +
                " samples do not fit " + std::to_string(rows) + " rows");
  if (length < 1 || length > shape[0])
    throw Error("dataset: padded length " + std::to_string(length) +
                " outside 1.." + std::to_string(shape[0]));
  for (int64_t index : indices)
    if (sequenceLength(index) > length)
      throw Error("dataset: sample " + std::to_string(index) + " of length " +
                  std::to_string(sequenceLength(index)) +
                  " does not fit a padded length of " + std::to_string(length));
}

void Dataset::gatherIntInputsPadded(const std::vector<int64_t> &indices,
                                    int64_t rows, int64_t length,
                                    int64_t *out) const {
  if (!integer)
    throw Error("dataset: the inputs are floats, not integer token ids");
  checkPadded(indices, rows, length);
  // Stored samples are already 0 past their length.
  for (int64_t index : indices) {
    std::memcpy(out, &intInputs[size_t(index * elements)],
                size_t(length) * sizeof(int64_t));
    out += length;
  }
  std::fill(out, out + (rows - int64_t(indices.size())) * length, 0);
}

void Dataset::gatherLabelsPadded(const std::vector<int64_t> &indices,
                                 int64_t rows, int64_t length, int64_t ignore,
                                 int64_t *out) const {
  if (!labelled || floatTargets)
    throw Error("dataset: padded labels need class ids");
  if (labelDims != shape)
    throw Error("dataset: padded labels need a label per position");
  checkPadded(indices, rows, length);
  for (int64_t index : indices) {
    int64_t real = sequenceLength(index);
    std::memcpy(out, &labels[size_t(index * labelCount)],
                size_t(real) * sizeof(int64_t));
    std::fill(out + real, out + length, ignore);
    out += length;
  }
  std::fill(out, out + (rows - int64_t(indices.size())) * length, ignore);
}

std::string lengthHistogram(const Dataset &data, int bins) {
  if (!data.variableLength() || data.size() == 0)
    return "lengths: all " + (data.sampleShape().empty()
                                  ? std::string("1")
                                  : std::to_string(data.sampleShape()[0]));
  int64_t longest = 0, total = 0;
  std::vector<int64_t> values(size_t(data.size()));
  for (int64_t i = 0; i < data.size(); ++i) {
    values[size_t(i)] = data.sequenceLength(i);
    longest = std::max(longest, values[size_t(i)]);
    total += values[size_t(i)];
  }
  double mean = double(total) / double(data.size());
  // Upper bounds: powers of two below the longest sample, the last bin
  // ending at the longest itself.
  std::vector<int64_t> bounds = {longest};
  int64_t top = 1;
  while (top * 2 < longest)
    top *= 2;
  for (int64_t b = top;
       b >= 1 && int(bounds.size()) < std::max(bins, 1) && b < longest; b /= 2)
    bounds.insert(bounds.begin(), b);
  std::vector<int64_t> counts(bounds.size(), 0);
  for (int64_t v : values)
    ++counts[size_t(std::lower_bound(bounds.begin(), bounds.end(), v) -
                    bounds.begin())];
  char head[160];
  std::snprintf(head, sizeof(head),
                "lengths of %lld samples: mean %.1f, max %lld of %lld, "
                "mean/max %.2f;",
                (long long)data.size(), mean, (long long)longest,
                (long long)data.sampleShape()[0], mean / double(longest));
  std::string line = head;
  for (size_t k = 0; k < bounds.size(); ++k) {
    char bin[48];
    std::snprintf(bin, sizeof(bin), " <=%lld %.0f%%", (long long)bounds[k],
                  100.0 * double(counts[k]) / double(data.size()));
    line += bin;
    if (k + 1 < bounds.size())
      line += ",";
  }
  return line;
}

//===----------------------------------------------------------------------===//
// Specs and loading
//===----------------------------------------------------------------------===//

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
    const std::string usage =
        "data spec '" + text +
        "': expected npy:INPUTS.npy,LABELS.npy or npy:INPUTS.npy";
    spec.kind = DataSpec::Kind::Npy;
    std::vector<std::string> files;
    for (const std::string &part : parts) {
      if (part.rfind("lengths=", 0) != 0) {
        files.push_back(part);
        continue;
      }
      if (part.size() == 8 || !spec.lengthsPath.empty())
        throw InputError(usage + ",lengths=LENGTHS.npy; got '" + part + "'");
      spec.lengthsPath = part.substr(8);
    }
    if (files.size() > 2 || files[0].empty() ||
        (files.size() == 2 && files[1].empty()))
      throw Error(usage);
    spec.inputsPath = files[0];
    if (files.size() == 2)
      spec.labelsPath = files[1];
    if (!spec.lengthsPath.empty() && spec.labelsPath.empty())
      throw InputError(
          "data spec '" + text +
          "': lengths= needs labels: npy:TOKENS.npy,LABELS.npy,lengths=" +
          spec.lengthsPath);
    return spec;
  }
  if (kind == "text") {
    const std::string usage =
        "data spec '" + text +
        "': expected text:FILE[,stride=N][,vocab=ascii64|bytes]"
        "[,docs=fortune|line|blank]";
    if (parts[0].empty())
      throw Error(usage);
    spec.kind = DataSpec::Kind::Text;
    spec.textPath = parts[0];
    for (size_t i = 1; i < parts.size(); ++i) {
      const std::string &option = parts[i];
      if (option.rfind("stride=", 0) == 0) {
        std::string value = option.substr(7);
        char *end = nullptr;
        errno = 0;
        long long n = std::strtoll(value.c_str(), &end, 10);
        if (value.empty() || value[0] < '0' || value[0] > '9' || *end != '\0' ||
            errno == ERANGE || n <= 0)
          throw Error(usage + " with a positive stride, got '" + option + "'");
        spec.textStride = n;
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
          throw InputError("data spec '" + text + "': unknown docs= mode '" +
                           mode + "' for " + spec.textPath +
                           "; expected docs=fortune, docs=line or docs=blank");
      } else {
        throw Error(usage + "; unknown option '" + option + "'");
      }
    }
    if (spec.textDocs != TextDocs::Windows && spec.textStride > 0)
      throw InputError("data spec '" + text +
                       "': stride= cuts fixed windows and docs= one sample "
                       "a document; give one of them");
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
              "npy:INPUTS.npy[,LABELS.npy], text:FILE or "
              "synthetic[:SAMPLES]");
}

static std::string shapeText(const std::vector<int64_t> &shape) {
  std::string s;
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? "x" : "") + std::to_string(shape[i]);
  return s;
}

static std::string findIdxFile(const DataSpec &spec, const std::string &stem) {
  for (const char *suffix : {".gz", ""}) {
    std::string path = spec.dir + "/" + stem + suffix;
    if (fileExists(path))
      return path;
  }
  throw Error(spec.text + ": missing " + spec.dir + "/" + stem +
              "[.gz] (is the " + spec.format + " dataset installed there?)");
}

static Dataset loadIdx(const DataSpec &spec, Split split,
                       const ModelDataShape &model) {
  std::string prefix = split == Split::Train ? "train" : "t10k";
  std::string imagesPath = findIdxFile(spec, prefix + "-images-idx3-ubyte");
  std::string labelsPath = findIdxFile(spec, prefix + "-labels-idx1-ubyte");
  IdxArray images = readIdxFile(imagesPath, 3);
  IdxArray labels = readIdxFile(labelsPath, 1);
  if (images.dims[0] != labels.dims[0])
    throw Error(spec.text + ": " + std::to_string(images.dims[0]) +
                " images in " + imagesPath + " but " +
                std::to_string(labels.dims[0]) + " labels in " + labelsPath);
  int64_t classes = model.numClasses > 0 ? model.numClasses : 10;
  std::vector<int64_t> labelValues(labels.data.begin(), labels.data.end());
  for (size_t i = 0; i < labelValues.size(); ++i)
    if (labelValues[i] >= classes)
      throw Error(labelsPath + ": label " + std::to_string(labelValues[i]) +
                  " of sample " + std::to_string(i) + " is not below the " +
                  std::to_string(classes) + " classes of the model");
  return Dataset::fromBytes({1, images.dims[1], images.dims[2]},
                            std::move(images.data), std::move(labelValues),
                            classes);
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

static Dataset loadNpySequences(const DataSpec &spec,
                                const ModelDataShape &model);

static Dataset loadNpy(const DataSpec &spec, const ModelDataShape &model) {
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

// Variable-length samples pad past their length with labels the loss must
// skip, so they need a model reading [B, T] ids, predicting a class per
// position, whose loss has an ignore index.
static void checkSequenceModel(const DataSpec &spec,
                               const ModelDataShape &model,
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

// A text's windows for a model reading [B, T] token ids: the train split
// from the first 90% of the tokens, the test split from the rest, so that
// evaluation never reads a training window's tokens however they overlap.
static Dataset loadText(const DataSpec &spec, Split split,
                        const ModelDataShape &model) {
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

static Dataset makeSynthetic(const DataSpec &spec, Split split,
                             const ModelDataShape &model, uint64_t seed,
                             bool readsInputs) {
  if (model.sampleShape.empty() ||
      (model.numClasses <= 0 && !model.floatLabels))
    throw Error(spec.text + ": synthetic data needs the model's input shape "
                            "and class count");
  int64_t count = spec.syntheticSamples > 0
                      ? spec.syntheticSamples
                      : (split == Split::Train ? 4096 : 1024);
  int64_t elements = product(model.sampleShape);
  // Train and test draw from different streams so that evaluation does not
  // see training samples.
  detail::SplitMix64 random(
      detail::mixSeed(seed, split == Split::Train ? 0x7261696e : 0x74657374));
  auto draw = [&](std::vector<int64_t> &values) {
    for (int64_t &v : values)
      v = int64_t(random.below(uint64_t(model.numClasses)));
  };
  if (model.integerInputs) {
    // Token ids below the class count: a language model predicts the
    // vocabulary it reads.
    std::vector<int64_t> ids(static_cast<size_t>(count * elements));
    draw(ids);
    std::vector<int64_t> labels(
        static_cast<size_t>(count * product(model.labelShape)));
    draw(labels);
    return Dataset::fromInts(model.sampleShape, std::move(ids),
                             std::move(labels), model.numClasses,
                             model.labelShape);
  }
  if (!model.floatLabels) {
    // The labels follow the inputs' draws in the stream: skip those, which
    // the dataset computes as they are gathered, and a rank that reads
    // labels only never (65536 MNIST-sized samples are 51M draws, 200 MB).
    uint64_t stream = random.position();
    random.skip(uint64_t(count * elements));
    std::vector<int64_t> labels(
        static_cast<size_t>(count * product(model.labelShape)));
    draw(labels);
    if (!readsInputs)
      return Dataset::labelsOnly(model.sampleShape, std::move(labels),
                                 model.numClasses, model.labelShape);
    return Dataset::fromFloatStream(model.sampleShape, stream,
                                    std::move(labels), model.numClasses,
                                    model.labelShape);
  }
  // Float targets (--loss mse).
  std::vector<float> inputs(static_cast<size_t>(count * elements));
  for (float &x : inputs)
    x = random.unitFloat();
  std::vector<float> targets(
      static_cast<size_t>(count * product(model.labelShape)));
  for (float &y : targets)
    y = random.unitFloat();
  return Dataset::fromFloatTargets(model.sampleShape, std::move(inputs),
                                   std::move(targets), model.labelShape);
}

Dataset loadDataset(const DataSpec &spec, Split split,
                    const ModelDataShape &model, uint64_t seed,
                    bool readsInputs) {
  if (model.floatLabels &&
      (spec.kind == DataSpec::Kind::Idx || spec.kind == DataSpec::Kind::Text))
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
  case DataSpec::Kind::Synthetic:
    data = makeSynthetic(spec, split, model, seed, readsInputs);
    break;
  }
  if (data.size() == 0)
    throw Error(spec.text + ": the dataset has no samples");
  if (model.sampleShape.empty())
    return data;
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
