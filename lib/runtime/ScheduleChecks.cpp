//===- ScheduleChecks.cpp - What the executor checks about a schedule -----===//

#include "ScheduleChecks.h"

#include "dpc/runtime/Error.h"

#include <set>
#include <tuple>

using dpc::schedule::Instruction;
using dpc::schedule::Op;

namespace dpc::runtime {

ScheduleCheck checkSchedule(const RankManifest &manifest,
                            const schedule::Schedule &sched, int rank,
                            int ranks, const SegmentFunctions &segments,
                            const Shapes &top) {
  const std::string s = manifest.schedule;
  if (std::string problem = sched.checkLayout(); !problem.empty())
    throw Error(s + ": " + problem);
  if (sched.numStages() != manifest.stages)
    throw Error(s + ": " + std::to_string(sched.numStages()) +
                " stages but the manifest says " +
                std::to_string(manifest.stages));
  if (ranks != sched.ranks)
    throw Error("the job has " + std::to_string(ranks) +
                " ranks but the schedule has " + std::to_string(sched.ranks) +
                " (launch one rank per line of the appfile)");
  if (sched.stageOf(rank) != manifest.stage)
    throw Error("this executable runs stage " + std::to_string(manifest.stage) +
                " but was started as rank " + std::to_string(rank) +
                ", which runs stage " + std::to_string(sched.stageOf(rank)) +
                " (launch the ranks in appfile order)");
  if (sched.chunks != manifest.chunks)
    throw Error(s + ": " + std::to_string(sched.chunks) +
                " chunks per rank but the rank's object holds " +
                std::to_string(manifest.chunks));
  if (int(sched.programs.size()) != sched.ranks)
    throw Error(s + ": " + std::to_string(sched.programs.size()) +
                " programs for " + std::to_string(sched.ranks) + " ranks");
  if (int64_t(sched.microbatches) * 2 * sched.numVirtualStages() >=
      kFirstControlTag)
    throw Error(s + ": " + std::to_string(sched.microbatches) +
                " microbatches need message tags beyond the executor's "
                "range (below " +
                std::to_string(kFirstControlTag) + ")");
  schedule::VerifyOptions options;
  options.checkBlocking = false;
  schedule::VerifyResult result = schedule::verifySchedule(sched, options);
  if (!result.ok())
    throw Error(s + ": " + result.violations.front().format());
  ScheduleCheck check;
  check.promised = result.ranks.at(size_t(rank));
  check.rendezvousProven = result.blockingDeadlockFree;

  // The segments the program calls must exist.
  auto need = [&](const char *segment, SegmentFn fn, const Instruction &i) {
    if (!manifest.hasSegment(segment) || !fn)
      throw Error(s + ": rank " + std::to_string(rank) + " runs " +
                  schedule::describe(i) + " but the rank's object has no " +
                  segment + " segment");
  };
  std::set<Boundary> sendsUsed, recvsUsed;
  for (const Instruction &i : sched.programs[size_t(rank)]) {
    switch (i.op) {
    case Op::Forward:
      need("forward", segments.forward, i);
      break;
    case Op::Backward:
      need("backward", segments.backward, i);
      break;
    case Op::BackwardInput:
      need("backward_input", segments.backwardInput, i);
      break;
    case Op::BackwardWeight:
      need("backward_weight", segments.backwardWeight, i);
      break;
    case Op::OptimizerStep:
      need("optimizer", segments.optimizer, i);
      break;
    case Op::AllReduce:
      if (sched.replicasOf(manifest.stage) < 2)
        throw Error(s + ": rank " + std::to_string(rank) + " runs " +
                    schedule::describe(i) + " but stage " +
                    std::to_string(manifest.stage) + " has no replicas");
      break;
    case Op::SendStart:
    case Op::RecvStart: {
      Boundary b = boundaryOf(i, manifest.virtualStage(i.chunk));
      if (b.peer < 0 || b.peer >= manifest.numVirtualStages() ||
          sched.rankOf(b.peer, i.mb) != i.peer)
        throw Error(s + ": rank " + std::to_string(rank) + " runs " +
                    schedule::describe(i, sched.chunks) +
                    ", which crosses no boundary of stage " +
                    std::to_string(b.stage));
      (i.op == Op::SendStart ? sendsUsed : recvsUsed).insert(b);
      break;
    }
    default:
      break;
    }
  }
  for (auto [list, used, verb] :
       {std::tuple(&top.sendLayouts, &sendsUsed, "sends"),
        std::tuple(&top.recvLayouts, &recvsUsed, "recvs")})
    for (auto &[b, layout] : *list)
      if (!used->count(b))
        throw Error("manifest: " + std::string(verb) + " tag " +
                    std::to_string(layout.entries.front().tag) + " (" +
                    transferKindName(b.what) + ", peer_stage " +
                    std::to_string(b.peer) + ") is never moved by " + s +
                    ", which only transfers between neighbouring stages");
  check.sends.assign(sendsUsed.begin(), sendsUsed.end());
  check.recvs.assign(recvsUsed.begin(), recvsUsed.end());
  return check;
}

void checkPlannedStep(int64_t step, const StepPlan &plan,
                      const schedule::Schedule &fixed,
                      const std::string &scheduleName,
                      const std::vector<Shapes> &shapes) {
  const schedule::Schedule &p = plan.schedule;
  std::string at = "step " + std::to_string(step + 1) + ": planned schedule: ";
  if (p.ranks != fixed.ranks || p.chunks != fixed.chunks ||
      p.kind != fixed.kind || p.replicas != fixed.replicas)
    throw Error(at + "its kind or rank layout differs from " + scheduleName +
                "'s");
  if (std::string problem = p.checkLayout(); !problem.empty())
    throw Error(at + problem);
  if (int64_t(p.microbatches) * 2 * p.numVirtualStages() >=
      schedule::kScheduleTagLimit)
    throw Error(at + std::to_string(p.microbatches) +
                " microbatches need more message tags than the schedule's " +
                std::to_string(schedule::kScheduleTagLimit));
  if (plan.microbatches.size() != size_t(p.microbatches))
    throw Error(at + "it runs " + std::to_string(p.microbatches) +
                " microbatches but the plan has " +
                std::to_string(plan.microbatches.size()));
  for (size_t mb = 0; mb < plan.microbatches.size(); ++mb) {
    const PlannedMicrobatch &planned = plan.microbatches[mb];
    if (planned.bucket < 0 || size_t(planned.bucket) >= shapes.size())
      throw Error(at + "microbatch " + std::to_string(mb) + " names bucket " +
                  std::to_string(planned.bucket) + " of " +
                  std::to_string(shapes.size()));
    int64_t rows = shapes[size_t(planned.bucket)].batch;
    if (planned.samples.empty() || int64_t(planned.samples.size()) > rows)
      throw Error(at + "microbatch " + std::to_string(mb) + " has " +
                  std::to_string(planned.samples.size()) +
                  " samples; its bucket holds 1 to " + std::to_string(rows));
  }
}

std::string instructionWhere(int64_t step, size_t index, const Instruction &i,
                             int chunks) {
  return "step " + std::to_string(step + 1) + ": instruction " +
         std::to_string(index) + " (" + schedule::describe(i, chunks) + "): ";
}

void checkStepEnd(const std::string &what, const Transfers &transfers,
                  const StashStore &stashes, const ParamStore &params) {
  for (std::string left : {transfers.leftoverInFlight(), stashes.leftover(),
                           transfers.leftoverReceived(), params.leftover()})
    if (!left.empty())
      throw Error(what + ": at the end: " + left);
}

} // namespace dpc::runtime
