//===- Simulator.cpp - Predicted timelines of a pipeline schedule ---------===//
//
// Each rank runs its stream in order on its own clock. Compute takes its
// stage's cost; Starts take no time. A transfer begins once both its send and
// its receive have started (a rendezvous, as large MPI messages and NCCL
// send/recv behave) and lasts latency + bytes / bandwidth; a Finish waits for
// it. Ranks are advanced round-robin as far as their transfers allow, so each
// instruction is timed once: the cost is linear in the stream lengths.
//
//===----------------------------------------------------------------------===//

#include "dpc/schedule/Simulator.h"

#include "Matching.h"

#include <algorithm>
#include <limits>

namespace dpc::schedule {

namespace {

EventKind computeKind(Op op) {
  switch (op) {
  case Op::Forward:
    return EventKind::Forward;
  case Op::Backward:
    return EventKind::Backward;
  case Op::BackwardInput:
    return EventKind::BackwardInput;
  case Op::BackwardWeight:
    return EventKind::BackwardWeight;
  case Op::OptimizerStep:
    return EventKind::Optimizer;
  case Op::AllReduce:
    return EventKind::AllReduce;
  case Op::LoadMicrobatch:
    return EventKind::Load;
  default:
    return EventKind::Other;
  }
}

} // namespace

std::string simulateSchedule(const Schedule &s, const SimulateOptions &opts,
                             SimulateResult &result) {
  constexpr double kUnset = -1;
  int p = s.ranks;
  if (static_cast<int>(s.programs.size()) != p ||
      static_cast<int>(s.stages.size()) != s.numVirtualStages())
    return "schedule has " + std::to_string(s.programs.size()) +
           " programs and " + std::to_string(s.stages.size()) + " stages for " +
           std::to_string(p) + " ranks";
  for (int r = 0; r < p; ++r)
    for (const Instruction &inst : s.programs[r])
      if (inst.chunk < 0 || inst.chunk >= s.chunks ||
          (isTransfer(inst.op) && (inst.peer < 0 || inst.peer >= p)))
        return "rank " + std::to_string(r) + ": malformed instruction (" +
               describe(inst, s.chunks) + "); run the verifier";
  detail::TransferPairs pairs = detail::pairTransfers(s);

  result = SimulateResult();
  result.start.resize(p);
  result.end.resize(p);
  for (int r = 0; r < p; ++r) {
    result.start[r].assign(s.programs[r].size(), kUnset);
    result.end[r].assign(s.programs[r].size(), kUnset);
  }
  result.rankBusy.assign(p, 0);
  result.rankEnd.assign(p, 0);

  // A microbatch's own factors, for schedules of unequal microbatches.
  auto factor = [](const std::vector<double> &factors, int mb) {
    return mb >= 0 && size_t(mb) < factors.size() ? factors[size_t(mb)] : 1.0;
  };
  auto transferTime = [&](double bytes) {
    double t = opts.latency;
    if (opts.bandwidth > 0)
      t += bytes / opts.bandwidth;
    return t;
  };
  auto cost = [&](int r, const Instruction &inst) {
    if (inst.op == Op::OptimizerStep)
      return opts.optimizerStep;
    return s.stage(r, inst.chunk).computeMs(inst.op) *
           factor(s.microbatchCompute, inst.mb);
  };

  std::vector<size_t> pc(p, 0);
  std::vector<double> clock(p, 0);
  bool progress = true;
  while (progress) {
    progress = false;
    for (int r = 0; r < p; ++r) {
      const auto &program = s.programs[r];
      while (pc[r] < program.size()) {
        size_t i = pc[r];
        const Instruction &inst = program[i];
        double begin = clock[r], finish = clock[r];
        if (inst.op == Op::AllReduce) {
          // A collective: it starts when the last replica of the stage gets
          // there and ends on all of them together.
          int stage = s.stageOf(r), first = s.firstRankOf(stage);
          int group = s.replicasOf(stage);
          bool all = true;
          for (int q = first; q < first + group && all; ++q)
            all = pc[q] < s.programs[q].size() &&
                  s.programs[q][pc[q]].op == Op::AllReduce;
          if (!all)
            break;
          for (int q = first; q < first + group; ++q)
            begin = std::max(begin, clock[q]);
          // A ring all-reduce moves 2 (g - 1) / g of the gradients.
          finish = begin + opts.allReduce +
                   transferTime(2.0 * double(inst.bytes) * (group - 1) / group);
          for (int q = first; q < first + group; ++q) {
            if (q == r)
              continue;
            result.start[q][pc[q]] = begin;
            result.end[q][pc[q]] = finish;
            result.rankBusy[q] += finish - begin;
            clock[q] = finish;
            ++pc[q];
          }
        } else if (inst.op == Op::SendFinish || inst.op == Op::RecvFinish) {
          int st = pairs.startOf[r][i];
          int j = st < 0 ? -1 : pairs.partner[r][st];
          if (j < 0 || result.start[inst.peer][j] == kUnset)
            break; // the peer has not started its side yet
          double both =
              std::max(result.start[r][st], result.start[inst.peer][j]);
          finish =
              std::max(clock[r],
                       both + transferTime(double(inst.bytes) *
                                           factor(s.microbatchBytes, inst.mb)));
        } else {
          finish = begin + cost(r, inst);
        }
        result.start[r][i] = begin;
        result.end[r][i] = finish;
        if (isCompute(inst.op) || inst.op == Op::OptimizerStep ||
            inst.op == Op::AllReduce)
          result.rankBusy[r] += finish - begin;
        clock[r] = finish;
        ++pc[r];
        progress = true;
      }
    }
  }
  for (int r = 0; r < p; ++r)
    if (pc[r] < s.programs[r].size())
      return "rank " + std::to_string(r) + ": instruction " +
             std::to_string(pc[r]) + " (" +
             describe(s.programs[r][pc[r]], s.chunks) +
             "): the streams deadlock; run the verifier for details";

  for (int r = 0; r < p; ++r) {
    result.rankEnd[r] = clock[r];
    result.stepTime = std::max(result.stepTime, clock[r]);
    result.busyTime += result.rankBusy[r];
  }
  double total = result.stepTime * p;
  result.bubbleFraction = total > 0 ? (total - result.busyTime) / total : 0;

  if (!opts.recordTimeline)
    return "";
  Timeline &tl = result.timeline;
  tl.ranks = p;
  bool showChunk = s.chunks > 1;
  for (int r = 0; r < p; ++r) {
    const auto &program = s.programs[r];
    for (size_t i = 0; i < program.size(); ++i) {
      const Instruction &inst = program[i];
      TimelineEvent ev;
      ev.rank = r;
      ev.mb = inst.mb;
      ev.chunk = inst.chunk;
      if (inst.op == Op::SendFinish || inst.op == Op::RecvFinish) {
        // One span per transfer, from its Start to its Finish.
        int st = pairs.startOf[r][i];
        ev.kind = inst.op == Op::SendFinish ? EventKind::Send : EventKind::Recv;
        ev.start = st >= 0 ? result.start[r][st] : result.start[r][i];
        ev.end = result.end[r][i];
        ev.name = eventName(ev.kind, inst.mb, inst.chunk, showChunk,
                            payloadName(inst.what));
      } else {
        ev.kind = computeKind(inst.op);
        if (ev.kind == EventKind::Other || ev.kind == EventKind::Load)
          continue;
        ev.start = result.start[r][i];
        ev.end = result.end[r][i];
        if (ev.end <= ev.start)
          continue;
        ev.name = eventName(ev.kind, inst.mb, inst.chunk, showChunk);
      }
      tl.events.push_back(std::move(ev));
    }
  }
  return "";
}

} // namespace dpc::schedule
