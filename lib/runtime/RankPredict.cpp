//===- RankPredict.cpp - An inference build's run -------------------------===//
//
// A rank of a build compiled with `dpc compile --inference` runs the forward
// pass over every sample of --data, pipelined microbatch after microbatch,
// with the compiler's weights or a training run's checkpoint; the last stage
// writes the outputs as .npy (--predictions) and, for a batch of class
// scores over labelled data, the accuracy.
//
//===----------------------------------------------------------------------===//

#include "RankRun.h"

#include "dpc/runtime/Error.h"
#include "dpc/runtime/Safetensors.h"

#include <cstdio>
#include <numeric>

namespace dpc::runtime::rank {

namespace {

/// The outputs of an inference build for `samples` samples, as kept by
/// Executor::evaluate over `microbatches` microbatches, written as .npy: a
/// batch-major output loses the rows that padded the last microbatch.
void writePredictions(const std::string &path, const RankManifest &m,
                      const std::vector<float> &outputs, int64_t samples,
                      int64_t microbatches) {
  std::vector<int64_t> shape = *m.outputShape;
  int64_t perMicrobatch = product(shape);
  if (int64_t(outputs.size()) != perMicrobatch * microbatches)
    throw Error("predictions: expected " +
                std::to_string(perMicrobatch * microbatches) +
                " output values, the last stage kept " +
                std::to_string(outputs.size()));
  int64_t rows = shape[0] * microbatches;
  if (shape[0] == m.microbatchSize)
    rows = samples;
  else if (samples % m.microbatchSize != 0)
    throw Error("the model's output (first dimension " +
                std::to_string(shape[0]) + ") is not batch-major, so the " +
                std::to_string(samples) +
                " samples must fill whole "
                "microbatches of " +
                std::to_string(m.microbatchSize));
  shape[0] = rows;
  size_t bytes = size_t(rows * product(shape, 1)) * sizeof(float);
  writeNpyFile(path, "<f4", shape, outputs.data(), bytes);
}

} // namespace

int predict(const Options &opts, Communicator &comm, Executor &exec,
            const std::string &dir) {
  const RankManifest &m = exec.manifest();
  if (std::string training = givenTrainingOption(opts); !training.empty())
    throw UsageError{"--" + training +
                     " applies to training, and this is an inference build "
                     "(dpc compile --inference)"};
  ModelDataShape model = shareModelShape(comm, m);
  DataSpec spec = parseDataSpec(opts.data);
  // The last stage reads the data too when it has labels to score against.
  std::optional<Dataset> data;
  if (m.isFirstStage() || m.isLastStage())
    data = loadDataset(spec, Split::Test, model, uint64_t(opts.seed));
  std::vector<int64_t> sizes = {data ? data->size() : 0};
  std::vector<int64_t> mine = sizes;
  broadcastInts(comm, 0, sizes);
  if (data && mine != sizes)
    throw Error("this stage read " + std::to_string(mine[0]) +
                " samples but the first stage read " +
                std::to_string(sizes[0]) + " (give every rank the same data)");
  const int64_t samples = sizes[0];
  bool scored = m.isLastStage() && data->hasLabels() && m.outputShape &&
                m.outputShape->size() == 2 &&
                (*m.outputShape)[0] == m.microbatchSize;
  if (m.isLastStage() && opts.predictions.empty() && !scored)
    throw UsageError{"an inference run over unlabelled data has nothing to "
                     "report: give --predictions FILE.npy"};
  // The compiler's weights, or trained ones: every stage's checkpoint of a
  // training run, whatever its stage split was.
  if (!opts.checkpointDir.empty()) {
    exec.loadParams(
        readCheckpoint(opts.checkpointDir, /*optimizerState=*/false),
        opts.checkpointDir, /*optimizerState=*/false);
  } else if (!m.params.empty()) {
    std::string path = resolve(dir, m.weights);
    exec.loadParams(readSafetensors(path), path, /*optimizerState=*/false);
  }

  int64_t microbatches = (samples + m.microbatchSize - 1) / m.microbatchSize;
  if (m.isLastStage())
    printLine("predicting " + std::to_string(samples) + " samples in " +
              std::to_string(microbatches) + " microbatches of " +
              std::to_string(m.microbatchSize) + " on " +
              std::to_string(m.stages) + " stages");
  EvalResult result = exec.evaluate(data ? &*data : nullptr, microbatches,
                                    /*keepOutputs=*/true);
  if (m.isLastStage()) {
    if (!opts.predictions.empty()) {
      writePredictions(opts.predictions, m, result.outputs, samples,
                       microbatches);
      printLine("wrote " + opts.predictions);
    }
    if (scored) {
      std::vector<int64_t> indices(static_cast<size_t>(samples)),
          labels(static_cast<size_t>(samples));
      std::iota(indices.begin(), indices.end(), int64_t(0));
      data->gatherLabels(indices, labels.data());
      int64_t correct = countArgmaxHits(result.outputs.data(), samples,
                                        (*m.outputShape)[1], labels.data());
      char line[128];
      std::snprintf(line, sizeof line, "accuracy %.4f (%lld/%lld)",
                    double(correct) / double(samples), (long long)correct,
                    (long long)samples);
      printLine(line);
    }
  }
  comm.barrier();
  return 0;
}

} // namespace dpc::runtime::rank
