//===- CostModel.cpp - PipeDream's cost model, exactly --------------------===//

#include "dpc/planner/CostModel.h"

#include "dpc/schedule/Schedule.h"
#include "dpc/support/Error.h"

#include <algorithm>
#include <cassert>

namespace dpc::planner {

Topology Topology::flat(int devices, double bandwidth) {
  Topology t;
  t.levelSizes = {devices};
  t.bandwidths = {bandwidth};
  return t;
}

int Topology::devices() const {
  int n = 1;
  for (int s : levelSizes)
    n *= s;
  return n;
}

double Topology::bandwidth(int first, int last) const {
  if (first > last)
    std::swap(first, last);
  int group = 1;
  for (size_t l = 0; l < levelSizes.size(); ++l) {
    group *= levelSizes[l];
    if (first / group == last / group)
      return bandwidths[l];
  }
  return bandwidths.back();
}

int Topology::alignment() const {
  int a = 1;
  for (size_t l = 0; l + 1 < levelSizes.size(); ++l)
    a *= levelSizes[l];
  return a;
}

namespace {

// The row of the kinds' table (lib/schedule/Schedule.cpp) that a planner
// kind prices; the table's `planned` column names these three.
schedule::ScheduleKind builtKind(ScheduleKind kind) {
  switch (kind) {
  case ScheduleKind::PipeDream:
    return schedule::ScheduleKind::PipeDream;
  case ScheduleKind::GPipe:
    return schedule::ScheduleKind::GPipe;
  case ScheduleKind::OneFOneB:
    return schedule::ScheduleKind::OneFOneB;
  }
  return schedule::ScheduleKind::Custom;
}

} // namespace

const char *scheduleName(ScheduleKind kind) {
  return schedule::kindName(builtKind(kind));
}

bool parseScheduleKind(const std::string &text, ScheduleKind &kind) {
  schedule::ScheduleKind named;
  if (!schedule::parseKind(text, named) ||
      !schedule::takes(schedule::KindUse::Plan, named))
    return false;
  for (ScheduleKind k :
       {ScheduleKind::PipeDream, ScheduleKind::GPipe, ScheduleKind::OneFOneB}) {
    if (builtKind(k) == named) {
      kind = k;
      return true;
    }
  }
  return false;
}

bool parseOptimizerStateFactor(const std::string &optimizer, double &factor) {
  if (optimizer == "sgd")
    factor = 1;
  else if (optimizer == "adam" || optimizer == "adamw")
    factor = 2;
  else
    return false;
  return true;
}

double StageCost::time() const {
  return std::max(computeSeconds, std::max(recvSeconds, sendSeconds));
}

double stageComputeSeconds(double computeSeconds, double parameterBytes,
                           int replicas, double allreduceBandwidth,
                           double speed) {
  // The allreduce is communication: the device's speed does not change it.
  computeSeconds /= speed;
  if (replicas <= 1)
    return computeSeconds;
  double r = replicas;
  double allreduce = 4.0 * (r - 1) * parameterBytes / (allreduceBandwidth * r);
  return (computeSeconds + allreduce) / r;
}

double stageSpeed(const CostOptions &options, int first, int replicas) {
  if (options.rankSpeeds.empty())
    return 1;
  double speed = options.rankSpeeds[first];
  for (int r = first + 1; r < first + replicas; ++r)
    speed = std::min(speed, options.rankSpeeds[r]);
  return speed;
}

double cutSeconds(double cutBytes, int replicas, double bandwidth) {
  return 2.0 * cutBytes / (bandwidth * replicas);
}

int stageInFlight(const CostOptions &options, int replicas,
                  int devicesFromHere) {
  // Each replica takes every replicas-th microbatch, so it holds its share
  // of what the stage as a whole keeps in flight.
  auto share = [&](int total) { return (total + replicas - 1) / replicas; };
  int m = std::max(options.microbatches, 1);
  switch (options.schedule) {
  case ScheduleKind::PipeDream:
    return std::max(share(devicesFromHere), 1);
  case ScheduleKind::GPipe:
    return share(m);
  case ScheduleKind::OneFOneB:
    return std::max(std::min(share(m), share(devicesFromHere)), 1);
  }
  return 1;
}

double stageStateFactor(const CostOptions &options, int replicas) {
  double share = options.shardOptimizer && replicas > 1 ? 1.0 / replicas : 1.0;
  return 2.0 + options.optimizerStateFactor * share;
}

double stageMemoryBytes(const CostOptions &options, double parameterBytes,
                        double activationBytes, int inFlight, int replicas) {
  double bytes = parameterBytes * stageStateFactor(options, replicas);
  if (options.schedule == ScheduleKind::PipeDream)
    bytes += (inFlight - 1) * parameterBytes; // stashed weight versions
  return bytes + inFlight * activationBytes;
}

void predictStep(const CostOptions &options, Evaluation &eval) {
  double latency = 0, busy = 0;
  eval.bottleneckSeconds = 0;
  eval.peakMemoryBytes = 0;
  for (const StageCost &s : eval.stages) {
    eval.bottleneckSeconds = std::max(eval.bottleneckSeconds, s.time());
    eval.peakMemoryBytes = std::max(eval.peakMemoryBytes, s.memoryBytes);
    latency += s.latency();
    busy += s.computeSeconds;
  }
  int m = std::max(options.microbatches, 1);
  bool async = options.schedule == ScheduleKind::PipeDream;
  // PipeDream's steady state finishes one microbatch per bottleneck; a
  // synchronous schedule fills and drains the pipeline once per step.
  eval.stepSeconds = async ? m * eval.bottleneckSeconds
                           : latency + (m - 1) * eval.bottleneckSeconds;
  // Every device of stage s computes for computeSeconds per microbatch; the
  // rest of the step it waits.
  double meanBusy = eval.stages.empty() ? 0 : busy / eval.stages.size();
  double busyFraction = 0;
  if (eval.stepSeconds > 0)
    busyFraction = m * meanBusy / eval.stepSeconds;
  eval.bubbleFraction = std::max(0.0, 1.0 - busyFraction);
}

namespace {

/// Costs `plan` into `eval`; returns why the plan is not a valid pipeline,
/// "" when it is one.
std::string costPlan(const Graph &graph, const Plan &plan,
                     const CostOptions &options, Evaluation &eval) {
  size_t numStages = plan.stages.size();
  int devices = options.topology.devices();
  if (numStages == 0)
    return "plan has no stages";
  if (!options.rankSpeeds.empty() &&
      options.rankSpeeds.size() != static_cast<size_t>(devices))
    return "the cost options give " +
           std::to_string(options.rankSpeeds.size()) + " rank speeds for " +
           std::to_string(devices) + " devices";

  std::vector<int> stageOf(graph.size(), -1);
  std::vector<int> rankOwner(devices, -1);
  for (size_t s = 0; s < numStages; ++s) {
    const StagePlan &stage = plan.stages[s];
    if (stage.nodes.empty())
      return "stage " + std::to_string(s) + " has no nodes";
    if (stage.replicas < 1 || stage.firstRank < 0 ||
        stage.firstRank + stage.replicas > devices)
      return "stage " + std::to_string(s) + " has ranks outside the " +
             std::to_string(devices) + " devices";
    for (int r = stage.firstRank; r < stage.firstRank + stage.replicas; ++r) {
      if (rankOwner[r] >= 0)
        return "rank " + std::to_string(r) + " is in two stages";
      rankOwner[r] = static_cast<int>(s);
    }
    for (NodeId v : stage.nodes) {
      if (v >= graph.size())
        return "plan names a node outside the graph";
      if (stageOf[v] >= 0)
        return "node '" + graph.node(v).name + "' is in two stages";
      stageOf[v] = static_cast<int>(s);
    }
  }

  for (NodeId v = 0; v < graph.size(); ++v)
    if (stageOf[v] < 0)
      return "node '" + graph.node(v).name + "' is in no stage";

  eval.stages.resize(numStages);
  eval.cutBytes.assign(numStages - 1, 0.0);
  std::vector<double> compute(numStages), params(numStages), acts(numStages);
  for (NodeId v = 0; v < graph.size(); ++v) {
    int s = stageOf[v];
    if (graph.node(v).isInput && s != 0)
      return "input '" + graph.node(v).name + "' is not in the first stage";
    int lastReader = s;
    for (NodeId w : graph.successors(v)) {
      if (stageOf[w] < s)
        return "edge " + graph.node(v).name + " -> " + graph.node(w).name +
               " goes from stage " + std::to_string(s) + " back to stage " +
               std::to_string(stageOf[w]);
      lastReader = std::max(lastReader, stageOf[w]);
    }
    // The activation crosses every cut between its stage and its last reader.
    for (int c = s; c < lastReader; ++c)
      eval.cutBytes[c] += graph.activationBytes(v);
    compute[s] += graph.computeSeconds(v);
    params[s] += graph.parameterBytes(v);
    acts[s] += graph.activationBytes(v);
  }

  const Topology &topo = options.topology;
  int devicesFromHere = 0;
  for (size_t i = numStages; i-- > 0;) {
    const StagePlan &st = plan.stages[i];
    StageCost &cost = eval.stages[i];
    int first = st.firstRank, last = st.firstRank + st.replicas - 1;
    devicesFromHere += st.replicas;
    cost.computeSeconds = stageComputeSeconds(
        compute[i], params[i], st.replicas, topo.bandwidth(first, last),
        stageSpeed(options, first, st.replicas));
    double received = 0;
    if (i > 0) {
      const StagePlan &prev = plan.stages[i - 1];
      int neighbour = prev.firstRank + prev.replicas - 1;
      received = eval.cutBytes[i - 1];
      cost.recvSeconds =
          cutSeconds(received * options.transferFactor, st.replicas,
                     topo.bandwidth(std::min(first, neighbour),
                                    std::max(last, neighbour)));
    }
    if (i + 1 < numStages) {
      int neighbour = plan.stages[i + 1].firstRank;
      cost.sendSeconds =
          cutSeconds(eval.cutBytes[i] * options.transferFactor, st.replicas,
                     topo.bandwidth(std::min(first, neighbour),
                                    std::max(last, neighbour)));
    }
    cost.inFlight = stageInFlight(options, st.replicas, devicesFromHere);
    cost.memoryBytes = stageMemoryBytes(options, params[i], acts[i] + received,
                                        cost.inFlight, st.replicas);
  }
  eval.usedDevices = devicesFromHere;
  predictStep(options, eval);
  return "";
}

} // namespace

Evaluation evaluate(const Graph &graph, const Plan &plan,
                    const CostOptions &options) {
  Evaluation eval;
  if (std::string bad = costPlan(graph, plan, options, eval); !bad.empty())
    throw Error(bad);
  return eval;
}

std::optional<Evaluation> evaluateIfValid(const Graph &graph, const Plan &plan,
                                          const CostOptions &options) {
  Evaluation eval;
  if (!costPlan(graph, plan, options, eval).empty())
    return std::nullopt;
  return eval;
}

} // namespace dpc::planner
