//===- Dataset.cpp - The in-memory training data --------------------------===//
//
// Dataset (dpc/runtime/Data.h) holds the samples that a source kind loaded:
// bytes, floats, token ids, a stream of synthetic floats computed as they
// are gathered, or RowSources that read mapped files as they are gathered, with
// class labels, a label per position or float targets, and the real length of
// each variable-length sample. The gathers copy a batch's samples into the
// buffers a rank feeds its first stage; every index is checked. lengthHistogram
// describes variable-length data.
//
//===----------------------------------------------------------------------===//

#include "dpc/runtime/Data.h"

#include "DataSources.h"
#include "dpc/runtime/Error.h"
#include "dpc/support/TargetClones.h"

#include <algorithm>
#include <cstdio>
#include <cstring>

namespace dpc::runtime {

using namespace data_detail;

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

Dataset Dataset::fromRows(std::vector<int64_t> sampleShape,
                          std::shared_ptr<const RowSource> inputs,
                          bool integerInputs,
                          std::shared_ptr<const RowSource> labels,
                          std::vector<int64_t> labelShape, int64_t numClasses,
                          std::optional<int64_t> ignoreIndex,
                          bool floatTargets) {
  if (!inputs && !labels)
    throw Error("dataset: rows need inputs or labels");
  Dataset d = shaped(std::move(sampleShape), numClasses);
  d.integer = integerInputs;
  d.withInputs = inputs != nullptr;
  d.labelled = labels != nullptr;
  d.floatTargets = floatTargets;
  d.labelDims = std::move(labelShape);
  d.labelCount = product(d.labelDims);
  d.count = inputs ? inputs->rows() : labels->rows();
  if (inputs && inputs->rowElements() != d.elements)
    throw Error("dataset: input rows of " +
                std::to_string(inputs->rowElements()) +
                " values for samples of " + std::to_string(d.elements));
  if (labels &&
      (labels->rows() != d.count || labels->rowElements() != d.labelCount))
    throw Error("dataset: label rows do not match the inputs");
  d.inputRows = std::move(inputs);
  d.labelRows = std::move(labels);
  d.ignoreLabel = ignoreIndex;
  return d;
}

void Dataset::readLabelRow(int64_t index, int64_t *out) const {
  labelRows->readInts(index, out);
  for (int64_t i = 0; i < labelCount; ++i) {
    if (ignoreLabel && out[i] == *ignoreLabel)
      continue;
    if (out[i] < 0 || (classes > 0 && out[i] >= classes))
      throw InputError(labelRows->where(index) + ": label " +
                       std::to_string(out[i]) + " is outside [0, " +
                       std::to_string(classes) + ")");
  }
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
  if (labelRows) {
    int64_t value = 0;
    readLabelRow(index, &value);
    return value;
  }
  return labels[size_t(index)];
}

std::string Dataset::describeSample(int64_t index, int64_t epoch) const {
  checkIndex(index);
  if (inputRows)
    return inputRows->describe(index, epoch);
  return "sample " + std::to_string(index);
}

void Dataset::gatherInputs(const std::vector<int64_t> &indices, float *out,
                           int64_t epoch) const {
  if (!withInputs)
    throw Error("dataset: loaded without its inputs");
  if (integer)
    throw Error("dataset: the inputs are integer token ids, not floats");
  for (int64_t index : indices) {
    checkIndex(index);
    if (inputRows) {
      inputRows->readFloatsAt(index, epoch, out);
    } else if (!bytePixels.empty()) {
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
    if (inputRows)
      inputRows->readInts(index, out);
    else
      std::memcpy(out, &intInputs[size_t(index * elements)],
                  size_t(elements) * sizeof(int64_t));
    out += elements;
  }
}

void Dataset::addInput(std::vector<int64_t> sampleShape,
                       std::shared_ptr<const RowSource> rows, bool integer) {
  if (!rows || rows->rows() != count ||
      rows->rowElements() != product(sampleShape))
    throw Error("dataset: input " + std::to_string(inputCount()) +
                " does not have a row of " +
                std::to_string(product(sampleShape)) + " values for each of " +
                std::to_string(count) + " samples");
  extraInputs.push_back({std::move(sampleShape), std::move(rows), integer});
}

const std::vector<int64_t> &Dataset::inputShape(size_t k) const {
  return k == 0 ? shape : extraInputs.at(k - 1).shape;
}

bool Dataset::inputInteger(size_t k) const {
  return k == 0 ? integer : extraInputs.at(k - 1).integer;
}

void Dataset::gatherInput(size_t k, const std::vector<int64_t> &indices,
                          void *out, int64_t epoch) const {
  if (k == 0) {
    if (integer)
      gatherIntInputs(indices, static_cast<int64_t *>(out));
    else
      gatherInputs(indices, static_cast<float *>(out), epoch);
    return;
  }
  if (k >= inputCount())
    throw Error("dataset: input " + std::to_string(k) + " of a sample of " +
                std::to_string(inputCount()) + " inputs");
  const ExtraInput &input = extraInputs[k - 1];
  const int64_t n = product(input.shape);
  for (size_t i = 0; i < indices.size(); ++i) {
    checkIndex(indices[i]);
    if (input.integer)
      input.rows->readInts(indices[i], static_cast<int64_t *>(out) + i * n);
    else
      input.rows->readFloats(indices[i], static_cast<float *>(out) + i * n);
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
    if (labelRows)
      readLabelRow(index, out);
    else
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
    if (labelRows)
      labelRows->readFloats(index, out);
    else
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

Dataset Dataset::fromSequenceRows(int64_t maxLength,
                                  std::shared_ptr<const RowSource> inputs,
                                  std::shared_ptr<const RowSource> labels,
                                  int64_t numClasses, int64_t ignoreIndex) {
  Dataset d = fromRows({maxLength}, std::move(inputs), true, std::move(labels),
                       {maxLength}, numClasses, ignoreIndex);
  d.rowLengths = true;
  return d;
}

int64_t Dataset::sequenceLength(int64_t index) const {
  checkIndex(index);
  if (!lengths.empty())
    return lengths[size_t(index)];
  if (rowLengths)
    return (inputRows ? inputRows : labelRows)->rowLength(index);
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
  // Stored samples are already 0 past their length, and so are rows of
  // variable length; fixed rows are all of the full length, which
  // checkPadded made `length`.
  std::vector<int64_t> row(rowLengths ? size_t(elements) : 0);
  for (int64_t index : indices) {
    if (inputRows && rowLengths) {
      inputRows->readInts(index, row.data());
      std::memcpy(out, row.data(), size_t(length) * sizeof(int64_t));
    } else if (inputRows)
      inputRows->readInts(index, out);
    else
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
  std::vector<int64_t> row(rowLengths ? size_t(labelCount) : 0);
  for (int64_t index : indices) {
    int64_t real = sequenceLength(index);
    if (labelRows && rowLengths) {
      readLabelRow(index, row.data());
      std::memcpy(out, row.data(), size_t(real) * sizeof(int64_t));
    } else if (labelRows)
      readLabelRow(index, out);
    else
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

} // namespace dpc::runtime
