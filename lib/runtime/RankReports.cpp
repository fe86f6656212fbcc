//===- RankReports.cpp - What a rank reports at the end of training -------===//
//
// The reports of library dpc_rank_main beside the steps (RankRun.h): a
// partial reduce's rounds and its replicas' final weights, the trace's
// common origin and each rank's trace, the step times `dpc run` compares
// with the prediction, --adapt's request and stop files, and every rank's
// peak memory against the verifier's and plan-memory's promises.
//
//===----------------------------------------------------------------------===//

#include "RankRun.h"

#include "dpc/runtime/Error.h"
#include "dpc/schedule/Timeline.h"
#include "dpc/support/WriteFile.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>

namespace dpc::runtime::rank {

namespace {

/// Identifies the running kernel: ranks with the same boot id read the same
/// steady clock. 0 when unknown.
int64_t bootId() {
  std::ifstream in("/proc/sys/kernel/random/boot_id");
  std::string id;
  if (!(in >> id))
    return 0;
  return int64_t(std::hash<std::string>()(id) | 1);
}

/// FNV-1a over the bytes of every parameter of the rank.
uint64_t weightsDigest(const Executor &exec) {
  uint64_t hash = 1469598103934665603ull;
  for (const ManifestParam &p : exec.manifest().params)
    for (float v : exec.param(p.id)) {
      unsigned char bytes[sizeof v];
      std::memcpy(bytes, &v, sizeof v);
      for (unsigned char b : bytes)
        hash = (hash ^ b) * 1099511628211ull;
    }
  return hash;
}

} // namespace

void PartialReduceTally::add(const ReduceRound &round) {
  taken.resize(round.steps.size());
  late.resize(round.steps.size());
  lastCompute.resize(round.steps.size());
  ++rounds;
  for (size_t j = 0; j < round.steps.size(); ++j)
    if (round.steps[j] >= 0) {
      ++taken[j];
      late[j] += round.steps[j] < round.step;
      ++shares;
      lastCompute[j] = round.times[j].computeMs;
    }
}

void reportPartialReduce(Communicator &comm, const Executor &exec,
                         const PartialReduceTally &tally,
                         int64_t samplesPerStep, bool reports,
                         std::optional<MetricsWriter> &metrics) {
  std::vector<std::vector<int64_t>> all =
      gatherInts(comm, 0, {int64_t(weightsDigest(exec))});
  if (comm.rank() != 0)
    return;
  for (size_t j = 1; j < all.size(); ++j)
    if (all[j][0] != all[0][0])
      throw Error("partial reduce: replica " + std::to_string(j) +
                  " ends with other weights than replica 0");
  int replicas = int(all.size());
  double trained =
      double(tally.shares) / double(replicas) * double(samplesPerStep);
  std::string line =
      "partial reduce: " + std::to_string(tally.rounds) + " rounds";
  for (int j = 1; j < replicas && j < int(tally.taken.size()); ++j)
    line += "; replica " + std::to_string(j) + "'s gradient in " +
            std::to_string(tally.taken[j]) + " (" +
            std::to_string(tally.late[j]) + " one step late)";
  char tail[160];
  std::snprintf(tail, sizeof tail,
                "; %.0f samples trained (%.1f%% of the steps' minibatches); "
                "every replica ends with replica 0's weights",
                trained,
                100.0 * double(tally.shares) /
                    double(std::max<int64_t>(1, tally.rounds * replicas)));
  printLine(line + tail);
  if (reports && metrics)
    metrics->write({{"preduce_rounds", tally.rounds},
                    {"preduce_taken", tally.taken},
                    {"preduce_late", tally.late},
                    {"trained_samples", trained}});
}

// The steady-clock time every rank's trace counts from, so that `dpc run`
// can lay the ranks' traces side by side. All ranks leave a barrier
// together, to within the barrier's polling, which on a loaded machine can
// take milliseconds; the ranks that share rank 0's kernel, and so its
// steady clock, then take rank 0's origin exactly.
double traceOrigin(Communicator &comm) {
  comm.barrier();
  double now = Executor::nowMs();
  int64_t mine = bootId();
  std::vector<int64_t> rank0 = {mine, int64_t(now * 1e6)}; // nanoseconds
  broadcastInts(comm, 0, rank0);
  return mine != 0 && rank0[0] == mine ? double(rank0[1]) / 1e6 : now;
}

void writeTrace(const Executor &exec, const std::string &path, int rank,
                int ranks) {
  dpc::schedule::Timeline timeline;
  timeline.ranks = ranks;
  timeline.events = exec.traceEvents();
  std::string file = dpc::support::perRankPath(path, rank);
  std::ofstream out(file);
  out << dpc::schedule::toChromeTrace(timeline);
  if (!out)
    throw Error(file + ": cannot write the trace");
}

void writeSummary(const std::string &path, const std::vector<double> &stepEnds,
                  int64_t firstStep, const dpc::schedule::Schedule &schedule,
                  int64_t samplesPerStep) {
  nlohmann::ordered_json summary;
  summary["schedule"] = dpc::schedule::kindName(schedule.kind);
  summary["first_step"] = firstStep + 1;
  summary["samples_per_step"] = samplesPerStep;
  std::vector<double> stepMs;
  for (size_t k = 0; k < stepEnds.size(); ++k)
    stepMs.push_back((stepEnds[k] - (k ? stepEnds[k - 1] : 0)) * 1000);
  summary["step_ms"] = stepMs;
  dpc::support::writeAtomically(path, summary.dump() + "\n");
}

double epochSeconds() {
  return std::chrono::duration<double>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

void writeAdaptRequest(const std::string &path, const AdaptDecision &decision,
                       const std::vector<double> &slowdowns,
                       int64_t decidedAfter, int stage) {
  nlohmann::ordered_json request = {{"decided_after", decidedAfter},
                                    {"rank", decision.rank},
                                    {"stage", stage},
                                    {"slowdown", decision.slowdown},
                                    {"since_step", decision.sinceStep},
                                    {"slowdowns", slowdowns}};
  dpc::support::writeAtomically(path, request.dump() + "\n");
}

void writeAdaptStop(const std::string &path, int64_t stoppedAfter) {
  nlohmann::ordered_json stop = {{"stopped_after", stoppedAfter},
                                 {"stopped_at_s", epochSeconds()}};
  dpc::support::writeAtomically(path, stop.dump() + "\n");
}

void reportMemory(Communicator &comm, const Executor &exec, bool reports,
                  std::optional<MetricsWriter> &metrics,
                  const std::vector<int64_t> &predictedPeaks) {
  const dpc::schedule::RankStats &promised = exec.promisedMemory();
  const MemoryStats &measured = exec.memoryStats();
  // Gathered where the report is printed: the last stage's first replica.
  const dpc::schedule::Schedule &sched = exec.schedule();
  std::vector<std::vector<int64_t>> all =
      gatherInts(comm, sched.firstRankOf(sched.numStages() - 1),
                 {measured.peakStashes, promised.peakStashes,
                  measured.peakWeightVersions, promised.peakWeightVersions,
                  measured.peakStashBytes, measured.peakBytes});
  if (!reports)
    return;
  std::string stashes, versions;
  bool asPromised = true;
  bool versioned =
      exec.schedule().kind == dpc::schedule::ScheduleKind::PipeDream;
  for (size_t rank = 0; rank < all.size(); ++rank) {
    const std::vector<int64_t> &v = all[rank];
    stashes += " " + std::to_string(v[0]);
    versions += " " + std::to_string(v[2]);
    asPromised &= v[0] == v[1] && v[2] == v[3];
    if (metrics)
      metrics->write(
          {{"rank", rank},
           {"peak_stashes", v[0]},
           {"promised_stashes", v[1]},
           {"peak_weight_versions", v[2]},
           {"promised_weight_versions", v[3]},
           {"peak_stash_bytes", v[4]},
           {"peak_bytes", v[5]},
           {"predicted_peak_bytes",
            rank < predictedPeaks.size() ? predictedPeaks[rank] : 0}});
  }
  // Device memory in use at its peak against plan-memory's prediction, at
  // the end of the line.
  std::string peaks = "; peak memory per rank (measured/predicted):";
  for (size_t rank = 0; rank < all.size(); ++rank) {
    char text[96];
    double measuredMiB = double(all[rank][5]) / (1 << 20);
    if (rank < predictedPeaks.size() && predictedPeaks[rank] > 0)
      std::snprintf(text, sizeof text, " %.2f/%.2f MiB (%+.1f%%)", measuredMiB,
                    double(predictedPeaks[rank]) / (1 << 20),
                    100.0 * (double(all[rank][5]) / predictedPeaks[rank] - 1));
    else
      std::snprintf(text, sizeof text, " %.2f MiB", measuredMiB);
    peaks += text;
  }
  std::string line = "peak stashed microbatches per rank:" + stashes;
  if (versioned)
    line += "; weight versions:" + versions;
  if (asPromised) {
    printLine(line + " (as the schedule promised)" + peaks);
    return;
  }
  std::string promisedText;
  for (const std::vector<int64_t> &v : all)
    promisedText += " " + std::to_string(v[1]) + "/" + std::to_string(v[3]);
  printLine(line + " (the schedule promised stashes/versions" + promisedText +
            ")" + peaks);
}

} // namespace dpc::runtime::rank
