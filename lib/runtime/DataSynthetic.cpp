//===- DataSynthetic.cpp - Synthetic data ---------------------------------===//
//
// `synthetic[:SAMPLES]`: samples of the model's own shapes drawn from
// SplitMix64 (Random.h), the same on every rank, compiler and standard
// library: token ids and labels below the class count, unit floats with
// class labels (the inputs computed as they are gathered), or float targets
// for --loss mse. Train and test draw from different streams.
//
//===----------------------------------------------------------------------===//

#include "dpc/runtime/Data.h"

#include "DataSources.h"
#include "Random.h"
#include "dpc/runtime/Error.h"

#include <cstdlib>

namespace dpc::runtime::data_detail {

namespace {

/// The options of synthetic:SAMPLES, the kind's own (DataSpec::options).
struct SyntheticOptions {
  int64_t samples = 0; // 0: the default count of the split
};

void parseSyntheticSpec(const DataSpecParts &parts, DataSpec &spec) {
  SyntheticOptions options;
  if (parts.hasColon) {
    char *end = nullptr;
    long long n = std::strtoll(parts.rest.c_str(), &end, 10);
    if (parts.rest.empty() || *end != '\0' || n <= 0)
      throw Error("data spec '" + spec.text +
                  "': expected synthetic or synthetic:SAMPLES with a "
                  "positive sample count");
    options.samples = n;
  }
  spec.options = options;
}

Dataset loadSynthetic(const DataSpec &spec, Split split,
                      const ModelDataShape &model, uint64_t seed,
                      bool readsInputs) {
  if (model.sampleShape.empty() ||
      (model.numClasses <= 0 && !model.floatLabels))
    throw Error(spec.text + ": synthetic data needs the model's input shape "
                            "and class count");
  const int64_t samples = spec.optionsAs<SyntheticOptions>().samples;
  int64_t count = samples > 0 ? samples : (split == Split::Train ? 4096 : 1024);
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

} // namespace

DataSourceKind dataSourceKindSynthetic() {
  DataSourceKind kind;
  kind.name = "synthetic";
  kind.prefixes = {"synthetic"};
  kind.order = 100;
  kind.usage = "synthetic[:SAMPLES]";
  kind.help = "synthetic[:N]";
  kind.classLabels = false;
  kind.parse = parseSyntheticSpec;
  kind.load = loadSynthetic;
  return kind;
}

} // namespace dpc::runtime::data_detail
