//===- LineChart.cpp - Line charts as SVG ---------------------------------===//

#include "dpc/support/LineChart.h"
#include "dpc/support/Svg.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

namespace dpc::support {
namespace {

constexpr double kWidth = 720, kPanelHeight = 220, kLeft = 70, kRight = 150,
                 kTop = 40, kGap = 50;
const char *const kColours[] = {"#1f77b4", "#d62728", "#2ca02c", "#9467bd",
                                "#ff7f0e"};

std::string number(double v) {
  char text[32];
  std::snprintf(text, sizeof text, "%.4g", v);
  return text;
}

struct Range {
  double lo = std::numeric_limits<double>::infinity();
  double hi = -std::numeric_limits<double>::infinity();
  void add(double v) {
    lo = std::min(lo, v);
    hi = std::max(hi, v);
  }
  bool empty() const { return lo > hi; }
  double at(double v, double from, double to) const {
    double span = hi > lo ? hi - lo : 1;
    return from + (v - lo) / span * (to - from);
  }
};

bool finite(const std::pair<double, double> &p) {
  return std::isfinite(p.first) && std::isfinite(p.second);
}

/// One panel with its top at `top`.
std::string panelSvg(const ChartPanel &panel, double top) {
  Range x, y;
  for (const ChartSeries &s : panel.series)
    for (const auto &p : s.points)
      if (finite(p)) {
        x.add(p.first);
        y.add(p.second);
      }
  double left = kLeft, right = kWidth - kRight, bottom = top + kPanelHeight;
  std::string out = "<g>\n<text x=\"" + number(left) + "\" y=\"" +
                    number(top - 8) + "\" font-weight=\"bold\">" +
                    svgEscaped(panel.title) + "</text>\n";
  out += "<rect x=\"" + number(left) + "\" y=\"" + number(top) + "\" width=\"" +
         number(right - left) + "\" height=\"" + number(kPanelHeight) +
         "\" fill=\"none\" stroke=\"#999\"/>\n";
  // The ranges at the corners.
  out += "<text x=\"" + number(left - 6) + "\" y=\"" + number(top + 10) +
         "\" text-anchor=\"end\">" + number(y.hi) + "</text>\n";
  out += "<text x=\"" + number(left - 6) + "\" y=\"" + number(bottom) +
         "\" text-anchor=\"end\">" + number(y.lo) + "</text>\n";
  out += "<text x=\"" + number(left) + "\" y=\"" + number(bottom + 16) + "\">" +
         number(x.lo) + "</text>\n";
  out += "<text x=\"" + number(right) + "\" y=\"" + number(bottom + 16) +
         "\" text-anchor=\"end\">" + number(x.hi) + " " +
         svgEscaped(panel.xLabel) + "</text>\n";
  for (size_t k = 0; k < panel.series.size(); ++k) {
    const ChartSeries &s = panel.series[k];
    const char *colour = kColours[k % 5];
    std::string points;
    size_t drawn = 0;
    for (const auto &p : s.points) {
      if (!finite(p))
        continue;
      double px = x.at(p.first, left, right), py = y.at(p.second, bottom, top);
      if (s.dots)
        out += "<circle cx=\"" + number(px) + "\" cy=\"" + number(py) +
               "\" r=\"3\" fill=\"" + colour + "\"/>\n";
      else
        points += (drawn ? " " : "") + number(px) + "," + number(py);
      ++drawn;
    }
    if (!s.dots && drawn)
      out += "<polyline fill=\"none\" stroke=\"" + std::string(colour) +
             "\" points=\"" + points + "\"><title>" + svgEscaped(s.name) +
             " (" + std::to_string(drawn) + " points)</title></polyline>\n";
    out += "<text x=\"" + number(right + 8) + "\" y=\"" +
           number(top + 16 + 16 * double(k)) + "\" fill=\"" + colour + "\">" +
           svgEscaped(s.name) + "</text>\n";
  }
  return out + "</g>\n";
}

bool hasPoints(const ChartPanel &panel) {
  for (const ChartSeries &s : panel.series)
    for (const auto &p : s.points)
      if (finite(p))
        return true;
  return false;
}

} // namespace

std::string lineChartSvg(const std::string &title,
                         const std::vector<ChartPanel> &panels) {
  std::vector<const ChartPanel *> drawn;
  for (const ChartPanel &p : panels)
    if (hasPoints(p))
      drawn.push_back(&p);
  double height = kTop + double(drawn.size()) * (kPanelHeight + kGap) + 10;
  std::string out = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" +
                    number(kWidth) + "\" height=\"" + number(height) +
                    "\" font-family=\"sans-serif\" font-size=\"12\">\n"
                    "<text x=\"10\" y=\"18\" font-size=\"14\">" +
                    svgEscaped(title) + "</text>\n";
  for (size_t i = 0; i < drawn.size(); ++i)
    out += panelSvg(*drawn[i], kTop + 20 + double(i) * (kPanelHeight + kGap));
  return out + "</svg>\n";
}

} // namespace dpc::support
