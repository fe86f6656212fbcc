//===- RankRun.h - The parts of a rank executable's main --------*- C++ -*-===//
//
// What the files of library dpc_rank_main share: the rank's options, the
// usage error every rank throws alike, the start-up helpers that read the
// build next to the executable (RankMain.cpp), the two kinds of run, an
// inference build's prediction (RankPredict.cpp) and training
// (RankTraining.cpp), and the reports written at the end of training
// (RankReports.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef DPC_LIB_RUNTIME_RANKRUN_H
#define DPC_LIB_RUNTIME_RANKRUN_H

#include "dpc/planner/PlanJson.h"
#include "dpc/runtime/Communicator.h"
#include "dpc/runtime/Data.h"
#include "dpc/runtime/Executor.h"
#include "dpc/runtime/Metrics.h"
#include "dpc/runtime/RankOptions.h"
#include "dpc/runtime/StepMonitor.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace dpc::runtime::rank {

/// The rank options (runtime/RankOptions.h, the one table of them) and
/// what follows from them.
struct Options : RankOptions {
  ForwardDelay delay;
  Interference interference;
};

/// Thrown for a bad command line: every rank sees the same arguments, so
/// every rank fails the same way, with the usage exit code.
struct UsageError {
  std::string message;
};

//===----------------------------------------------------------------------===//
// Start-up (RankMain.cpp)
//===----------------------------------------------------------------------===//

/// `path` relative to `dir` unless it is absolute.
std::string resolve(const std::string &dir, const std::string &path);
bool fileExists(const std::string &path);
/// What the build's plan.json in `dir` says (nothing without one).
dpc::planner::PlanSummary compiledPlan(const std::string &dir);
/// The per-rank memory limit the build was compiled under (plan.json's
/// "memory_limit_bytes"), which bounds every planned step; 0 for none.
double compiledMemoryLimit(const std::string &dir);
/// Creates `dir` when missing (not its parents) and checks that this rank
/// can write a file in it, so that an unusable --checkpoint-dir fails at
/// start-up, naming the directory and the reason.
void checkWritableDirectory(const std::string &dir, int rank);
/// Every rank gets what only the first stage (the input's sample shape) and
/// the last stage (the class count) know, so that both data-reading stages
/// build the same dataset even from synthetic specs.
ModelDataShape shareModelShape(Communicator &comm, const RankManifest &m);
/// One whole line on stdout: mpirun forwards output line by line.
void printLine(const std::string &line);
int64_t product(const std::vector<int64_t> &v, size_t from = 0);

//===----------------------------------------------------------------------===//
// The runs
//===----------------------------------------------------------------------===//

/// An inference build's run: the forward pass over every sample of --data;
/// the last stage writes the outputs and, where it can, the accuracy.
int predict(const Options &opts, Communicator &comm, Executor &exec,
            const std::string &dir);

/// A training build's run: data, parameters, the steps with their
/// metrics, progress, checkpoints, evaluations and --adapt's stop, then the
/// end-of-training reports. `dir` holds the build.
int train(const Options &opts, Communicator &comm, Executor &exec,
          const dpc::schedule::Schedule &schedule, const std::string &dir);

//===----------------------------------------------------------------------===//
// Reports (RankReports.cpp)
//===----------------------------------------------------------------------===//

/// Replica 0's tally of a partial reduce's rounds (--reduce preduce).
struct PartialReduceTally {
  int64_t rounds = 0;
  /// Per replica: gradients the rounds took, and how many of them late.
  std::vector<int64_t> taken, late;
  /// Replica shares of a minibatch the rounds trained on.
  int64_t shares = 0;
  /// Per replica: the compute of its last step a round took, for the step
  /// monitor, which a round without the replica would otherwise feed 0.
  std::vector<double> lastCompute;

  void add(const ReduceRound &round);
};

/// The end of a partial reduce: every replica must hold replica 0's
/// weights (the last round took every replica's gradient and sent them all
/// the same weights); replica 0 prints what the rounds took.
void reportPartialReduce(Communicator &comm, const Executor &exec,
                         const PartialReduceTally &tally,
                         int64_t samplesPerStep, bool reports,
                         std::optional<MetricsWriter> &metrics);

/// The steady-clock time every rank's trace counts from, so that `dpc run`
/// can lay the ranks' traces side by side.
double traceOrigin(Communicator &comm);

/// Writes this rank's part of --trace (perRankPath of `path`).
void writeTrace(const Executor &exec, const std::string &path, int rank,
                int ranks);

/// What `dpc run` compares with the prediction: each step's wall time on
/// the last stage, from the end of the step before (or the start of
/// training) to its own end.
void writeSummary(const std::string &path, const std::vector<double> &stepEnds,
                  int64_t firstStep, const dpc::schedule::Schedule &schedule,
                  int64_t samplesPerStep);

/// Seconds since the epoch, the clock --adapt's downtime is measured on.
double epochSeconds();

/// What the last stage tells `dpc run --adapt` when its trigger decides
/// (docs/RUNTIME.md): after which step, for which rank, and every rank's
/// slowdown against the calibrated plan.
void writeAdaptRequest(const std::string &path, const AdaptDecision &decision,
                       const std::vector<double> &slowdowns,
                       int64_t decidedAfter, int stage);

/// And when the ranks stop for it: after which step, and when (the start of
/// the downtime).
void writeAdaptStop(const std::string &path, int64_t stoppedAfter);

/// Every rank's measured peaks against what the schedule's verifier promised
/// for it, gathered on the last stage: a metrics record per rank and one
/// line, ending with each rank's peak device memory beside plan-memory's
/// prediction (`predictedPeaks`, per rank; empty without plan.json).
void reportMemory(Communicator &comm, const Executor &exec, bool reports,
                  std::optional<MetricsWriter> &metrics,
                  const std::vector<int64_t> &predictedPeaks);

} // namespace dpc::runtime::rank

#endif // DPC_LIB_RUNTIME_RANKRUN_H
