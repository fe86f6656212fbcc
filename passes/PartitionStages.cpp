//===- PartitionStages.cpp - Assign forward ops to pipeline stages --------===//
//
// A thin adapter over lib/planner: IR -> planner::Graph, plan, and the plan
// back onto the IR as `pipe.stage` attributes.
//
//===----------------------------------------------------------------------===//

#include "passes/DiagnoseErrors.h"
#include "passes/Passes.h"

#include "dialects/nn/IR/NNOps.h"
#include "dialects/pipe/IR/PipeOps.h"

#include "dpc/planner/PlanJson.h"
#include "dpc/planner/Planner.h"
#include "dpc/planner/Profile.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringSet.h"

#include <fstream>
#include <map>

namespace mlir::dpc {
#define GEN_PASS_DEF_PARTITIONSTAGESPASS
#include "passes/Passes.h.inc"
} // namespace mlir::dpc

using namespace mlir;
using namespace mlir::dpc;
namespace planner = ::dpc::planner;

namespace {

// The planner's view of @main: nodes for the arguments (data inputs) and for
// every costed op, with the ops they stand for.
struct StageGraph {
  planner::Graph graph;
  std::vector<Operation *> ops; // per node; null for an argument
};

double costField(DictionaryAttr cost, StringRef name) {
  Attribute attr = cost.get(name);
  if (auto f = dyn_cast_or_null<FloatAttr>(attr))
    return f.getValueAsDouble();
  if (auto i = dyn_cast_or_null<IntegerAttr>(attr))
    return static_cast<double>(i.getInt());
  return 0;
}

FailureOr<StageGraph> buildStageGraph(func::FuncOp main) {
  StageGraph sg;
  llvm::DenseMap<Value, planner::NodeId> producer;
  llvm::StringSet<> used;
  for (BlockArgument arg : main.getArguments()) {
    planner::Node node;
    node.name = "input" + std::to_string(arg.getArgNumber());
    if (auto loc = dyn_cast<NameLoc>(arg.getLoc()))
      node.name = loc.getName().str();
    used.insert(node.name);
    node.isInput = true;
    producer[arg] = sg.graph.addNode(node);
    sg.ops.push_back(nullptr);
  }
  for (Operation &op : main.getBody().front().without_terminator()) {
    if (isa<nn::ParamOp>(op))
      continue;
    auto cost = op.getAttrOfType<DictionaryAttr>("nn.cost");
    if (!cost)
      return op.emitError("has no nn.cost; run --dpc-annotate-costs first "
                          "(partition-stages plans the forward pass, before "
                          "autodiff)");
    planner::Node node;
    auto name = op.getAttrOfType<StringAttr>("nn.node");
    if (!name || used.contains(name.getValue()))
      return op.emitError("has no unique nn.node name; run "
                          "--dpc-annotate-costs first");
    node.name = name.str();
    used.insert(node.name);
    node.description = op.getName().getStringRef().str();
    node.forwardMs = costField(cost, "time_ms");
    node.backwardMs = costField(cost, "grad_time_ms");
    node.activationBytes = costField(cost, "activation_bytes");
    node.parameterBytes = costField(cost, "parameter_bytes");
    planner::NodeId id = sg.graph.addNode(node);
    sg.ops.push_back(&op);
    for (Value operand : op.getOperands())
      if (auto it = producer.find(operand); it != producer.end())
        sg.graph.addEdge(it->second, id);
    for (Value result : op.getResults())
      producer[result] = id;
  }
  return sg;
}

struct PartitionStagesPass
    : public mlir::dpc::impl::PartitionStagesPassBase<PartitionStagesPass> {
  using PartitionStagesPassBase::PartitionStagesPassBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    FailureOr<func::FuncOp> mainOr = getMainFunc(module);
    if (failed(mainOr))
      return signalPassFailure();
    func::FuncOp main = *mainOr;
    FailureOr<planner::PlannerOptions> options = plannerOptions(module);
    if (failed(options))
      return signalPassFailure();
    FailureOr<StageGraph> sg = buildStageGraph(main);
    if (failed(sg))
      return signalPassFailure();
    if (!profile.empty() && failed(applyProfile(module, sg->graph)))
      return signalPassFailure();
    if (!graphOutput.empty()) {
      std::ofstream out(graphOutput);
      out << planner::writeJsonProfile(sg->graph);
      if (!out) {
        module.emitError("cannot write '") << graphOutput << "'";
        return signalPassFailure();
      }
    }

    if (!fixedStages.empty()) {
      FailureOr<planner::Plan> plan = fixedPlan(module, *sg);
      if (failed(plan) || failed(applyPlan(module, main, *sg, *plan)))
        return signalPassFailure();
      return;
    }
    FailureOr<planner::PlanResult> result =
        diagnoseErrors(module, "cannot partition @main: ", [&] {
          return planner::planPipeline(sg->graph, *options);
        });
    if (failed(result))
      return signalPassFailure();
    if (!replicas.empty() &&
        failed(pinReplicas(module, sg->graph, *result, *options)))
      return signalPassFailure();
    if (failed(applyPlan(module, main, *sg, result->plan)))
      return signalPassFailure();
    if (!result->rankDevices.empty())
      setDevices(module, result->plan, options->devices, result->rankDevices);
    if (!planOutput.empty() &&
        failed(writePlan(module, *sg, *result, *options)))
      return signalPassFailure();
  }

  /// The plan `fixed-stages` describes, with `replicas` (or one) ranks
  /// per stage.
  FailureOr<planner::Plan> fixedPlan(ModuleOp module, const StageGraph &sg) {
    int64_t numStages = stages * virtualStages;
    size_t inputs = llvm::count(sg.ops, nullptr);
    if (sg.ops.size() - inputs != fixedStages.size())
      return module.emitError("fixed-stages gives ")
             << fixedStages.size() << " stages for the "
             << sg.ops.size() - inputs << " ops of @main";
    planner::Plan plan;
    plan.stages.resize(numStages);
    size_t next = 0;
    for (auto [id, op] : llvm::enumerate(sg.ops)) {
      if (!op)
        continue;
      int64_t stage = fixedStages[next++];
      if (stage < 0 || stage >= numStages)
        return op->emitError("fixed-stages puts this op on stage ")
               << stage << " of " << numStages;
      plan.stages[stage].nodes.push_back(id);
    }
    int firstRank = 0;
    for (auto [stage, stagePlan] : llvm::enumerate(plan.stages)) {
      if (stage < replicas.size())
        stagePlan.replicas = static_cast<int>(replicas[stage]);
      stagePlan.firstRank = firstRank;
      firstRank += stagePlan.replicas;
    }
    return plan;
  }

  /// Gives the straight plan the replicas the user asked for and evaluates
  /// it on the devices they add up to.
  LogicalResult pinReplicas(ModuleOp module, const planner::Graph &graph,
                            planner::PlanResult &result,
                            planner::PlannerOptions &options) {
    int firstRank = 0;
    for (auto [stage, count] : llvm::zip_equal(result.plan.stages, replicas)) {
      stage.replicas = static_cast<int>(count);
      stage.firstRank = firstRank;
      firstRank += stage.replicas;
    }
    options.cost.topology = planner::Topology::flat(firstRank, bandwidth);
    FailureOr<planner::Evaluation> evaluation =
        diagnoseErrors(module, "cannot evaluate the plan with replicas: ", [&] {
          return planner::evaluate(graph, result.plan, options.cost);
        });
    if (failed(evaluation))
      return failure();
    result.evaluation = *evaluation;
    return success();
  }

  // Measured forward and backward times replace the analytic ones, node by
  // node; every costed op must have been measured.
  LogicalResult applyProfile(ModuleOp module, planner::Graph &graph) {
    FailureOr<planner::Graph> measured =
        diagnoseErrors(module, "cannot read the profile: ", [&] {
          return planner::loadProfile(profile);
        });
    if (failed(measured))
      return failure();
    for (planner::NodeId id = 0; id < graph.size(); ++id) {
      planner::Node &node = graph.node(id);
      if (node.isInput)
        continue;
      std::optional<planner::NodeId> match = measured->find(node.name);
      if (!match)
        return module.emitError("the profile '")
               << profile << "' has no node '" << node.name
               << "'; profile this model with 'dpc profile'";
      node.forwardMs = measured->node(*match).forwardMs;
      node.backwardMs = measured->node(*match).backwardMs;
    }
    return success();
  }

  FailureOr<planner::PlannerOptions> plannerOptions(ModuleOp module) {
    planner::PlannerOptions options;
    // A fixed partition needs no devices.
    const bool onCluster = !cluster.empty() && fixedStages.empty();
    if (onCluster) {
      if (devices > 0)
        return module.emitError("expects cluster or devices, not both");
      if (!replicas.empty() || virtualStages > 1)
        return module.emitError("cluster plans one model chunk per rank with "
                                "the replicas the planner picks; it cannot be "
                                "combined with replicas or virtual-stages");
    } else if ((stages > 0) == (devices > 0)) {
      return module.emitError("expects exactly one of stages and devices");
    }
    if (stages < 0 || devices < 0 || microbatches < 1 || !(bandwidth > 0) ||
        memoryLimit < 0)
      return module.emitError("expects positive stages/devices, "
                              "microbatches and bandwidth");
    if (virtualStages < 1)
      return module.emitError("expects virtual-stages >= 1");
    if (!replicas.empty()) {
      if (int64_t(replicas.size()) != stages)
        return module.emitError("replicas lists ")
               << replicas.size() << " stages but stages is "
               << stages.getValue();
      if (llvm::any_of(replicas, [](int64_t r) { return r < 1; }))
        return module.emitError("replicas must be positive");
      if (virtualStages > 1)
        return module.emitError(
            "replicas cannot be combined with virtual-stages");
    }
    if (virtualStages > 1 && (schedule != "interleaved" || stages < 1))
      return module.emitError("virtual-stages applies to the interleaved "
                              "schedule with a stage count");
    // Each model chunk is planned as a stage of its own.
    int deviceCount = stages > 0 ? stages * virtualStages : devices;
    options.cost.topology = planner::Topology::flat(deviceCount, bandwidth);
    if (onCluster) {
      FailureOr<planner::Cluster> loaded =
          diagnoseErrors(module, "cannot read the cluster: ", [&] {
            return planner::loadCluster(cluster);
          });
      if (failed(loaded))
        return failure();
      options.cost.topology = loaded->topology;
      options.devices = std::move(loaded->devices);
    }
    options.cost.microbatches = microbatches;
    if (pipe::isBf16(module))
      options.cost.transferFactor = 0.5;
    if (!planner::parseOptimizerStateFactor(optimizer,
                                            options.cost.optimizerStateFactor))
      return module.emitError("unknown optimizer '")
             << optimizer << "'; expected sgd, adam or adamw";
    options.cost.shardOptimizer = shardOptimizer;
    std::string kind = schedule;
    // Interleaved and zero-bubble are synchronous like 1F1B and are planned
    // as 1F1B (zb-2p keeps more in flight, which the schedule's verified
    // peak then judges); auto picks 1f1b, zb-h1 or zb-2p after the partition.
    if (kind == "interleaved" || kind == "zb-h1" || kind == "zb-2p" ||
        kind == "auto")
      kind = "1f1b";
    if (!planner::parseScheduleKind(kind, options.cost.schedule))
      return module.emitError("unknown schedule '") << schedule << "'";
    options.objective =
        options.cost.schedule == planner::ScheduleKind::PipeDream
            ? planner::Objective::Bottleneck
            : planner::Objective::Step;
    // A forced stage count means one device per stage. PipeDream's weight
    // stashing runs on unreplicated stages only (its replicas would need
    // their own weight versions), so with --devices it plans straight too.
    options.straight =
        stages > 0 || options.cost.schedule == planner::ScheduleKind::PipeDream;
    options.stages = stages * virtualStages;
    options.memoryLimitBytes = memoryLimit;
    return options;
  }

  LogicalResult applyPlan(ModuleOp module, func::FuncOp main,
                          const StageGraph &sg, const planner::Plan &plan) {
    for (auto [stage, stagePlan] : llvm::enumerate(plan.stages))
      for (planner::NodeId id : stagePlan.nodes)
        if (Operation *op = sg.ops[id])
          pipe::setStage(op, stage);
    // A parameter lives on one stage, its owner: the first stage that reads
    // it, so that its value travels downstream with the forward pass and the
    // gradients of its other reads come back upstream with the backward
    // pass. Those are ordinary transfers: insert-send-recv carries the value
    // to every stage that reads it, autodiff sums the gradients of all reads
    // on the owner before its update, and the schedule moves, verifies and
    // simulates them with the activations of each microbatch. A frozen
    // parameter is a constant of the model: each stage that reads it gets
    // its own copy from the weights file instead.
    SmallVector<nn::ParamOp> params(main.getOps<nn::ParamOp>());
    for (nn::ParamOp param : params) {
      std::map<int64_t, SmallVector<OpOperand *>> usesByStage;
      for (OpOperand &use : param->getUses())
        if (std::optional<int64_t> stage = pipe::getStage(use.getOwner()))
          usesByStage[*stage].push_back(&use);
      if (usesByStage.empty()) {
        pipe::setStage(param, 0);
        continue;
      }
      pipe::setStage(param, usesByStage.begin()->first);
      if (!param.getFrozen())
        continue;
      OpBuilder builder(param);
      for (auto &[stage, uses] : llvm::drop_begin(usesByStage)) {
        Operation *copy = builder.clone(*param);
        pipe::setStage(copy, stage);
        for (OpOperand *use : uses)
          use->set(copy->getResult(0));
      }
    }
    Builder b(module.getContext());
    SmallVector<int64_t> replicas;
    for (const planner::StagePlan &stagePlan : plan.stages)
      replicas.push_back(stagePlan.replicas);
    module->setAttr(pipe::PipeDialect::kNumStagesAttrName,
                    b.getI64IntegerAttr(plan.stages.size()));
    module->setAttr(pipe::PipeDialect::kReplicasAttrName,
                    b.getDenseI64ArrayAttr(replicas));
    if (virtualStages > 1)
      module->setAttr(pipe::PipeDialect::kChunksAttrName,
                      b.getI64IntegerAttr(virtualStages));
    // The samples per microbatch: the leading dimension of the data.
    for (BlockArgument arg : main.getArguments()) {
      auto type = cast<RankedTensorType>(arg.getType());
      if (type.getRank() > 0) {
        module->setAttr(pipe::PipeDialect::kMicrobatchSizeAttrName,
                        b.getI64IntegerAttr(type.getDimSize(0)));
        break;
      }
    }
    return success();
  }

  /// A plan on a cluster: each stage's speed (its slowest replica's) and
  /// each rank's device memory, for the schedule's costs and memory checks.
  void setDevices(ModuleOp module, const planner::Plan &plan,
                  const std::vector<planner::Device> &devices,
                  const std::vector<int> &rankDevices) {
    SmallVector<double> speeds;
    SmallVector<int64_t> memory;
    size_t rank = 0;
    for (const planner::StagePlan &stagePlan : plan.stages) {
      double speed = 0;
      for (int k = 0; k < stagePlan.replicas; ++k, ++rank) {
        const planner::Device &device = devices[rankDevices[rank]];
        speed = k == 0 ? device.speed : std::min(speed, device.speed);
        memory.push_back(int64_t(device.memoryBytes));
      }
      speeds.push_back(speed);
    }
    Builder b(module.getContext());
    module->setAttr(pipe::PipeDialect::kStageSpeedsAttrName,
                    b.getDenseF64ArrayAttr(speeds));
    module->setAttr(pipe::PipeDialect::kRankMemoryAttrName,
                    b.getDenseI64ArrayAttr(memory));
  }

  LogicalResult writePlan(ModuleOp module, const StageGraph &sg,
                          const planner::PlanResult &result,
                          const planner::PlannerOptions &options) {
    nlohmann::ordered_json plan =
        planner::planToJson(sg.graph, result, options);
    // The planner saw one device per model chunk; the job has one per rank.
    if (virtualStages > 1) {
      plan["devices"] = stages.getValue();
      plan["virtual_stages"] = virtualStages.getValue();
    }
    if (plan.contains("cluster"))
      plan["cluster"]["file"] = cluster.getValue();
    std::ofstream out(planOutput);
    out << plan.dump(2) << "\n";
    if (!out)
      return module.emitError("cannot write the plan to '")
             << planOutput << "'";
    return success();
  }
};

} // namespace
