//===- Adapt.h - dpc run --adapt: re-partitioning a running job -*- C++ -*-===//
//
// `dpc run --adapt` re-partitions a job whose stage stays slower than the
// plan (docs/RUNTIME.md, "Re-partitioning"). The ranks decide when
// (StepMonitor.h's AdaptTrigger on the last stage) and write the request read
// here; while they train on, the launcher plans again on a cluster whose
// devices run at the measured speeds and compiles the model again with the
// options `dpc compile` recorded in OUT/compile.json. Once that build is
// ready the ranks stop together at a step boundary with a checkpoint
// (parameters and optimizer state under their model names), and the
// launcher starts the new rank executables resuming from it at the next
// step.
//
// These are the launcher's pieces, plain C++ for the unit tests
// (test/unittests/runtime/AdaptTest.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef DPC_RUNTIME_ADAPT_H
#define DPC_RUNTIME_ADAPT_H

#include <cstdint>
#include <string>
#include <vector>

namespace dpc::runtime {

/// What the last stage writes when its trigger decides (RankMain): the ranks
/// then train on in their layout while the launcher compiles the next one.
struct AdaptRequest {
  /// The step (from 1) after which the trigger decided.
  int64_t decidedAfter = 0;
  /// The rank it fired for, its stage, its slowdown and since when.
  int rank = 0, stage = 0;
  double slowdown = 1;
  int64_t sinceStep = 0;
  /// Every rank's slowdown against the calibrated plan.
  std::vector<double> slowdowns;
};
/// Reads it; throws an Error naming the file when it cannot.
AdaptRequest readAdaptRequest(const std::string &path);

/// What the last stage writes when the ranks stop for the re-partition, once
/// the launcher has said the new layout is ready (adaptReadyPath).
struct AdaptStop {
  /// The last step run (from 1); the checkpoint is of it.
  int64_t stoppedAfter = 0;
  /// When the ranks decided to stop, in seconds since the epoch (the start of
  /// the downtime).
  double stoppedAtS = 0;
};
/// Reads it; throws an Error naming the file when it cannot.
AdaptStop readAdaptStop(const std::string &path);

/// The files beside the request (OUT.adapt/request.json): the launcher
/// creates "ready" once the new layout is compiled, and the last stage
/// writes "stopped.json" when the ranks stop for it. Inline: the rank main,
/// which does not link the launcher, names them too.
inline std::string besideAdaptRequest(const std::string &requestPath,
                                      const char *name) {
  size_t slash = requestPath.rfind('/');
  return (slash == std::string::npos ? std::string()
                                     : requestPath.substr(0, slash + 1)) +
         name;
}
inline std::string adaptReadyPath(const std::string &requestPath) {
  return besideAdaptRequest(requestPath, "ready");
}
inline std::string adaptStopPath(const std::string &requestPath) {
  return besideAdaptRequest(requestPath, "stopped.json");
}

/// OUT/compile.json, which `dpc compile` writes.
struct CompileRecord {
  /// The model as an absolute path, and the directory the options' relative
  /// paths were given from.
  std::string model, directory;
  /// The options, less MODEL and -o.
  std::vector<std::string> options;
};
/// Reads it; throws an Error naming the file when it cannot.
CompileRecord readCompileRecord(const std::string &path);

/// The recorded options a re-plan compiles with: --devices and --bandwidth
/// go into the cluster file, the rest is kept.
struct ReplanOptions {
  std::vector<std::string> kept;
  /// --bandwidth's value, else 1e9.
  double bandwidth = 1e9;
};
/// Splits the recorded options; throws an Error saying why the build cannot
/// be re-planned this way (a --cluster, --replicas, or hierarchical
/// --devices build).
ReplanOptions replanOptions(const std::vector<std::string> &recorded);

/// The devices' speeds after a re-partition: `speeds[d]` is device d's (the
/// first launch's rank d, the slot it ran on) before, `rankDevices[k]` the
/// device of rank k in the layout that stopped and `slowdowns[k]` that
/// rank's measured slowdown. The monitor calibrates each layout on its first
/// window, so a slowdown is relative to the speeds that layout was planned
/// for: each device's speed is divided by it, and all are scaled so that the
/// fastest is 1.
std::vector<double> slowedSpeeds(std::vector<double> speeds,
                                 const std::vector<int> &rankDevices,
                                 const std::vector<double> &slowdowns);

/// The cluster file of a re-plan (docs/PLANNER.md's schema): device d named
/// "slotD" at `speeds[d]`, every link at `bandwidth`, and the devices pinned
/// to their ranks (groups of one device inside one group of all), so that
/// the planner moves the cuts and keeps device d on rank d.
std::string adaptClusterJson(const std::vector<double> &speeds,
                             double bandwidth);

/// The device of every rank of the plan at `planPath` (its
/// cluster.rank_devices, "slotD" -> D); throws an Error naming the file when
/// it has none.
std::vector<int> readRankDevices(const std::string &planPath);

/// A RANK:FROM_STEP:VALUE option (--interfere, --test-forward-delay), whose
/// RANK names a device (the first launch's rank), for the layout whose ranks
/// run `rankDevices`: RANK becomes the rank that runs that device. "" when
/// none does.
std::string onDevicesRank(const std::string &rankStepValue,
                          const std::vector<int> &rankDevices);

} // namespace dpc::runtime

#endif // DPC_RUNTIME_ADAPT_H
