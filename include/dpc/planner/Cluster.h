//===- Cluster.h - Devices of different speed and memory --------*- C++ -*-===//
//
// A cluster description (`dpc plan --cluster FILE`, `dpc compile --cluster
// FILE`): every device with its speed relative to the device the profile
// was measured on and its memory, and the interconnect as the planner's
// nested topology levels. docs/PLANNER.md gives the JSON schema; errors name
// the file and the JSON path of the bad value.
//
//===----------------------------------------------------------------------===//

#ifndef DPC_PLANNER_CLUSTER_H
#define DPC_PLANNER_CLUSTER_H

#include "dpc/planner/CostModel.h"

#include <cstddef>
#include <string>
#include <vector>

namespace dpc::planner {

struct Device {
  std::string name;
  /// Work per second relative to the profile's device: a stage's compute
  /// takes its profiled time divided by this.
  double speed = 1;
  /// Bytes a stage may use on the device; 0 for no limit.
  double memoryBytes = 0;
};

struct Cluster {
  /// In rank order: the topology's groups are contiguous runs of them.
  std::vector<Device> devices;
  Topology topology;
};

/// Bounds of the numbers a cluster file may hold. Speeds are relative, so a
/// factor of a million either way is a typo; sizes and bandwidths are bytes
/// and bytes per second, bounded like profile values.
constexpr double kMinDeviceSpeed = 1e-6;
constexpr double kMaxDeviceSpeed = 1e6;
constexpr double kMaxClusterValue = 1e18;
/// The planner's own limit on devices.
constexpr int kMaxClusterDevices = 4096;
/// The largest cluster file loadCluster reads.
constexpr size_t kMaxClusterBytes = size_t(1) << 20;

/// Parses a cluster description; `source` names it in messages. Throws
/// dpc::InputError when it is malformed.
Cluster parseCluster(const std::string &text, const std::string &source);

/// Reads and parses the cluster file at `path` (dpc::InputError when it
/// cannot be read).
Cluster loadCluster(const std::string &path);

} // namespace dpc::planner

#endif // DPC_PLANNER_CLUSTER_H
