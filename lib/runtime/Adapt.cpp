//===- Adapt.cpp - dpc run --adapt: re-partitioning a running job ---------===//
//
// The launcher's side of a re-partition (include/dpc/runtime/Adapt.h): the
// ranks' request, the compile record, the devices' speeds and the cluster
// file the re-plan compiles with, and where the test options that name a
// rank go in the new layout.
//
//===----------------------------------------------------------------------===//

#include "dpc/runtime/Adapt.h"

#include "dpc/runtime/Error.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>

namespace dpc::runtime {

namespace {

/// The JSON object at `path`.
nlohmann::json readJsonObject(const std::string &path) {
  std::ifstream in(path);
  if (!in)
    throw Error(path + ": " + std::strerror(errno));
  nlohmann::json doc =
      nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_object())
    throw Error(path + ": not a JSON object");
  return doc;
}

} // namespace

AdaptRequest readAdaptRequest(const std::string &path) {
  nlohmann::json doc = readJsonObject(path);
  AdaptRequest request;
  try {
    request.decidedAfter = doc.at("decided_after").get<int64_t>();
    request.rank = doc.at("rank").get<int>();
    request.stage = doc.at("stage").get<int>();
    request.slowdown = doc.at("slowdown").get<double>();
    request.sinceStep = doc.at("since_step").get<int64_t>();
    request.slowdowns = doc.at("slowdowns").get<std::vector<double>>();
  } catch (const nlohmann::json::exception &e) {
    throw Error(path + ": not a re-partition request: " + e.what());
  }
  if (request.decidedAfter < 1 || request.slowdowns.empty() ||
      request.rank < 0 || size_t(request.rank) >= request.slowdowns.size())
    throw Error(path + ": not a re-partition request");
  return request;
}

AdaptStop readAdaptStop(const std::string &path) {
  nlohmann::json doc = readJsonObject(path);
  AdaptStop stop;
  try {
    stop.stoppedAfter = doc.at("stopped_after").get<int64_t>();
    stop.stoppedAtS = doc.at("stopped_at_s").get<double>();
  } catch (const nlohmann::json::exception &e) {
    throw Error(path + ": not a re-partition stop: " + e.what());
  }
  if (stop.stoppedAfter < 1)
    throw Error(path + ": not a re-partition stop");
  return stop;
}

CompileRecord readCompileRecord(const std::string &path) {
  nlohmann::json doc = readJsonObject(path);
  CompileRecord record;
  try {
    record.model = doc.at("model").get<std::string>();
    record.directory = doc.at("directory").get<std::string>();
    record.options = doc.at("options").get<std::vector<std::string>>();
  } catch (const nlohmann::json::exception &e) {
    throw Error(path + ": not dpc compile's record: " + e.what());
  }
  return record;
}

ReplanOptions replanOptions(const std::vector<std::string> &recorded) {
  ReplanOptions replan;
  for (size_t i = 0; i < recorded.size(); ++i) {
    const std::string &a = recorded[i];
    std::string name = a.substr(0, a.find('='));
    bool inlineValue = name.size() < a.size();
    std::string value = inlineValue               ? a.substr(name.size() + 1)
                        : i + 1 < recorded.size() ? recorded[i + 1]
                                                  : "";
    if (name == "--cluster" || name == "--replicas")
      throw Error("--adapt re-plans builds of --stages or --devices, not of " +
                  name + " (yet)");
    if (name != "--devices" && name != "--bandwidth") {
      replan.kept.push_back(a);
      continue;
    }
    if (!inlineValue)
      ++i;
    char *end = nullptr;
    double number = std::strtod(value.c_str(), &end);
    if (value.empty() || *end != '\0' || !(number > 0))
      throw Error("--adapt: the build's " + name + " '" + value +
                  "' is not one flat level (a hierarchical build cannot be "
                  "re-planned yet)");
    if (name == "--bandwidth")
      replan.bandwidth = number;
  }
  return replan;
}

std::vector<double> slowedSpeeds(std::vector<double> speeds,
                                 const std::vector<int> &rankDevices,
                                 const std::vector<double> &slowdowns) {
  for (size_t k = 0; k < rankDevices.size() && k < slowdowns.size(); ++k) {
    int d = rankDevices[k];
    if (d >= 0 && size_t(d) < speeds.size() && slowdowns[k] > 0)
      speeds[size_t(d)] /= slowdowns[k];
  }
  double fastest = *std::max_element(speeds.begin(), speeds.end());
  for (double &s : speeds)
    s = std::clamp(s / fastest, 1e-6, 1.0);
  return speeds;
}

std::string adaptClusterJson(const std::vector<double> &speeds,
                             double bandwidth) {
  nlohmann::ordered_json devices = nlohmann::ordered_json::array();
  for (size_t d = 0; d < speeds.size(); ++d)
    devices.push_back({{"name", "slot" + std::to_string(d)},
                       {"speed", speeds[d]},
                       {"description", "the slot of the first launch's rank " +
                                           std::to_string(d)}});
  // An innermost level of one device a group pins every device to its rank:
  // the planner then keeps the file's order and moves only the cuts. A
  // rank's cores, and whatever else runs on them, stay where they are when
  // the ranks are launched again; a plan that put another rank on a slow
  // slot would not make it faster.
  nlohmann::ordered_json cluster = {
      {"format", "dpc-cluster"},
      {"version", 1},
      {"description", "dpc run --adapt: the devices at their measured speeds, "
                      "each on its rank"},
      {"devices", std::move(devices)},
      {"levels",
       {{{"size", 1}, {"bandwidth", bandwidth}},
        {{"size", speeds.size()}, {"bandwidth", bandwidth}}}}};
  return cluster.dump(2) + "\n";
}

std::vector<int> readRankDevices(const std::string &planPath) {
  nlohmann::json plan = readJsonObject(planPath);
  std::vector<int> rankDevices;
  const nlohmann::json *names = nullptr;
  if (plan.contains("cluster") && plan["cluster"].is_object() &&
      plan["cluster"].contains("rank_devices"))
    names = &plan["cluster"]["rank_devices"];
  if (!names || !names->is_array())
    throw Error(planPath +
                ": no cluster.rank_devices (not planned on a cluster)");
  for (const nlohmann::json &name : *names) {
    int device = -1;
    char tail = 0;
    if (!name.is_string() ||
        std::sscanf(name.get<std::string>().c_str(), "slot%d%c", &device,
                    &tail) != 1 ||
        device < 0)
      throw Error(planPath + ": cluster.rank_devices names a device that is "
                             "not dpc run --adapt's slotN");
    rankDevices.push_back(device);
  }
  return rankDevices;
}

std::string onDevicesRank(const std::string &rankStepValue,
                          const std::vector<int> &rankDevices) {
  size_t colon = rankStepValue.find(':');
  if (colon == std::string::npos)
    return "";
  int device = std::atoi(rankStepValue.substr(0, colon).c_str());
  for (size_t k = 0; k < rankDevices.size(); ++k)
    if (rankDevices[k] == device)
      return std::to_string(k) + rankStepValue.substr(colon);
  return "";
}

} // namespace dpc::runtime
