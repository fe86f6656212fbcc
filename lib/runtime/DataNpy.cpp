//===- DataNpy.cpp - NumPy arrays: npy:INPUTS[,LABELS] --------------------===//
//
// `npy:INPUTS.npy[,LABELS.npy][,lengths=LENGTHS.npy][,scale=S][,mean=M]
// [,std=D]`: inputs of any dtype NpyRows reads (floats, uint8 images scaled
// and normalized as they are gathered, or integer token ids), with integer
// class labels, float targets for --loss mse, or no labels. INPUTS and
// LABELS may be glob patterns naming shards read in order as one array.
// The arrays are memory-mapped (NpyRows.h): nothing is read before it is
// gathered, except that labels of up to kLabelScanLimit values are checked
// against the model's classes at load. With lengths=, token sequences of
// each sample's real length padded to the longest, held in memory.
// parseNpy checks the header's shape and dtype against the bytes that
// follow; writeNpyFile writes what the tests and the evaluation read back.
//
//===----------------------------------------------------------------------===//

#include "dpc/runtime/Data.h"

#include "DataSources.h"
#include "NpyRows.h"
#include "dpc/runtime/Error.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <fstream>

namespace dpc::runtime {

using namespace data_detail;

NpyArray parseNpy(const std::vector<uint8_t> &bytes, const std::string &name) {
  NpyHeader header = parseNpyHeader(bytes.data(), bytes.size(), name);
  NpyArray array;
  array.descr = header.descr;
  array.shape = header.shape;
  array.data.assign(bytes.begin() + long(header.dataOffset), bytes.end());
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
static Dataset npyTargets(const DataSpec &spec,
                          std::shared_ptr<const NpyRows> inputs, bool integer,
                          std::shared_ptr<const NpyRows> labels,
                          const ModelDataShape &model) {
  std::vector<int64_t> sampleShape(inputs->shape().begin() + 1,
                                   inputs->shape().end());
  std::vector<int64_t> targetShape(labels->shape().begin() + 1,
                                   labels->shape().end());
  if (labels->descr() != "<f4")
    throw InputError(spec.labelsPath +
                     ": --loss mse needs float32 ('<f4') targets, got '" +
                     labels->descr() + "'");
  if (integer)
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
                     bracketed(std::to_string(labels->rows()), targetShape) +
                     " do not match the model's output " +
                     bracketed("N", model.labelShape) +
                     " (--loss mse takes a float target per output element)");
  return Dataset::fromRows(std::move(sampleShape), std::move(inputs), false,
                           std::move(labels), std::move(targetShape), 0,
                           std::nullopt, /*floatTargets=*/true);
}

/// Labels of up to this many values are checked at load, so that a bad
/// label stops the run before it starts; larger label arrays are checked
/// as their samples are gathered.
static constexpr int64_t kLabelScanLimit = int64_t(1) << 24;

/// The class count: the model's, or, without one, one above the largest
/// label. Checks every label against it when the array is small enough.
static int64_t checkLabels(const DataSpec &spec, const NpyRows &labels,
                           const ModelDataShape &model) {
  const int64_t perSample = labels.rowElements();
  if (labels.rows() * perSample > kLabelScanLimit) {
    if (model.numClasses <= 0)
      throw InputError(spec.labelsPath + ": over " +
                       std::to_string(kLabelScanLimit) +
                       " labels and no class count from the model");
    return model.numClasses;
  }
  std::vector<int64_t> row(size_t(std::max<int64_t>(perSample, 1)));
  int64_t maxLabel = -1;
  for (int64_t i = 0; i < labels.rows(); ++i) {
    labels.readInts(i, row.data());
    for (int64_t label : row) {
      if (model.ignoreIndex && label == *model.ignoreIndex)
        continue;
      if (label < 0 || (model.numClasses > 0 && label >= model.numClasses))
        throw Error(spec.labelsPath + ": label " + std::to_string(label) +
                    " of sample " + std::to_string(i) + " is outside [0, " +
                    std::to_string(model.numClasses) + ")");
      maxLabel = std::max(maxLabel, label);
    }
  }
  return model.numClasses > 0 ? model.numClasses : maxLabel + 1;
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

/// "input 1 (input1: 8 float32)" for messages.
static std::string inputText(const ModelDataShape &model, size_t k) {
  const ModelDataShape::Input &input = model.inputs[k];
  return "input " + std::to_string(k) + " (" + input.name + ": " +
         shapeText(input.sampleShape) +
         (input.integer ? " int64 ids" : " float32") + ")";
}

/// One array of a several-input spec, checked against the model's input
/// k: the file exists, integer ids for an int64 input and floats for a
/// float one, the input's per-sample shape, `rows` samples.
static std::shared_ptr<const NpyRows>
openInput(const DataSpec &spec, const std::string &path, size_t k,
          const ModelDataShape &model, int64_t rows) {
  if (path.find_first_of("*?[") == std::string::npos && !fileExists(path))
    throw InputError(path + ": no such file, for " + inputText(model, k) +
                     " of the model");
  auto array = std::make_shared<const NpyRows>(expandShards(path));
  const ModelDataShape::Input &input = model.inputs[k];
  if (array->integerType() != input.integer)
    throw InputError(path + ": dtype '" + array->descr() + "' for " +
                     inputText(model, k) + ", which takes " +
                     (input.integer ? "integer ids (int64 or int32)"
                                    : "floats (float32, float16 or float64)"));
  std::vector<int64_t> sample(array->shape().begin() + 1, array->shape().end());
  if (sample != input.sampleShape)
    throw InputError(path + ": samples of shape " + shapeText(sample) +
                     " for " + inputText(model, k) + " of the model");
  if (rows >= 0 && array->rows() != rows)
    throw InputError(path + ": " + std::to_string(array->rows()) +
                     " samples for " + inputText(model, k) + " but " +
                     std::to_string(rows) + " in " + spec.inputsPath);
  return array;
}

/// npy:A.npy,B.npy,...,LABELS.npy: one array a graph input, in order.
static Dataset loadNpyInputs(const DataSpec &spec,
                             const ModelDataShape &model) {
  std::vector<std::string> paths{spec.inputsPath};
  paths.insert(paths.end(), spec.moreInputPaths.begin(),
               spec.moreInputPaths.end());
  std::vector<std::shared_ptr<const NpyRows>> arrays;
  for (size_t k = 0; k < paths.size(); ++k)
    arrays.push_back(
        openInput(spec, paths[k], k, model, k ? arrays[0]->rows() : -1));
  if (!fileExists(spec.labelsPath) &&
      spec.labelsPath.find_first_of("*?[") == std::string::npos)
    throw InputError(spec.labelsPath + ": no such file, for the labels");
  auto labels = std::make_shared<const NpyRows>(expandShards(spec.labelsPath));
  if (labels->rows() != arrays[0]->rows())
    throw InputError(spec.labelsPath + ": " + std::to_string(labels->rows()) +
                     " labels for " + std::to_string(arrays[0]->rows()) +
                     " samples in " + spec.inputsPath);
  if (!labels->integerType() || model.floatLabels)
    throw InputError(spec.labelsPath +
                     ": several inputs take int64 class "
                     "labels, got dtype '" +
                     labels->descr() + "'" +
                     (model.floatLabels ? " for --loss mse" : ""));
  std::vector<int64_t> labelShape(labels->shape().begin() + 1,
                                  labels->shape().end());
  int64_t classes = checkLabels(spec, *labels, model);
  Dataset data = Dataset::fromRows(
      model.inputs[0].sampleShape, arrays[0], model.inputs[0].integer,
      std::move(labels), std::move(labelShape), classes, model.ignoreIndex);
  for (size_t k = 1; k < arrays.size(); ++k)
    data.addInput(model.inputs[k].sampleShape, arrays[k],
                  model.inputs[k].integer);
  return data;
}

/// The spec with inputs by name in the positional form, in the graph's
/// order: every input named once, no name the model lacks.
static DataSpec orderNamedInputs(const DataSpec &spec,
                                 const ModelDataShape &model) {
  std::string names;
  for (size_t k = 0; k < model.inputs.size(); ++k)
    names += (k ? ", " : "") + model.inputs[k].name;
  if (model.inputs.empty())
    throw InputError(spec.text + ": inputs by name need the model's inputs "
                                 "to match them to");
  DataSpec ordered = spec;
  ordered.namedInputPaths.clear();
  std::vector<std::string> paths;
  for (const ModelDataShape::Input &input : model.inputs) {
    auto named = std::find_if(
        spec.namedInputPaths.begin(), spec.namedInputPaths.end(),
        [&](const auto &pair) { return pair.first == input.name; });
    if (named == spec.namedInputPaths.end())
      throw InputError(spec.text + ": no array for the model's input '" +
                       input.name + "' (its inputs: " + names + ")");
    paths.push_back(named->second);
  }
  for (const auto &[name, path] : spec.namedInputPaths)
    if (std::none_of(model.inputs.begin(), model.inputs.end(),
                     [&](const auto &input) { return input.name == name; }))
      throw InputError(spec.text + ": the model has no input '" + name +
                       "' (its inputs: " + names + ")");
  ordered.inputsPath = paths[0];
  ordered.moreInputPaths.assign(paths.begin() + 1, paths.end());
  return ordered;
}

static Dataset loadNpy(const DataSpec &spec, Split split,
                       const ModelDataShape &model, uint64_t seed,
                       bool readsInputs) {
  if (!spec.namedInputPaths.empty())
    return loadNpy(orderNamedInputs(spec, model), split, model, seed,
                   readsInputs);
  if (!spec.lengthsPath.empty())
    return loadNpySequences(spec, model);
  const size_t files = 1 + spec.moreInputPaths.size();
  if (model.inputs.size() > 1 || files > 1) {
    if (model.inputs.size() != files && !model.inputs.empty()) {
      std::string list;
      for (size_t k = 0; k < model.inputs.size(); ++k)
        list += (k ? ", " : "") + inputText(model, k);
      throw InputError(
          spec.text + ": " + std::to_string(files) + " input array" +
          (files == 1 ? "" : "s") + " for a model of " +
          std::to_string(model.inputs.size()) + " inputs (" + list +
          "); give npy:A.npy,B.npy,...,LABELS.npy, one "
          "array an input in this order, then the labels");
    }
    if (model.inputs.empty())
      throw InputError(spec.text + ": several input arrays need the model's "
                                   "inputs to check them against");
    if (spec.labelsPath.empty())
      throw InputError(spec.text + ": a model of several inputs needs "
                                   "labels: npy:A.npy,B.npy,...,LABELS.npy");
    return loadNpyInputs(spec, model);
  }
  auto inputs = std::make_shared<const NpyRows>(
      expandShards(spec.inputsPath),
      FloatTransform{spec.npyScale, spec.npyMean, spec.npyStd});
  // uint8 arrays are images unless the model reads token ids; other
  // integer arrays are token ids.
  const bool integer = inputs->integerType() &&
                       (inputs->descr() != "|u1" || model.integerInputs);
  if (integer && (spec.npyScale != 1.0 || !spec.npyMean.empty()))
    throw InputError(spec.inputsPath + ": scale=, mean= and std= apply to "
                                       "float inputs, not token ids");
  std::vector<int64_t> sampleShape(inputs->shape().begin() + 1,
                                   inputs->shape().end());
  // loadDataset refuses an empty one.
  if (spec.labelsPath.empty()) {
    if (integer)
      throw Error(spec.inputsPath + ": integer inputs need labels "
                                    "(npy:INPUTS.npy,LABELS.npy)");
    return Dataset::fromRows(std::move(sampleShape), std::move(inputs), false,
                             nullptr, {}, 0, std::nullopt);
  }
  auto labels = std::make_shared<const NpyRows>(expandShards(spec.labelsPath));
  if (inputs->rows() != labels->rows())
    throw Error(spec.text + ": " + std::to_string(inputs->rows()) +
                " samples in " + spec.inputsPath + " but " +
                std::to_string(labels->rows()) + " labels in " +
                spec.labelsPath);
  if (model.floatLabels)
    return npyTargets(spec, std::move(inputs), integer, std::move(labels),
                      model);
  if (!labels->integerType())
    throw InputError(spec.labelsPath + ": " +
                     (labels->descr() == "<f4"
                          ? std::string("float32")
                          : "float ('" + labels->descr() + "')") +
                     " labels are targets for --loss mse, but this model's "
                     "loss takes int64 class ids");
  std::vector<int64_t> labelShape(labels->shape().begin() + 1,
                                  labels->shape().end());
  int64_t classes = checkLabels(spec, *labels, model);
  return Dataset::fromRows(std::move(sampleShape), std::move(inputs), integer,
                           std::move(labels), std::move(labelShape), classes,
                           model.ignoreIndex);
}

static void parseNpySpec(const DataSpecParts &cut, DataSpec &spec) {
  const std::vector<std::string> &parts = cut.options;
  const std::string usage =
      "data spec '" + spec.text +
      "': expected npy:INPUTS.npy,LABELS.npy, npy:INPUTS.npy or, for a "
      "model of several inputs, npy:A.npy,B.npy,...,LABELS.npy or "
      "npy:NAME=A.npy,...,LABELS.npy";
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

DataSourceKind data_detail::dataSourceKindNpy() {
  DataSourceKind kind;
  kind.name = "npy";
  kind.prefixes = {"npy"};
  kind.order = 20;
  kind.usage = "npy:INPUTS.npy[,LABELS.npy]";
  kind.help = "npy:INPUTS,LABELS[,lengths=L.npy][,scale=S][,mean=M1/..,std=D1/"
              "..] (each file may be a glob of shards)";
  kind.classLabels = false;
  kind.parse = parseNpySpec;
  kind.load = loadNpy;
  return kind;
}

} // namespace dpc::runtime
