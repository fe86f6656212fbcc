//===- VerifySchedule.cpp - Compile-time proof of a schedule --------------===//
//
// lib/schedule's verifier simulates every rank's stream (deadlock freedom
// with blocking and non-blocking transfers, stash pairing, optimizer counts,
// peak memory); this pass adds what only the IR knows: that there is a rank
// per stage and that every transfer of the outlined segments rides on a
// message of the schedule, which the executor would otherwise only discover
// at run time.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "dialects/pipe/IR/PipeOps.h"

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

struct VerifySchedulePass
    : public mlir::dpc::impl::VerifySchedulePassBase<VerifySchedulePass> {
  using VerifySchedulePassBase::VerifySchedulePassBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (scheduleFile.empty()) {
      module.emitError("expects a schedule file (schedule=FILE)");
      return signalPassFailure();
    }
    schedule::Schedule streams;
    if (std::string error = schedule::readScheduleFile(scheduleFile, streams);
        !error.empty()) {
      module.emitError("cannot read the schedule: ") << error;
      return signalPassFailure();
    }

    schedule::VerifyOptions options;
    options.memoryLimit = memoryLimit;
    schedule::VerifyResult result = schedule::verifySchedule(streams, options);
    for (const schedule::Violation &violation : result.violations)
      module.emitError("schedule verification failed: ") << violation.format();
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
    if (stages.empty()) {
      module.emitError("expects segment functions (run --dpc-outline-stages "
                       "first)");
      return signalPassFailure();
    }
    if (streams.ranks * streams.chunks != static_cast<int>(stages.size())) {
      module.emitError("the schedule has ")
          << streams.ranks << " ranks of " << streams.chunks
          << " chunks, the IR " << stages.size() << " stages";
      return signalPassFailure();
    }

    bool ok = true;
    for (auto &[stage, transfers] : irTransfers) {
      std::set<Transfer> carried;
      for (const schedule::Instruction &inst : streams.programs[stage]) {
        bool act = inst.what == schedule::Payload::Activation;
        if (inst.op == schedule::Op::SendStart)
          carried.insert({true, inst.peer, act});
        else if (inst.op == schedule::Op::RecvStart)
          carried.insert({false, inst.peer, act});
      }
      for (const Transfer &t : transfers) {
        if (carried.count(t))
          continue;
        auto [send, peer, act] = t;
        module.emitError("schedule verification failed: rank ")
            << stage << ": the IR " << (send ? "sends " : "receives ")
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
