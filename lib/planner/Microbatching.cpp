//===- Microbatching.cpp - Variable-length microbatches per iteration -----===//
//
// The dynamic program of Microbatching.h. Sorted by length, the cost of a
// run [i, j) is cost(j - i, length[j - 1]); for a bound B on the longest
// microbatch, best[j] = min over feasible i of best[i] + cost(i, j), which
// takes O(n * maxSamples). The iteration's model couples the sum with the
// maximum, so the program runs once per candidate bound and keeps the best
// sum + (stages - 1) * max.
//
//===----------------------------------------------------------------------===//

#include "dpc/planner/Microbatching.h"

#include "dpc/schedule/Builder.h"
#include "dpc/schedule/Simulator.h"
#include "dpc/support/Error.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

namespace dpc::planner {

namespace {

constexpr double kInfinity = std::numeric_limits<double>::infinity();

// The minibatch sorted by length, and what the program needs of it.
struct Sorted {
  std::vector<int64_t> order;   // indices into the lengths, shortest first
  std::vector<int64_t> lengths; // in that order
};

Sorted sortByLength(const std::vector<int64_t> &lengths) {
  Sorted s;
  s.order.resize(lengths.size());
  std::iota(s.order.begin(), s.order.end(), int64_t(0));
  // Stable, so equal lengths keep their order and the plan is reproducible.
  std::stable_sort(s.order.begin(), s.order.end(), [&](int64_t a, int64_t b) {
    return lengths[a] < lengths[b];
  });
  for (int64_t i : s.order)
    s.lengths.push_back(lengths[i]);
  return s;
}

// One bound's program: the runs ending at each position, their sum, and
// the longest run chosen.
struct Split {
  double sum = kInfinity;
  double longest = 0;
  std::vector<int64_t> starts; // run starts in sorted order, ascending
};

Split splitUnder(const Sorted &s, double bound,
                 const std::vector<std::vector<double>> &runCost) {
  size_t n = s.lengths.size();
  std::vector<double> best(n + 1, kInfinity), longest(n + 1, 0);
  std::vector<int64_t> from(n + 1, -1);
  best[0] = 0;
  for (size_t j = 1; j <= n; ++j) {
    const std::vector<double> &ending = runCost[j];
    // Runs ending at j grow in cost as they start earlier: those under the
    // bound are the first kmax.
    size_t kmax =
        size_t(std::upper_bound(ending.begin() + 1, ending.end(), bound) -
               ending.begin()) -
        1;
    kmax = std::min(kmax, j);
    if (kmax == 0)
      continue;
    // The minimum in one branch-free pass the compiler vectorizes, then the
    // first run that reaches it.
    const double *before = best.data() + j;
    double minimum = kInfinity;
    for (size_t k = 1; k <= kmax; ++k)
      minimum = std::min(minimum, before[-int64_t(k)] + ending[k]);
    if (minimum == kInfinity)
      continue;
    size_t k = 1;
    while (before[-int64_t(k)] + ending[k] != minimum)
      ++k;
    best[j] = minimum;
    longest[j] = std::max(longest[j - k], ending[k]);
    from[j] = int64_t(j - k);
  }
  Split split;
  if (best[n] == kInfinity)
    return split;
  split.sum = best[n];
  split.longest = longest[n];
  for (int64_t j = int64_t(n); j > 0; j = from[j])
    split.starts.push_back(from[j]);
  std::reverse(split.starts.begin(), split.starts.end());
  return split;
}

double modelled(double sum, double longest, int stages) {
  return sum + double(std::max(stages, 1) - 1) * longest;
}

void fillSummary(Microbatching &plan, const std::vector<int64_t> &lengths,
                 int stages) {
  double real = 0, padded = 0, sum = 0, longest = 0;
  for (size_t k = 0; k < plan.microbatches.size(); ++k) {
    for (int64_t i : plan.microbatches[k])
      real += double(lengths[i]);
    padded +=
        double(plan.paddedLength[k]) * double(plan.microbatches[k].size());
    sum += plan.computeMs[k];
    longest = std::max(longest, plan.computeMs[k]);
  }
  plan.predictedMs = modelled(sum, longest, stages);
  plan.paddingOverhead = real > 0 ? padded / real - 1 : 0;
}

// The iteration time of 1F1B (PipeDream-Flush, the order
// schedule::buildSchedule gives) over `stages` ranks for microbatches of
// the given compute times, each stage's forward a third of it and its
// backward two thirds, with free transfers: the simulator's result for
// that schedule, by the dependency recurrence alone, O(stages x m).
double oneFOneBTime(const std::vector<double> &times, int stages) {
  int m = int(times.size()), p = std::max(stages, 1);
  std::vector<double> fwdEnd(size_t(p) * m, 0), bwdEnd(size_t(p) * m, 0);
  auto at = [m](int stage, int mb) { return size_t(stage) * m + mb; };
  std::vector<double> clock(p, 0);
  std::vector<int> nextF(p, 0), nextB(p, 0), done(p, 0);
  // Each stage's program: warmup forwards, then forward/backward pairs,
  // then the remaining backwards. Stages advance while their next op's
  // inputs exist.
  std::vector<std::vector<std::pair<bool, int>>> program(p);
  for (int s = 0; s < p; ++s) {
    int warmup = std::min(p - s - 1, m);
    for (int k = 0; k < warmup; ++k)
      program[s].push_back({true, k});
    for (int k = 0; k + warmup < m; ++k) {
      program[s].push_back({true, k + warmup});
      program[s].push_back({false, k});
    }
    for (int k = std::max(m - warmup, 0); k < m; ++k)
      program[s].push_back({false, k});
  }
  std::vector<char> fwdDone(size_t(p) * m, 0), bwdDone(size_t(p) * m, 0);
  bool progress = true;
  while (progress) {
    progress = false;
    for (int s = 0; s < p; ++s) {
      while (done[s] < int(program[s].size())) {
        auto [forward, mb] = program[s][done[s]];
        double ready;
        if (forward) {
          if (s > 0 && !fwdDone[at(s - 1, mb)])
            break;
          ready = s > 0 ? fwdEnd[at(s - 1, mb)] : 0;
        } else {
          if (s + 1 < p && !bwdDone[at(s + 1, mb)])
            break;
          ready = s + 1 < p ? bwdEnd[at(s + 1, mb)] : fwdEnd[at(s, mb)];
        }
        double begin = std::max(clock[s], ready);
        double length = times[mb] * (forward ? 1.0 / 3 : 2.0 / 3);
        clock[s] = begin + length;
        (forward ? fwdEnd : bwdEnd)[at(s, mb)] = clock[s];
        (forward ? fwdDone : bwdDone)[at(s, mb)] = 1;
        ++done[s];
        progress = true;
      }
    }
  }
  return *std::max_element(clock.begin(), clock.end());
}

// The microbatches of `split`, in execution order.
Microbatching materialize(const Sorted &s, const Split &split,
                          const std::vector<std::vector<double>> &runCost,
                          bool longestFirst) {
  Microbatching plan;
  size_t n = s.lengths.size(), runs = split.starts.size();
  for (size_t q = 0; q < runs; ++q) {
    size_t r = longestFirst ? runs - 1 - q : q;
    size_t begin = size_t(split.starts[r]);
    size_t end = r + 1 < runs ? size_t(split.starts[r + 1]) : n;
    plan.microbatches.emplace_back(s.order.begin() + begin,
                                   s.order.begin() + end);
    plan.paddedLength.push_back(s.lengths[end - 1]);
    plan.computeMs.push_back(runCost[end][end - begin]);
  }
  return plan;
}

} // namespace

Microbatching planMicrobatches(const std::vector<int64_t> &lengths,
                               const SequenceCost &cost,
                               const MicrobatchingOptions &options) {
  Microbatching result;
  if (lengths.empty())
    return result;
  for (size_t i = 0; i < lengths.size(); ++i)
    if (lengths[i] <= 0)
      throw Error("sequence " + std::to_string(i) + " has length " +
                  std::to_string(lengths[i]) + "; lengths must be positive");
  int stages = std::max(options.stages, 1);
  int64_t maxSamples = std::max<int64_t>(options.maxSamples, 1);
  double perMicrobatch = options.memoryLimitBytes > 0
                             ? options.memoryLimitBytes / stages
                             : kInfinity;
  Sorted s = sortByLength(lengths);
  size_t n = s.lengths.size();

  // runCost[j][k]: the run of the k sequences ending before sorted position
  // j, padded to the longest of them; runs that break the memory limit are
  // left out (so are longer ones: bytes grow with the samples).
  int wanted = std::max(options.bounds, 2);
  size_t runs = 0;
  for (size_t j = 1; j <= n; ++j)
    runs += size_t(std::min<int64_t>(maxSamples, int64_t(j)));
  // Few runs: every distinct run cost is a candidate bound (exact).
  bool exact = runs <= size_t(wanted) * 64;
  std::vector<std::vector<double>> runCost(n + 1);
  std::vector<double> candidates;
  for (size_t j = 1; j <= n; ++j) {
    int64_t length = s.lengths[j - 1];
    int64_t kmax = std::min<int64_t>(maxSamples, int64_t(j));
    if (cost.capacity)
      kmax = std::min(kmax, cost.capacity(length));
    if (kmax <= 0)
      throw Error("a sequence of " + std::to_string(length) +
                  " tokens fits no microbatch shape");
    if (cost.activationBytes) {
      // The most sequences of this length the limit allows (bytes grow
      // with the samples).
      int64_t low = 0, high = kmax;
      while (low < high) {
        int64_t mid = (low + high + 1) / 2;
        if (cost.activationBytes(mid, length) <= perMicrobatch)
          low = mid;
        else
          high = mid - 1;
      }
      kmax = low;
    }
    if (kmax == 0)
      throw Error("a sequence of " + std::to_string(length) +
                  " tokens alone needs more activation memory than a " +
                  std::to_string(stages) +
                  "-stage 1F1B pipeline leaves a microbatch under the memory "
                  "limit");
    std::vector<double> &row = runCost[j];
    row.resize(size_t(kmax) + 1);
    row[0] = 0; // no run
    for (int64_t k = 1; k <= kmax; ++k)
      row[size_t(k)] = cost.computeMs(k, length);
    if (exact)
      candidates.insert(candidates.end(), row.begin() + 1, row.end());
  }

  // The smallest feasible bound is the costliest single sequence. With few
  // runs, every distinct run cost from there is a bound (exact); otherwise a
  // geometric grid up to the costliest run (a bound need not be a run's
  // cost: the program takes the runs under it).
  double floor = 0, top = 0;
  for (size_t j = 1; j <= n; ++j) {
    floor = std::max(floor, runCost[j][1]);
    top = std::max(top, runCost[j].back());
  }
  if (exact) {
    std::sort(candidates.begin(), candidates.end());
    candidates.erase(std::unique(candidates.begin(), candidates.end()),
                     candidates.end());
    candidates.erase(
        candidates.begin(),
        std::lower_bound(candidates.begin(), candidates.end(), floor));
  }
  // Each bound's split minimises the sum under it; the model (the sum plus
  // (stages - 1) times the longest) ranks them, and the best few, in either
  // order, are timed as the 1F1B schedules they make: the model is exact
  // for equal microbatches, but with unequal ones a stage waits for a long
  // microbatch's round trip, and the order decides where.
  std::vector<std::pair<double, Split>> splits;
  auto tryBound = [&](double bound) {
    Split split = splitUnder(s, bound, runCost);
    if (split.sum == kInfinity)
      return kInfinity;
    double time = modelled(split.sum, split.longest, stages);
    splits.emplace_back(time, std::move(split));
    return time;
  };
  if (exact && candidates.size() <= size_t(wanted)) {
    for (double bound : candidates)
      tryBound(bound);
  } else {
    // A geometric grid of half the bounds, then the other half between the
    // grid points around the best of it.
    int coarse = std::max(wanted / 2, 2), fine = std::max(wanted - coarse, 1);
    auto at = [&](double position) {
      return floor * std::pow(top / floor, position / (coarse - 1));
    };
    int bestPoint = 0;
    double bestModel = kInfinity;
    for (int g = 0; g < coarse; ++g) {
      double time = tryBound(g + 1 == coarse ? top : at(g));
      if (time < bestModel) {
        bestModel = time;
        bestPoint = g;
      }
    }
    double low = std::max(bestPoint - 1, 0),
           high = std::min(bestPoint + 1, coarse - 1);
    for (int f = 1; f <= fine; ++f)
      tryBound(at(low + (high - low) * f / (fine + 1)));
  }
  std::sort(splits.begin(), splits.end(),
            [](const auto &x, const auto &y) { return x.first < y.first; });
  splits.resize(
      std::min<size_t>(splits.size(), size_t(std::max(options.timed, 1))));
  double bestTime = kInfinity;
  for (const auto &[unused, split] : splits) {
    for (bool longestFirst : {true, false}) {
      Microbatching plan = materialize(s, split, runCost, longestFirst);
      double time = oneFOneBTime(plan.computeMs, stages);
      if (time < bestTime) {
        bestTime = time;
        result = std::move(plan);
      }
    }
  }
  fillSummary(result, lengths, stages);
  result.simulatedMs = bestTime;
  return result;
}

Microbatching padMicrobatches(const std::vector<int64_t> &lengths, int count,
                              const SequenceCost &cost, int stages) {
  Microbatching plan;
  int64_t n = int64_t(lengths.size());
  count = int(std::clamp<int64_t>(count, 1, std::max<int64_t>(n, 1)));
  for (int k = 0, begin = 0; k < count && begin < n; ++k) {
    int64_t size = n / count + (k < n % count ? 1 : 0);
    std::vector<int64_t> members(size);
    std::iota(members.begin(), members.end(), int64_t(begin));
    int64_t longest = 0;
    for (int64_t i : members)
      longest = std::max(longest, lengths[i]);
    plan.microbatches.push_back(std::move(members));
    plan.paddedLength.push_back(longest);
    plan.computeMs.push_back(cost.computeMs(size, longest));
    begin += int(size);
  }
  fillSummary(plan, lengths, stages);
  plan.simulatedMs = simulateMicrobatching(plan, stages);
  return plan;
}

double simulateMicrobatching(const Microbatching &plan, int stages) {
  if (plan.microbatches.empty())
    return 0;
  schedule::BuildOptions build;
  build.kind = schedule::ScheduleKind::OneFOneB;
  build.stages = std::max(stages, 1);
  build.microbatches = int(plan.microbatches.size());
  schedule::StageInfo unit;
  unit.forward = 1.0 / 3;
  unit.backwardInput = 1.0 / 3;
  unit.backwardWeight = 1.0 / 3;
  build.stageInfo = {unit};
  schedule::SimulateOptions simulate;
  simulate.recordTimeline = false;
  try {
    schedule::Schedule sched = schedule::buildSchedule(build);
    sched.microbatchCompute = plan.computeMs;
    return schedule::simulateSchedule(sched, simulate).stepTime;
  } catch (const Error &) {
    return -1;
  }
}

} // namespace dpc::planner
