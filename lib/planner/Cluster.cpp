//===- Cluster.cpp - Devices of different speed and memory ----------------===//

#include "dpc/planner/Cluster.h"

#include "dpc/support/Error.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdint>
#include <fstream>
#include <set>

namespace dpc::planner {

namespace {

using json = nlohmann::json;

/// The text of the value at `path` for a message.
std::string shown(const json &value) {
  std::string text = value.dump();
  return text.size() > 40 ? text.substr(0, 37) + "..." : text;
}

/// Refuses keys outside `known` (a misspelt "sped" would otherwise leave a
/// device at speed 1 without a word).
std::string unknownKey(const json &object, const std::string &path,
                       std::initializer_list<const char *> known) {
  for (auto it = object.begin(); it != object.end(); ++it) {
    bool found = false;
    for (const char *key : known)
      found |= it.key() == key;
    if (!found)
      return (path.empty() ? "" : path + ": ") + "unknown key \"" + it.key() +
             "\" (expected one of " +
             [&] {
               std::string list;
               for (const char *key : known)
                 list +=
                     (list.empty() ? "\"" : ", \"") + std::string(key) + "\"";
               return list;
             }() +
             ")";
  }
  return "";
}

/// A finite JSON number in [low, high] (low excluded when `open`), or an
/// error naming `path`.
std::string readNumber(const json &value, const std::string &path, double low,
                       double high, bool open, const char *what, double &out) {
  if (value.is_number()) {
    double v = value.get<double>();
    if (std::isfinite(v) && (open ? v > low : v >= low) && v <= high) {
      out = v;
      return "";
    }
  }
  return path + " must be " + what + ", got " + shown(value);
}

std::string readCount(const json &value, const std::string &path, int64_t high,
                      int64_t &out) {
  if (value.is_number_integer() && value.get<int64_t>() >= 1 &&
      value.get<int64_t>() <= high) {
    out = value.get<int64_t>();
    return "";
  }
  return path + " must be an integer from 1 to " + std::to_string(high) +
         ", got " + shown(value);
}

std::string readDevices(const json &list, std::vector<Device> &devices) {
  if (!list.is_array() || list.empty())
    return "\"devices\" must be a non-empty array of devices";
  std::set<std::string> names;
  for (size_t i = 0; i < list.size(); ++i) {
    const json &entry = list[i];
    std::string at = "devices[" + std::to_string(i) + "]";
    if (!entry.is_object())
      return at + " must be an object with a \"name\"";
    if (std::string bad = unknownKey(entry, at,
                                     {"name", "count", "speed", "slowdown",
                                      "memory_bytes", "description"});
        !bad.empty())
      return bad;
    if (!entry.contains("name") || !entry["name"].is_string() ||
        entry["name"].get<std::string>().empty())
      return at + ".name must be a non-empty string";
    Device device;
    device.name = entry["name"].get<std::string>();
    if (entry.contains("speed") && entry.contains("slowdown"))
      return at + " gives both \"speed\" and \"slowdown\" (speed = 1 / "
                  "slowdown): give one";
    if (entry.contains("speed")) {
      if (std::string bad = readNumber(
              entry["speed"], at + ".speed", kMinDeviceSpeed, kMaxDeviceSpeed,
              false, "a positive number from 1e-6 to 1e6", device.speed);
          !bad.empty())
        return bad;
    } else if (entry.contains("slowdown")) {
      double slowdown = 1;
      if (std::string bad =
              readNumber(entry["slowdown"], at + ".slowdown",
                         1 / kMaxDeviceSpeed, 1 / kMinDeviceSpeed, false,
                         "a positive number from 1e-6 to 1e6", slowdown);
          !bad.empty())
        return bad;
      device.speed = 1 / slowdown;
    }
    if (entry.contains("memory_bytes"))
      if (std::string bad = readNumber(
              entry["memory_bytes"], at + ".memory_bytes", 0, kMaxClusterValue,
              true, "a positive number of bytes up to 1e18",
              device.memoryBytes);
          !bad.empty())
        return bad;
    if (entry.contains("description") && !entry["description"].is_string())
      return at + ".description must be a string";
    int64_t count = 1;
    if (entry.contains("count"))
      if (std::string bad = readCount(entry["count"], at + ".count",
                                      kMaxClusterDevices, count);
          !bad.empty())
        return bad;
    if (devices.size() + size_t(count) > size_t(kMaxClusterDevices))
      return at + " brings the devices past " +
             std::to_string(kMaxClusterDevices) + ", the planner's limit";
    for (int64_t k = 0; k < count; ++k) {
      Device copy = device;
      if (entry.contains("count"))
        copy.name += "-" + std::to_string(k);
      if (!names.insert(copy.name).second)
        return at + " names device '" + copy.name + "' a second time";
      devices.push_back(std::move(copy));
    }
  }
  return "";
}

std::string readLevels(const json &doc, size_t devices, Topology &topology) {
  if (!doc.contains("levels")) {
    double bandwidth = 1e9;
    if (doc.contains("bandwidth"))
      if (std::string bad = readNumber(
              doc["bandwidth"], "bandwidth", 0, kMaxClusterValue, true,
              "a positive number of bytes per second up to 1e18", bandwidth);
          !bad.empty())
        return bad;
    topology = Topology::flat(static_cast<int>(devices), bandwidth);
    return "";
  }
  if (doc.contains("bandwidth"))
    return "give \"levels\" (a bandwidth each) or \"bandwidth\", not both";
  const json &list = doc["levels"];
  if (!list.is_array() || list.empty())
    return "\"levels\" must be a non-empty array of {\"size\", \"bandwidth\"}, "
           "innermost first";
  topology.levelSizes.clear();
  topology.bandwidths.clear();
  int64_t product = 1;
  for (size_t l = 0; l < list.size(); ++l) {
    const json &level = list[l];
    std::string at = "levels[" + std::to_string(l) + "]";
    if (!level.is_object())
      return at + " must be an object with \"size\" and \"bandwidth\"";
    if (std::string bad = unknownKey(level, at, {"size", "bandwidth"});
        !bad.empty())
      return bad;
    if (!level.contains("size") || !level.contains("bandwidth"))
      return at + " needs \"size\" and \"bandwidth\"";
    int64_t size = 1;
    double bandwidth = 0;
    if (std::string bad =
            readCount(level["size"], at + ".size", kMaxClusterDevices, size);
        !bad.empty())
      return bad;
    if (std::string bad = readNumber(
            level["bandwidth"], at + ".bandwidth", 0, kMaxClusterValue, true,
            "a positive number of bytes per second up to 1e18", bandwidth);
        !bad.empty())
      return bad;
    product *= size;
    if (product > kMaxClusterDevices)
      return "the sizes of \"levels\" multiply past " +
             std::to_string(kMaxClusterDevices) + " devices";
    topology.levelSizes.push_back(static_cast<int>(size));
    topology.bandwidths.push_back(bandwidth);
  }
  if (product != static_cast<int64_t>(devices))
    return "the sizes of \"levels\" multiply to " + std::to_string(product) +
           " devices but \"devices\" lists " + std::to_string(devices);
  return "";
}

} // namespace

Cluster parseCluster(const std::string &text, const std::string &source) {
  auto invalid = [&](const std::string &why) {
    return InputError(source + ": " + why);
  };
  json doc = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded())
    throw invalid("not valid JSON");
  if (!doc.is_object())
    throw invalid("expected an object with a \"devices\" array");
  if (std::string bad = unknownKey(doc, "",
                                   {"format", "version", "description",
                                    "devices", "levels", "bandwidth"});
      !bad.empty())
    throw invalid(bad);
  if (doc.contains("format") && doc["format"] != "dpc-cluster")
    throw invalid("format must be \"dpc-cluster\", got " +
                  shown(doc["format"]));
  if (doc.contains("version") && doc["version"] != 1)
    throw invalid("version must be 1, got " + shown(doc["version"]));
  if (doc.contains("description") && !doc["description"].is_string())
    throw invalid("description must be a string");
  if (!doc.contains("devices"))
    throw invalid("expected an object with a \"devices\" array");
  Cluster cluster;
  if (std::string bad = readDevices(doc["devices"], cluster.devices);
      !bad.empty())
    throw invalid(bad);
  if (std::string bad =
          readLevels(doc, cluster.devices.size(), cluster.topology);
      !bad.empty())
    throw invalid(bad);
  return cluster;
}

Cluster loadCluster(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw InputError("cannot read cluster '" + path + "'");
  // One byte past the limit is enough to refuse a device or an endless pipe.
  std::string text(kMaxClusterBytes + 1, '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  if (in.bad())
    throw InputError("cannot read cluster '" + path + "'");
  text.resize(static_cast<size_t>(in.gcount()));
  if (text.size() > kMaxClusterBytes)
    throw InputError(path + ": larger than " +
                     std::to_string(kMaxClusterBytes >> 20) +
                     " MiB, the most a cluster file may hold");
  return parseCluster(text, path);
}

} // namespace dpc::planner
