//===- Planner.cpp - Stage partitioning with replicas ---------------------===//
//
// For one topological order, a dynamic program over suffixes finds the best
// split into contiguous stages with replica counts (SplitSearch.cpp); the
// cut sizes along the order are exact. This file chooses the orders, the
// caps of the step-time search and the devices' orders, refines the cuts
// and reports why no plan fits.
//
//===----------------------------------------------------------------------===//

#include "dpc/planner/Planner.h"

#include "SplitSearch.h"

#include "dpc/support/Error.h"

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

using namespace detail;

namespace {

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
  std::optional<Evaluation> current = evaluateIfValid(g, plan, opts.cost);
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
      std::optional<Evaluation> e = evaluateIfValid(g, trial, opts.cost);
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
    std::optional<Evaluation> e = evaluateIfValid(g, plan, opts.cost);
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
  std::optional<Evaluation> e = evaluateIfValid(g, plan, opts.cost);
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
      std::optional<Evaluation> movedEval =
          evaluateIfValid(g, moved, opts.cost);
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
  std::optional<Evaluation> e = evaluateIfValid(
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

PlanResult partitionOrder(const Graph &g, const std::vector<NodeId> &order,
                          const PlannerOptions &opts) {
  if (order.size() != g.size())
    throw InputError("order does not list every node once");
  if (std::string bad = checkDevices(opts); !bad.empty())
    throw InputError(bad);
  std::vector<int> identity(opts.devices.size());
  for (size_t k = 0; k < identity.size(); ++k)
    identity[k] = static_cast<int>(k);
  PlannerOptions o = withDeviceOrder(opts, identity);
  OrderCosts oc = buildOrderCosts(g, order);
  Placement place(o.cost.topology, o);
  OrderResult r = planOrder(g, oc, o, place, kInf);
  if (!r.found)
    throw InputError("no split of the order meets the constraints");
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

PlanResult planPipeline(const Graph &g, const PlannerOptions &options) {
  const PlannerOptions &opts = options;
  if (g.size() == 0)
    throw InputError("graph has no nodes");
  (void)g.topologicalOrder(); // throws on a cycle
  const Topology &t = opts.cost.topology;
  if (t.levelSizes.empty() || t.levelSizes.size() != t.bandwidths.size())
    throw InputError("topology needs one bandwidth per level");
  for (size_t l = 0; l < t.levelSizes.size(); ++l)
    if (t.levelSizes[l] < 1 || !(t.bandwidths[l] > 0))
      throw InputError("topology levels need at least one device and "
                       "a positive bandwidth");
  int devices = t.devices();
  if (devices > 4096)
    throw InputError("at most 4096 devices are supported");
  if (std::string bad = checkDevices(opts); !bad.empty())
    throw InputError(bad);

  size_t nonInputs = 0;
  for (NodeId v = 0; v < g.size(); ++v)
    nonInputs += !g.node(v).isInput;
  size_t maxStages = std::max<size_t>(nonInputs, 1);
  if (opts.stages < 0)
    throw InputError("the stage count must be positive");
  if (static_cast<size_t>(opts.stages) > maxStages)
    throw InputError("more stages than nodes: " + std::to_string(opts.stages) +
                     " stages for " + std::to_string(maxStages) +
                     " non-input nodes");
  if (opts.stages > devices)
    throw InputError(std::to_string(opts.stages) + " stages need " +
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
      throw InputError("no plan fits the devices' memory; it takes at least " +
                       ratioText(least) + " times each device's memory_bytes" +
                       (opts.memoryLimitBytes > 0
                            ? " (or --memory-limit where lower)"
                            : ""));
    if (least < kInf)
      throw InputError(
          "no plan fits in " + bytesText(opts.memoryLimitBytes) +
          " bytes per device; the smallest limit that would work is " +
          bytesText(least) + " bytes");
    throw InputError("no plan meets the constraints");
  }

  result.plan = std::move(best.plan);
  result.evaluation = std::move(best.evaluation);
  placeOnDevices(g, opts, placements[bestPlacement], result);
  return result;
}

} // namespace dpc::planner
