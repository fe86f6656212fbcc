//===- InsertSendRecv.cpp - Transfers between pipeline stages -------------===//
//
// Walks @main in program order; for each result consumed on another stage,
// one send/recv pair per destination stage, placed right after the producer
// so that the transfer can start as early as the value exists.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "dialects/pipe/IR/PipeOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/MapVector.h"

namespace mlir::dpc {
#define GEN_PASS_DEF_INSERTSENDRECVPASS
#include "passes/Passes.h.inc"
} // namespace mlir::dpc

using namespace mlir;
using namespace mlir::dpc;

namespace {

struct InsertSendRecvPass
    : public mlir::dpc::impl::InsertSendRecvPassBase<InsertSendRecvPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto main = module.lookupSymbol<func::FuncOp>("main");
    if (!main || main.isExternal() || !main.getBody().hasOneBlock()) {
      module.emitError("expects a single-block function @main");
      return signalPassFailure();
    }
    Block &body = main.getBody().front();
    for (Operation &op : body.without_terminator()) {
      if (!pipe::getStage(&op)) {
        op.emitError("has no pipe.stage; run --dpc-partition-stages first");
        return signalPassFailure();
      }
    }

    int64_t nextTag = 0;
    OpBuilder builder(&getContext());
    // Snapshot: the walk must not visit the transfers it inserts.
    SmallVector<Operation *> ops;
    for (Operation &op : body.without_terminator())
      ops.push_back(&op);
    for (Operation *producer : ops) {
      int64_t from = *pipe::getStage(producer);
      Operation *insertAfter = producer;
      for (Value value : producer->getResults()) {
        // Uses per destination stage, in order of first use.
        llvm::MapVector<int64_t, SmallVector<OpOperand *>> remote;
        for (OpOperand &use : value.getUses()) {
          std::optional<int64_t> to = pipe::getStage(use.getOwner());
          if (to && *to != from)
            remote[*to].push_back(&use);
        }
        for (auto &[to, uses] : remote) {
          builder.setInsertionPointAfter(insertAfter);
          auto send = builder.create<pipe::SendOp>(
              producer->getLoc(), value, to, nextTag);
          pipe::setStage(send, from);
          auto recv = builder.create<pipe::RecvOp>(
              producer->getLoc(), value.getType(), from, nextTag);
          pipe::setStage(recv, to);
          ++nextTag;
          for (OpOperand *use : uses)
            use->set(recv.getResult());
          insertAfter = recv;
        }
      }
    }
  }
};

} // namespace
