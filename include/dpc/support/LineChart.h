//===- LineChart.h - Line charts as SVG -------------------------*- C++ -*-===//
//
// Panels of line charts, stacked, as one SVG picture: each panel a title,
// axes with their ranges, and series of (x, y) points drawn as polylines
// (or, for a series with `dots`, as marks). What `dpc-schedule curves`
// draws a metrics file with. Plain C++.
//
//===----------------------------------------------------------------------===//

#ifndef DPC_SUPPORT_LINECHART_H
#define DPC_SUPPORT_LINECHART_H

#include <string>
#include <utility>
#include <vector>

namespace dpc::support {

struct ChartSeries {
  std::string name;
  std::vector<std::pair<double, double>> points;
  /// Marks at the points instead of a line (sparse series: evaluations).
  bool dots = false;
};

struct ChartPanel {
  std::string title, xLabel;
  std::vector<ChartSeries> series;
};

/// The panels stacked top to bottom under `title`; panels without points
/// are left out. Non-finite points are skipped.
std::string lineChartSvg(const std::string &title,
                         const std::vector<ChartPanel> &panels);

} // namespace dpc::support

#endif // DPC_SUPPORT_LINECHART_H
