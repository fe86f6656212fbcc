//===- Adapt.cpp - dpc run --adapt: re-partitioning a running job ---------===//
//
// The launcher's side of a re-partition (include/dpc/runtime/Adapt.h): the
// ranks' request, the compile record, the devices' speeds and the cluster
// file the re-plan compiles with, and where the test options that name a
// rank go in the new layout.
//
//===----------------------------------------------------------------------===//

#include "dpc/runtime/Adapt.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>

namespace dpc::runtime {

namespace {

/// Parses the JSON object at `path` into `doc`; "" or what is wrong.
std::string readJsonObject(const std::string &path, nlohmann::json &doc) {
  std::ifstream in(path);
  if (!in)
    return path + ": " + std::strerror(errno);
  doc = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_object())
    return path + ": not a JSON object";
  return "";
}

} // namespace

std::string readAdaptRequest(const std::string &path, AdaptRequest &request) {
  nlohmann::json doc;
  if (std::string problem = readJsonObject(path, doc); !problem.empty())
    return problem;
  try {
    request.decidedAfter = doc.at("decided_after").get<int64_t>();
    request.rank = doc.at("rank").get<int>();
    request.stage = doc.at("stage").get<int>();
    request.slowdown = doc.at("slowdown").get<double>();
    request.sinceStep = doc.at("since_step").get<int64_t>();
    request.slowdowns = doc.at("slowdowns").get<std::vector<double>>();
  } catch (const nlohmann::json::exception &e) {
    return path + ": not a re-partition request: " + e.what();
  }
  if (request.decidedAfter < 1 || request.slowdowns.empty() ||
      request.rank < 0 || size_t(request.rank) >= request.slowdowns.size())
    return path + ": not a re-partition request";
  return "";
}

std::string readAdaptStop(const std::string &path, AdaptStop &stop) {
  nlohmann::json doc;
  if (std::string problem = readJsonObject(path, doc); !problem.empty())
    return problem;
  try {
    stop.stoppedAfter = doc.at("stopped_after").get<int64_t>();
    stop.stoppedAtS = doc.at("stopped_at_s").get<double>();
  } catch (const nlohmann::json::exception &e) {
    return path + ": not a re-partition stop: " + e.what();
  }
  if (stop.stoppedAfter < 1)
    return path + ": not a re-partition stop";
  return "";
}

std::string readCompileRecord(const std::string &path, CompileRecord &record) {
  nlohmann::json doc;
  if (std::string problem = readJsonObject(path, doc); !problem.empty())
    return problem;
  try {
    record.model = doc.at("model").get<std::string>();
    record.directory = doc.at("directory").get<std::string>();
    record.options = doc.at("options").get<std::vector<std::string>>();
  } catch (const nlohmann::json::exception &e) {
    return path + ": not dpc compile's record: " + e.what();
  }
  return "";
}

std::string replanOptions(const std::vector<std::string> &recorded,
                          std::vector<std::string> &kept, double &bandwidth) {
  bandwidth = 1e9;
  kept.clear();
  for (size_t i = 0; i < recorded.size(); ++i) {
    const std::string &a = recorded[i];
    std::string name = a.substr(0, a.find('='));
    bool inlineValue = name.size() < a.size();
    std::string value = inlineValue               ? a.substr(name.size() + 1)
                        : i + 1 < recorded.size() ? recorded[i + 1]
                                                  : "";
    if (name == "--cluster" || name == "--replicas")
      return "--adapt re-plans builds of --stages or --devices, not of " +
             name + " (yet)";
    if (name != "--devices" && name != "--bandwidth") {
      kept.push_back(a);
      continue;
    }
    if (!inlineValue)
      ++i;
    char *end = nullptr;
    double number = std::strtod(value.c_str(), &end);
    if (value.empty() || *end != '\0' || !(number > 0))
      return "--adapt: the build's " + name + " '" + value +
             "' is not one flat level (a hierarchical build cannot be "
             "re-planned yet)";
    if (name == "--bandwidth")
      bandwidth = number;
  }
  return "";
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

std::string readRankDevices(const std::string &planPath,
                            std::vector<int> &rankDevices) {
  nlohmann::json plan;
  if (std::string problem = readJsonObject(planPath, plan); !problem.empty())
    return problem;
  rankDevices.clear();
  const nlohmann::json *names = nullptr;
  if (plan.contains("cluster") && plan["cluster"].is_object() &&
      plan["cluster"].contains("rank_devices"))
    names = &plan["cluster"]["rank_devices"];
  if (!names || !names->is_array())
    return planPath + ": no cluster.rank_devices (not planned on a cluster)";
  for (const nlohmann::json &name : *names) {
    int device = -1;
    char tail = 0;
    if (!name.is_string() ||
        std::sscanf(name.get<std::string>().c_str(), "slot%d%c", &device,
                    &tail) != 1 ||
        device < 0)
      return planPath + ": cluster.rank_devices names a device that is not "
                        "dpc run --adapt's slotN";
    rankDevices.push_back(device);
  }
  return "";
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
