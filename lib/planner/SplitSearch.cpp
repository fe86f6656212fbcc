//===- SplitSearch.cpp - The planner's dynamic program --------------------===//
//
// The state is (first position of the suffix, devices the suffix uses); the
// suffix sits on the last ranks of the machine, so the state also fixes
// where a stage's ranks are (which the hierarchical bandwidths need) and how
// many devices run after it (which the in-flight count of its memory
// needs). Prefix sums make each stage's cost O(1).
//
//===----------------------------------------------------------------------===//

#include "SplitSearch.h"

#include <algorithm>
#include <cassert>
#include <utility>

namespace dpc::planner::detail {

OrderCosts buildOrderCosts(const Graph &g, const std::vector<NodeId> &order) {
  size_t n = order.size();
  OrderCosts oc;
  oc.order = order;
  oc.compute.assign(n + 1, 0);
  oc.params.assign(n + 1, 0);
  oc.acts.assign(n + 1, 0);
  std::vector<uint32_t> pos(g.size());
  for (size_t p = 0; p < n; ++p)
    pos[order[p]] = static_cast<uint32_t>(p);
  std::vector<double> diff(n + 2, 0);
  long lastInput = -1;
  for (size_t p = 0; p < n; ++p) {
    NodeId v = order[p];
    oc.compute[p + 1] = oc.compute[p] + g.computeSeconds(v);
    oc.params[p + 1] = oc.params[p] + g.parameterBytes(v);
    oc.acts[p + 1] = oc.acts[p] + g.activationBytes(v);
    if (g.node(v).isInput)
      lastInput = static_cast<long>(p);
    uint32_t last = static_cast<uint32_t>(p);
    for (NodeId w : g.successors(v))
      last = std::max(last, pos[w]);
    if (last > p) {
      diff[p + 1] += g.activationBytes(v);
      diff[last + 1] -= g.activationBytes(v);
    }
  }
  oc.cut.assign(n + 1, 0);
  double running = 0;
  for (size_t i = 1; i < n; ++i) {
    running += diff[i];
    oc.cut[i] = std::max(running, 0.0);
  }
  oc.canStart.assign(n + 1, 0);
  for (size_t i = 0; i < n; ++i) {
    // The first stage holds every input and at least one real node: a stage
    // of inputs alone would occupy a device and do nothing.
    oc.canStart[i] = i == 0 || static_cast<long>(i) > lastInput + 1;
    oc.starts += oc.canStart[i];
  }
  oc.canStart[n] = 1;
  return oc;
}

Placement::Placement(const Topology &t, const PlannerOptions &opts)
    : devices(t.devices()) {
  int n = devices;
  const double limit = opts.memoryLimitBytes > 0 ? opts.memoryLimitBytes : kInf;
  speed.assign(n, 1.0);
  capacity.assign(n, limit);
  speedSum.assign(n + 1, 0.0);
  for (int k = 0; k < n; ++k) {
    if (!opts.devices.empty()) {
      const Device &d = opts.devices[k];
      speed[k] = d.speed;
      if (d.memoryBytes > 0) {
        capacity[k] = std::min(capacity[k], d.memoryBytes);
        deviceMemory = true;
      }
    }
    speedSum[k + 1] = speedSum[k] + speed[k];
    memoryLimited |= capacity[k] < kInf;
    uniform &= speed[k] == speed[0] && capacity[k] == capacity[0];
  }
  allreduce.assign((n + 1) * (n + 1), 0);
  recv = send = allreduce;
  for (int a = 0; a < n; ++a) {
    for (int r = 1; a + r <= n; ++r) {
      int k = a * (n + 1) + r;
      allreduce[k] = 1.0 / t.bandwidth(a, a + r - 1);
      if (a > 0)
        recv[k] = 1.0 / t.bandwidth(a - 1, a + r - 1);
      if (a + r < n)
        send[k] = 1.0 / t.bandwidth(a, a + r);
    }
  }
}

namespace {

/// One stage the dynamic program considers for state (j, D): positions j..
/// on ranks a..a+r-1 (the first r of the suffix's D devices), the suffix
/// after it on the other d = D - r, read from layer `prev`.
struct StageCandidate {
  int prev = 0, j = 0, a = 0, r = 0, d = 0, inFlight = 1;
  /// Bytes received at position j; the slowest replica's speed and the
  /// smallest one's memory.
  double cutIn = 0, speed = kInf, capacity = kInf;
  /// 1 / r, the all-reduce's seconds per parameter byte, the receive's
  /// seconds, the send's seconds per cut byte.
  double invR = 0, arScale = 0, recv = 0, sendScale = 0;
  /// Resident bytes per parameter byte on each replica (stageStateFactor).
  double stateFactor = 2;
};

/// The best value of a state found so far and the split that reaches it.
struct BestSplit {
  double value;
  int i = -1, r = 0;
};

/// The dynamic program of solve(): the best value of the suffix from
/// position j on the last D devices (per layer: with a forced stage count,
/// the stages it still has), and the split (next position, replicas) that
/// reaches it.
class SplitSearch {
public:
  SplitSearch(const OrderCosts &oc, const PlannerOptions &opts,
              const Placement &place, Mode mode, double cap)
      : oc(oc), opts(opts), place(place), mode(mode), cap(cap),
        n(static_cast<int>(oc.order.size())), N(place.devices),
        forced(opts.stages > 0), layers(forced ? opts.stages + 1 : 1),
        needMemory(place.memoryLimited || mode == Mode::MinMemory),
        cost(opts.cost),
        weightVersions(cost.schedule == ScheduleKind::PipeDream) {
    f.assign(static_cast<size_t>(layers) * (n + 1) * (N + 1), kInf);
    nextPos.assign(f.size(), -1);
    reps.assign(f.size(), 0);
    f[idx(0, n, 0)] = 0;
  }

  Solution run() {
    for (int l = forced ? 1 : 0; l < layers; ++l) {
      const int prev = forced ? l - 1 : 0;
      for (int j = n - 1; j >= 0; --j) {
        if (!oc.canStart[j])
          continue;
        for (int D = 1; D <= N; ++D)
          fillState(l, prev, j, D);
      }
    }
    return extract();
  }

private:
  size_t idx(int l, int i, int d) const {
    return (static_cast<size_t>(l) * (n + 1) + i) * (N + 1) + d;
  }

  /// The best first stage of the suffix from j on the last D devices.
  void fillState(int l, int prev, int j, int D) {
    // MinMax: only values below `cap` matter (a plan at least as good is
    // known); they are the only ones kept.
    BestSplit best{mode == Mode::MinMax ? cap : kInf};
    // The positions before j run on the other N - D devices; when their
    // compute alone exceeds the bound there, this state is never used.
    if (j > 0 && mode != Mode::MinMemory && cap < kInf &&
        (D == N || oc.compute[j] > cap * place.speedSum[N - D] * (1 + 1e-9)))
      return;
    const int rmax = opts.straight ? 1 : D;
    StageCandidate s;
    s.prev = prev;
    s.j = j;
    s.a = N - D;
    s.cutIn = j > 0 ? oc.cut[j] : 0.0;
    // The stage runs at its slowest replica's speed and fits the
    // smallest replica's memory.
    for (int r = 1; r <= rmax; ++r) {
      s.r = r;
      s.d = D - r;
      s.speed = std::min(s.speed, place.speed[s.a + r - 1]);
      s.capacity = std::min(s.capacity, place.capacity[s.a + r - 1]);
      const size_t pk = static_cast<size_t>(s.a) * (N + 1) + r;
      s.invR = 1.0 / r;
      s.arScale = 4.0 * (r - 1) * place.allreduce[pk] * s.invR;
      s.recv = 2.0 * s.cutIn * cost.transferFactor * place.recv[pk] * s.invR;
      s.sendScale = 2.0 * cost.transferFactor * place.send[pk] * s.invR;
      if (mode == Mode::MinMax && s.recv >= best.value)
        continue;
      if (mode == Mode::MinSum && s.recv > cap)
        continue;
      s.inFlight = needMemory ? stageInFlight(cost, r, D) : 1;
      s.stateFactor = stageStateFactor(cost, r);
      auto [iBegin, iEnd] =
          splitWindow(s, mode == Mode::MinMax ? best.value : cap);
      scanSplits(s, iBegin, iEnd, best);
    }
    const size_t k = idx(l, j, D);
    f[k] = best.i < 0 ? kInf : best.value;
    nextPos[k] = best.i;
    reps[k] = static_cast<int16_t>(best.r);
  }

  /// The positions where the stage may end. Every stage time is at least
  /// its compute over its replicas, so a bound on the value confines the
  /// split point to a window of the prefix sums: this stage's compute below
  /// bound * r and the suffix's below bound * d.
  std::pair<int, int> splitWindow(const StageCandidate &s, double bound) const {
    int iBegin = s.d == 0 ? n : s.j + 1;
    int iEnd = s.d == 0 ? n : n - 1;
    if (mode == Mode::MinMemory || !(bound < kInf))
      return {iBegin, iEnd};
    const double slack = 1 + 1e-9;
    const double *C = oc.compute.data();
    const double *P = oc.params.data();
    const int j = s.j;
    // The stage's time, allreduce included, grows with i.
    const double limit = bound * s.r * slack;
    int lo = j + 1, hi = iEnd; // find the last i within the limit
    while (lo <= hi) {
      int mid = (lo + hi) / 2;
      if ((C[mid] - C[j]) / s.speed + s.arScale * (P[mid] - P[j]) <= limit)
        lo = mid + 1;
      else
        hi = mid - 1;
    }
    iEnd = hi;
    // A stage of the suffix computes at most its replicas' speeds
    // added up, so the suffix's compute is at most the bound times
    // the speeds of its d devices.
    const double suffixSpeed = place.speedSum[N] - place.speedSum[s.a + s.r];
    if (s.d > 0)
      iBegin = std::max<int>(
          iBegin, static_cast<int>(
                      std::lower_bound(C + j, C + n + 1,
                                       C[n] - bound * suffixSpeed * slack) -
                      C));
    return {iBegin, iEnd};
  }

  /// Tries every end i of the window for the stage `s`, keeping the best.
  void scanSplits(const StageCandidate &s, int iBegin, int iEnd,
                  BestSplit &best) const {
    const int j = s.j;
    for (int i = iBegin; i <= iEnd; ++i) {
      if (!oc.canStart[i])
        continue;
      const double sub = f[idx(s.prev, i, s.d)];
      if (sub == kInf)
        continue;
      const double c = oc.compute[i] - oc.compute[j];
      const double p = oc.params[i] - oc.params[j];
      const double comp = (c / s.speed + s.arScale * p) * s.invR;
      double mem = 0;
      if (needMemory) {
        mem = p * s.stateFactor +
              (weightVersions ? (s.inFlight - 1) * p : 0.0) +
              s.inFlight * (oc.acts[i] - oc.acts[j] + s.cutIn);
        // Memory and compute only grow with the stage.
        if (mode != Mode::MinMemory && mem > s.capacity)
          return;
        // The least-memory search over devices of their own memory
        // minimises the largest share of a device's memory used.
        if (mode == Mode::MinMemory && place.deviceMemory)
          mem = s.capacity < kInf ? mem / s.capacity : 0.0;
      }
      double value;
      if (mode == Mode::MinMax) {
        if (comp >= best.value)
          return;
        if (sub >= best.value)
          continue;
        const double send = oc.cut[i] * s.sendScale;
        value = std::max(std::max(comp, s.recv), std::max(send, sub));
      } else if (mode == Mode::MinSum) {
        if (comp > cap)
          return;
        if (sub >= best.value)
          continue;
        const double send = oc.cut[i] * s.sendScale;
        if (send > cap)
          continue;
        value = sub + comp + 0.5 * (s.recv + send);
      } else {
        if (mem >= best.value)
          return;
        value = std::max(mem, sub);
      }
      if (value < best.value) {
        best.value = value;
        best.i = i;
        best.r = s.r;
      }
    }
  }

  /// The fewest devices among the best plans (idle devices cost nothing),
  /// and its stages, read back along the recorded splits.
  Solution extract() const {
    const int top = layers - 1;
    int bestD = -1;
    double bestValue = kInf;
    for (int D = 1; D <= N; ++D) {
      double v = f[idx(top, 0, D)];
      if (v < bestValue * (1 - 1e-12) || (bestD < 0 && v < kInf)) {
        bestValue = v;
        bestD = D;
      }
    }
    Solution sol;
    if (bestD < 0)
      return sol;
    sol.value = bestValue;
    // Used ranks are the last D; shift them towards rank 0 by whole groups
    // so that the costs stay as computed.
    // Devices that differ move with the plan instead (planPipeline).
    const int align = opts.cost.topology.alignment();
    const int shift = place.uniform ? ((N - bestD) / align) * align : 0;
    int j = 0, D = bestD, l = top;
    while (j < n) {
      size_t k = idx(l, j, D);
      int i = nextPos[k], r = reps[k];
      assert(i > j && r > 0);
      sol.pieces.push_back({j, i, r, N - D - shift});
      j = i;
      D -= r;
      if (forced)
        --l;
    }
    return sol;
  }

  const OrderCosts &oc;
  const PlannerOptions &opts;
  const Placement &place;
  const Mode mode;
  const double cap;
  const int n, N;
  const bool forced;
  const int layers;
  const bool needMemory;
  const CostOptions &cost;
  const bool weightVersions;
  std::vector<double> f;
  std::vector<int32_t> nextPos;
  std::vector<int16_t> reps;
};

} // namespace

Solution solve(const OrderCosts &oc, const PlannerOptions &opts,
               const Placement &place, Mode mode, double cap) {
  return SplitSearch(oc, opts, place, mode, cap).run();
}

Plan toPlan(const OrderCosts &oc, const Solution &sol) {
  Plan plan;
  for (const Piece &p : sol.pieces) {
    StagePlan st;
    st.nodes.assign(oc.order.begin() + p.begin, oc.order.begin() + p.end);
    st.replicas = p.replicas;
    st.firstRank = p.firstRank;
    plan.stages.push_back(std::move(st));
  }
  return plan;
}

} // namespace dpc::planner::detail
