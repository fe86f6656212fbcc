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

#include <functional>
#include <optional>

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

} // namespace dpc::runtime

#endif // DPC_LIB_RUNTIME_EVALUATION_H
