//===- Planner.cpp - Stage partitioning with replicas ---------------------===//
//
// For one topological order, a dynamic program over suffixes finds the best
// split into contiguous stages with replica counts. The state is (first
// position of the suffix, devices the suffix uses); the suffix sits on the
// last ranks of the machine, so the state also fixes where a stage's ranks
// are (which the hierarchical bandwidths need) and how many devices run
// after it (which the in-flight count of its memory needs). Prefix sums make
// each stage's cost O(1) and the cut sizes along the order are exact.
//
//===----------------------------------------------------------------------===//

#include "dpc/planner/Planner.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <cstdio>
#include <limits>
#include <set>

namespace dpc::planner {

const char *objectiveName(Objective objective) {
  return objective == Objective::Bottleneck ? "bottleneck" : "step";
}

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

/// Prefix sums along one order.
struct OrderCosts {
  std::vector<NodeId> order;
  std::vector<double> compute, params, acts; // size n + 1
  /// cut[i]: activation bytes produced before position i and read at or
  /// after it.
  std::vector<double> cut;
  /// Whether a stage may start at position i (everything up to the last
  /// input stays in the first stage); canStart[n] is true.
  std::vector<char> canStart;
  int starts = 0; // positions where a stage may start
};

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

/// Inverse bandwidths for a stage of r replicas on ranks a..a+r-1: among
/// its replicas, towards the previous stage's last rank, towards the next
/// stage's first rank; and each rank's device: its speed and the bytes a
/// stage may use on it.
struct Placement {
  int devices;
  std::vector<double> allreduce, recv, send;
  /// Per rank, and speedSum[k] = the speeds of ranks 0..k-1.
  std::vector<double> speed, speedSum, capacity;
  /// Some rank has a finite capacity.
  bool memoryLimited = false;
  /// Capacities come from devices' memory: the least-memory search then
  /// minimises need over capacity instead of bytes.
  bool deviceMemory = false;
  /// Every rank alike: a plan may move by whole groups at no cost.
  bool uniform = true;

  Placement(const Topology &t, const PlannerOptions &opts)
      : devices(t.devices()) {
    int n = devices;
    const double limit =
        opts.memoryLimitBytes > 0 ? opts.memoryLimitBytes : kInf;
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
};

enum class Mode {
  /// Minimise the largest stage or transfer time.
  MinMax,
  /// Minimise the sum of stage latencies with every time at most `cap`.
  MinSum,
  /// Minimise the largest per-device memory, ignoring time.
  MinMemory,
};

struct Piece {
  int begin, end, replicas, firstRank;
};

struct Solution {
  double value = kInf;
  std::vector<Piece> pieces;
  bool found() const { return !pieces.empty(); }
};

Solution solve(const OrderCosts &oc, const PlannerOptions &opts,
               const Placement &place, Mode mode, double cap) {
  const int n = static_cast<int>(oc.order.size());
  const int N = place.devices;
  const bool forced = opts.stages > 0;
  const int layers = forced ? opts.stages + 1 : 1;
  const bool needMemory = place.memoryLimited || mode == Mode::MinMemory;
  const CostOptions &cost = opts.cost;
  const double stateFactor = 2.0 + cost.optimizerStateFactor;
  const bool weightVersions = cost.schedule == ScheduleKind::PipeDream;

  auto idx = [&](int l, int i, int d) {
    return (static_cast<size_t>(l) * (n + 1) + i) * (N + 1) + d;
  };
  std::vector<double> f(static_cast<size_t>(layers) * (n + 1) * (N + 1), kInf);
  std::vector<int32_t> nextPos(f.size(), -1);
  std::vector<int16_t> reps(f.size(), 0);
  f[idx(0, n, 0)] = 0;

  for (int l = forced ? 1 : 0; l < layers; ++l) {
    const int prev = forced ? l - 1 : 0;
    for (int j = n - 1; j >= 0; --j) {
      if (!oc.canStart[j])
        continue;
      const double cutIn = j > 0 ? oc.cut[j] : 0.0;
      for (int D = 1; D <= N; ++D) {
        // MinMax: only values below `cap` matter (a plan at least as good is
        // known); they are the only ones kept.
        double best = mode == Mode::MinMax ? cap : kInf;
        // The positions before j run on the other N - D devices; when their
        // compute alone exceeds the bound there, this state is never used.
        if (j > 0 && mode != Mode::MinMemory && cap < kInf &&
            (D == N ||
             oc.compute[j] > cap * place.speedSum[N - D] * (1 + 1e-9)))
          continue;
        int bestI = -1, bestR = 0;
        const int rmax = opts.straight ? 1 : D;
        const int a = N - D;
        // The stage runs at its slowest replica's speed and fits the
        // smallest replica's memory.
        double speed = kInf, capacity = kInf;
        for (int r = 1; r <= rmax; ++r) {
          const int d = D - r;
          speed = std::min(speed, place.speed[a + r - 1]);
          capacity = std::min(capacity, place.capacity[a + r - 1]);
          const size_t pk = static_cast<size_t>(a) * (N + 1) + r;
          const double invR = 1.0 / r;
          const double arScale = 4.0 * (r - 1) * place.allreduce[pk] * invR;
          const double recv =
              2.0 * cutIn * cost.transferFactor * place.recv[pk] * invR;
          const double sendScale =
              2.0 * cost.transferFactor * place.send[pk] * invR;
          if (mode == Mode::MinMax && recv >= best)
            continue;
          if (mode == Mode::MinSum && recv > cap)
            continue;
          const int inFlight = needMemory ? stageInFlight(cost, r, D) : 1;
          int iBegin = d == 0 ? n : j + 1;
          int iEnd = d == 0 ? n : n - 1;
          // Every stage time is at least its compute over its replicas, so a
          // bound on the value confines the split point to a window of the
          // prefix sums: this stage's compute below bound * r and the
          // suffix's below bound * d.
          const double bound = mode == Mode::MinMax ? best : cap;
          if (mode != Mode::MinMemory && bound < kInf) {
            const double slack = 1 + 1e-9;
            const double *C = oc.compute.data();
            const double *P = oc.params.data();
            // The stage's time, allreduce included, grows with i.
            const double limit = bound * r * slack;
            int lo = j + 1, hi = iEnd; // find the last i within the limit
            while (lo <= hi) {
              int mid = (lo + hi) / 2;
              if ((C[mid] - C[j]) / speed + arScale * (P[mid] - P[j]) <= limit)
                lo = mid + 1;
              else
                hi = mid - 1;
            }
            iEnd = hi;
            // A stage of the suffix computes at most its replicas' speeds
            // added up, so the suffix's compute is at most the bound times
            // the speeds of its d devices.
            const double suffixSpeed =
                place.speedSum[N] - place.speedSum[a + r];
            if (d > 0)
              iBegin = std::max<int>(
                  iBegin,
                  static_cast<int>(
                      std::lower_bound(C + j, C + n + 1,
                                       C[n] - bound * suffixSpeed * slack) -
                      C));
          }
          for (int i = iBegin; i <= iEnd; ++i) {
            if (!oc.canStart[i])
              continue;
            const double sub = f[idx(prev, i, d)];
            if (sub == kInf)
              continue;
            const double c = oc.compute[i] - oc.compute[j];
            const double p = oc.params[i] - oc.params[j];
            const double comp = (c / speed + arScale * p) * invR;
            double mem = 0;
            if (needMemory) {
              mem = p * stateFactor +
                    (weightVersions ? (inFlight - 1) * p : 0.0) +
                    inFlight * (oc.acts[i] - oc.acts[j] + cutIn);
              // Memory and compute only grow with the stage.
              if (mode != Mode::MinMemory && mem > capacity)
                break;
              // The least-memory search over devices of their own memory
              // minimises the largest share of a device's memory used.
              if (mode == Mode::MinMemory && place.deviceMemory)
                mem = capacity < kInf ? mem / capacity : 0.0;
            }
            double value;
            if (mode == Mode::MinMax) {
              if (comp >= best)
                break;
              if (sub >= best)
                continue;
              const double send = oc.cut[i] * sendScale;
              value = std::max(std::max(comp, recv), std::max(send, sub));
            } else if (mode == Mode::MinSum) {
              if (comp > cap)
                break;
              if (sub >= best)
                continue;
              const double send = oc.cut[i] * sendScale;
              if (send > cap)
                continue;
              value = sub + comp + 0.5 * (recv + send);
            } else {
              if (mem >= best)
                break;
              value = std::max(mem, sub);
            }
            if (value < best) {
              best = value;
              bestI = i;
              bestR = r;
            }
          }
        }
        const size_t k = idx(l, j, D);
        f[k] = bestI < 0 ? kInf : best;
        nextPos[k] = bestI;
        reps[k] = static_cast<int16_t>(bestR);
      }
    }
  }

  // The fewest devices among the best plans: idle devices cost nothing.
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
  // Used ranks are the last D; shift them towards rank 0 by whole groups so
  // that the costs stay as computed.
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

/// Total order on plans for the bottleneck objective: the bottleneck, then
/// the sum of stage latencies (what preferLeastLatency minimises).
bool bottleneckBetter(const Evaluation &a, const Evaluation &b) {
  const double tol = 1e-12;
  if (a.bottleneckSeconds < b.bottleneckSeconds * (1 - tol))
    return true;
  if (a.bottleneckSeconds > b.bottleneckSeconds * (1 + tol))
    return false;
  double sa = 0, sb = 0;
  for (const StageCost &s : a.stages)
    sa += s.latency();
  for (const StageCost &s : b.stages)
    sb += s.latency();
  return sa < sb * (1 - tol);
}

double objectiveValue(const PlannerOptions &opts, const Evaluation &e) {
  return opts.objective == Objective::Bottleneck ? e.bottleneckSeconds
                                                 : e.stepSeconds;
}

/// Whether `a` beats `b` for the objective (the bottleneck with its
/// tie-break, or the step time).
bool objectiveBetter(const PlannerOptions &opts, const Evaluation &a,
                     const Evaluation &b) {
  return opts.objective == Objective::Bottleneck
             ? bottleneckBetter(a, b)
             : objectiveValue(opts, a) < objectiveValue(opts, b) * (1 - 1e-12);
}

/// Whether every stage fits the smallest memory among its ranks.
bool fits(const Placement &place, const Plan &plan, const Evaluation &e) {
  if (!place.memoryLimited)
    return true;
  for (size_t s = 0; s < plan.stages.size(); ++s) {
    const StagePlan &st = plan.stages[s];
    for (int r = st.firstRank; r < st.firstRank + st.replicas; ++r)
      if (e.stages[s].memoryBytes > place.capacity[r] * (1 + 1e-12))
        return false;
  }
  return true;
}

/// Moves single nodes across the cuts next to the bottleneck stage while
/// that lowers (bottleneck, sum of stage times): the dynamic program is
/// exact along its order, this explores the orders next to it.
Plan refinePlan(const Graph &g, Plan plan, const PlannerOptions &opts,
                const Placement &place) {
  size_t numStages = plan.stages.size();
  if (numStages < 2)
    return plan;
  std::vector<int> stageOf(g.size());
  auto assign = [&](const Plan &p) {
    for (size_t s = 0; s < p.stages.size(); ++s)
      for (NodeId v : p.stages[s].nodes)
        stageOf[v] = static_cast<int>(s);
  };
  assign(plan);
  Expected<Evaluation> current = evaluate(g, plan, opts.cost);
  if (!current)
    return plan;
  for (size_t round = 0; round < 2 * numStages + 4; ++round) {
    size_t worst = 0;
    for (size_t s = 1; s < numStages; ++s)
      if (current->stages[s].time() > current->stages[worst].time())
        worst = s;
    std::vector<std::pair<NodeId, int>> moves;
    for (size_t s : {worst - 1, worst}) {
      if (s >= numStages || s + 1 >= numStages) // worst - 1 wraps at 0
        continue;
      if (plan.stages[s].nodes.size() > 1)
        for (NodeId v : plan.stages[s].nodes) {
          bool movable = !g.node(v).isInput;
          for (NodeId w : g.successors(v))
            movable &= stageOf[w] > static_cast<int>(s);
          if (movable)
            moves.push_back({v, static_cast<int>(s) + 1});
        }
      if (plan.stages[s + 1].nodes.size() > 1)
        for (NodeId v : plan.stages[s + 1].nodes) {
          bool movable = true;
          for (NodeId u : g.predecessors(v))
            movable &= stageOf[u] <= static_cast<int>(s);
          if (movable)
            moves.push_back({v, static_cast<int>(s)});
        }
    }
    Plan bestPlan;
    std::optional<Evaluation> bestEval;
    for (auto [v, to] : moves) {
      Plan trial = plan;
      auto &from = trial.stages[stageOf[v]].nodes;
      from.erase(std::find(from.begin(), from.end(), v));
      trial.stages[to].nodes.push_back(v);
      Expected<Evaluation> e = evaluate(g, trial, opts.cost);
      if (!e || !fits(place, trial, *e))
        continue;
      const Evaluation &reference = bestEval ? *bestEval : *current;
      if (bottleneckBetter(*e, reference)) {
        bestEval = *e;
        bestPlan = std::move(trial);
      }
    }
    if (!bestEval)
      break;
    plan = std::move(bestPlan);
    *current = std::move(*bestEval);
    assign(plan);
  }
  return plan;
}

/// The order that lists `plan`'s stages one after another, each in the
/// order of `reference`.
std::vector<NodeId> stageMajorOrder(const Graph &g, const Plan &plan,
                                    const std::vector<NodeId> &reference) {
  std::vector<int> stageOf(g.size());
  for (size_t s = 0; s < plan.stages.size(); ++s)
    for (NodeId v : plan.stages[s].nodes)
      stageOf[v] = static_cast<int>(s);
  std::vector<NodeId> order = reference;
  std::stable_sort(order.begin(), order.end(),
                   [&](NodeId a, NodeId b) { return stageOf[a] < stageOf[b]; });
  return order;
}

std::string bytesText(double bytes) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.0f", std::ceil(bytes));
  return buf;
}

/// Best plan along one order for the chosen objective, or nothing.
struct OrderResult {
  Solution solution;
  Plan plan;
  Evaluation evaluation;
  bool found = false;
};

OrderResult planOrder(const Graph &g, const OrderCosts &oc,
                      const PlannerOptions &opts, const Placement &place,
                      double cap) {
  OrderResult out;
  Solution minmax = solve(oc, opts, place, Mode::MinMax, cap);
  if (!minmax.found())
    return out;
  auto consider = [&](const Solution &sol) {
    if (!sol.found())
      return;
    Plan plan = toPlan(oc, sol);
    Expected<Evaluation> e = evaluate(g, plan, opts.cost);
    assert(e && "the dynamic program built an invalid plan");
    if (!e)
      return;
    bool better = !out.found;
    if (!better && opts.objective == Objective::Bottleneck)
      better = bottleneckBetter(*e, out.evaluation);
    if (!better && opts.objective == Objective::Step)
      better = e->stepSeconds < out.evaluation.stepSeconds * (1 - 1e-12);
    if (better) {
      out.found = true;
      out.solution = sol;
      out.plan = std::move(plan);
      out.evaluation = std::move(*e);
    }
  };
  consider(minmax);
  if (opts.objective != Objective::Step)
    return out;

  // Step time = latency sum + (m - 1) * bottleneck. For a cap T on every
  // time, the least latency sum is exact; trying caps T* (1 + grid)^k finds
  // a plan within a factor (1 + grid) of the best step along this order.
  int m = std::max(opts.cost.microbatches, 1);
  Solution unbounded = solve(oc, opts, place, Mode::MinSum, kInf);
  consider(unbounded);
  if (m == 1 || !unbounded.found())
    return out;
  double grid = std::max(opts.stepGrid, 1e-4);
  for (double capValue = minmax.value * (1 + grid); capValue < kInf;
       capValue *= 1 + grid) {
    // A plan not seen yet has a time above the previous cap, so its step is
    // at least this.
    double previousCap = capValue / (1 + grid);
    if (unbounded.value + (m - 1) * previousCap >= out.evaluation.stepSeconds)
      break;
    consider(solve(oc, opts, place, Mode::MinSum, capValue));
  }
  return out;
}

/// Among the splits of `order` whose bottleneck is within 1e-9 of the
/// best's, the one with the least latency sum, which a synchronous schedule
/// also prefers; the plan of a tie is otherwise arbitrary.
void preferLeastLatency(const Graph &g, const std::vector<NodeId> &order,
                        const PlannerOptions &opts, const Placement &place,
                        OrderResult &best) {
  OrderCosts oc = buildOrderCosts(g, order);
  Solution sol = solve(oc, opts, place, Mode::MinSum,
                       best.evaluation.bottleneckSeconds * (1 + 1e-9));
  if (!sol.found())
    return;
  Plan plan = toPlan(oc, sol);
  Expected<Evaluation> e = evaluate(g, plan, opts.cost);
  if (e && fits(place, plan, *e) && bottleneckBetter(*e, best.evaluation)) {
    best.plan = std::move(plan);
    best.evaluation = std::move(*e);
  }
}

/// A plan every order admits: one stage on the replica count that suits it
/// best. Its time bounds the dynamic program from the start.
double singleStageBound(const Graph &g, const PlannerOptions &opts,
                        const Placement &place) {
  if (opts.stages > 1)
    return kInf;
  double compute = 0, params = 0;
  for (NodeId v = 0; v < g.size(); ++v) {
    compute += g.computeSeconds(v);
    params += g.parameterBytes(v);
  }
  int N = place.devices;
  double best = kInf, speed = kInf;
  for (int r = 1; r <= (opts.straight ? 1 : N); ++r) {
    double inv = place.allreduce[static_cast<size_t>(N - r) * (N + 1) + r];
    speed = std::min(speed, place.speed[N - r]);
    best = std::min(best,
                    (compute / speed + 4.0 * (r - 1) * params * inv / r) / r);
  }
  return best;
}

/// No plan is faster than its compute spread over every device by speed,
/// nor than one node on its own replicas.
double lowerBound(const Graph &g, const PlannerOptions &opts,
                  const Placement &place) {
  double total = 0, largest = 0;
  for (NodeId v = 0; v < g.size(); ++v) {
    total += g.computeSeconds(v);
    largest = std::max(largest, g.computeSeconds(v));
  }
  const double all = place.speedSum[place.devices];
  const double fastest =
      *std::max_element(place.speed.begin(), place.speed.end());
  return std::max(total / all, largest / (opts.straight ? fastest : all));
}

/// The best plan over `orders` (then refined) for one order of the
/// devices, or nothing when no plan meets the constraints.
OrderResult searchOrders(const Graph &g, const PlannerOptions &opts,
                         const Placement &place,
                         const std::vector<std::vector<NodeId>> &orders,
                         bool exhaustive, int &ordersTried) {
  const bool bottleneck = opts.objective == Objective::Bottleneck;
  // For the bottleneck, each order only has to beat the best so far (ties
  // are kept: 1e-9 of slack), which narrows the dynamic program's windows.
  double cap =
      bottleneck ? singleStageBound(g, opts, place) * (1 + 1e-9) : kInf;
  OrderResult best;
  size_t bestOrder = 0;
  for (size_t k = 0; k < orders.size(); ++k) {
    OrderCosts oc = buildOrderCosts(g, orders[k]);
    OrderResult r;
    if (k == 0 && bottleneck) {
      // A tight bound makes the dynamic program cheap and a failed run
      // cheaper still: raise a guess from the compute lower bound until
      // a plan is found below it.
      // At most 40 steps (a factor 7500): with no finite bound, or when
      // nothing fits, the unbounded search below takes over.
      double guess = lowerBound(g, opts, place);
      for (int step = 0; step < 40 && guess * 1.25 < cap && !r.found;
           ++step, guess *= 1.25)
        r = planOrder(g, oc, opts, place, guess * 1.25);
    }
    if (!r.found)
      r = planOrder(g, oc, opts, place, cap);
    if (!r.found && k == 0 && cap < kInf) {
      // The single stage does not fit (memory); search without the bound.
      cap = kInf;
      r = planOrder(g, oc, opts, place, cap);
    }
    if (!r.found)
      continue;
    if (!best.found || objectiveBetter(opts, r.evaluation, best.evaluation)) {
      best = std::move(r);
      bestOrder = k;
      if (bottleneck)
        cap = best.evaluation.bottleneckSeconds * (1 + 1e-9);
    }
  }
  ordersTried += static_cast<int>(orders.size());
  if (!best.found)
    return best;

  // Refinement: move nodes across cuts, then let the dynamic program
  // re-split the order that the moved plan implies.
  std::vector<NodeId> reference = orders[bestOrder];
  if (opts.refine && !exhaustive && bottleneck) {
    for (int round = 0; round < 3; ++round) {
      Plan moved = refinePlan(g, best.plan, opts, place);
      std::vector<NodeId> order = stageMajorOrder(g, moved, reference);
      OrderResult r = planOrder(g, buildOrderCosts(g, order), opts, place,
                                best.evaluation.bottleneckSeconds * (1 + 1e-9));
      Expected<Evaluation> movedEval = evaluate(g, moved, opts.cost);
      bool improved = false;
      if (r.found && bottleneckBetter(r.evaluation, best.evaluation)) {
        best = std::move(r);
        improved = true;
      } else if (movedEval && fits(place, moved, *movedEval) &&
                 bottleneckBetter(*movedEval, best.evaluation)) {
        best.plan = std::move(moved);
        best.evaluation = std::move(*movedEval);
        improved = true;
      }
      if (!improved)
        break;
      reference = order;
      ++ordersTried;
    }
  }
  if (bottleneck)
    preferLeastLatency(g, stageMajorOrder(g, best.plan, reference), opts, place,
                       best);
  return best;
}

/// `options` with the devices in `order` (rank -> index into
/// options.devices) and their speeds as the cost model's.
PlannerOptions withDeviceOrder(const PlannerOptions &options,
                               const std::vector<int> &order) {
  PlannerOptions opts = options;
  if (order.empty())
    return opts;
  opts.devices.clear();
  opts.cost.rankSpeeds.clear();
  for (int k : order) {
    opts.devices.push_back(options.devices[k]);
    opts.cost.rankSpeeds.push_back(options.devices[k].speed);
  }
  return opts;
}

/// Moves a plan on devices `order` towards rank 0 by whole groups, turning
/// the device order with it so that every cost stays, and records which
/// device each rank is.
void placeOnDevices(const Graph &g, const PlannerOptions &options,
                    const std::vector<int> &order, PlanResult &result) {
  if (order.empty())
    return;
  const int N = static_cast<int>(order.size());
  const int align = options.cost.topology.alignment();
  int first = N;
  for (const StagePlan &st : result.plan.stages)
    first = std::min(first, st.firstRank);
  const int shift = (first / align) * align;
  result.rankDevices.resize(N);
  for (int k = 0; k < N; ++k)
    result.rankDevices[k] = order[(k + shift) % N];
  for (StagePlan &st : result.plan.stages)
    st.firstRank -= shift;
  Expected<Evaluation> e = evaluate(
      g, result.plan, withDeviceOrder(options, result.rankDevices).cost);
  assert(e && "moving a plan by whole groups keeps it valid");
  if (e)
    result.evaluation = std::move(*e);
}

std::string checkDevices(const PlannerOptions &opts) {
  const std::vector<Device> &devices = opts.devices;
  if (devices.empty())
    return "";
  int count = opts.cost.topology.devices();
  if (devices.size() != static_cast<size_t>(count))
    return "the cluster lists " + std::to_string(devices.size()) +
           " devices but the topology has " + std::to_string(count);
  for (const Device &d : devices)
    if (!(d.speed >= kMinDeviceSpeed && d.speed <= kMaxDeviceSpeed) ||
        !(d.memoryBytes >= 0 && d.memoryBytes <= kMaxClusterValue))
      return "device '" + d.name +
             "' needs a speed from 1e-6 to 1e6 and a memory from 0 to 1e18 "
             "bytes";
  return "";
}

std::string ratioText(double ratio) {
  char buf[64];
  // Rounded up, so that the devices' memory scaled by it admits a plan.
  std::snprintf(buf, sizeof(buf), "%.3f", std::ceil(ratio * 1000) / 1000);
  return buf;
}

} // namespace

std::vector<std::vector<int>> deviceOrders(const std::vector<Device> &devices,
                                           const Topology &topology,
                                           double limit, bool &all) {
  const int N = static_cast<int>(devices.size());
  // Devices of equal speed and memory are interchangeable: an order is its
  // sequence of classes, and the class's devices fill it in file order.
  std::vector<int> classOf(N);
  std::vector<std::vector<int>> members;
  for (int k = 0; k < N; ++k) {
    int c = 0;
    while (c < static_cast<int>(members.size()) &&
           !(devices[members[c][0]].speed == devices[k].speed &&
             devices[members[c][0]].memoryBytes == devices[k].memoryBytes))
      ++c;
    if (c == static_cast<int>(members.size()))
      members.emplace_back();
    members[c].push_back(k);
    classOf[k] = c;
  }
  std::vector<std::vector<int>> orders;
  std::set<std::vector<int>> seen;
  auto add = [&](const std::vector<int> &classes) {
    if (!seen.insert(classes).second)
      return;
    std::vector<size_t> next(members.size(), 0);
    std::vector<int> order;
    for (int c : classes)
      order.push_back(members[c][next[c]++]);
    orders.push_back(std::move(order));
  };
  add(classOf); // the file's own order first: ties keep it

  // Distinct orders: N! / prod(class sizes!).
  double count = 1;
  for (int k = 1, c = 0; c < static_cast<int>(members.size()); ++c)
    for (size_t m = 1; m <= members[c].size(); ++m, ++k)
      count = count * k / m;
  all = topology.levelSizes.size() == 1 && count <= limit + 0.5;
  if (all) {
    std::vector<int> classes = classOf;
    std::sort(classes.begin(), classes.end());
    do
      add(classes);
    while (std::next_permutation(classes.begin(), classes.end()));
    return orders;
  }
  // Fastest first and slowest first, inside each innermost group so that
  // the groups stay whole.
  const int group =
      topology.levelSizes.size() == 1 ? N : topology.levelSizes[0];
  for (bool fastFirst : {true, false}) {
    std::vector<int> order(N);
    for (int k = 0; k < N; ++k)
      order[k] = k;
    for (int begin = 0; begin < N; begin += group)
      std::stable_sort(order.begin() + begin, order.begin() + begin + group,
                       [&](int a, int b) {
                         const Device &x = devices[a], &y = devices[b];
                         if (x.speed != y.speed)
                           return fastFirst ? x.speed > y.speed
                                            : x.speed < y.speed;
                         return fastFirst ? x.memoryBytes > y.memoryBytes
                                          : x.memoryBytes < y.memoryBytes;
                       });
    std::vector<int> classes;
    for (int k : order)
      classes.push_back(classOf[k]);
    add(classes);
  }
  return orders;
}

Expected<PlanResult> partitionOrder(const Graph &g,
                                    const std::vector<NodeId> &order,
                                    const PlannerOptions &opts) {
  using Result = Expected<PlanResult>;
  if (order.size() != g.size())
    return Result::failure("order does not list every node once");
  if (std::string bad = checkDevices(opts); !bad.empty())
    return Result::failure(bad);
  std::vector<int> identity(opts.devices.size());
  for (size_t k = 0; k < identity.size(); ++k)
    identity[k] = static_cast<int>(k);
  PlannerOptions o = withDeviceOrder(opts, identity);
  OrderCosts oc = buildOrderCosts(g, order);
  Placement place(o.cost.topology, o);
  OrderResult r = planOrder(g, oc, o, place, kInf);
  if (!r.found)
    return Result::failure("no split of the order meets the constraints");
  if (o.objective == Objective::Bottleneck)
    preferLeastLatency(g, order, o, place, r);
  PlanResult result;
  result.plan = std::move(r.plan);
  result.evaluation = std::move(r.evaluation);
  result.ordersTried = 1;
  placeOnDevices(g, opts, identity, result);
  result.deviceOrdersTried = identity.empty() ? 0 : 1;
  return result;
}

Expected<PlanResult> planPipeline(const Graph &g,
                                  const PlannerOptions &options) {
  using Result = Expected<PlanResult>;
  const PlannerOptions &opts = options;
  if (g.size() == 0)
    return Result::failure("graph has no nodes");
  Expected<std::vector<NodeId>> topo = g.topologicalOrder();
  if (!topo)
    return Result::failure(topo.error());
  const Topology &t = opts.cost.topology;
  if (t.levelSizes.empty() || t.levelSizes.size() != t.bandwidths.size())
    return Result::failure("topology needs one bandwidth per level");
  for (size_t l = 0; l < t.levelSizes.size(); ++l)
    if (t.levelSizes[l] < 1 || !(t.bandwidths[l] > 0))
      return Result::failure("topology levels need at least one device and "
                             "a positive bandwidth");
  int devices = t.devices();
  if (devices > 4096)
    return Result::failure("at most 4096 devices are supported");
  if (std::string bad = checkDevices(opts); !bad.empty())
    return Result::failure(bad);

  size_t nonInputs = 0;
  for (NodeId v = 0; v < g.size(); ++v)
    nonInputs += !g.node(v).isInput;
  size_t maxStages = std::max<size_t>(nonInputs, 1);
  if (opts.stages < 0)
    return Result::failure("the stage count must be positive");
  if (static_cast<size_t>(opts.stages) > maxStages)
    return Result::failure(
        "more stages than nodes: " + std::to_string(opts.stages) +
        " stages for " + std::to_string(maxStages) + " non-input nodes");
  if (opts.stages > devices)
    return Result::failure(std::to_string(opts.stages) + " stages need " +
                           std::to_string(opts.stages) + " devices, " +
                           std::to_string(devices) + " given");

  // Devices that differ: every distinct order of them when few, since
  // which device runs which stage matters; each order is planned whole.
  size_t n = g.size();
  double perOrder = double(n) * n * devices * (opts.straight ? 1 : devices);
  PlanResult result;
  std::vector<std::vector<int>> placements = {{}};
  if (!opts.devices.empty()) {
    double limit = std::min<double>(std::max(opts.deviceOrderLimit, 1),
                                    4e8 / (perOrder + 1));
    placements = deviceOrders(opts.devices, t, limit, result.allDeviceOrders);
  }
  const double placementCount = static_cast<double>(placements.size());

  // Small graphs: every order; otherwise the heuristic orders. The budget
  // keeps the exhaustive search within a few million DP steps.
  std::vector<std::vector<NodeId>> orders;
  if (opts.exhaustiveOrderLimit > 0) {
    // Enumerating costs about n^2 per order, planning one perOrder.
    size_t budget = static_cast<size_t>(std::min<double>(
        {double(opts.exhaustiveOrderLimit),
         4e7 / (perOrder * placementCount + 1), 2e5 / (double(n) * n)}));
    if (budget > 0)
      orders = allTopologicalOrders(g, budget);
    result.exhaustive = !orders.empty();
  }
  if (orders.empty())
    orders = candidateOrders(g);

  OrderResult best;
  size_t bestPlacement = 0;
  for (size_t k = 0; k < placements.size(); ++k) {
    PlannerOptions o = withDeviceOrder(opts, placements[k]);
    Placement place(o.cost.topology, o);
    OrderResult r = searchOrders(g, o, place, orders, result.exhaustive,
                                 result.ordersTried);
    if (!r.found)
      continue;
    if (!best.found || objectiveBetter(opts, r.evaluation, best.evaluation)) {
      best = std::move(r);
      bestPlacement = k;
    }
  }
  if (!opts.devices.empty())
    result.deviceOrdersTried = static_cast<int>(placements.size());

  if (!best.found) {
    double least = kInf;
    bool ratio = false;
    for (const std::vector<int> &placement : placements) {
      PlannerOptions o = withDeviceOrder(opts, placement);
      Placement place(o.cost.topology, o);
      if (!place.memoryLimited)
        continue;
      ratio = place.deviceMemory;
      for (const std::vector<NodeId> &order : orders)
        least = std::min(least, solve(buildOrderCosts(g, order), o, place,
                                      Mode::MinMemory, kInf)
                                    .value);
    }
    if (least < kInf && ratio)
      return Result::failure(
          "no plan fits the devices' memory; it takes at least " +
          ratioText(least) + " times each device's memory_bytes" +
          (opts.memoryLimitBytes > 0 ? " (or --memory-limit where lower)"
                                     : ""));
    if (least < kInf)
      return Result::failure(
          "no plan fits in " + bytesText(opts.memoryLimitBytes) +
          " bytes per device; the smallest limit that would work is " +
          bytesText(least) + " bytes");
    return Result::failure("no plan meets the constraints");
  }

  result.plan = std::move(best.plan);
  result.evaluation = std::move(best.evaluation);
  placeOnDevices(g, opts, placements[bestPlacement], result);
  return result;
}

} // namespace dpc::planner
