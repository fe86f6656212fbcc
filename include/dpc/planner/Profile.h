//===- Profile.h - Reading and writing planner profiles ---------*- C++ -*-===//
//
// Two formats fill a planner::Graph. PipeDream's graph.txt (node lines
// `nodeN -- desc -- forward_compute_time=F, backward_compute_time=B,
// activation_size=A, parameter_size=P`, edge lines `\tnodeA -- nodeB`) so that
// the published profiles plan unchanged, and dpc's own profile.json (see
// docs/PLANNER.md), which `dpc profile` writes and which holds the same data
// with explicit units. Errors name the file and line.
//
//===----------------------------------------------------------------------===//

#ifndef DPC_PLANNER_PROFILE_H
#define DPC_PLANNER_PROFILE_H

#include "dpc/planner/Graph.h"

#include <cstddef>
#include <string>

namespace dpc::planner {

/// Parses a PipeDream graph.txt. `source` names the input in messages.
Expected<Graph> parsePipeDreamProfile(const std::string &text,
                                      const std::string &source);

/// Parses dpc's profile.json.
Expected<Graph> parseJsonProfile(const std::string &text,
                                 const std::string &source);

/// Serialises `graph` as profile.json (round-trips through parseJsonProfile).
std::string writeJsonProfile(const Graph &graph);

/// The largest profile loadProfile reads: 64 MiB, some 400,000 graph.txt
/// nodes (the published profiles are under 40 KiB). A bound, so that a
/// device or a pipe given as the profile fails instead of filling memory.
constexpr size_t kMaxProfileBytes = size_t(64) << 20;

/// Reads `path` and picks the format from its content: JSON when the first
/// non-blank character is '{', graph.txt otherwise. Numbers are decimal
/// (no hex, inf or nan) from 0 to 1e18.
Expected<Graph> loadProfile(const std::string &path);

} // namespace dpc::planner

#endif // DPC_PLANNER_PROFILE_H
