//===- Curves.cpp - dpc-schedule curves
//------------------------------------===//
//
// `dpc-schedule curves METRICS[,METRICS...] --svg FILE` draws the training
// curves of `dpc run --metrics` files, one series per file: the loss (with
// the validation losses of --eval-every as marks), the learning rate, the
// gradient norm before clipping, and the throughput in samples per second
// between consecutive steps.
//
//===----------------------------------------------------------------------===//

#include "dpc/support/CommandLine.h"
#include "dpc/support/LineChart.h"
#include "dpc/support/WriteFile.h"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

namespace cli = dpc::cli;
using dpc::support::ChartPanel;
using dpc::support::ChartSeries;

namespace {

/// One file's series, in the panels' order: loss, validation loss, learning
/// rate, gradient norm, throughput. "" or what is wrong with the file.
std::string readCurves(const std::string &path,
                       std::vector<ChartSeries> &series) {
  std::ifstream in(path);
  if (!in)
    return path + ": cannot read";
  std::string name = std::filesystem::path(path).filename().string();
  series.assign(5, ChartSeries{name, {}, false});
  series[1].name = name + " (validation)";
  series[1].dots = true;
  double lastSamples = -1, lastTime = 0;
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    if (line.empty())
      continue;
    nlohmann::json record = nlohmann::json::parse(line, nullptr, false);
    if (record.is_discarded() || !record.is_object())
      return path + ":" + std::to_string(number) + ": not a JSON object";
    auto value = [&](const char *key, double &out) {
      auto it = record.find(key);
      if (it == record.end() || !it->is_number())
        return false;
      out = it->get<double>();
      return true;
    };
    double step = 0, v = 0, samples = 0, time = 0;
    if (value("eval_step", step) && value("eval_loss", v))
      series[1].points.emplace_back(step, v);
    if (!value("step", step))
      continue;
    if (value("loss", v))
      series[0].points.emplace_back(step, v);
    if (value("lr", v))
      series[2].points.emplace_back(step, v);
    if (value("grad_norm", v))
      series[3].points.emplace_back(step, v);
    if (value("samples", samples) && value("time_s", time)) {
      if (lastSamples >= 0 && time > lastTime)
        series[4].points.emplace_back(step, (samples - lastSamples) /
                                                (time - lastTime));
      lastSamples = samples;
      lastTime = time;
    }
  }
  if (series[0].points.empty())
    return path + ": no step records with a loss";
  return "";
}

} // namespace

int runCurves(const std::vector<std::string> &args) {
  const std::string command = "dpc-schedule curves";
  cli::ArgParser parser(command,
                        "draw the training curves of dpc run --metrics files "
                        "as SVG: loss and validation loss, learning rate, "
                        "gradient norm, throughput",
                        "dpc-schedule curves METRICS[,METRICS...] --svg FILE");
  std::string files, svg, title = "training curves";
  parser.addPositional("metrics", &files,
                       "metrics files (JSON lines), comma-separated: one "
                       "series each");
  parser.addOption("svg", &svg, "FILE", "write the SVG picture here");
  parser.addOption("title", &title, "TEXT", "title of the picture");
  if (std::optional<int> exit = parser.parseOrExit(args))
    return *exit;
  if (files.empty() || svg.empty()) {
    std::cerr << command << ": missing "
              << (files.empty() ? "the metrics file" : "--svg FILE") << "\n";
    return cli::kUsageError;
  }
  std::vector<ChartPanel> panels = {
      {"loss", "steps", {}},
      {"learning rate", "steps", {}},
      {"gradient norm (before clipping)", "steps", {}},
      {"throughput, samples/s", "steps", {}}};
  std::stringstream list(files);
  size_t runs = 0, points = 0;
  for (std::string path; std::getline(list, path, ',');) {
    std::vector<ChartSeries> series;
    if (std::string error = readCurves(path, series); !error.empty()) {
      std::cerr << command << ": " << error << "\n";
      return 1;
    }
    ++runs;
    points += series[0].points.size();
    panels[0].series.push_back(series[0]);
    if (!series[1].points.empty())
      panels[0].series.push_back(series[1]);
    for (size_t k = 2; k < 5; ++k)
      panels[k - 1].series.push_back(series[k]);
  }
  dpc::support::writeAtomically(svg, dpc::support::lineChartSvg(title, panels));
  std::printf("drew %zu run%s, %zu steps, to %s\n", runs, runs == 1 ? "" : "s",
              points, svg.c_str());
  return 0;
}
