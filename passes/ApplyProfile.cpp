//===- ApplyProfile.cpp - Measured costs for the schedule -----------------===//
//
// Replaces the analytic `time_ms` of every costed op in the outlined
// segments by what `dpc profile` measured for its model node, so that the
// schedule builder, the simulator, plan.json's predicted step and the
// manifest's stage costs all price the step as it runs on this machine, not
// only the partition. A node's measured forward time is shared among its
// forward ops, its measured backward time among its gradient ops, in the
// proportions of their analytic times; the halves of the backward scale as
// the whole does. Ops of nodes the profile did not measure (and ops of no
// node) keep their analytic time scaled by what was measured: the ratio of
// measured to analytic time over the measured nodes, per direction, taken
// and applied without the fixed cost of a kernel call (`call_ms`), which
// the measured times already hold and which stays as it is. A
// forward op computed again in a backward (`pipe.recomputed`) costs what
// its forward op costs.
//
// A profile that measured messages (`dpc profile --message-ranks`) gives
// the module the latency measured with the job's ranks
// (pipe.message_latency_ms), which build-schedule charges every transfer,
// and where those ranks shared the profiling machine's cores, how long a
// rank waiting for a message took to resume (pipe.wake_latency_ms). Where
// its run on several stages gave each rank a core, the ranks computed
// longer (or shorter) than the profile's kernels timed alone: the caches,
// the memory and the clock are shared. A job of more than one rank takes
// the factor measured with the most ranks not above its own (else the
// fewest) on every cost (pipe.compute_factor); a job of one rank runs as
// the profile did.
//
// The profile must time a build of the module's precision (a bf16 build
// runs its convolutions and matmuls in bf16: `dpc profile --precision`).
//
// A token model profiled at several shapes (`dpc profile --seq-buckets`)
// is priced at the shape given by the `batch` and `length` options: the
// measured times there, or the fit over the measured shapes
// (planner::ShapeCosts).
//
//===----------------------------------------------------------------------===//

#include "passes/DiagnoseErrors.h"
#include "passes/Passes.h"

#include "dialects/pipe/IR/PipeOps.h"

#include "dpc/planner/Profile.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace mlir::dpc {
#define GEN_PASS_DEF_APPLYPROFILEPASS
#include "passes/Passes.h.inc"
} // namespace mlir::dpc

using namespace mlir;
using namespace mlir::dpc;
namespace planner = ::dpc::planner;

namespace {

enum class Direction { Forward, Backward, Other };

// One costed op of a segment, as the scaling sees it.
struct CostedOp {
  std::string node;
  Direction direction = Direction::Other;
  /// The whole backward: its ops define a node's analytic backward time;
  /// the two halves repeat them.
  bool wholeBackward = false;
  /// A forward op run again in a backward (pipe.recomputed): priced as its
  /// forward op, without taking a share of the node's forward time.
  bool recomputed = false;
  double analyticMs = 0;
  /// The fixed cost of the op's kernel call within analyticMs.
  double callMs = 0;
};

// New times for `ops` from the measured node times (see the file comment).
std::vector<double>
scaleToMeasured(const std::vector<CostedOp> &ops,
                const std::map<std::string, planner::NodeTimes> &measured) {
  // Per node: the analytic forward time and whole-backward time, and how
  // many ops share them (for a node whose analytic time is zero).
  struct Sums {
    double forward = 0, backward = 0;
    int forwardOps = 0, backwardOps = 0;
  };
  std::map<std::string, Sums> sums;
  for (const CostedOp &op : ops) {
    if (op.node.empty() || op.recomputed)
      continue;
    Sums &s = sums[op.node];
    if (op.direction == Direction::Forward) {
      s.forward += op.analyticMs;
      ++s.forwardOps;
    } else if (op.direction == Direction::Backward && op.wholeBackward) {
      s.backward += op.analyticMs;
      ++s.backwardOps;
    }
  }
  double measuredForward = 0, analyticForward = 0;
  double measuredBackward = 0, analyticBackward = 0;
  for (const auto &[node, s] : sums) {
    auto it = measured.find(node);
    if (it == measured.end())
      continue;
    if (s.forwardOps > 0) {
      measuredForward += it->second.forwardMs;
      analyticForward += s.forward;
    }
    if (s.backwardOps > 0) {
      measuredBackward += it->second.backwardMs;
      analyticBackward += s.backward;
    }
  }
  // The calls' fixed cost is in both the measured and the analytic sums;
  // the ratio compares what is left.
  double forwardCalls = 0, backwardCalls = 0;
  for (const CostedOp &op : ops) {
    if (op.node.empty() || op.recomputed || !measured.count(op.node))
      continue;
    if (op.direction == Direction::Forward)
      forwardCalls += op.callMs;
    else if (op.direction == Direction::Backward && op.wholeBackward)
      backwardCalls += op.callMs;
  }
  auto ratio = [](double measured, double analytic, double calls) {
    return analytic > calls
               ? std::max(0.0, measured - calls) / (analytic - calls)
               : 1.0;
  };
  double forwardRatio = ratio(measuredForward, analyticForward, forwardCalls);
  double backwardRatio =
      ratio(measuredBackward, analyticBackward, backwardCalls);

  std::vector<double> times;
  times.reserve(ops.size());
  for (const CostedOp &op : ops) {
    bool forward = op.direction == Direction::Forward || op.recomputed;
    double call = std::min(op.callMs, op.analyticMs);
    double calibrated = call + (op.analyticMs - call) *
                                   (forward ? forwardRatio : backwardRatio);
    auto it = op.node.empty() ? measured.end() : measured.find(op.node);
    auto sum = sums.find(op.node);
    if (it == measured.end() || op.direction == Direction::Other ||
        sum == sums.end()) {
      times.push_back(calibrated);
      continue;
    }
    double total = forward ? it->second.forwardMs : it->second.backwardMs;
    double analytic = forward ? sum->second.forward : sum->second.backward;
    int count = forward ? sum->second.forwardOps : sum->second.backwardOps;
    if (count == 0)
      times.push_back(calibrated);
    else if (analytic > 0)
      times.push_back(total * op.analyticMs / analytic);
    else
      times.push_back(total / count);
  }
  return times;
}

struct ApplyProfilePass
    : public mlir::dpc::impl::ApplyProfilePassBase<ApplyProfilePass> {
  using ApplyProfilePassBase::ApplyProfilePassBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    FailureOr<std::map<std::string, planner::NodeTimes>> measured =
        measuredTimes(module);
    if (failed(measured))
      return signalPassFailure();
    // A bf16 build's convolutions and matmuls take other times than an f32
    // build's: the profile must time the build's precision.
    FailureOr<std::string> precision = readProfile(
        module, [&] { return planner::loadProfilePrecision(profile); });
    if (failed(precision))
      return signalPassFailure();
    std::string built = pipe::isBf16(module) ? "bf16" : "fp32";
    if (*precision != built) {
      module.emitError("the profile times a ")
          << *precision << " build, but this build is " << built
          << "; measure it with 'dpc profile --precision " << built << "'";
      return signalPassFailure();
    }

    std::vector<Operation *> costed;
    std::vector<CostedOp> ops;
    for (auto func : module.getOps<func::FuncOp>()) {
      auto segment =
          func->getAttrOfType<StringAttr>(pipe::PipeDialect::kSegmentAttrName);
      if (!segment)
        continue;
      StringRef name = segment.getValue();
      Direction direction = name == "forward"              ? Direction::Forward
                            : name.starts_with("backward") ? Direction::Backward
                                                           : Direction::Other;
      func.walk([&](Operation *op) {
        auto cost = op->getAttrOfType<DictionaryAttr>("nn.cost");
        auto time = cost ? dyn_cast_or_null<FloatAttr>(cost.get("time_ms"))
                         : FloatAttr();
        if (!time)
          return;
        CostedOp entry;
        if (auto node = op->getAttrOfType<StringAttr>("nn.node"))
          entry.node = node.str();
        entry.direction = direction;
        entry.wholeBackward = name == "backward";
        entry.recomputed = op->hasAttr(pipe::PipeDialect::kRecomputedAttrName);
        entry.analyticMs = time.getValueAsDouble();
        if (auto call = dyn_cast_or_null<FloatAttr>(cost.get("call_ms")))
          entry.callMs = call.getValueAsDouble();
        ops.push_back(std::move(entry));
        costed.push_back(op);
      });
    }
    if (costed.empty()) {
      module.emitError("has no outlined segments with costs; run "
                       "--dpc-annotate-costs and --dpc-outline-stages first");
      return signalPassFailure();
    }

    std::vector<double> times = scaleToMeasured(ops, *measured);
    Builder b(&getContext());
    FailureOr<planner::MessageLatencies> factors = readProfile(module, [&] {
      return planner::loadMessageLatencies(profile,
                                           planner::kComputeFactorSection);
    });
    if (failed(factors))
      return signalPassFailure();
    double factor = 1;
    if (!factors->empty() && ranks(module) > 1) {
      factor = planner::messageLatencyFor(*factors, ranks(module));
      module->setAttr(pipe::PipeDialect::kComputeFactorAttrName,
                      b.getF64FloatAttr(factor));
    }
    for (auto [op, ms] : llvm::zip(costed, times)) {
      NamedAttrList fields(op->getAttrOfType<DictionaryAttr>("nn.cost"));
      fields.set("time_ms", b.getF64FloatAttr(ms * factor));
      op->setAttr("nn.cost", fields.getDictionary(&getContext()));
    }

    // The message and wake-up latencies measured with as many ranks as
    // this job's.
    for (auto [section, attrName] :
         {std::pair{planner::kMessageLatencySection,
                    pipe::PipeDialect::kMessageLatencyAttrName},
          std::pair{planner::kWakeLatencySection,
                    pipe::PipeDialect::kWakeLatencyAttrName}}) {
      FailureOr<planner::MessageLatencies> latencies = readProfile(module, [&] {
        return planner::loadMessageLatencies(profile, section);
      });
      if (failed(latencies))
        return signalPassFailure();
      if (!latencies->empty())
        module->setAttr(attrName, b.getF64FloatAttr(planner::messageLatencyFor(
                                      *latencies, ranks(module))));
    }
  }

  // What `read` reads from the profile, or failure with its error.
  template <typename Read>
  static FailureOr<std::invoke_result_t<Read>> readProfile(ModuleOp module,
                                                           Read &&read) {
    return diagnoseErrors(
        module, "cannot read the profile: ", std::forward<Read>(read));
  }

  // The ranks of the outlined module: a rank per stage (per chunks of
  // stages, with model chunks), or the stages' replicas.
  static int ranks(ModuleOp module) {
    if (auto replicas = module->getAttrOfType<DenseI64ArrayAttr>(
            pipe::PipeDialect::kReplicasAttrName)) {
      int64_t sum = 0;
      for (int64_t r : replicas.asArrayRef())
        sum += r;
      return int(sum);
    }
    std::set<int64_t> stages;
    for (auto func : module.getOps<func::FuncOp>())
      if (std::optional<int64_t> stage = pipe::getStage(func))
        stages.insert(*stage);
    return int(std::max<int64_t>(1, int64_t(stages.size()) /
                                        pipe::getNumChunks(module)));
  }

  // The node times to apply: the profile's graph, or its measured shapes
  // at (batch, length).
  FailureOr<std::map<std::string, planner::NodeTimes>>
  measuredTimes(ModuleOp module) {
    if (profile.empty())
      return module.emitError("expects a profile file (the profile option)");
    FailureOr<planner::Graph> graph =
        readProfile(module, [&] { return planner::loadProfile(profile); });
    if (failed(graph))
      return failure();
    FailureOr<std::vector<planner::MeasuredShape>> shapes = readProfile(
        module, [&] { return planner::loadProfileShapes(profile); });
    if (failed(shapes))
      return failure();
    std::map<std::string, planner::NodeTimes> times;
    if (batch == 0 && length == 0) {
      for (planner::NodeId id = 0; id < graph->size(); ++id) {
        const planner::Node &node = graph->node(id);
        if (!node.isInput)
          times[node.name] = {node.forwardMs, node.backwardMs};
      }
      return times;
    }
    if (batch < 1 || length < 1)
      return module.emitError("expects positive batch and length, or "
                              "neither");
    if (shapes->empty())
      return module.emitError("the profile '")
             << profile << "' measured one shape; a build of several "
             << "shapes needs one from 'dpc profile --seq-buckets'";
    planner::ShapeCosts costs(*shapes);
    for (planner::NodeId id = 0; id < graph->size(); ++id) {
      const planner::Node &node = graph->node(id);
      if (node.isInput)
        continue;
      if (std::optional<planner::NodeTimes> t =
              costs.estimate(node.name, batch, length))
        times[node.name] = *t;
    }
    return times;
  }
};

} // namespace
