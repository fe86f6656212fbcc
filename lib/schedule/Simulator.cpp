//===- Simulator.cpp - Predicted timelines of a pipeline schedule ---------===//
//
// Each rank runs its stream in order on its own clock. Compute takes its
// stage's cost; Starts take no time. A transfer begins once both its send and
// its receive have started (a rendezvous, as large MPI messages and NCCL
// send/recv behave) and lasts latency + bytes / bandwidth; a Finish waits for
// it. Ranks are advanced round-robin as far as their transfers allow, so each
// instruction is timed once: the cost is linear in the stream lengths.
//
// With fewer cores than ranks (SimulateOptions::cores), the ranks share
// them: a global clock moves from event to event, and while k ranks compute
// each runs at min(1, cores / k) of its speed, as the kernel's scheduler
// shares processes that are not bound to a core (dpc run binds none when
// ranks outnumber cores). Waiting ranks sleep and take no share, and one
// that waits for a transfer resumes no sooner than the wake-up latency after
// the transfer starts: it sleeps on a core that other ranks hold.
//
//===----------------------------------------------------------------------===//

#include "dpc/schedule/Simulator.h"
#include "dpc/support/Error.h"

#include "Matching.h"

#include <algorithm>
#include <limits>

namespace dpc::schedule {

namespace {

/// The time of each kind of instruction.
struct Costs {
  const Schedule &s;
  const SimulateOptions &opts;

  /// A microbatch's own factor, for schedules of unequal microbatches.
  static double factor(const std::vector<double> &factors, int mb) {
    return mb >= 0 && size_t(mb) < factors.size() ? factors[size_t(mb)] : 1.0;
  }
  double transfer(double bytes) const {
    double t = opts.latency;
    if (opts.bandwidth > 0)
      t += bytes / opts.bandwidth;
    return t;
  }
  /// A Send/RecvFinish's message, from the moment both sides started.
  double message(const Instruction &inst) const {
    return transfer(double(inst.bytes) * factor(s.microbatchBytes, inst.mb));
  }
  /// When a rank that sleeps on a shared core waiting for a message whose
  /// transfer started at `both` resumes.
  double wokenAt(double both, const Instruction &inst) const {
    return both + std::max(message(inst), opts.wakeLatency);
  }
  /// When an all-reduce of a stage of `group` replicas that starts at
  /// `begin` ends: a ring all-reduce moves 2 (g - 1) / g of the gradients.
  double allReduceEnd(double begin, const Instruction &inst, int group) const {
    return begin + opts.allReduce +
           transfer(2.0 * double(inst.bytes) * (group - 1) / group);
  }
  double compute(int r, const Instruction &inst) const {
    if (inst.op == Op::OptimizerStep)
      return opts.optimizerStep;
    return s.stage(r, inst.chunk).computeMs(inst.op) *
           factor(s.microbatchCompute, inst.mb);
  }
};

bool isBusy(Op op) {
  return isCompute(op) || op == Op::OptimizerStep || op == Op::AllReduce;
}

std::string deadlock(const Schedule &s, const std::vector<size_t> &pc) {
  for (int r = 0; r < s.ranks; ++r)
    if (pc[r] < s.programs[r].size())
      return "rank " + std::to_string(r) + ": instruction " +
             std::to_string(pc[r]) + " (" +
             describe(s.programs[r][pc[r]], s.chunks) +
             "): the streams deadlock; run the verifier for details";
  return "";
}

/// A core per rank: each rank on its own clock.
std::string timeOwnCores(const Schedule &s, const Costs &costs,
                         const detail::TransferPairs &pairs,
                         SimulateResult &result, std::vector<double> &clock) {
  constexpr double kUnset = -1;
  int p = s.ranks;
  std::vector<size_t> pc(p, 0);
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
          finish = costs.allReduceEnd(begin, inst, group);
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
          finish = std::max(clock[r], both + costs.message(inst));
        } else {
          finish = begin + costs.compute(r, inst);
        }
        result.start[r][i] = begin;
        result.end[r][i] = finish;
        if (isBusy(inst.op))
          result.rankBusy[r] += finish - begin;
        clock[r] = finish;
        ++pc[r];
        progress = true;
      }
    }
  }
  return deadlock(s, pc);
}

/// Fewer cores than ranks: one clock for all, and the computing ranks share
/// the cores equally.
std::string timeSharedCores(const Schedule &s, int cores, const Costs &costs,
                            const detail::TransferPairs &pairs,
                            SimulateResult &result,
                            std::vector<double> &clock) {
  constexpr double kUnset = -1;
  constexpr double kNever = std::numeric_limits<double>::infinity();
  int p = s.ranks;
  std::vector<size_t> pc(p, 0);
  // A rank computes (work left, in milliseconds at full speed), waits until
  // a known time (a message or an all-reduce in flight), or is free to issue
  // its next instruction.
  std::vector<double> work(p, 0), until(p, 0);
  std::vector<bool> computing(p, false);
  double now = 0;
  auto issue = [&](int r) {
    const Instruction &inst = s.programs[r][pc[r]];
    size_t i = pc[r];
    if (inst.op == Op::AllReduce) {
      // Starts once every replica of the stage is free at its all-reduce.
      int stage = s.stageOf(r), first = s.firstRankOf(stage);
      int group = s.replicasOf(stage);
      for (int q = first; q < first + group; ++q)
        if (computing[q] || until[q] > now || pc[q] >= s.programs[q].size() ||
            s.programs[q][pc[q]].op != Op::AllReduce)
          return false;
      double finish = costs.allReduceEnd(now, inst, group);
      for (int q = first; q < first + group; ++q) {
        result.start[q][pc[q]] = now;
        result.end[q][pc[q]] = finish;
        result.rankBusy[q] += finish - now;
        until[q] = clock[q] = finish;
        ++pc[q];
      }
      return true;
    }
    double finish = now;
    if (inst.op == Op::SendFinish || inst.op == Op::RecvFinish) {
      int st = pairs.startOf[r][i];
      int j = st < 0 ? -1 : pairs.partner[r][st];
      if (j < 0 || result.start[inst.peer][j] == kUnset)
        return false; // the peer has not started its side yet
      double both = std::max(result.start[r][st], result.start[inst.peer][j]);
      // A rank that got here before the message (it has been free since
      // its clock) sleeps until it wakes.
      finish = clock[r] < both + costs.message(inst)
                   ? std::max(now, costs.wokenAt(both, inst))
                   : now;
    } else if (!isTransfer(inst.op)) {
      double c = costs.compute(r, inst);
      if (c > 0) {
        result.start[r][i] = now;
        computing[r] = true;
        work[r] = c;
        return true;
      }
    }
    result.start[r][i] = now;
    result.end[r][i] = finish;
    until[r] = clock[r] = finish;
    ++pc[r];
    return true;
  };

  while (true) {
    // Issue everything that can start now; a start can free a peer's
    // finish, so repeat until nothing moves.
    for (bool progress = true; progress;) {
      progress = false;
      for (int r = 0; r < p; ++r)
        while (!computing[r] && until[r] <= now &&
               pc[r] < s.programs[r].size() && issue(r))
          progress = true;
    }
    int active = 0;
    for (int r = 0; r < p; ++r)
      active += computing[r];
    double rate = active ? std::min(1.0, double(cores) / active) : 0;
    double next = kNever;
    for (int r = 0; r < p; ++r) {
      if (computing[r])
        next = std::min(next, now + work[r] / rate);
      else if (until[r] > now)
        next = std::min(next, until[r]);
    }
    if (next == kNever)
      break;
    // Everything due within rounding of the next event ends with it.
    double due = next + 1e-12 * std::max(1.0, next);
    for (int r = 0; r < p; ++r) {
      if (!computing[r])
        continue;
      if (now + work[r] / rate <= due) {
        size_t i = pc[r];
        result.end[r][i] = next;
        if (isBusy(s.programs[r][i].op))
          result.rankBusy[r] += next - result.start[r][i];
        clock[r] = next;
        computing[r] = false;
        ++pc[r];
      } else {
        work[r] -= (next - now) * rate;
      }
    }
    now = next;
  }
  return deadlock(s, pc);
}

std::string simulate(const Schedule &s, const SimulateOptions &opts,
                     SimulateResult &result);

/// The period of `steps` back-to-back copies of every rank's stream.
std::string timeSteadyState(const Schedule &s, const SimulateOptions &opts,
                            double &period) {
  Schedule repeated = s;
  for (int r = 0; r < s.ranks; ++r)
    for (int k = 1; k < opts.steps; ++k)
      repeated.programs[r].insert(repeated.programs[r].end(),
                                  s.programs[r].begin(), s.programs[r].end());
  SimulateOptions once = opts;
  once.steps = 1;
  once.recordTimeline = false;
  SimulateResult result;
  if (std::string error = simulate(repeated, once, result); !error.empty())
    return error;
  // When every rank has finished step k: the latest end among the k-th
  // copies of the streams.
  auto endOf = [&](int k) {
    double end = 0;
    for (int r = 0; r < s.ranks; ++r) {
      size_t n = s.programs[r].size();
      for (size_t i = size_t(k) * n; i < size_t(k + 1) * n; ++i)
        end = std::max(end, result.end[r][i]);
    }
    return end;
  };
  // Between the ends of the second and the second-to-last step, when there
  // are steps between them.
  bool inner = opts.steps >= 4;
  int first = inner ? 1 : 0, last = inner ? opts.steps - 2 : opts.steps - 1;
  period = (endOf(last) - endOf(first)) / (last - first);
  return "";
}

} // namespace

SimulateOptions recordedMachine(const Schedule &schedule) {
  SimulateOptions options;
  options.latency = schedule.messageLatency;
  options.cores = schedule.cores;
  options.wakeLatency = schedule.wakeLatency;
  return options;
}

namespace {

/// simulateSchedule's timing into `result`; "" or what stops it.
std::string simulate(const Schedule &s, const SimulateOptions &opts,
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

  Costs costs{s, opts};
  std::vector<double> clock(p, 0);
  std::string error =
      opts.cores > 0 && opts.cores < p
          ? timeSharedCores(s, opts.cores, costs, pairs, result, clock)
          : timeOwnCores(s, costs, pairs, result, clock);
  if (!error.empty())
    return error;

  for (int r = 0; r < p; ++r) {
    result.rankEnd[r] = clock[r];
    result.stepTime = std::max(result.stepTime, clock[r]);
    result.busyTime += result.rankBusy[r];
  }
  result.steadyStepTime = result.stepTime;
  if (opts.steps > 1)
    if (std::string error = timeSteadyState(s, opts, result.steadyStepTime);
        !error.empty())
      return error;
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
        ev.kind = eventKindOf(inst.op);
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

} // namespace

SimulateResult simulateSchedule(const Schedule &s,
                                const SimulateOptions &options) {
  SimulateResult result;
  if (std::string error = simulate(s, options, result); !error.empty())
    throw Error(error);
  return result;
}

} // namespace dpc::schedule
