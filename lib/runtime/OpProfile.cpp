//===- OpProfile.cpp - Op times of a build for dpc profile ----------------===//

#include "OpProfile.h"

#include "AbiError.h"

#include <algorithm>

#include <nlohmann/json.hpp>

namespace dpc::runtime {

OpProfile::OpTime &OpProfile::time(int64_t op) {
  if (op < 0 || op >= static_cast<int64_t>(ops.size()))
    throw AbiError("op " + std::to_string(op) +
                   " is not in the manifest's profile");
  if (times.size() != ops.size())
    times.resize(ops.size());
  return times[size_t(op)];
}

void OpProfile::begin(int64_t op, double nowMs) { time(op).startMs = nowMs; }

void OpProfile::end(int64_t op, double nowMs) {
  OpTime &t = time(op);
  if (t.startMs < 0)
    throw AbiError("op " + std::to_string(op) + " was not begun");
  double ms = nowMs - t.startMs;
  t.totalMs += ms;
  t.callMs.push_back(float(ms));
  t.startMs = -1;
  ++t.calls;
}

std::string OpProfile::json(int rank) const {
  nlohmann::ordered_json list = nlohmann::ordered_json::array();
  for (size_t i = 0; i < ops.size(); ++i) {
    const ManifestProfileOp &op = ops[i];
    OpTime t = i < times.size() ? times[i] : OpTime();
    double median = 0;
    if (!t.callMs.empty()) {
      auto middle = t.callMs.begin() + t.callMs.size() / 2;
      std::nth_element(t.callMs.begin(), middle, t.callMs.end());
      median = *middle;
    }
    // A fused region's entry times the whole call; its node's part is
    // `share` of it.
    nlohmann::ordered_json entry = {{"id", op.id},
                                    {"node", op.node},
                                    {"phase", op.phase},
                                    {"calls", t.calls},
                                    {"total_ms", t.totalMs * op.share},
                                    {"median_ms", median * op.share}};
    if (op.share != 1)
      entry["share"] = op.share;
    list.push_back(std::move(entry));
  }
  nlohmann::ordered_json root = {{"format", "dpc-op-times"},
                                 {"version", 1},
                                 {"rank", rank},
                                 {"ops", list}};
  return root.dump(1) + "\n";
}

} // namespace dpc::runtime
