//===- TimelineTest.cpp - Chrome trace and SVG writers --------------------===//

#include "dpc/schedule/Timeline.h"
#include "dpc/schedule/Builder.h"
#include "dpc/schedule/Simulator.h"

#include <nlohmann/json.hpp>

#include <gtest/gtest.h>

using namespace dpc::schedule;

namespace {

// What the runtime will hand over: measured spans, no simulator involved.
Timeline measured() {
  Timeline tl;
  tl.ranks = 2;
  tl.events.push_back({0, EventKind::Forward, "F3", 1.0, 2.5, 3, 0});
  tl.events.push_back({0, EventKind::Send, "send act mb3", 2.5, 2.75, 3, 0});
  tl.events.push_back({1, EventKind::BackwardWeight, "W3", 4.0, 5.0, 3, 1});
  tl.events.push_back({1, EventKind::Optimizer, "opt", 5.0, 5.5, -1, -1});
  return tl;
}

} // namespace

TEST(Timeline, ChromeTrace) {
  auto trace = nlohmann::json::parse(toChromeTrace(measured()));
  ASSERT_TRUE(trace.contains("traceEvents"));
  int spans = 0, names = 0;
  for (const auto &ev : trace["traceEvents"]) {
    if (ev["ph"] == "M" && ev["name"] == "process_name")
      ++names;
    if (ev["ph"] != "X")
      continue;
    ++spans;
    if (ev["name"] == "F3") {
      EXPECT_EQ(ev["pid"], 0);
      EXPECT_EQ(ev["tid"], 0);
      EXPECT_EQ(ev["ts"], 1000.0); // microseconds
      EXPECT_EQ(ev["dur"], 1500.0);
      EXPECT_EQ(ev["args"]["mb"], 3);
      EXPECT_EQ(ev["args"]["chunk"], 0);
      EXPECT_EQ(ev["cat"], "forward");
    } else if (ev["name"] == "send act mb3") {
      EXPECT_EQ(ev["tid"], 1); // transfers on their own thread
    } else if (ev["name"] == "opt") {
      EXPECT_FALSE(ev["args"].contains("mb"));
    }
  }
  EXPECT_EQ(spans, 4);
  EXPECT_EQ(names, 2);
}

TEST(Timeline, EventNames) {
  EXPECT_EQ(eventName(EventKind::Forward, 3, 0, false), "F3");
  EXPECT_EQ(eventName(EventKind::BackwardInput, 3, 0, false), "B3");
  EXPECT_EQ(eventName(EventKind::BackwardWeight, 3, 1, true), "W3.1");
  EXPECT_EQ(eventName(EventKind::Recv, 3, 0, false, "grad"), "recv grad mb3");
  EXPECT_EQ(eventName(EventKind::Optimizer, -1, 0, false), "opt");
}

TEST(Timeline, Svg) {
  std::string svg = toSvg(measured(), {0, 28, true, "measured"});
  EXPECT_EQ(svg.rfind("<svg", 0), 0u);
  EXPECT_NE(svg.find("</svg>"), std::string::npos);
  EXPECT_NE(svg.find(">rank 1</text>"), std::string::npos);
  EXPECT_NE(svg.find(">measured</text>"), std::string::npos);
  EXPECT_NE(svg.find("<title>F3 [1.00, 2.50] ms</title>"), std::string::npos);
}

TEST(Timeline, SvgOfSimulatedSchedule) {
  BuildOptions o;
  o.kind = ScheduleKind::Interleaved;
  o.stages = 4;
  o.microbatches = 8;
  o.virtualStages = 2;
  Schedule s;
  ASSERT_EQ(buildSchedule(o, s), "");
  SimulateResult r;
  ASSERT_EQ(simulateSchedule(s, {}, r), "");
  std::string svg = toSvg(r.timeline);
  size_t boxes = 0;
  for (size_t pos = 0; (pos = svg.find("<title>", pos)) != std::string::npos;
       ++pos)
    ++boxes;
  EXPECT_EQ(boxes, 4u * 8 * 2 * 2); // F and B per rank, mb and chunk
}
