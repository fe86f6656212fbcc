//===- VerifySchedule.cpp - Compile-time proof of a schedule --------------===//
//
// lib/schedule's verifier simulates every rank's stream (deadlock freedom
// with blocking and non-blocking transfers, stash pairing, optimizer counts,
// peak memory); this pass adds what only the IR knows: that there is a rank
// per stage and that every transfer of the outlined segments rides on a
// message of the schedule, which the executor would otherwise only discover
// at run time. The streams come from a schedule.json or from the module's
// pipe.schedule op; from the op, each violation is reported at the pipe.inst
// it blames, so that hand-written broken programs test every check.
//
//===----------------------------------------------------------------------===//

#include "passes/DiagnoseErrors.h"
#include "passes/Passes.h"
#include "passes/StageInfo.h"

#include "dialects/nn/IR/NNOps.h"
#include "dialects/nn/IR/ShapeInference.h"
#include "dialects/pipe/IR/PipeOps.h"

#include "dpc/schedule/MemoryAdvice.h"
#include "dpc/schedule/Schedule.h"
#include "dpc/schedule/Verifier.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"

#include <map>
#include <set>

namespace mlir::dpc {
#define GEN_PASS_DEF_VERIFYSCHEDULEPASS
#include "passes/Passes.h.inc"
} // namespace mlir::dpc

using namespace mlir;
using namespace mlir::dpc;
namespace schedule = ::dpc::schedule;

namespace {

// (direction, peer stage, activation?) of a transfer seen from one stage.
using Transfer = std::tuple<bool /*send*/, int64_t, bool /*act*/>;

// Reports a violation at the instruction it blames when the streams came
// from `program`, at the module when they came from a file. The message is
// the same either way: it names the rank, the instruction and its
// microbatch.
void report(ModuleOp module, pipe::ScheduleOp program,
            const schedule::Violation &violation) {
  Operation *at =
      program ? program.lookupInstruction(violation.rank, violation.index)
              : module.getOperation();
  InFlightDiagnostic diag = at->emitError("schedule verification failed: ")
                            << violation.format();
  if (!program)
    return;
  for (const schedule::Violation::Related &related : violation.related)
    diag.attachNote(
        program.lookupInstruction(related.rank, related.index)->getLoc())
        << related.message;
}

struct VerifySchedulePass
    : public mlir::dpc::impl::VerifySchedulePassBase<VerifySchedulePass> {
  using VerifySchedulePassBase::VerifySchedulePassBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto scheduleOps = module.getOps<pipe::ScheduleOp>();
    pipe::ScheduleOp program;
    if (!scheduleOps.empty()) {
      program = *scheduleOps.begin();
      if (auto second = std::next(scheduleOps.begin());
          second != scheduleOps.end()) {
        (*second)
                .emitOpError("expects one pipe.schedule per module")
                .attachNote(program.getLoc())
            << "the first one";
        return signalPassFailure();
      }
    }

    // The file when given, else the module's program.
    schedule::Schedule streams;
    if (!scheduleFile.empty()) {
      program = nullptr;
      FailureOr<schedule::Schedule> read =
          diagnoseErrors(module, "cannot read the schedule: ", [&] {
            return schedule::readScheduleFile(scheduleFile);
          });
      if (failed(read))
        return signalPassFailure();
      streams = std::move(*read);
    } else if (program) {
      streams = program.toSchedule();
    } else {
      module.emitError("expects a pipe.schedule op or a schedule file "
                       "(schedule=FILE)");
      return signalPassFailure();
    }

    schedule::VerifyOptions options = memoryLimitsOf(module, memoryLimit);
    schedule::VerifyResult result = schedule::verifySchedule(streams, options);
    for (const schedule::Violation &violation : result.violations)
      report(module, program, violation);
    if (std::string advice = schedule::memoryAdvice(
            streams, options, result, memoryLeversOf(module, recompute));
        !advice.empty())
      module.emitError("schedule over its memory limit: ") << advice;
    if (!result.ok())
      return signalPassFailure();

    // The IR's transfers, per stage.
    std::map<int64_t, std::set<Transfer>> irTransfers;
    std::set<int64_t> stages;
    for (auto func : module.getOps<func::FuncOp>()) {
      std::optional<int64_t> stage = pipe::getStage(func);
      if (!stage || !func->hasAttr(pipe::PipeDialect::kSegmentAttrName))
        continue;
      stages.insert(*stage);
      func.walk([&](Operation *op) {
        if (auto send = dyn_cast<pipe::SendOp>(op)) {
          int64_t peer = send.getPeerAttr().getInt();
          irTransfers[*stage].insert({true, peer, peer > *stage});
        } else if (auto recv = dyn_cast<pipe::RecvOp>(op)) {
          int64_t peer = recv.getPeerAttr().getInt();
          irTransfers[*stage].insert({false, peer, peer < *stage});
        }
      });
    }
    // A program written as IR may stand alone; a file is for the IR it was
    // built from.
    if (stages.empty() && program)
      return;
    if (stages.empty()) {
      module.emitError("expects segment functions (run --dpc-outline-stages "
                       "first)");
      return signalPassFailure();
    }
    if (streams.numVirtualStages() != static_cast<int>(stages.size())) {
      module.emitError("the schedule has ")
          << streams.numStages() << " stages of " << streams.chunks
          << " chunks, the IR " << stages.size() << " stages";
      return signalPassFailure();
    }

    bool ok = true;
    for (auto &[stage, transfers] : irTransfers) {
      // The messages of the stage's chunk, by the virtual stage they reach:
      // activations go to the next one, gradients to the previous one.
      // The stage's first replica runs microbatch 0, so it makes every
      // transfer the stage makes.
      int rank = streams.rankOf(stage, 0), chunk = streams.chunkOf(stage);
      std::set<Transfer> carried;
      for (const schedule::Instruction &inst : streams.programs[rank]) {
        bool send = inst.op == schedule::Op::SendStart;
        if ((!send && inst.op != schedule::Op::RecvStart) ||
            inst.chunk != chunk)
          continue;
        bool act = inst.what == schedule::Payload::Activation;
        int64_t peer = stage + (send == act ? 1 : -1);
        if (peer >= 0 && peer < streams.numVirtualStages() &&
            streams.rankOf(peer, inst.mb) == inst.peer)
          carried.insert({send, peer, act});
      }
      for (const Transfer &t : transfers) {
        if (carried.count(t))
          continue;
        auto [send, peer, act] = t;
        module.emitError("schedule verification failed: rank ")
            << rank << (streams.chunks > 1 ? " chunk " : "")
            << (streams.chunks > 1 ? std::to_string(chunk) : "") << ": the IR "
            << (send ? "sends " : "receives ")
            << (act ? "activations" : "gradients") << (send ? " to" : " from")
            << " stage " << peer << " but the schedule never "
            << (send ? "sends" : "receives") << " them";
        ok = false;
      }
    }
    if (!ok)
      signalPassFailure();
  }
};

} // namespace
