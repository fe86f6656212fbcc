//===- ScheduleChecks.h - The executor's checks of a schedule ---*- C++ -*-===//
//
// Before it runs anything the executor holds the schedule against the
// manifest and the job: one stage per rank, segments for every instruction,
// manifest transfers for every message and the other way round, and the
// verifier's proof (whose per-rank peaks it keeps to compare with what it
// measures). A step planned at run time is checked against the schedule the
// executor was built with. At the end of a step nothing may be left over.
// Every error is thrown as Error, naming the schedule file, the step and
// the instruction.
//
//===----------------------------------------------------------------------===//

#ifndef DPC_LIB_RUNTIME_SCHEDULECHECKS_H
#define DPC_LIB_RUNTIME_SCHEDULECHECKS_H

#include "ParamStore.h"
#include "Shapes.h"
#include "Transfers.h"

#include "dpc/runtime/Executor.h"
#include "dpc/schedule/Schedule.h"
#include "dpc/schedule/Verifier.h"

#include <map>
#include <string>
#include <vector>

namespace dpc::runtime {

struct ScheduleCheck {
  /// What the verifier computed for the rank.
  schedule::RankStats promised;
  /// Whether the verifier proved the schedule free of deadlock under
  /// rendezvous transfers, which an order-matched communicator needs.
  bool rendezvousProven = false;
  /// The boundaries the rank's program sends and receives across.
  std::vector<Boundary> sends, recvs;
};

/// Checks `sched` for rank `rank` of a job of `ranks` ranks running
/// `manifest` with `segments`; `top` are the manifest's own shapes, whose
/// layouts every boundary of the program must have or lack only when the
/// IR moves nothing across it.
ScheduleCheck checkSchedule(const RankManifest &manifest,
                            const schedule::Schedule &sched, int rank,
                            int ranks, const SegmentFunctions &segments,
                            const Shapes &top);

/// Checks a step planned at run time against `fixed`, the schedule the
/// executor was built with (from `scheduleName`): the same kind and ranks,
/// a microbatch per planned one, each in a bucket of `shapes` that holds its
/// samples.
void checkPlannedStep(int64_t step, const StepPlan &plan,
                      const schedule::Schedule &fixed,
                      const std::string &scheduleName,
                      const std::vector<Shapes> &shapes);

/// "step 3: instruction 12 (SendStart act mb 1 to rank 1): ", which opens
/// the errors of an instruction.
std::string instructionWhere(int64_t step, size_t index,
                             const schedule::Instruction &i, int chunks);

/// At the end of `what` ("step 3", "evaluation") every message is finished,
/// every stash slot and received pack released and every weight copy freed.
void checkStepEnd(const std::string &what, const Transfers &transfers,
                  const StashStore &stashes, const ParamStore &params);

} // namespace dpc::runtime

#endif // DPC_LIB_RUNTIME_SCHEDULECHECKS_H
