//===- Profile.h - Reading and writing planner profiles ---------*- C++ -*-===//
//
// Two formats fill a planner::Graph. PipeDream's graph.txt (node lines
// `nodeN -- desc -- forward_compute_time=F, backward_compute_time=B,
// activation_size=A, parameter_size=P`, edge lines `\tnodeA -- nodeB`) so that
// the published profiles plan unchanged, and dpc's own profile.json (see
// docs/PLANNER.md), which `dpc profile` writes and which holds the same data
// with explicit units. A profile that cannot be read or is malformed throws
// dpc::InputError naming the file and line.
//
//===----------------------------------------------------------------------===//

#ifndef DPC_PLANNER_PROFILE_H
#define DPC_PLANNER_PROFILE_H

#include "dpc/planner/Graph.h"

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace dpc::planner {

/// Parses a PipeDream graph.txt. `source` names the input in messages.
Graph parsePipeDreamProfile(const std::string &text, const std::string &source);

/// Parses dpc's profile.json.
Graph parseJsonProfile(const std::string &text, const std::string &source);

/// Measured milliseconds of one model node per microbatch.
struct NodeTimes {
  double forwardMs = 0;
  double backwardMs = 0;
};

/// The times of every measured node of a token model at one microbatch
/// shape: `batch` sequences of `length` tokens (`dpc profile --seq-buckets`
/// measures one per shape bucket).
struct MeasuredShape {
  int64_t batch = 0;
  int64_t length = 0;
  std::map<std::string, NodeTimes> nodes;
};

/// Milliseconds a message between pipeline stages took, by the number of
/// ranks of the job it was measured in (`dpc profile --message-ranks`).
using MessageLatencies = std::map<int, double>;

/// The sections of profile.json that hold MessageLatencies: the latency of
/// a message ("message_latency_ms"), and for ranks that shared the
/// profiling machine's cores how long a rank waiting for one took to
/// resume ("wake_latency_ms", SimulateOptions::wakeLatency).
inline constexpr const char *kMessageLatencySection = "message_latency_ms";
inline constexpr const char *kWakeLatencySection = "wake_latency_ms";
/// The same table of factors: how long ranks with a core each computed in
/// the profile's run on that many stages against the profile's times
/// (schedule::computeFactor), which apply-profile charges a job of as many
/// ranks ("compute_factor").
inline constexpr const char *kComputeFactorSection = "compute_factor";

/// What a profile.json holds besides the graph (`dpc profile` measures it).
struct ProfileSections {
  /// The times of a token model at each measured shape ("shapes").
  std::vector<MeasuredShape> shapes;
  /// Message and wake-up latencies, and compute factors, by rank count, in
  /// their sections.
  MessageLatencies messages, wakes, computeFactors;
  /// The precision of the build that was timed ("precision": "bf16"; empty
  /// or "fp32", written as nothing, for an f32 build).
  std::string precision;
};

/// Serialises `graph` as profile.json (round-trips through parseJsonProfile),
/// with each of `sections` that is not empty ({"2": ms, ...} for the
/// latencies).
std::string writeJsonProfile(const Graph &graph,
                             const ProfileSections &sections = {});

/// The "precision" of a profile.json: "bf16", or "fp32" when it has none.
std::string parseProfilePrecision(const std::string &text,
                                  const std::string &source);
std::string loadProfilePrecision(const std::string &path);

/// A section of latencies of a profile.json: empty when it has none.
MessageLatencies
parseMessageLatencies(const std::string &text, const std::string &source,
                      const char *section = kMessageLatencySection);
MessageLatencies
loadMessageLatencies(const std::string &path,
                     const char *section = kMessageLatencySection);

/// The latency to charge a job of `ranks` ranks: the one measured with the
/// most ranks not above `ranks`, else with the fewest; 0 when none was.
double messageLatencyFor(const MessageLatencies &messages, int ranks);

/// The "shapes" of a profile.json: empty when it has none (a graph.txt or a
/// profile of one shape). Errors name the shape and node index.
std::vector<MeasuredShape> parseProfileShapes(const std::string &text,
                                              const std::string &source);

/// The largest profile loadProfile reads: 64 MiB, some 400,000 graph.txt
/// nodes (the published profiles are under 40 KiB). A bound, so that a
/// device or a pipe given as the profile fails instead of filling memory.
constexpr size_t kMaxProfileBytes = size_t(64) << 20;

/// Reads `path` and picks the format from its content: JSON when the first
/// non-blank character is '{', graph.txt otherwise. Numbers are decimal
/// (no hex, inf or nan) from 0 to 1e18.
Graph loadProfile(const std::string &path);

/// The measured shapes of the profile at `path` (see parseProfileShapes).
std::vector<MeasuredShape> loadProfileShapes(const std::string &path);

/// Node times at any microbatch shape from the shapes a profile measured.
/// A measured shape gives its own times. Any other shape is estimated node
/// by node from a fit over the measured shapes of
///   t(B, L) = a + b * B * L + c * B * L * L,  with a, b, c >= 0,
/// a kernel call's fixed cost, work per token, and the attention's work per
/// token pair: the least-squares fit among those with non-negative
/// coefficients. With fewer than three shapes measuring a node, its time
/// scales with the tokens of the nearest measured shape.
class ShapeCosts {
public:
  explicit ShapeCosts(std::vector<MeasuredShape> shapes);

  /// The node's times at (batch, length), or nullopt when no shape
  /// measured it.
  std::optional<NodeTimes> estimate(const std::string &node, int64_t batch,
                                    int64_t length) const;
  bool empty() const { return shapes.empty(); }

private:
  struct Fit {
    double a[3] = {0, 0, 0};
  };
  std::vector<MeasuredShape> shapes;
  /// Per node: the forward and backward fits (when three shapes measured
  /// it).
  std::map<std::string, std::pair<Fit, Fit>> fits;
};

} // namespace dpc::planner

#endif // DPC_PLANNER_PROFILE_H
