//===- TinyGen.cpp - Schedule, weights and data for the tiny model --------===//
//
// Writes what `dpc compile` would put next to the tiny model's rank
// executables (TinyModel.cpp): schedule.json from dpc_schedule's builder and
// weights/stageS.safetensors, plus a learnable dataset as .npy files.
//
//   dpc-tiny-gen DIR STAGES KIND MICROBATCHES [REPLICAS]
//
// REPLICAS, e.g. 2,1, gives each stage that many data-parallel ranks.
//
// The weights and data depend only on fixed seeds, so the one-stage and
// two-stage layouts start from the same numbers.
//
//===----------------------------------------------------------------------===//

#include "dpc/runtime/Data.h"
#include "dpc/runtime/Error.h"
#include "dpc/runtime/Safetensors.h"
#include "dpc/schedule/Builder.h"

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <sys/stat.h>
#include <vector>

using namespace dpc;

namespace {

constexpr int64_t F = 64, H = 32, C = 5, kSamples = 256;

/// mt19937's output is fully specified (unlike the standard distributions),
/// so the numbers are the same everywhere.
std::vector<float> uniform(std::mt19937 &gen, size_t n, float bound) {
  std::vector<float> v(n);
  for (float &x : v)
    x = bound * (2.0f * float(gen() >> 8) * 0x1p-24f - 1.0f);
  return v;
}

} // namespace

int main(int argc, char **argv) {
  if (argc != 5 && argc != 6) {
    std::fprintf(stderr, "usage: %s DIR STAGES KIND MICROBATCHES [REPLICAS]\n",
                 argv[0]);
    return 2;
  }
  std::string dir = argv[1];
  int stages = std::atoi(argv[2]);
  try {
    schedule::BuildOptions options;
    if (!schedule::parseKind(argv[3], options.kind))
      throw runtime::Error(std::string("unknown schedule kind ") + argv[3]);
    options.stages = stages;
    options.microbatches = std::atoi(argv[4]);
    if (argc == 6) {
      std::istringstream list(argv[5]);
      for (std::string count; std::getline(list, count, ',');)
        options.replicas.push_back(std::atoi(count.c_str()));
    }
    schedule::Schedule sched = schedule::buildSchedule(options);
    ::mkdir(dir.c_str(), 0777);
    ::mkdir((dir + "/weights").c_str(), 0777);
    std::ofstream(dir + "/schedule.json") << schedule::toJson(sched, 1);

    std::mt19937 gen(2024);
    std::vector<float> w0 = uniform(gen, H * F, 0.125f);
    std::vector<float> w1 = uniform(gen, C * H, 0.17f);
    std::vector<float> b1 = uniform(gen, C, 0.17f);
    runtime::TensorFile s0, s1;
    s0.tensors["fc0.weight"] = runtime::Tensor::fromF32({H, F}, w0.data());
    runtime::TensorFile &last = stages == 1 ? s0 : s1;
    last.tensors["fc1.weight"] = runtime::Tensor::fromF32({C, H}, w1.data());
    last.tensors["fc1.bias"] = runtime::Tensor::fromF32({C}, b1.data());
    runtime::writeSafetensors(dir + "/weights/stage0.safetensors", s0);
    if (stages == 2)
      runtime::writeSafetensors(dir + "/weights/stage1.safetensors", s1);

    // Labels from a fixed random linear map, so training makes progress.
    std::vector<float> x = uniform(gen, kSamples * F, 0.5f);
    for (float &v : x)
      v += 0.5f;
    std::vector<float> t = uniform(gen, F * C, 1.0f);
    std::vector<int64_t> y(kSamples);
    for (int64_t i = 0; i < kSamples; ++i) {
      float best = -1e30f;
      for (int64_t c = 0; c < C; ++c) {
        float s = 0;
        for (int64_t f = 0; f < F; ++f)
          s += x[size_t(i * F + f)] * t[size_t(f * C + c)];
        if (s > best) {
          best = s;
          y[size_t(i)] = c;
        }
      }
    }
    runtime::writeNpyFile(dir + "/inputs.npy", "<f4", {kSamples, 1, 8, 8},
                          x.data(), x.size() * 4);
    runtime::writeNpyFile(dir + "/labels.npy", "<i8", {kSamples}, y.data(),
                          y.size() * 8);
  } catch (const runtime::Error &e) {
    std::fprintf(stderr, "dpc-tiny-gen: %s\n", e.what());
    return 1;
  }
  return 0;
}
