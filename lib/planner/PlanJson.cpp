//===- PlanJson.cpp - plan.json -------------------------------------------===//

#include "dpc/planner/PlanJson.h"

#include "dpc/support/Error.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <iterator>

namespace dpc::planner {

nlohmann::ordered_json planToJson(const Graph &graph, const PlanResult &result,
                                  const PlannerOptions &options) {
  using json = nlohmann::ordered_json;
  const Topology &topo = options.cost.topology;
  const Evaluation &eval = result.evaluation;
  int devices = topo.devices();
  std::vector<char> busy(devices, 0);

  // On a cluster: the device at each rank.
  const bool onDevices =
      !options.devices.empty() && result.rankDevices.size() == size_t(devices);
  auto deviceAt = [&](int rank) -> const Device & {
    return options.devices[result.rankDevices[rank]];
  };

  json stages = json::array();
  for (size_t s = 0; s < result.plan.stages.size(); ++s) {
    const StagePlan &st = result.plan.stages[s];
    const StageCost &cost = eval.stages[s];
    json ranks = json::array(), nodes = json::array();
    for (int r = st.firstRank; r < st.firstRank + st.replicas; ++r) {
      ranks.push_back(r);
      busy[r] = 1;
    }
    for (NodeId v : st.nodes)
      nodes.push_back(graph.node(v).name);
    json stage = {
        {"id", s},
        {"ranks", std::move(ranks)},
        {"replicas", st.replicas},
    };
    if (onDevices) {
      // The stage runs at its slowest replica's speed and must fit its
      // smallest memory.
      json names = json::array();
      double speed = deviceAt(st.firstRank).speed, memory = 0;
      for (int r = st.firstRank; r < st.firstRank + st.replicas; ++r) {
        const Device &d = deviceAt(r);
        names.push_back(d.name);
        speed = std::min(speed, d.speed);
        if (d.memoryBytes > 0)
          memory = memory > 0 ? std::min(memory, d.memoryBytes) : d.memoryBytes;
      }
      stage["devices"] = std::move(names);
      stage["speed"] = speed;
      if (memory > 0)
        stage["device_memory_bytes"] = memory;
    }
    stage["nodes"] = std::move(nodes);
    stage["compute_ms"] = cost.computeSeconds * 1e3;
    stage["transfer_ms"] = std::max(cost.recvSeconds, cost.sendSeconds) * 1e3;
    stage["recv_ms"] = cost.recvSeconds * 1e3;
    stage["send_ms"] = cost.sendSeconds * 1e3;
    stage["time_ms"] = cost.time() * 1e3;
    stage["cut_bytes_out"] = s < eval.cutBytes.size() ? eval.cutBytes[s] : 0.0;
    stage["in_flight"] = cost.inFlight;
    stage["memory_bytes"] = cost.memoryBytes;
    stages.push_back(std::move(stage));
  }
  json idle = json::array();
  for (int r = 0; r < devices; ++r)
    if (!busy[r])
      idle.push_back(r);

  json topology = {{"levels", topo.levelSizes},
                   {"bandwidths", topo.bandwidths}};
  // Keys in DESIGN.md's order first, then the planner's own.
  json doc = {
      {"devices", devices},
      {"schedule",
       {{"kind", scheduleName(options.cost.schedule)},
        {"microbatches", options.cost.microbatches}}},
      {"stages", std::move(stages)},
      {"idle_devices", idle.size()},
      {"idle_ranks", std::move(idle)},
      {"predicted",
       {{"bottleneck_ms", eval.bottleneckSeconds * 1e3},
        {"step_ms", eval.stepSeconds * 1e3},
        {"bubble_fraction", eval.bubbleFraction},
        {"throughput_per_s",
         eval.bottleneckSeconds > 0 ? 1.0 / eval.bottleneckSeconds : 0.0},
        {"peak_memory_bytes", eval.peakMemoryBytes}}},
      {"objective", objectiveName(options.objective)},
      {"straight", options.straight},
      {"topology", std::move(topology)},
      {"search",
       {{"orders_tried", result.ordersTried},
        {"exhaustive", result.exhaustive}}},
  };
  if (options.memoryLimitBytes > 0)
    doc["memory_limit_bytes"] = options.memoryLimitBytes;
  if (onDevices) {
    doc["search"]["device_orders_tried"] = result.deviceOrdersTried;
    doc["search"]["all_device_orders"] = result.allDeviceOrders;
    json names = json::array();
    for (int r = 0; r < devices; ++r)
      names.push_back(deviceAt(r).name);
    doc["cluster"] = {{"rank_devices", std::move(names)}};
  }
  return doc;
}

namespace {

// Parses plan.json's text; throws when it is not a JSON object. nlohmann's
// parser refuses invalid UTF-8, so what it accepts dumps again.
nlohmann::ordered_json parsePlan(const std::string &text,
                                 const std::string &name) {
  nlohmann::ordered_json plan =
      nlohmann::ordered_json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (plan.is_discarded() || !plan.is_object())
    throw Error(name + ": not a JSON object");
  return plan;
}

} // namespace

PlanSummary readPlanSummary(const std::string &text, const std::string &name) {
  nlohmann::ordered_json plan = parsePlan(text, name);
  PlanSummary summary;
  if (plan.contains("devices")) {
    const auto &devices = plan["devices"];
    bool valid = devices.is_number_unsigned()
                     ? devices.get<uint64_t>() >= 1 &&
                           devices.get<uint64_t>() <= INT32_MAX
                     : devices.is_number_integer() &&
                           devices.get<int64_t>() >= 1 &&
                           devices.get<int64_t>() <= INT32_MAX;
    if (!valid)
      throw Error(
          name + ": \"devices\" must be an integer from 1 to 2147483647, got " +
          devices.dump());
    summary.devices = devices.get<int64_t>();
  }
  if (plan.contains("predicted") && plan["predicted"].is_object() &&
      plan["predicted"].contains("simulated_step_ms")) {
    const auto &step = plan["predicted"]["simulated_step_ms"];
    if (!step.is_number() || !std::isfinite(step.get<double>()) ||
        step.get<double>() < 0)
      throw Error(name +
                  ": \"predicted.simulated_step_ms\" must be a finite number "
                  ">= 0, got " +
                  step.dump());
    summary.simulatedStepMs = step.get<double>();
  }
  if (plan.contains("memory_limit_bytes")) {
    const auto &limit = plan["memory_limit_bytes"];
    if (!limit.is_number() || !std::isfinite(limit.get<double>()) ||
        limit.get<double>() < 0)
      throw Error(name +
                  ": \"memory_limit_bytes\" must be a finite number >= 0, "
                  "got " +
                  limit.dump());
    summary.memoryLimitBytes = limit.get<double>();
  }
  if (plan.contains("stages") && plan["stages"].is_array())
    for (const auto &stage : plan["stages"]) {
      if (!stage.is_object() || !stage.contains("planned_peak_bytes") ||
          !stage.contains("ranks"))
        continue;
      const auto &peak = stage["planned_peak_bytes"];
      const auto &ranks = stage["ranks"];
      if (!peak.is_number_integer() || !ranks.is_array())
        continue;
      for (const auto &rank : ranks) {
        if (!rank.is_number_integer() || rank.get<int64_t>() < 0 ||
            rank.get<int64_t>() > INT32_MAX)
          throw Error(name +
                      ": a stage's \"ranks\" must hold rank numbers, got " +
                      ranks.dump());
        size_t r = size_t(rank.get<int64_t>());
        if (summary.plannedPeakBytes.size() <= r)
          summary.plannedPeakBytes.resize(r + 1, 0);
        summary.plannedPeakBytes[r] = peak.get<int64_t>();
      }
    }
  return summary;
}

PlanSummary loadPlanSummary(const std::string &path, std::string &text) {
  std::ifstream in(path);
  text.assign(std::istreambuf_iterator<char>(in),
              std::istreambuf_iterator<char>());
  return readPlanSummary(text, path);
}

std::string setPlanKey(const std::string &text, const std::string &name,
                       const std::string &key,
                       const nlohmann::ordered_json &value) {
  (void)readPlanSummary(text, name); // throws when plan.json is not valid
  nlohmann::ordered_json plan = parsePlan(text, name);
  plan[key] = value;
  return plan.dump(2) + "\n";
}

} // namespace dpc::planner
