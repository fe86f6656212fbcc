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

/// Reads `path` and picks the format from its content: JSON when the first
/// non-blank character is '{', graph.txt otherwise.
Expected<Graph> loadProfile(const std::string &path);

} // namespace dpc::planner

#endif // DPC_PLANNER_PROFILE_H
