//===- DataIdx.cpp - Fashion-MNIST and MNIST: IDX files -------------------===//
//
// `fashion-mnist:DIR` and `mnist:DIR`: the train (train-*) or test (t10k-*)
// images and labels in IDX files, gzipped or not. The header's dimensions
// are checked against the bytes that follow, and every label against the
// model's classes.
//
//===----------------------------------------------------------------------===//

#include "dpc/runtime/Data.h"

#include "DataSources.h"
#include "dpc/runtime/Error.h"

#include <cstdio>

namespace dpc::runtime {

using namespace data_detail;

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
                       const ModelDataShape &model, uint64_t, bool) {
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

static void parseIdxSpec(const DataSpecParts &parts, DataSpec &spec) {
  if (parts.rest.empty())
    throw Error("data spec '" + spec.text + "': expected " + parts.prefix +
                ":DIR");
  spec.format = parts.prefix;
  spec.dir = parts.rest;
}

DataSourceKind data_detail::dataSourceKindIdx() {
  DataSourceKind kind;
  kind.name = "idx";
  kind.prefixes = {"fashion-mnist", "mnist"};
  kind.order = 10;
  kind.usage = "fashion-mnist:DIR, mnist:DIR";
  kind.help = "fashion-mnist:DIR, mnist:DIR";
  kind.classLabels = true;
  kind.parse = parseIdxSpec;
  kind.load = loadIdx;
  return kind;
}

} // namespace dpc::runtime
