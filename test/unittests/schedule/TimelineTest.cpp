//===- TimelineTest.cpp - Chrome trace and SVG writers --------------------===//

#include "dpc/schedule/Timeline.h"
#include "dpc/schedule/Builder.h"
#include "dpc/schedule/Simulator.h"
#include "test/unittests/schedule/ScheduleErrorOf.h"

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
  ASSERT_EQ(buildError(o, s), "");
  SimulateResult r;
  ASSERT_EQ(simulateError(s, {}, r), "");
  std::string svg = toSvg(r.timeline);
  size_t boxes = 0;
  for (size_t pos = 0; (pos = svg.find("<title>", pos)) != std::string::npos;
       ++pos)
    ++boxes;
  EXPECT_EQ(boxes, 4u * 8 * 2 * 2); // F and B per rank, mb and chunk
}

TEST(Timeline, ChromeTraceReadsBack) {
  Timeline back;
  ASSERT_EQ(traceError(toChromeTrace(measured()), back), "");
  EXPECT_EQ(back.ranks, 2);
  ASSERT_EQ(back.events.size(), 4u);
  const TimelineEvent &w = back.events[2];
  EXPECT_EQ(w.rank, 1);
  EXPECT_EQ(w.kind, EventKind::BackwardWeight);
  EXPECT_EQ(w.name, "W3");
  EXPECT_DOUBLE_EQ(w.start, 4.0);
  EXPECT_DOUBLE_EQ(w.end, 5.0);
  EXPECT_EQ(w.mb, 3);
  EXPECT_EQ(w.chunk, 1);
  EXPECT_EQ(back.events[3].mb, -1); // opt carries no microbatch
  EXPECT_EQ(back.events[1].kind, EventKind::Send);
}

TEST(Timeline, ChromeTraceErrors) {
  Timeline tl;
  EXPECT_EQ(traceError("{", tl), "not JSON");
  EXPECT_EQ(traceError("{\"ranks\": 2}", tl),
            "no \"traceEvents\" (not a Chrome trace)");
  EXPECT_EQ(traceError("[{\"ph\":\"X\",\"pid\":0,\"ts\":1}]", tl),
            "event 0: a span needs a numeric \"dur\"");
  EXPECT_EQ(traceError("[{\"ph\":\"X\",\"pid\":-1,\"ts\":1,\"dur\":1}]", tl),
            "event 0: a span needs a non-negative integer \"pid\" (the rank)");
  // The bare array form, an unknown category, metadata only counting ranks.
  ASSERT_EQ(traceError("[{\"ph\":\"M\",\"pid\":2},{\"ph\":\"X\",\"pid\":0,"
                       "\"ts\":1000,\"dur\":500,\"cat\":\"gc\"}]",
                       tl),
            "");
  EXPECT_EQ(tl.ranks, 3);
  ASSERT_EQ(tl.events.size(), 1u);
  EXPECT_EQ(tl.events[0].kind, EventKind::Other);
  EXPECT_DOUBLE_EQ(tl.events[0].end, 1.5);
  EXPECT_EQ(parseEventKind("backward-weight"), EventKind::BackwardWeight);
}

namespace {

// Three measured steps on two ranks; each rank's optimizer span ends its
// step, rank 1 a little before rank 0. Evaluation runs after the last.
Timeline threeSteps() {
  Timeline tl;
  tl.ranks = 2;
  for (int step = 0; step < 3; ++step) {
    double t = 10.0 * step;
    tl.events.push_back({0, EventKind::Forward, "F0", t, t + 2, 0, 0});
    double posted = step ? t - 1 : 0; // right after rank 1's optimizer
    tl.events.push_back(
        {1, EventKind::Recv, "recv act mb0", posted, t + 3, 0, 0});
    tl.events.push_back({1, EventKind::Forward, "F0", t + 3, t + 4, 0, 0});
    tl.events.push_back({1, EventKind::Optimizer, "opt", t + 7, t + 8, -1, 0});
    tl.events.push_back({0, EventKind::Backward, "B0", t + 6, t + 9, 0, 0});
    tl.events.push_back({0, EventKind::Optimizer, "opt", t + 9, t + 10, -1, 0});
  }
  tl.events.push_back({0, EventKind::Forward, "F0", 31, 32, 0, 0});
  return tl;
}

} // namespace

TEST(Timeline, Steps) {
  Timeline tl = threeSteps();
  EXPECT_EQ(countSteps(tl), 3);
  Timeline two = selectSteps(tl, 2, 2);
  EXPECT_EQ(two.ranks, 2);
  ASSERT_EQ(two.events.size(), 6u);
  // Rank 1's receive starts before rank 0's optimizer of step 1 ends, but
  // after rank 1's own: it belongs to step 2, and the window starts with it.
  EXPECT_EQ(two.events[1].name, "recv act mb0");
  EXPECT_DOUBLE_EQ(two.events[1].start, 0);
  EXPECT_DOUBLE_EQ(two.events[0].start, 1); // rank 0's F0 at 10 ms
  for (const TimelineEvent &ev : two.events)
    EXPECT_LE(ev.end, 11.0) << ev.name;
  Timeline last = selectSteps(tl, 2, 3);
  EXPECT_EQ(last.events.size(), 12u); // not the evaluation's F0 after step 3
  EXPECT_EQ(selectSteps(tl, 4, 4).events.size(), 0u);

  // A prediction with a free optimizer has no optimizer spans: one step.
  Timeline predicted;
  predicted.events.push_back({0, EventKind::Forward, "F0", 1, 2, 0, 0});
  EXPECT_EQ(countSteps(predicted), 1);
  ASSERT_EQ(selectSteps(predicted, 1, 1).events.size(), 1u);
  EXPECT_DOUBLE_EQ(selectSteps(predicted, 1, 1).events[0].start, 0);
}

// A message's latency runs from the later of its send's and receive's start
// to the receive's end, over messages the receiver only waited for; the
// first of each payload and microbatch is warm-up.
TEST(Timeline, MessageLatency) {
  Timeline tl;
  tl.ranks = 2;
  auto add = [&](int rank, EventKind kind, const std::string &name,
                 double start, double end, int mb) {
    tl.events.push_back({rank, kind, name, start, end, mb, 0});
  };
  for (int step = 0; step < 3; ++step) {
    double t = 10.0 * step;
    // Rank 1 waits from t + 0.5 for an activation sent at t + 1: 0.25 ms.
    add(0, EventKind::Forward, "F0", t, t + 1, 0);
    add(0, EventKind::Send, "send act mb0", t + 1, t + 1.5, 0);
    add(1, EventKind::Recv, "recv act mb0", t + 0.5, t + 1.25, 0);
    add(1, EventKind::Forward, "F0", t + 1.25, t + 2, 0);
    // The gradient back: rank 0 posted its receive at t + 3, after the send
    // at t + 2.5: 0.5 ms from t + 3.
    add(1, EventKind::Backward, "B0", t + 2, t + 2.5, 0);
    add(1, EventKind::Send, "send grad mb0", t + 2.5, t + 2.75, 0);
    add(0, EventKind::Recv, "recv grad mb0", t + 3, t + 3.5, 0);
    // Rank 0 computes while this one arrives: not timed.
    add(0, EventKind::Forward, "F1", t + 3.5, t + 5, 1);
    add(0, EventKind::Send, "send act mb1", t + 5, t + 5.25, 1);
    add(1, EventKind::Recv, "recv act mb1", t + 4, t + 6, 1);
    add(1, EventKind::Load, "load mb1", t + 5.5, t + 5.75, 1);
  }
  // Two steps after warm-up, two messages each: 0.25 and 0.5.
  EXPECT_DOUBLE_EQ(messageLatency(tl), 0.375);

  // Without a message the receiver only waited for, none.
  Timeline busy;
  busy.ranks = 2;
  for (const TimelineEvent &ev : tl.events)
    if (ev.name == "send act mb1" || ev.name == "recv act mb1" ||
        ev.name == "load mb1")
      busy.events.push_back(ev);
  EXPECT_EQ(messageLatency(busy), -1);
  EXPECT_EQ(wakeLatency(busy), -1);
}

// The wake-up latency is the mean over the same messages, the slowest
// included: on shared cores they are the sleeping receivers that waited
// for a core.
TEST(Timeline, WakeLatencyKeepsTheSlowest) {
  Timeline tl;
  tl.ranks = 2;
  for (int step = 0; step < 21; ++step) {
    double t = 10.0 * step, took = step == 7 ? 2.25 : 0.25;
    tl.events.push_back({0, EventKind::Forward, "F0", t, t + 1, 0, 0});
    tl.events.push_back(
        {0, EventKind::Send, "send act mb0", t + 1, t + 1.1, 0, 0});
    tl.events.push_back(
        {1, EventKind::Recv, "recv act mb0", t + 0.5, t + 1 + took, 0, 0});
  }
  // 20 messages after warm-up: messageLatency leaves out the slowest.
  EXPECT_DOUBLE_EQ(messageLatency(tl), 0.25);
  EXPECT_DOUBLE_EQ(wakeLatency(tl), (19 * 0.25 + 2.25) / 20);
}

// Two ranks of a 1F1B schedule that compute 1.5x its costs after a slow
// first step: the first step is left out, transfers and the optimizer do
// not count.
TEST(Timeline, ComputeFactorComparesSpansWithTheScheduleCosts) {
  BuildOptions o;
  o.kind = ScheduleKind::OneFOneB;
  o.stages = 2;
  o.microbatches = 2;
  StageInfo info;
  info.forward = 1.0;
  info.backwardInput = 1.0;
  info.backwardWeight = 2.0;
  o.stageInfo = {info};
  Schedule priced;
  ASSERT_EQ(buildError(o, priced), "");

  Timeline tl;
  tl.ranks = 2;
  for (int step = 0; step < 3; ++step) {
    double stretch = step == 0 ? 3.0 : 1.5, t = 100.0 * step;
    for (int rank = 0; rank < 2; ++rank) {
      double at = t;
      for (int mb = 0; mb < 2; ++mb) {
        tl.events.push_back(
            {rank, EventKind::Forward, "F", at, at + 1.0 * stretch, mb, 0});
        at += 1.0 * stretch;
        tl.events.push_back({rank, EventKind::Recv, "recv", at, at + 7, mb, 0});
      }
      for (int mb = 0; mb < 2; ++mb) {
        tl.events.push_back(
            {rank, EventKind::Backward, "B", at, at + 3.0 * stretch, mb, 0});
        at += 3.0 * stretch;
      }
      tl.events.push_back(
          {rank, EventKind::Optimizer, "opt", at, at + 9, -1, -1});
    }
  }
  EXPECT_DOUBLE_EQ(computeFactor(tl, priced), 1.5);

  // A fourth step preempted to 10x is one step of three: the median stays.
  size_t before = tl.events.size();
  for (size_t i = 0; i < before; ++i) {
    TimelineEvent ev = tl.events[i];
    if (ev.start < 200.0)
      continue;
    double span = ev.end - ev.start;
    ev.start += 200.0;
    ev.end = ev.start + 10.0 * span;
    tl.events.push_back(ev);
  }
  EXPECT_DOUBLE_EQ(computeFactor(tl, priced), 1.5);

  // Without a step after the first, nothing is priced.
  Timeline first = selectSteps(tl, 1, 1);
  EXPECT_EQ(computeFactor(first, priced), -1);
}
