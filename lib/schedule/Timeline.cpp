//===- Timeline.cpp - Chrome traces and SVG pictures of timelines ---------===//

#include "dpc/schedule/Timeline.h"

#include "dpc/support/Error.h"
#include "dpc/support/Svg.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <map>
#include <sstream>
#include <tuple>

namespace dpc::schedule {

const char *eventKindName(EventKind kind) {
  switch (kind) {
  case EventKind::Forward:
    return "forward";
  case EventKind::Backward:
    return "backward";
  case EventKind::BackwardInput:
    return "backward-input";
  case EventKind::BackwardWeight:
    return "backward-weight";
  case EventKind::Optimizer:
    return "optimizer";
  case EventKind::AllReduce:
    return "allreduce";
  case EventKind::Load:
    return "load";
  case EventKind::Send:
    return "send";
  case EventKind::Recv:
    return "recv";
  case EventKind::Other:
    break;
  }
  return "other";
}

EventKind parseEventKind(const std::string &name) {
  for (EventKind kind :
       {EventKind::Forward, EventKind::Backward, EventKind::BackwardInput,
        EventKind::BackwardWeight, EventKind::Optimizer, EventKind::AllReduce,
        EventKind::Load, EventKind::Send, EventKind::Recv})
    if (name == eventKindName(kind))
      return kind;
  return EventKind::Other;
}

std::string eventName(EventKind kind, int mb, int chunk, bool showChunk,
                      const std::string &payload) {
  std::string id = std::to_string(mb);
  if (showChunk)
    id += "." + std::to_string(chunk);
  switch (kind) {
  case EventKind::Forward:
    return "F" + id;
  case EventKind::Backward:
  case EventKind::BackwardInput:
    return "B" + id;
  case EventKind::BackwardWeight:
    return "W" + id;
  case EventKind::Optimizer:
    return "opt";
  case EventKind::AllReduce:
    return "allreduce";
  case EventKind::Load:
    return "load " + id;
  case EventKind::Send:
    return "send " + payload + " mb" + id;
  case EventKind::Recv:
    return "recv " + payload + " mb" + id;
  case EventKind::Other:
    break;
  }
  return "?";
}

std::string toChromeTrace(const Timeline &timeline) {
  using nlohmann::json;
  json events = json::array();
  int ranks = timeline.ranks;
  for (const TimelineEvent &ev : timeline.events)
    ranks = std::max(ranks, ev.rank + 1);
  for (int r = 0; r < ranks; ++r) {
    events.push_back({{"name", "process_name"},
                      {"ph", "M"},
                      {"pid", r},
                      {"args", {{"name", "rank " + std::to_string(r)}}}});
    events.push_back({{"name", "process_sort_index"},
                      {"ph", "M"},
                      {"pid", r},
                      {"args", {{"sort_index", r}}}});
    events.push_back({{"name", "thread_name"},
                      {"ph", "M"},
                      {"pid", r},
                      {"tid", 0},
                      {"args", {{"name", "compute"}}}});
    events.push_back({{"name", "thread_name"},
                      {"ph", "M"},
                      {"pid", r},
                      {"tid", 1},
                      {"args", {{"name", "transfers"}}}});
  }
  for (const TimelineEvent &ev : timeline.events) {
    bool transfer = ev.kind == EventKind::Send || ev.kind == EventKind::Recv;
    json args = json::object();
    if (ev.mb >= 0)
      args["mb"] = ev.mb;
    if (ev.chunk >= 0)
      args["chunk"] = ev.chunk;
    events.push_back({{"name", ev.name},
                      {"cat", eventKindName(ev.kind)},
                      {"ph", "X"},
                      {"pid", ev.rank},
                      {"tid", transfer ? 1 : 0},
                      {"ts", ev.start * 1000.0},
                      {"dur", (ev.end - ev.start) * 1000.0},
                      {"args", std::move(args)}});
  }
  json root;
  root["traceEvents"] = std::move(events);
  root["displayTimeUnit"] = "ms";
  return root.dump();
}

namespace {

/// fromChromeTrace's reading into `timeline`; "" or what is wrong.
std::string parseChromeTrace(const std::string &text, Timeline &timeline) {
  using nlohmann::json;
  json root = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (root.is_discarded())
    return "not JSON";
  // Chrome reads both the object form and a bare array of events.
  const json *events = &root;
  if (root.is_object()) {
    if (!root.contains("traceEvents"))
      return "no \"traceEvents\" (not a Chrome trace)";
    events = &root["traceEvents"];
  }
  if (!events->is_array())
    return "\"traceEvents\" must be an array";
  Timeline result;
  for (size_t i = 0; i < events->size(); ++i) {
    const json &ev = (*events)[i];
    std::string at = "event " + std::to_string(i) + ": ";
    if (!ev.is_object())
      return at + "not an object";
    bool span = ev.value("ph", "") == "X";
    bool hasRank = ev.contains("pid") && ev["pid"].is_number_integer() &&
                   ev["pid"].get<int64_t>() >= 0;
    // A rank's name (metadata) counts it even when it has no spans.
    if (hasRank)
      result.ranks = std::max(result.ranks, ev["pid"].get<int>() + 1);
    if (!span)
      continue;
    if (!hasRank)
      return at + "a span needs a non-negative integer \"pid\" (the rank)";
    for (const char *key : {"ts", "dur"})
      if (!ev.contains(key) || !ev[key].is_number())
        return at + "a span needs a numeric \"" + key + "\"";
    TimelineEvent out;
    out.rank = ev["pid"].get<int>();
    out.name = ev.contains("name") && ev["name"].is_string()
                   ? ev["name"].get<std::string>()
                   : "";
    out.kind = parseEventKind(ev.contains("cat") && ev["cat"].is_string()
                                  ? ev["cat"].get<std::string>()
                                  : "");
    out.start = ev["ts"].get<double>() / 1000.0;
    out.end = out.start + ev["dur"].get<double>() / 1000.0;
    if (ev.contains("args") && ev["args"].is_object()) {
      const json &args = ev["args"];
      if (args.contains("mb") && args["mb"].is_number_integer())
        out.mb = args["mb"].get<int>();
      if (args.contains("chunk") && args["chunk"].is_number_integer())
        out.chunk = args["chunk"].get<int>();
    }
    result.ranks = std::max(result.ranks, out.rank + 1);
    result.events.push_back(std::move(out));
  }
  timeline = std::move(result);
  return "";
}

} // namespace

Timeline fromChromeTrace(const std::string &text) {
  Timeline timeline;
  if (std::string error = parseChromeTrace(text, timeline); !error.empty())
    throw Error(error);
  return timeline;
}

Timeline readChromeTraceFile(const std::string &path) {
  std::ifstream in(path);
  if (!in)
    throw Error("cannot open '" + path + "'");
  std::stringstream buffer;
  buffer << in.rdbuf();
  Timeline timeline;
  if (std::string error = parseChromeTrace(buffer.str(), timeline);
      !error.empty())
    throw Error(path + ": " + error);
  return timeline;
}

namespace {

/// The ends of each rank's optimizer spans, in order.
std::vector<std::vector<double>> optimizerEnds(const Timeline &timeline) {
  int ranks = timeline.ranks;
  for (const TimelineEvent &ev : timeline.events)
    ranks = std::max(ranks, ev.rank + 1);
  std::vector<std::vector<double>> ends(ranks);
  for (const TimelineEvent &ev : timeline.events)
    if (ev.kind == EventKind::Optimizer)
      ends[ev.rank].push_back(ev.end);
  for (std::vector<double> &e : ends)
    std::sort(e.begin(), e.end());
  return ends;
}

} // namespace

int countSteps(const Timeline &timeline) {
  int steps = -1;
  for (const std::vector<double> &ends : optimizerEnds(timeline))
    if (!ends.empty())
      steps = steps < 0 ? int(ends.size()) : std::min(steps, int(ends.size()));
  return steps < 0 ? 1 : steps;
}

namespace {

/// The times messageLatency averages, in increasing order.
std::vector<double> waitedMessages(const Timeline &measured) {
  // Per rank, its compute spans in order of start.
  std::vector<std::vector<std::pair<double, double>>> compute(
      size_t(std::max(measured.ranks, 0)));
  // The sends and receives of each (sender, receiver, payload, microbatch),
  // in order.
  std::map<std::tuple<int, int, std::string, int>,
           std::pair<std::vector<const TimelineEvent *>,
                     std::vector<const TimelineEvent *>>>
      messages;
  std::vector<const TimelineEvent *> events;
  for (const TimelineEvent &ev : measured.events)
    events.push_back(&ev);
  std::stable_sort(events.begin(), events.end(),
                   [](auto *a, auto *b) { return a->start < b->start; });
  for (const TimelineEvent *ev : events) {
    if (ev->rank < 0 || ev->rank >= measured.ranks)
      continue;
    if (ev->kind != EventKind::Send && ev->kind != EventKind::Recv) {
      if (ev->kind != EventKind::Other)
        compute[ev->rank].push_back({ev->start, ev->end});
      continue;
    }
    // "send act mb3": the payload is the second word.
    std::istringstream words(ev->name);
    std::string verb, payload;
    words >> verb >> payload;
    bool forward = payload == "act";
    bool sending = ev->kind == EventKind::Send;
    int peer = ev->rank + ((forward == sending) ? 1 : -1);
    int from = sending ? ev->rank : peer, to = sending ? peer : ev->rank;
    auto &pair = messages[{from, to, payload, ev->mb}];
    (sending ? pair.first : pair.second).push_back(ev);
  }
  // Whether `rank` computed during (begin, end).
  auto computed = [&](int rank, double begin, double end) {
    const auto &spans = compute[rank];
    auto it =
        std::lower_bound(spans.begin(), spans.end(), std::make_pair(end, end));
    // Spans of one rank do not overlap: the last one to start before `end`
    // ends the latest.
    return it != spans.begin() && std::prev(it)->second > begin;
  };
  std::vector<double> latencies;
  for (const auto &[key, pair] : messages) {
    const auto &[sends, receives] = pair;
    for (size_t k = 1; k < std::min(sends.size(), receives.size()); ++k) {
      const TimelineEvent &send = *sends[k], &receive = *receives[k];
      double begin = std::max(send.start, receive.start);
      if (receive.end < begin || computed(receive.rank, begin, receive.end))
        continue;
      latencies.push_back(receive.end - begin);
    }
  }
  std::sort(latencies.begin(), latencies.end());
  return latencies;
}

/// The mean of the first `kept` of `values`; -1 for none.
double meanOfFirst(const std::vector<double> &values, size_t kept) {
  if (kept == 0)
    return -1;
  double sum = 0;
  for (size_t i = 0; i < kept; ++i)
    sum += values[i];
  return sum / double(kept);
}

} // namespace

double messageLatency(const Timeline &measured) {
  std::vector<double> latencies = waitedMessages(measured);
  return meanOfFirst(latencies, latencies.size() - latencies.size() / 20);
}

double wakeLatency(const Timeline &measured) {
  std::vector<double> latencies = waitedMessages(measured);
  return meanOfFirst(latencies, latencies.size());
}

EventKind eventKindOf(Op op) {
  switch (op) {
  case Op::Forward:
    return EventKind::Forward;
  case Op::Backward:
    return EventKind::Backward;
  case Op::BackwardInput:
    return EventKind::BackwardInput;
  case Op::BackwardWeight:
    return EventKind::BackwardWeight;
  case Op::OptimizerStep:
    return EventKind::Optimizer;
  case Op::AllReduce:
    return EventKind::AllReduce;
  case Op::LoadMicrobatch:
    return EventKind::Load;
  default:
    return EventKind::Other;
  }
}

double computeFactor(const Timeline &measured, const Schedule &priced) {
  std::vector<std::vector<double>> ends = optimizerEnds(measured);
  int steps = countSteps(measured);
  // Per step: the spans and the costs of its computes, on every rank.
  std::vector<double> spans(size_t(steps), 0.0), costs(size_t(steps), 0.0);
  const Op computes[] = {Op::Forward, Op::Backward, Op::BackwardInput,
                         Op::BackwardWeight};
  for (const TimelineEvent &ev : measured.events) {
    const Op *op =
        std::find_if(std::begin(computes), std::end(computes),
                     [&](Op o) { return eventKindOf(o) == ev.kind; });
    if (op == std::end(computes))
      continue;
    if (ev.rank < 0 || ev.rank >= priced.ranks)
      continue;
    int stage = priced.virtualStage(ev.rank, std::max(ev.chunk, 0));
    if (stage < 0 || stage >= int(priced.stages.size()))
      continue;
    const std::vector<double> &rankEnds = ends[size_t(ev.rank)];
    size_t step =
        size_t(std::upper_bound(rankEnds.begin(), rankEnds.end(), ev.start) -
               rankEnds.begin());
    if (step >= size_t(steps))
      continue;
    spans[step] += ev.end - ev.start;
    costs[step] += priced.stages[size_t(stage)].computeMs(*op);
  }
  // The median step after the first: a step another process preempted
  // moves it little.
  std::vector<double> ratios;
  for (size_t step = 1; step < spans.size(); ++step)
    if (costs[step] > 0)
      ratios.push_back(spans[step] / costs[step]);
  if (ratios.empty())
    return -1;
  std::nth_element(ratios.begin(), ratios.begin() + ratios.size() / 2,
                   ratios.end());
  return ratios[ratios.size() / 2];
}

Timeline selectSteps(const Timeline &timeline, int first, int last) {
  std::vector<std::vector<double>> ends = optimizerEnds(timeline);
  Timeline window;
  window.ranks = int(ends.size());
  double origin = 0;
  for (const TimelineEvent &ev : timeline.events) {
    // A span belongs to the step after the optimizer spans that ended by its
    // start; on a rank without any, to step 1.
    const std::vector<double> &rankEnds = ends[ev.rank];
    int step =
        1 + int(std::upper_bound(rankEnds.begin(), rankEnds.end(), ev.start) -
                rankEnds.begin());
    if (step < first || step > last ||
        (!rankEnds.empty() && step > int(rankEnds.size())))
      continue;
    origin = window.events.empty() ? ev.start : std::min(origin, ev.start);
    window.events.push_back(ev);
  }
  for (TimelineEvent &ev : window.events) {
    ev.start -= origin;
    ev.end -= origin;
  }
  return window;
}

namespace {

/// Colour per kind; later chunks of interleaved get lighter shades so that
/// the virtual stages stay apart.
std::string fillColor(EventKind kind, int chunk) {
  struct Rgb {
    int r, g, b;
  };
  Rgb base{200, 200, 200};
  switch (kind) {
  case EventKind::Forward:
    base = {78, 121, 167};
    break;
  case EventKind::Backward:
  case EventKind::BackwardInput:
    base = {89, 161, 79};
    break;
  case EventKind::BackwardWeight:
    base = {242, 142, 43};
    break;
  case EventKind::Optimizer:
    base = {156, 117, 95};
    break;
  case EventKind::AllReduce:
    base = {176, 122, 161};
    break;
  case EventKind::Send:
  case EventKind::Recv:
    base = {186, 176, 172};
    break;
  default:
    break;
  }
  double lighten = std::min(std::max(chunk, 0), 3) * 0.22;
  auto mix = [&](int c) {
    return static_cast<int>(std::lround(c + (255 - c) * lighten));
  };
  char buf[16];
  std::snprintf(buf, sizeof(buf), "#%02x%02x%02x", mix(base.r), mix(base.g),
                mix(base.b));
  return buf;
}

} // namespace

std::string toSvg(const Timeline &timeline, const SvgOptions &options) {
  int ranks = timeline.ranks;
  double endTime = 0;
  for (const TimelineEvent &ev : timeline.events) {
    ranks = std::max(ranks, ev.rank + 1);
    endTime = std::max(endTime, ev.end);
  }
  if (endTime <= 0)
    endTime = 1;
  const double left = 64, top = options.title.empty() ? 10 : 34, right = 16;
  double scale = options.scale > 0 ? options.scale : 1200.0 / endTime;
  double plotWidth = endTime * scale;
  int row = options.rowHeight;
  int rowsPerRank = options.showTransfers ? 2 : 1;
  double rankHeight = row * rowsPerRank + 6;
  double height = top + ranks * rankHeight + 48;
  double width = left + plotWidth + right;

  std::ostringstream os;
  os.setf(std::ios::fixed);
  os.precision(2);
  os << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << width
     << "\" height=\"" << height << "\" viewBox=\"0 0 " << width << ' '
     << height << "\" font-family=\"sans-serif\">\n";
  os << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  if (!options.title.empty())
    os << "<text x=\"" << left << "\" y=\"22\" font-size=\"15\">"
       << support::svgEscaped(options.title) << "</text>\n";
  for (int r = 0; r < ranks; ++r) {
    double y = top + r * rankHeight;
    os << "<text x=\"" << left - 8 << "\" y=\"" << y + row * 0.68
       << "\" font-size=\"12\" text-anchor=\"end\">rank " << r << "</text>\n";
    os << "<rect x=\"" << left << "\" y=\"" << y << "\" width=\"" << plotWidth
       << "\" height=\"" << row << "\" fill=\"#f4f4f4\"/>\n";
  }
  for (const TimelineEvent &ev : timeline.events) {
    bool transfer = ev.kind == EventKind::Send || ev.kind == EventKind::Recv;
    if (transfer && !options.showTransfers)
      continue;
    double x = left + ev.start * scale;
    double w = std::max((ev.end - ev.start) * scale, 0.5);
    double y = top + ev.rank * rankHeight + (transfer ? row : 0);
    double h = transfer ? row * 0.8 : row;
    os << "<rect x=\"" << x << "\" y=\"" << y << "\" width=\"" << w
       << "\" height=\"" << h << "\" fill=\"" << fillColor(ev.kind, ev.chunk)
       << "\" stroke=\"white\" stroke-width=\"0.6\"><title>"
       << support::svgEscaped(ev.name) << " [" << ev.start << ", " << ev.end
       << "] ms</title></rect>\n";
    // The microbatch id where it fits; the kind is in the colour.
    std::string label = ev.mb >= 0 ? std::to_string(ev.mb) : "";
    if (ev.kind == EventKind::Optimizer)
      label = "opt";
    double fontSize = std::min(row * 0.5, 12.0);
    if (!transfer && !label.empty() && w >= fontSize * 0.62 * label.size() + 2)
      os << "<text x=\"" << x + w / 2 << "\" y=\""
         << y + h / 2 + fontSize * 0.35 << "\" font-size=\"" << fontSize
         << "\" text-anchor=\"middle\" fill=\"white\">" << label << "</text>\n";
  }
  // Time axis with about ten ticks at round values.
  double axisY = top + ranks * rankHeight + 4;
  os << "<line x1=\"" << left << "\" y1=\"" << axisY << "\" x2=\""
     << left + plotWidth << "\" y2=\"" << axisY
     << "\" stroke=\"#444\" stroke-width=\"1\"/>\n";
  double raw = endTime / 10;
  double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
  double tick = magnitude;
  for (double f : {1.0, 2.0, 5.0, 10.0})
    if (raw <= f * magnitude) {
      tick = f * magnitude;
      break;
    }
  for (double t = 0; t <= endTime + 1e-9; t += tick) {
    double x = left + t * scale;
    os << "<line x1=\"" << x << "\" y1=\"" << axisY << "\" x2=\"" << x
       << "\" y2=\"" << axisY + 4 << "\" stroke=\"#444\"/>\n";
    os << "<text x=\"" << x << "\" y=\"" << axisY + 16
       << "\" font-size=\"10\" text-anchor=\"middle\">" << t << "</text>\n";
  }
  os << "<text x=\"" << left + plotWidth << "\" y=\"" << axisY + 30
     << "\" font-size=\"10\" text-anchor=\"end\">ms</text>\n";
  // Legend.
  struct Entry {
    EventKind kind;
    const char *label;
  };
  const Entry legend[] = {{EventKind::Forward, "forward"},
                          {EventKind::Backward, "backward (B)"},
                          {EventKind::BackwardWeight, "weight grad (W)"},
                          {EventKind::Optimizer, "optimizer"}};
  double lx = left;
  for (const Entry &e : legend) {
    os << "<rect x=\"" << lx << "\" y=\"" << axisY + 22
       << "\" width=\"10\" height=\"10\" fill=\"" << fillColor(e.kind, 0)
       << "\"/>\n<text x=\"" << lx + 14 << "\" y=\"" << axisY + 31
       << "\" font-size=\"10\">" << e.label << "</text>\n";
    lx += 110;
  }
  os << "</svg>\n";
  return os.str();
}

} // namespace dpc::schedule
