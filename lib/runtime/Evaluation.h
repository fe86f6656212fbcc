//===- Evaluation.h - Evaluating during and after training ------*- C++ -*-===//
//
// A rank main's evaluation of its test data with the weights it holds: at
// the end of training (--eval, as before) and every N steps (--eval-every
// N), with --keep-best checkpointing the weights of the lowest validation
// loss. The last stage reports: the progress line and the metrics record.
//
//===----------------------------------------------------------------------===//

#ifndef DPC_LIB_RUNTIME_EVALUATION_H
#define DPC_LIB_RUNTIME_EVALUATION_H

#include "dpc/runtime/Data.h"
#include "dpc/runtime/Executor.h"
#include "dpc/runtime/Metrics.h"

#include <cmath>
#include <functional>
#include <optional>
#include <string>

namespace dpc::runtime {

struct EvalReport {
  /// The mean loss over the evaluated samples (on the reporting rank; NaN
  /// elsewhere or when the build reports none).
  double loss = 0;
  int64_t samples = 0;
};

/// Evaluates `microbatches` microbatches of `data` (every rank takes part;
/// stages that read no data pass nullptr). On the reporting rank (`reports`)
/// prints the result and writes it to `metrics`: after the end of training
/// (`afterStep` empty) the records it always wrote ({"eval_accuracy",
/// "eval_samples"} or {"eval_mse", ...}); during training one record
/// {"eval_step", "eval_loss", "eval_accuracy" or "eval_mse",
/// "eval_perplexity" for token models, "eval_samples"}. The loss is the
/// microbatches' mean: each reports its loss with the training scale of
/// `trainMicrobatches` microbatches (or, ignoring a label, its own mean).
EvalReport
evaluateAndReport(Executor &exec, const Dataset *data, int64_t microbatches,
                  int64_t trainMicrobatches, bool reports,
                  MetricsWriter *metrics, std::optional<int64_t> afterStep,
                  const std::function<void(const std::string &)> &print);

/// --keep-best's lowest validation loss so far, recorded beside the
/// checkpoint it kept (DIR/best.json: {"step", "eval_loss"}) so that a
/// resumed run measures itself against the runs before it, not only its
/// own evaluations.
class BestLoss {
public:
  /// Reads DIR/best.json when `resumed` and it exists; otherwise no loss is
  /// best yet. A file that exists but does not parse is an InputError.
  BestLoss(std::string dir, bool resumed);
  /// Whether `loss` is lower than every loss recorded so far.
  bool improves(double loss) const;
  /// Records `loss` after `step` (the reporting rank, after the stages have
  /// written their checkpoints into DIR).
  void record(int64_t step, double loss);
  /// The step of the best loss, or -1 before the first.
  int64_t step() const { return bestStep; }

private:
  std::string dir;
  double loss = INFINITY;
  int64_t bestStep = -1;
};

} // namespace dpc::runtime

#endif // DPC_LIB_RUNTIME_EVALUATION_H
