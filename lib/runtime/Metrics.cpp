//===- Metrics.cpp - Metrics file and progress line -----------------------===//

#include "dpc/runtime/Metrics.h"

#include "dpc/runtime/Error.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>

namespace dpc::runtime {

MetricsWriter::MetricsWriter(const std::string &path, bool append,
                             const std::string &tensorboardDir)
    : path(path) {
  if (!tensorboardDir.empty())
    board = std::make_unique<TensorBoardWriter>(tensorboardDir);
  if (path.empty())
    return;
  file = std::fopen(path.c_str(), append ? "a" : "w");
  if (!file)
    throw Error(path + ": cannot open metrics file: " + std::strerror(errno));
}

MetricsWriter::~MetricsWriter() {
  if (file)
    std::fclose(file);
}

void MetricsWriter::write(const nlohmann::ordered_json &record) {
  if (board) {
    // Every number of the record but the step, at the record's step (the
    // last step's for records without one: evaluation, memory); a rank's
    // own record (memory) under "rankN/".
    if (auto step = record.find("step"); step != record.end())
      lastStep = step->get<int64_t>();
    std::string prefix;
    if (auto rank = record.find("rank");
        rank != record.end() && rank->is_number_integer())
      prefix = "rank" + std::to_string(rank->get<int64_t>()) + "/";
    std::vector<std::pair<std::string, double>> scalars;
    for (const auto &[key, value] : record.items())
      if (value.is_number() && key != "step" && key != "rank")
        scalars.emplace_back(prefix + key, value.get<double>());
    if (!scalars.empty())
      board->scalars(lastStep, scalars);
  }
  if (!file)
    return;
  std::string line = record.dump() + "\n";
  if (std::fwrite(line.data(), 1, line.size(), file) != line.size() ||
      std::fflush(file) != 0)
    throw Error(path + ": write failed: " + std::strerror(errno));
}

void MetricsWriter::writeStep(int64_t step, double loss, int64_t samples,
                              double timeS) {
  // Keys in the documented order for people reading the file; numbers print
  // in shortest round-trip form, so the loss is exact.
  nlohmann::ordered_json record;
  record["step"] = step;
  record["loss"] = loss;
  record["samples"] = samples;
  record["time_s"] = timeS;
  write(record);
}

void MetricsWriter::writeEvalAccuracy(double accuracy, int64_t samples) {
  write({{"eval_accuracy", accuracy}, {"eval_samples", samples}});
}

std::string formatDuration(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0)
    return "--";
  long long s = std::llround(seconds);
  char text[32];
  if (s >= 3600)
    std::snprintf(text, sizeof(text), "%lldh%02lldm", s / 3600, s / 60 % 60);
  else if (s >= 60)
    std::snprintf(text, sizeof(text), "%lldm%02llds", s / 60, s % 60);
  else
    std::snprintf(text, sizeof(text), "%llds", s);
  return text;
}

std::string formatProgress(const Progress &p) {
  char text[160];
  std::string steps = std::to_string(p.step);
  if (p.totalSteps > 0)
    steps += "/" + std::to_string(p.totalSteps);
  std::snprintf(text, sizeof(text), "step %s  loss %.4f  %.1f samples/s",
                steps.c_str(), p.loss, p.samplesPerSecond);
  std::string line = text;
  if (p.totalSteps > 0)
    line += "  ETA " + formatDuration(p.etaSeconds);
  return line;
}

ProgressMeter::ProgressMeter(int64_t totalSteps, int64_t samplesPerStep,
                             double startS)
    : totalSteps(totalSteps), samplesPerStep(samplesPerStep), startS(startS) {}

Progress ProgressMeter::update(int64_t step, double loss, double nowS) {
  Progress p;
  p.step = step;
  p.totalSteps = totalSteps;
  p.loss = loss;
  double secondsPerStep;
  if (firstStep < 0 || step <= firstStep) {
    // Only the first step seen (the first of a run, or of a resumed one) to
    // go on: it includes warm-up, but it is all there is.
    firstStep = step;
    firstStepEndS = nowS;
    secondsPerStep = nowS - startS;
  } else {
    secondsPerStep = (nowS - firstStepEndS) / double(step - firstStep);
  }
  p.samplesPerSecond =
      secondsPerStep > 0 ? double(samplesPerStep) / secondsPerStep : 0;
  p.etaSeconds = totalSteps > 0 && secondsPerStep > 0
                     ? double(totalSteps - step) * secondsPerStep
                     : (totalSteps > 0 && step >= totalSteps ? 0 : -1);
  return p;
}

} // namespace dpc::runtime
