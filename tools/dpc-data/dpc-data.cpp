//===- dpc-data.cpp - What a data spec gives a model ----------------------===//
//
//   dpc-data SPEC --shape C,H,W [--classes N] [--split train|test]
//            [--epoch E] [--seed S] [--samples I,J,..] [--npy FILE]
//   dpc-data SPEC --shape C,H,W --throughput N [--loader-threads T]
//            [--batch B]
//
// Loads SPEC as a rank reading inputs [B, C, H, W] of float32 would
// (loadDataset), prints one line a listed sample (Dataset::describeSample:
// its file and, for an image folder, the crop and flip of epoch E) with
// its label, and writes the samples' gathered inputs as float32 .npy
// [count, C, H, W]. A bad input stops it as it stops a run: one line, exit
// 2. Used by the imagefolder tests to compare dpc's pixels with PIL's.
//
// --throughput N reads the first N samples (epoch E) in batches of B
// (default 64) through the loader threads a run would use (Loader.h, T
// threads, default 1) and prints the samples per second: bench/data's
// decode rate.
//
//===----------------------------------------------------------------------===//

#include "dpc/runtime/Data.h"
#include "dpc/runtime/Error.h"
#include "dpc/runtime/Loader.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

using namespace dpc::runtime;

namespace {

struct BadUsage {
  std::string message;
};

std::vector<int64_t> integers(const std::string &text) {
  std::vector<int64_t> values;
  size_t begin = 0;
  while (begin <= text.size()) {
    size_t comma = text.find(',', begin);
    std::string item = text.substr(begin, comma - begin);
    char *end = nullptr;
    long long v = std::strtoll(item.c_str(), &end, 10);
    if (item.empty() || *end != '\0')
      throw BadUsage{"expected integers separated by commas, got '" + text +
                     "'"};
    values.push_back(v);
    if (comma == std::string::npos)
      break;
    begin = comma + 1;
  }
  return values;
}

/// Reads samples [0, count) in batches of `batch` on `threads` loader
/// threads and prints the rate.
void throughput(const Dataset &data, int64_t count, int64_t batch, int threads,
                int64_t epoch) {
  count = std::min(count, data.size());
  batch = std::max<int64_t>(1, std::min(batch, count));
  const int64_t batches = count / batch;
  InputLoader loader(data, threads, 2 * threads + 2, [&](int64_t seq) {
    InputLoader::Batch b;
    b.epoch = epoch;
    for (int64_t i = 0; i < batch; ++i)
      b.indices.push_back((seq * batch + i) % data.size());
    return b;
  });
  std::vector<float> out(size_t(batch * data.sampleElements()));
  auto start = std::chrono::steady_clock::now();
  for (int64_t k = 0; k < batches; ++k)
    loader.take(k, out.data());
  double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  std::printf("decoded %lld samples in %.3f s: %.1f samples/s on %d loader "
              "thread%s\n",
              (long long)(batches * batch), seconds,
              double(batches * batch) / seconds, threads,
              threads == 1 ? "" : "s");
}

int usage() {
  std::fprintf(stderr, "usage: dpc-data SPEC --shape C,H,W [--classes N] "
                       "[--split train|test] [--epoch E] [--seed S] "
                       "[--samples I,J,..] [--npy FILE] [--throughput N "
                       "[--loader-threads T] [--batch B]]\n");
  return 1;
}

int run(int argc, char **argv) {
  if (argc < 2)
    return usage();
  std::string spec = argv[1], npy;
  ModelDataShape model;
  Split split = Split::Train;
  int64_t epoch = 0, seed = 0, count = 0, batch = 64, threads = 1;
  std::vector<int64_t> samples = {0};
  for (int i = 2; i < argc; ++i) {
    std::string arg = argv[i];
    if (i + 1 >= argc)
      return usage();
    std::string value = argv[++i];
    if (arg == "--shape")
      model.sampleShape = integers(value);
    else if (arg == "--classes")
      model.numClasses = integers(value).at(0);
    else if (arg == "--split" && (value == "train" || value == "test"))
      split = value == "train" ? Split::Train : Split::Test;
    else if (arg == "--epoch")
      epoch = integers(value).at(0);
    else if (arg == "--seed")
      seed = integers(value).at(0);
    else if (arg == "--samples")
      samples = integers(value);
    else if (arg == "--npy")
      npy = value;
    else if (arg == "--throughput")
      count = integers(value).at(0);
    else if (arg == "--batch")
      batch = integers(value).at(0);
    else if (arg == "--loader-threads")
      threads = integers(value).at(0);
    else
      return usage();
  }
  if (model.sampleShape.empty())
    return usage();
  model.inputs.push_back({"input", model.sampleShape, false});
  Dataset data =
      loadDataset(parseDataSpec(spec), split, model, uint64_t(seed), true);
  if (count > 0) {
    throughput(data, count, batch, int(std::max<int64_t>(threads, 1)), epoch);
    return 0;
  }
  std::vector<float> values(samples.size() * size_t(data.sampleElements()));
  data.gatherInputs(samples, values.data(), epoch);
  for (int64_t index : samples)
    std::printf("%s: label %lld\n", data.describeSample(index, epoch).c_str(),
                (long long)data.label(index));
  std::printf("%lld samples of %lld classes\n", (long long)data.size(),
              (long long)data.numClasses());
  if (!npy.empty()) {
    std::vector<int64_t> shape = {int64_t(samples.size())};
    shape.insert(shape.end(), model.sampleShape.begin(),
                 model.sampleShape.end());
    writeNpyFile(npy, "<f4", shape, values.data(),
                 values.size() * sizeof(float));
  }
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  try {
    return run(argc, argv);
  } catch (const BadUsage &e) {
    std::fprintf(stderr, "dpc-data: %s\n", e.message.c_str());
    return 1;
  } catch (const InputError &e) {
    std::fprintf(stderr, "dpc-data: %s\n", e.what());
    return 2;
  } catch (const std::exception &e) {
    std::fprintf(stderr, "dpc-data: %s\n", e.what());
    return 2;
  }
}
