//===- Metrics.h - Metrics file and progress line ---------------*- C++ -*-===//
//
// The last stage is the one that sees the loss, so it writes the metrics
// file (--metrics, JSON lines) and the progress line. Metrics records:
//
//   {"step":k,"loss":x,"samples":n,"time_s":t}   one per training step; k
//        counts from 1, n is the samples trained so far, t the seconds since
//        training started; also "lr", the step's (last) learning rate, and
//        with --clip-grad-norm "grad_norm", the gradients' norm before the
//        clip (docs/TRAINING.md)
//   {"eval_accuracy":a,"eval_samples":n}          after evaluation
//   {"eval_mse":x,"eval_samples":n}               after evaluation with
//        float targets (--loss mse), which have no accuracy
//
// Each line is flushed as it is written, so a run that dies still leaves the
// steps it completed. With --tensorboard DIR every number of every record
// (but the step) is also written as a TensorBoard scalar of that name, at
// the record's step (TensorBoard.h).
//
//===----------------------------------------------------------------------===//

#ifndef DPC_RUNTIME_METRICS_H
#define DPC_RUNTIME_METRICS_H

#include "dpc/runtime/TensorBoard.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>

namespace dpc::runtime {

class MetricsWriter {
public:
  /// Opens `path` (none when empty), truncating it unless `append` (used by
  /// --resume), and with `tensorboardDir` an event file there. Throws Error
  /// naming the path when it cannot be opened.
  explicit MetricsWriter(const std::string &path, bool append = false,
                         const std::string &tensorboardDir = "");
  ~MetricsWriter();
  MetricsWriter(const MetricsWriter &) = delete;
  MetricsWriter &operator=(const MetricsWriter &) = delete;

  void writeStep(int64_t step, double loss, int64_t samples, double timeS);
  void writeEvalAccuracy(double accuracy, int64_t samples);
  /// Writes any record as one line, keys in insertion order.
  void write(const nlohmann::ordered_json &record);

private:
  std::string path;
  std::FILE *file = nullptr;
  std::unique_ptr<TensorBoardWriter> board;
  int64_t lastStep = 0;
};

/// "1h02m", "3m07s", "12s", "--" for an unknown (negative or non-finite)
/// duration.
std::string formatDuration(double seconds);

struct Progress {
  int64_t step = 0;       // steps completed, from 1
  int64_t totalSteps = 0; // 0 when unknown
  double loss = 0;
  double samplesPerSecond = 0;
  double etaSeconds = -1; // negative when unknown
};

/// One progress line, e.g.
/// "step 120/937  loss 0.5123  2345.6 samples/s  ETA 1m23s".
std::string formatProgress(const Progress &progress);

/// Turns step completions into Progress: throughput over all steps so far
/// after the first (which pays for warm-up), and the ETA from it.
class ProgressMeter {
public:
  ProgressMeter(int64_t totalSteps, int64_t samplesPerStep, double startS);
  /// Records that `step` (from 1; a resumed run starts later) finished at
  /// time `nowS` with `loss`.
  Progress update(int64_t step, double loss, double nowS);

private:
  int64_t totalSteps, samplesPerStep;
  double startS;
  int64_t firstStep = -1; // the first step seen; throughput counts after it
  double firstStepEndS = 0;
};

} // namespace dpc::runtime

#endif // DPC_RUNTIME_METRICS_H
