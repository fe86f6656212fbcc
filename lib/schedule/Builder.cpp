//===- Builder.cpp - Pipeline schedule builders ---------------------------===//
//
// Every builder produces only an order of compute work per rank; lowerSchedule
// turns the orders into instruction streams. Keeping the transfers out of the
// builders means one place decides where sends and receives go, and that
// place is what makes the streams deadlock-free even with blocking transfers.
//
//===----------------------------------------------------------------------===//

#include "dpc/schedule/Builder.h"
#include "dpc/support/Error.h"

#include <algorithm>
#include <cassert>
#include <deque>
#include <functional>
#include <map>
#include <queue>
#include <tuple>

namespace dpc::schedule {

namespace {

using Order = std::vector<std::vector<Work>>;

Work fwd(int mb, int chunk = 0) { return {Op::Forward, mb, chunk}; }
Work bwd(int mb, int chunk = 0) { return {Op::Backward, mb, chunk}; }

/// The microbatches `rank` trains, in order: all of them, or with replicas
/// its stage's every r-th.
std::vector<int> shareOf(const Schedule &s, int rank) {
  std::vector<int> share;
  for (int mb = 0; mb < s.microbatches; ++mb)
    if (s.runs(rank, mb))
      share.push_back(mb);
  return share;
}

/// How many of its microbatches a rank of `stage` keeps in flight under
/// 1F1B: enough to cover the ranks from its stage to the last one, shared
/// among the stage's replicas (PipeDream's NOAM); p - stage without
/// replicas.
int inFlight(const Schedule &s, int stage) {
  int ranksFromHere = s.ranks - s.firstRankOf(stage);
  int r = s.replicasOf(stage);
  return (ranksFromHere + r - 1) / r;
}

Order gpipeOrder(const Schedule &s) {
  Order order(s.ranks);
  for (int r = 0; r < s.ranks; ++r) {
    std::vector<int> share = shareOf(s, r);
    for (int mb : share)
      order[r].push_back(fwd(mb));
    for (int mb : share)
      order[r].push_back(bwd(mb));
  }
  return order;
}

/// PipeDream-Flush: rank r runs p - r - 1 forwards ahead, so it never holds
/// more than p - r microbatches of activations.
Order oneFOneBOrder(const Schedule &s) {
  Order order(s.ranks);
  for (int r = 0; r < s.ranks; ++r) {
    std::vector<int> share = shareOf(s, r);
    int n = static_cast<int>(share.size());
    int warmup = std::min(inFlight(s, s.stageOf(r)) - 1, n);
    for (int k = 0; k < warmup; ++k)
      order[r].push_back(fwd(share[k]));
    for (int k = 0; k + warmup < n; ++k) {
      order[r].push_back(fwd(share[k + warmup]));
      order[r].push_back(bwd(share[k]));
    }
    for (int k = std::max(n - warmup, 0); k < n; ++k)
      order[r].push_back(bwd(share[k]));
  }
  return order;
}

/// Megatron's interleaved 1F1B. Forward work item k of a rank belongs to
/// chunk (k / p) % v and microbatch (k / (p v)) p + k % p: groups of p
/// microbatches walk through the chunks in turn, which is why m must be a
/// multiple of p. Backward items walk the chunks in reverse. Ranks further
/// from the end run more forwards ahead so the first backward finds every
/// chunk's inputs ready.
Order interleavedOrder(int p, int m, int v) {
  Order order(p);
  int total = m * v;
  auto item = [&](int k, bool forward) {
    int group = (k / p) % v;
    int chunk = forward ? group : v - 1 - group;
    int mb = (k / (p * v)) * p + k % p;
    return Work{forward ? Op::Forward : Op::Backward, mb, chunk};
  };
  for (int r = 0; r < p; ++r) {
    int warmup =
        m == p ? total : std::min((p - r - 1) * 2 + (v - 1) * p, total);
    for (int k = 0; k < warmup; ++k)
      order[r].push_back(item(k, true));
    for (int k = 0; k + warmup < total; ++k) {
      order[r].push_back(item(k + warmup, true));
      order[r].push_back(item(k, false));
    }
    for (int k = std::max(total - warmup, 0); k < total; ++k)
      order[r].push_back(item(k, false));
  }
  return order;
}

/// Zero bubble H1 (Qi et al.): 1F1B with the backward split into B (input
/// gradient) and W (weight gradient), and rank r's W of microbatch k run
/// only after its B of microbatch k + r. B stays on the critical path of the
/// cool-down, where each stage now waits only for the B of the next one, and
/// the deferred W passes fill what were 1F1B's bubbles: the last rank's
/// cool-down ends with p W passes, the first rank's with one. Rank r holds at
/// most (p - r) + r = p microbatches of activations, the peak 1F1B has on
/// its first rank.
Order zeroBubbleOrder(const Schedule &s) {
  Order order(s.ranks);
  for (int r = 0; r < s.ranks; ++r) {
    std::vector<Work> &o = order[r];
    std::vector<int> share = shareOf(s, r);
    int n = static_cast<int>(share.size()), stage = s.stageOf(r);
    int warmup = std::min(inFlight(s, stage) - 1, n), lag = stage, nextW = 0;
    auto backward = [&](int k) {
      o.push_back({Op::BackwardInput, share[k], 0});
      if (k - lag >= 0)
        o.push_back({Op::BackwardWeight, share[nextW++], 0});
    };
    for (int k = 0; k < warmup; ++k)
      o.push_back(fwd(share[k]));
    for (int k = 0; k + warmup < n; ++k) {
      o.push_back(fwd(share[k + warmup]));
      backward(k);
    }
    for (int k = std::max(n - warmup, 0); k < n; ++k)
      backward(k);
    while (nextW < n)
      o.push_back({Op::BackwardWeight, share[nextW++], 0});
  }
  return order;
}

//===----------------------------------------------------------------------===//
// Lowering: a global event log
//===----------------------------------------------------------------------===//
//
// The compute orders are executed together in a discrete-event run with the
// stages' costs. Whenever a compute item finishes, each message it produces is
// logged as one transfer event: the producer posts SendStart and the consumer
// RecvStart at that point of the log, and the consumer's RecvFinish goes just
// before the item that needs the message. Every rank's stream is therefore
// the projection of one total order in which each transfer is a single
// event, so even rendezvous transfers (blocking at Start) cannot deadlock:
// the log itself is an execution that completes. Posting at the producer's
// completion makes sends eager and receives early, which is what lets the
// non-blocking runtime overlap transfers with compute.

struct Message {
  Payload what = Payload::None;
  int mb = 0;
  int from = 0, to = 0;           // ranks
  int fromChunk = 0, toChunk = 0; // chunks on those ranks
  int tag = 0;
  int64_t bytes = 0;
};

struct LogEntry {
  bool transfer;
  int rank;    // compute: the rank
  Message msg; // transfer
};

/// Picks what a rank runs next when it is idle at the current time, or
/// returns false to wait for the next completion anywhere.
using Policy = std::function<bool(int rank, Work &work)>;

class EventRun {
public:
  explicit EventRun(const Schedule &s)
      : s(s), numVs(s.numVirtualStages()),
        fDone(numVs, std::vector<char>(s.microbatches, false)),
        bDone(numVs, std::vector<char>(s.microbatches, false)) {}

  /// Whether the inputs of `w` on `rank` have been produced.
  bool ready(int rank, const Work &w) const {
    int vs = s.virtualStage(rank, w.chunk);
    switch (w.op) {
    case Op::Forward:
      return vs == 0 || fDone[vs - 1][w.mb];
    case Op::Backward:
    case Op::BackwardInput:
      return fDone[vs][w.mb] && (vs + 1 == numVs || bDone[vs + 1][w.mb]);
    case Op::BackwardWeight:
      return bDone[vs][w.mb];
    default:
      return true;
    }
  }

  /// Runs until no rank can move; returns "" when every rank ran
  /// `expected[rank]` items.
  std::string run(const Policy &policy, const std::vector<size_t> &expected);

  std::vector<LogEntry> log;
  Order orders;

private:
  double cost(int rank, const Work &w) const {
    return s.stage(rank, w.chunk).computeMs(w.op);
  }
  void complete(int rank, const Work &w);

  const Schedule &s;
  int numVs;
  std::vector<std::vector<char>> fDone, bDone;
};

void EventRun::complete(int rank, const Work &w) {
  int vs = s.virtualStage(rank, w.chunk);
  Message msg;
  msg.mb = w.mb;
  msg.from = rank;
  msg.fromChunk = w.chunk;
  if (w.op == Op::Forward) {
    fDone[vs][w.mb] = true;
    if (vs + 1 == numVs || s.rankOf(vs + 1, w.mb) == rank)
      return;
    msg.what = Payload::Activation;
    msg.to = s.rankOf(vs + 1, w.mb);
    msg.toChunk = s.chunkOf(vs + 1);
    msg.tag = messageTag(msg.what, w.mb, vs, numVs);
    msg.bytes = s.stages[vs].outputBytes;
  } else if (w.op == Op::Backward || w.op == Op::BackwardInput) {
    bDone[vs][w.mb] = true;
    if (vs == 0 || s.rankOf(vs - 1, w.mb) == rank)
      return;
    msg.what = Payload::Gradient;
    msg.to = s.rankOf(vs - 1, w.mb);
    msg.toChunk = s.chunkOf(vs - 1);
    msg.tag = messageTag(msg.what, w.mb, vs - 1, numVs);
    msg.bytes = s.stages[vs - 1].outputBytes;
  } else {
    return;
  }
  log.push_back({true, rank, msg});
}

std::string EventRun::run(const Policy &policy,
                          const std::vector<size_t> &expected) {
  int p = s.ranks;
  orders.assign(p, {});
  // Completions ordered by time, then by dispatch order so that equal
  // times replay deterministically.
  struct Pending {
    double time;
    uint64_t seq;
    int rank;
    Work work;
    bool operator>(const Pending &o) const {
      return std::tie(time, seq) > std::tie(o.time, o.seq);
    }
  };
  std::priority_queue<Pending, std::vector<Pending>, std::greater<Pending>>
      queue;
  std::vector<char> busy(p, false);
  uint64_t seq = 0;
  double now = 0;
  while (true) {
    // Completions at `now` first, then idle ranks take work; zero-cost items
    // complete at once and may enable more work at the same time.
    bool moved = true;
    while (moved) {
      moved = false;
      while (!queue.empty() && queue.top().time <= now) {
        Pending done = queue.top();
        queue.pop();
        complete(done.rank, done.work);
        busy[done.rank] = false;
        moved = true;
      }
      for (int r = 0; r < p; ++r) {
        Work w;
        if (busy[r] || !policy(r, w))
          continue;
        log.push_back({false, r, {}});
        orders[r].push_back(w);
        busy[r] = true;
        queue.push({now + cost(r, w), seq++, r, w});
        moved = true;
      }
    }
    if (queue.empty())
      break;
    now = queue.top().time;
  }
  for (int r = 0; r < p; ++r)
    if (orders[r].size() != expected[r])
      return "internal error: the " + std::string(kindName(s.kind)) +
             " order of rank " + std::to_string(r) + " stalls after " +
             std::to_string(orders[r].size()) + " of " +
             std::to_string(expected[r]) + " items";
  return "";
}

/// Emits one rank's stream, one log entry at a time.
class RankLowering {
public:
  RankLowering(const Schedule &schedule, int rank,
               const std::vector<Work> &order,
               const std::vector<int> &versionOf)
      : s(schedule), rank(rank), order(&order), versionOf(&versionOf) {}

  void transfer(const Message &msg);
  void work(size_t index);
  std::vector<Instruction> finish();

private:
  void finishSends(int peer);
  void useVersion(int version);

  const Schedule &s;
  int rank;
  const std::vector<Work> *order;
  /// PipeDream: the weight version each microbatch uses on this rank.
  const std::vector<int> *versionOf;
  std::vector<Instruction> out;
  /// SendFinish deferred to the next send to the same peer, so that the
  /// sender keeps computing while its message is in flight.
  std::map<int, std::vector<Instruction>> unfinished;
  /// RecvFinish held back until the item that consumes the message:
  /// (what, mb, chunk) -> instruction.
  std::map<std::tuple<int, int, int>, Instruction> arriving;
  int current = 0;
  std::map<int, bool> stashedVersions;
};

void RankLowering::finishSends(int peer) {
  auto it = unfinished.find(peer);
  if (it == unfinished.end())
    return;
  for (const Instruction &inst : it->second)
    out.push_back(inst);
  unfinished.erase(it);
}

void RankLowering::transfer(const Message &msg) {
  if (msg.from == rank) {
    finishSends(msg.to);
    out.push_back(Instruction::transfer(Op::SendStart, msg.what, msg.mb,
                                        msg.fromChunk, msg.to, msg.tag,
                                        msg.bytes));
    unfinished[msg.to].push_back(
        Instruction::transfer(Op::SendFinish, msg.what, msg.mb, msg.fromChunk,
                              msg.to, msg.tag, msg.bytes));
  } else {
    out.push_back(Instruction::transfer(Op::RecvStart, msg.what, msg.mb,
                                        msg.toChunk, msg.from, msg.tag,
                                        msg.bytes));
    arriving[{int(msg.what), msg.mb, msg.toChunk}] =
        Instruction::transfer(Op::RecvFinish, msg.what, msg.mb, msg.toChunk,
                              msg.from, msg.tag, msg.bytes);
  }
}

/// Before a Forward or Backward that needs a weight version other than the
/// current one, restore it.
void RankLowering::useVersion(int version) {
  if (version == current)
    return;
  Instruction inst;
  inst.op = Op::RestoreWeights;
  inst.version = version;
  out.push_back(inst);
}

void RankLowering::work(size_t index) {
  const Work &w = (*order)[index];
  int vs = s.virtualStage(rank, w.chunk);
  bool pipedream = s.kind == ScheduleKind::PipeDream;
  int64_t actBytes = s.stages[vs].activationBytes;
  auto push = [&](Op op) {
    Instruction inst = Instruction::compute(op, w.mb, w.chunk);
    if (op == Op::Stash)
      inst.bytes = actBytes;
    if (pipedream && (op == Op::Forward || op == Op::Backward))
      inst.version = (*versionOf)[w.mb];
    out.push_back(inst);
  };
  auto receive = [&](Payload what) {
    auto it = arriving.find({int(what), w.mb, w.chunk});
    if (it == arriving.end())
      return;
    out.push_back(it->second);
    arriving.erase(it);
  };
  // Whether version `v` is used by any Forward/Backward from `from` on.
  auto usedLater = [&](int v, size_t from) {
    for (size_t i = from; i < order->size(); ++i) {
      const Work &later = (*order)[i];
      if ((later.op == Op::Forward || later.op == Op::Backward) &&
          (*versionOf)[later.mb] == v)
        return true;
    }
    return false;
  };

  switch (w.op) {
  case Op::Forward:
    receive(Payload::Activation);
    if (vs == 0 || vs == s.numVirtualStages() - 1)
      push(Op::LoadMicrobatch);
    if (pipedream)
      useVersion((*versionOf)[w.mb]);
    push(Op::Forward);
    push(Op::Stash);
    break;
  case Op::Backward:
    receive(Payload::Gradient);
    if (pipedream)
      useVersion((*versionOf)[w.mb]);
    push(Op::Restore);
    push(Op::Backward);
    push(Op::Free);
    break;
  case Op::BackwardInput:
    receive(Payload::Gradient);
    push(Op::Restore);
    push(Op::BackwardInput);
    break;
  case Op::BackwardWeight:
    push(Op::BackwardWeight);
    push(Op::Free);
    break;
  case Op::OptimizerStep: {
    // The update overwrites the current version; keep a copy if a later
    // forward or backward still needs it.
    if (usedLater(current, index + 1) && !stashedVersions[current]) {
      Instruction stash;
      stash.op = Op::StashWeights;
      stash.version = current;
      stash.bytes = s.stages[vs].weightBytes;
      out.push_back(stash);
      stashedVersions[current] = true;
    }
    Instruction step;
    step.op = Op::OptimizerStep;
    out.push_back(step);
    ++current;
    break;
  }
  default:
    assert(false && "not a work item");
  }

  if (pipedream && (w.op == Op::Forward || w.op == Op::Backward)) {
    int v = (*versionOf)[w.mb];
    if (stashedVersions[v] && !usedLater(v, index + 1)) {
      Instruction free;
      free.op = Op::FreeWeights;
      free.version = v;
      out.push_back(free);
      stashedVersions[v] = false;
    }
  }
}

std::vector<Instruction> RankLowering::finish() {
  if (isSynchronous(s.kind)) {
    // A replicated stage sums its replicas' gradients before the update.
    if (s.replicasOf(s.stageOf(rank)) > 1) {
      Instruction reduce;
      reduce.op = Op::AllReduce;
      reduce.bytes = s.stage(rank, 0).weightBytes;
      out.push_back(reduce);
    }
    Instruction step;
    step.op = Op::OptimizerStep;
    out.push_back(step);
  }
  while (!unfinished.empty())
    finishSends(unfinished.begin()->first);
  return std::move(out);
}

/// The weight version each microbatch's forward sees on `rank`: the number
/// of updates that rank ran before it.
std::vector<int> forwardVersions(const std::vector<Work> &order, int m) {
  std::vector<int> version(m, 0);
  int updates = 0;
  for (const Work &w : order) {
    if (w.op == Op::OptimizerStep)
      ++updates;
    else if (w.op == Op::Forward)
      version[w.mb] = updates;
  }
  return version;
}

/// Lowers the orders recorded by `run` after its log is complete.
void lowerLog(Schedule &schedule, const EventRun &run) {
  const Order &order = run.orders;
  schedule.programs.assign(schedule.ranks, {});
  std::vector<std::vector<int>> versions(schedule.ranks);
  if (schedule.kind == ScheduleKind::PipeDream) {
    std::vector<int> stage0 = forwardVersions(order[0], schedule.microbatches);
    for (int r = 0; r < schedule.ranks; ++r)
      versions[r] = schedule.verticalSync
                        ? stage0
                        : forwardVersions(order[r], schedule.microbatches);
  }
  std::vector<RankLowering> ranks;
  for (int r = 0; r < schedule.ranks; ++r)
    ranks.emplace_back(schedule, r, order[r], versions[r]);
  std::vector<size_t> next(schedule.ranks, 0);
  for (const LogEntry &entry : run.log) {
    if (entry.transfer) {
      ranks[entry.msg.from].transfer(entry.msg);
      ranks[entry.msg.to].transfer(entry.msg);
    } else {
      ranks[entry.rank].work(next[entry.rank]++);
    }
  }
  for (int r = 0; r < schedule.ranks; ++r)
    schedule.programs[r] = ranks[r].finish();
}

/// Zero bubble under 2p microbatches (zb-2p): instead of a fixed pattern,
/// the order comes from running the stages' costs. Whenever a rank is idle
/// it takes, in this preference, the input gradient of its oldest
/// microbatch whose output gradient has arrived (the critical path back to
/// the first stage); the forward of its next microbatch, while it holds the
/// activations of fewer than 2p microbatches (a forward runs, its weight
/// gradient frees them); else the weight gradient of its oldest microbatch
/// whose input gradient ran. The weight gradients so fill whatever a rank
/// would otherwise wait for, and the last stages end the step with theirs,
/// which covers the first stage's last weight gradient, update and next
/// forward in the runtime's back-to-back steps. The price is memory: up to
/// 2p microbatches a rank, against zb-h1's p.
std::string zeroBubble2POrder(Schedule &schedule) {
  EventRun run(schedule);
  int limit = 2 * schedule.numStages();
  struct Progress {
    std::vector<int> share;
    size_t forwards = 0, inputs = 0, weights = 0;
  };
  std::vector<Progress> ranks(schedule.ranks);
  std::vector<size_t> expected(schedule.ranks);
  for (int r = 0; r < schedule.ranks; ++r) {
    ranks[r].share = shareOf(schedule, r);
    expected[r] = 3 * ranks[r].share.size();
  }
  Policy policy = [&](int r, Work &w) {
    Progress &rank = ranks[r];
    if (rank.inputs < rank.forwards) {
      Work input{Op::BackwardInput, rank.share[rank.inputs], 0};
      if (run.ready(r, input)) {
        w = input;
        ++rank.inputs;
        return true;
      }
    }
    if (rank.forwards < rank.share.size() &&
        int(rank.forwards - rank.weights) < limit &&
        run.ready(r, fwd(rank.share[rank.forwards]))) {
      w = fwd(rank.share[rank.forwards++]);
      return true;
    }
    if (rank.weights < rank.inputs) {
      w = {Op::BackwardWeight, rank.share[rank.weights++], 0};
      return true;
    }
    return false;
  };
  if (std::string error = run.run(policy, expected); !error.empty())
    return error;
  lowerLog(schedule, run);
  return "";
}

/// lowerSchedule's lowering; "" or why the orders cannot run.
std::string lowerOrders(Schedule &schedule, const Order &order) {
  if (static_cast<int>(order.size()) != schedule.ranks)
    return "expects one order per rank";
  EventRun run(schedule);
  std::vector<size_t> pos(schedule.ranks, 0), expected(schedule.ranks);
  for (int r = 0; r < schedule.ranks; ++r)
    expected[r] = order[r].size();
  Policy policy = [&](int r, Work &w) {
    if (pos[r] == order[r].size() || !run.ready(r, order[r][pos[r]]))
      return false;
    w = order[r][pos[r]++];
    return true;
  };
  std::string error = run.run(policy, expected);
  if (!error.empty())
    return error;
  lowerLog(schedule, run);
  return "";
}

/// buildSchedule's building into `schedule`; "" or what is wrong.
std::string build(const BuildOptions &options, Schedule &schedule) {
  int p = options.stages, m = options.microbatches, v = options.virtualStages;
  if (p < 1)
    return "expects at least 1 stage, got " + std::to_string(p);
  if (m < 1)
    return "expects at least 1 microbatch, got " + std::to_string(m);
  if (v < 1)
    return "expects at least 1 virtual stage, got " + std::to_string(v);
  if (!options.replicas.empty()) {
    if (static_cast<int>(options.replicas.size()) != p)
      return "expects replicas for " + std::to_string(p) + " stages, got " +
             std::to_string(options.replicas.size());
    for (int r : options.replicas)
      if (r < 1)
        return "expects at least 1 replica per stage, got " + std::to_string(r);
  }
  bool replicated =
      std::any_of(options.replicas.begin(), options.replicas.end(),
                  [](int r) { return r > 1; });
  if (replicated && !isSynchronous(options.kind))
    return std::string("replicated stages need a synchronous schedule "
                       "(gpipe, 1f1b, zb-h1, zb-2p), not ") +
           kindName(options.kind);
  if (replicated && v > 1)
    return "replicated stages cannot be combined with virtual stages";
  if (v > 1 && options.kind != ScheduleKind::Interleaved)
    return std::string("--virtual-stages applies only to interleaved, not ") +
           kindName(options.kind);
  if (options.verticalSync && options.kind != ScheduleKind::PipeDream)
    return "--vertical-sync applies only to pipedream";
  if (options.kind == ScheduleKind::Interleaved && m % p != 0)
    return "interleaved needs the microbatches (" + std::to_string(m) +
           ") to be a multiple of the stages (" + std::to_string(p) + ")";
  if (options.kind == ScheduleKind::Custom)
    return "custom schedules are read from a file, not built";
  size_t numVs = static_cast<size_t>(p) * v;
  if (m > maxMicrobatches(int(numVs)))
    return std::to_string(m) + " microbatches are more than the " +
           std::to_string(maxMicrobatches(int(numVs))) + " that " +
           std::to_string(numVs) +
           " virtual stages can tag (2 message tags per microbatch and "
           "virtual stage, below " +
           std::to_string(kScheduleTagLimit) + ")";
  for (size_t vs = 0; vs < options.stageInfo.size(); ++vs)
    if (options.stageInfo[vs].outputBytes > kMaxMessageBytes)
      return "stage " + std::to_string(vs) + " sends " +
             std::to_string(options.stageInfo[vs].outputBytes) +
             " bytes per microbatch, more than the " +
             std::to_string(kMaxMessageBytes) +
             " an MPI message can hold; use a smaller microbatch size";
  if (!options.stageInfo.empty() && options.stageInfo.size() != 1 &&
      options.stageInfo.size() != numVs)
    return "expects costs for 1 or " + std::to_string(numVs) + " stages, got " +
           std::to_string(options.stageInfo.size());

  schedule = Schedule();
  schedule.kind = options.kind;
  schedule.ranks = p;
  schedule.microbatches = m;
  schedule.chunks = v;
  schedule.verticalSync = options.verticalSync;
  if (replicated) {
    schedule.replicas = options.replicas;
    schedule.ranks = 0;
    for (int r : options.replicas)
      schedule.ranks += r;
  }
  schedule.reduce = options.reduce;
  if (options.reduce != ReduceMode::AllReduce)
    if (std::string problem = schedule.checkLayout(); !problem.empty())
      return problem;
  if (options.stageInfo.size() == numVs)
    schedule.stages = options.stageInfo;
  else
    schedule.stages.assign(numVs, options.stageInfo.empty()
                                      ? StageInfo()
                                      : options.stageInfo.front());

  Order order;
  switch (options.kind) {
  case ScheduleKind::GPipe:
    order = gpipeOrder(schedule);
    break;
  case ScheduleKind::OneFOneB:
    order = oneFOneBOrder(schedule);
    break;
  case ScheduleKind::PipeDream:
    // 1F1B's order without the flush: an update after every backward.
    order = oneFOneBOrder(schedule);
    for (auto &rankOrder : order) {
      std::vector<Work> withUpdates;
      for (const Work &w : rankOrder) {
        withUpdates.push_back(w);
        if (w.op == Op::Backward)
          withUpdates.push_back({Op::OptimizerStep, -1, 0});
      }
      rankOrder = std::move(withUpdates);
    }
    break;
  case ScheduleKind::Interleaved:
    order = interleavedOrder(p, m, v);
    break;
  case ScheduleKind::ZeroBubbleH1:
    order = zeroBubbleOrder(schedule);
    break;
  case ScheduleKind::ZeroBubble2P:
    return zeroBubble2POrder(schedule);
  case ScheduleKind::Custom:
    break;
  }
  return lowerOrders(schedule, order);
}

} // namespace

void lowerSchedule(Schedule &schedule, const Order &order) {
  if (std::string error = lowerOrders(schedule, order); !error.empty())
    throw Error(error);
}

Schedule buildSchedule(const BuildOptions &options) {
  Schedule schedule;
  if (std::string error = build(options, schedule); !error.empty())
    throw Error(error);
  return schedule;
}

} // namespace dpc::schedule
