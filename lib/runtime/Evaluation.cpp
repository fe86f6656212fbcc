//===- Evaluation.cpp - Evaluating during and after training --------------===//

#include "Evaluation.h"

#include "dpc/runtime/Error.h"
#include "dpc/support/WriteFile.h"

#include <cmath>
#include <cstdio>
#include <fstream>

namespace dpc::runtime {

EvalReport
evaluateAndReport(Executor &exec, const Dataset *data, int64_t microbatches,
                  int64_t trainMicrobatches, bool reports,
                  MetricsWriter *metrics, std::optional<int64_t> afterStep,
                  const std::function<void(const std::string &)> &print) {
  const RankManifest &m = exec.manifest();
  EvalResult result = exec.evaluate(data, microbatches);
  EvalReport report;
  report.samples = result.samples;
  report.loss = std::nan("");
  if (!reports || !m.labelsShape || microbatches <= 0)
    return report;
  // A microbatch reports its loss scaled as in training: by 1 / (M B), or
  // ignoring a label by 1 / its own counted labels.
  double perMicrobatch = m.ignoreIndex ? 1.0 : double(trainMicrobatches);
  report.loss = result.reportedLoss * perMicrobatch / double(microbatches);
  nlohmann::ordered_json record;
  char line[200];
  if (afterStep) {
    record["eval_step"] = *afterStep;
    record["eval_loss"] = report.loss;
    std::snprintf(line, sizeof line, "eval after step %lld: loss %.4f",
                  (long long)*afterStep, report.loss);
  } else {
    line[0] = 0;
  }
  std::string text = line;
  if (m.floatLabels && result.targets > 0) {
    // A regression has no classes to be right about: its test loss.
    double mse = result.squaredError / double(result.targets);
    record["eval_mse"] = mse;
    std::snprintf(line, sizeof line, "%smse %.6f (%lld samples)",
                  afterStep ? ", " : "test ", mse, (long long)result.samples);
    text += line;
  } else if (m.outputShape && result.samples > 0) {
    double accuracy = double(result.correct) / double(result.samples);
    record["eval_accuracy"] = accuracy;
    std::snprintf(line, sizeof line, "%saccuracy %.4f (%lld/%lld)",
                  afterStep ? ", " : "test ", accuracy,
                  (long long)result.correct, (long long)result.samples);
    text += line;
  }
  // Token models (a label per position): the perplexity of the loss.
  if (afterStep && m.labelsShape->size() >= 2 && !m.floatLabels) {
    record["eval_perplexity"] = std::exp(report.loss);
    std::snprintf(line, sizeof line, ", perplexity %.3f",
                  std::exp(report.loss));
    text += line;
  }
  if (record.empty() || (!afterStep && result.samples == 0))
    return report;
  record["eval_samples"] = result.samples;
  print(text);
  if (metrics)
    metrics->write(record);
  return report;
}

static std::string bestPath(const std::string &dir) {
  return dir + "/best.json";
}

BestLoss::BestLoss(std::string dir, bool resumed) : dir(std::move(dir)) {
  if (!resumed)
    return;
  std::ifstream in(bestPath(this->dir));
  if (!in)
    return;
  nlohmann::json record = nlohmann::json::parse(in, nullptr, false);
  if (record.is_discarded() || !record.is_object() ||
      !record.contains("eval_loss") || !record["eval_loss"].is_number() ||
      !record.contains("step") || !record["step"].is_number_integer())
    throw InputError(bestPath(this->dir) +
                     ": not the record of --keep-best's best loss "
                     "({\"step\", \"eval_loss\"}); remove it to start over");
  loss = record["eval_loss"].get<double>();
  bestStep = record["step"].get<int64_t>();
}

bool BestLoss::improves(double candidate) const { return candidate < loss; }

void BestLoss::record(int64_t step, double candidate) {
  loss = candidate;
  bestStep = step;
  nlohmann::ordered_json record;
  record["step"] = step;
  record["eval_loss"] = candidate;
  try {
    support::writeAtomically(bestPath(dir), record.dump() + "\n");
  } catch (const Error &e) {
    throw Error(bestPath(dir) + ": " + e.what());
  }
}

} // namespace dpc::runtime
