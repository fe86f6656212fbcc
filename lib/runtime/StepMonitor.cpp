//===- StepMonitor.cpp - Slow stages against the plan ---------------------===//

#include "dpc/runtime/StepMonitor.h"
#include "dpc/runtime/Executor.h"

#include <algorithm>
#include <cstdio>

namespace dpc::runtime {

std::vector<StepTimes> gatherStepTimes(Communicator &comm, int root,
                                       const StepTimes &mine) {
  const int tag = kFirstControlTag + 4;
  static_assert(sizeof(StepTimes) == 4 * sizeof(double));
  std::vector<StepTimes> all;
  if (comm.rank() != root) {
    Request r = comm.isend(&mine, sizeof mine, root, tag);
    comm.wait(r);
    return all;
  }
  all.resize(size_t(comm.size()));
  std::vector<Request> requests;
  for (int r = 0; r < comm.size(); ++r)
    if (r != root)
      requests.push_back(comm.irecv(&all[r], sizeof(StepTimes), r, tag));
  all[root] = mine;
  for (Request &r : requests)
    comm.wait(r);
  return all;
}

SlowdownMonitor::SlowdownMonitor(std::vector<double> predictedMs,
                                 double threshold, int window)
    : predicted(std::move(predictedMs)), threshold(threshold),
      window(size_t(std::max(1, window))), ranks(predicted.size()),
      calibrationOf(predicted.size(), 1.0) {}

double SlowdownMonitor::median(int rank) const {
  std::vector<double> v(ranks[rank].recent.begin(), ranks[rank].recent.end());
  if (v.empty())
    return 0;
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

double SlowdownMonitor::pace() const {
  double best = 0;
  for (size_t r = 0; r < ranks.size(); ++r) {
    if (predicted[r] <= 0 || ranks[r].recent.empty())
      continue;
    double ratio = median(int(r)) / predicted[r];
    if (best == 0 || ratio < best)
      best = ratio;
  }
  return best;
}

double SlowdownMonitor::slowdown(int rank) const {
  double p = pace();
  if (p <= 0 || predicted[rank] <= 0 || ranks[rank].recent.empty())
    return 1;
  return median(rank) / predicted[rank] / p;
}

std::vector<SlowdownEvent>
SlowdownMonitor::add(int64_t step, const std::vector<double> &computeMs) {
  for (size_t r = 0; r < ranks.size() && r < computeMs.size(); ++r) {
    std::deque<double> &recent = ranks[r].recent;
    recent.push_back(computeMs[r]);
    if (recent.size() > window)
      recent.pop_front();
  }
  std::vector<SlowdownEvent> events;
  if (!calibrated) {
    for (const RankState &r : ranks)
      if (r.recent.size() < window)
        return events;
    // The first full window corrects the plan's balance by the measured
    // one; from here on a rank is judged against its own share.
    std::vector<double> factor(ranks.size(), 1.0);
    for (size_t r = 0; r < ranks.size(); ++r)
      factor[r] = slowdown(int(r));
    for (size_t r = 0; r < ranks.size(); ++r) {
      calibrationOf[r] = factor[r];
      predicted[r] *= factor[r];
    }
    calibrated = true;
  }
  double p = pace();
  for (size_t r = 0; r < ranks.size(); ++r) {
    RankState &s = ranks[r];
    if (predicted[r] <= 0 || p <= 0)
      continue;
    // This step alone, against the window's pace: where the streak began.
    bool stepSlow = computeMs[r] / predicted[r] / p > threshold;
    if (s.streakStart < 0 || stepSlow != s.streakSlow) {
      s.streakStart = step;
      s.streakSlow = stepSlow;
    }
    double slow = slowdown(int(r));
    // Recovery needs the median halfway back, so that a rank near the
    // threshold is not reported on and off.
    bool nowSlow = s.slow ? slow > 1 + (threshold - 1) / 2 : slow > threshold;
    if (nowSlow == s.slow)
      continue;
    s.slow = nowSlow;
    SlowdownEvent e;
    e.rank = int(r);
    e.slow = nowSlow;
    e.slowdown = slow;
    e.measuredMs = median(int(r));
    e.expectedMs = predicted[r] * p;
    // The median turns after half the window; the streak says when the
    // change itself came (the current step when the steps disagree).
    e.sinceStep = s.streakSlow == nowSlow ? s.streakStart : step;
    events.push_back(e);
  }
  return events;
}

AdaptTrigger::AdaptTrigger(double threshold, int64_t window, int64_t interval,
                           int64_t firstStep)
    : threshold(threshold), window(std::max<int64_t>(1, window)),
      interval(std::max<int64_t>(1, interval)), firstStep(firstStep) {}

std::optional<AdaptDecision>
AdaptTrigger::add(int64_t step, const std::vector<double> &slowdowns) {
  if (streak.size() < slowdowns.size())
    streak.resize(slowdowns.size(), 0);
  for (size_t r = 0; r < streak.size(); ++r)
    streak[r] =
        r < slowdowns.size() && slowdowns[r] > threshold ? streak[r] + 1 : 0;
  if (decided || step - firstStep < interval)
    return std::nullopt;
  std::optional<AdaptDecision> decision;
  for (size_t r = 0; r < streak.size(); ++r)
    if (streak[r] >= window && (!decision || slowdowns[r] > decision->slowdown))
      decision = AdaptDecision{int(r), slowdowns[r], step - streak[r] + 1};
  decided = decision.has_value();
  return decision;
}

std::string formatSlowdown(const SlowdownEvent &e, int stage,
                           double threshold) {
  char text[256];
  if (e.slow)
    std::snprintf(text, sizeof text,
                  "slow: stage %d (rank %d) computes %.1fx the plan's share "
                  "since step %lld (%.1f ms a step; the plan predicts %.1f "
                  "ms at the fastest rank's pace)",
                  stage, e.rank, e.slowdown, (long long)e.sinceStep,
                  e.measuredMs, e.expectedMs);
  else
    std::snprintf(text, sizeof text,
                  "slow: stage %d (rank %d) is back within %.1fx of the "
                  "plan's share since step %lld (%.1fx, %.1f ms a step)",
                  stage, e.rank, threshold, (long long)e.sinceStep, e.slowdown,
                  e.measuredMs);
  return text;
}

} // namespace dpc::runtime
