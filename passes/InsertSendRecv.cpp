//===- InsertSendRecv.cpp - Transfers between pipeline stages -------------===//
//
// Walks @main in program order; for each result consumed on another stage,
// one send/recv pair per stage boundary it crosses, placed right after the
// producer so that the transfer can start as early as the value exists.
// Data inputs (@main's float arguments) are read by the first stage alone,
// so a later stage that uses one gets it sent from stage 0; labels (integer
// arguments) are read where they are used, by the last stage.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "dialects/pipe/IR/PipeOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/MapVector.h"

namespace mlir::dpc {
#define GEN_PASS_DEF_INSERTSENDRECVPASS
#include "passes/Passes.h.inc"
} // namespace mlir::dpc

using namespace mlir;
using namespace mlir::dpc;

namespace {

// Makes values available on other stages. Transfers only ever cross one
// stage boundary: the schedule moves messages between neighbouring ranks,
// so a value needed two stages away is relayed through the stages between.
class Transfers {
public:
  explicit Transfers(MLIRContext *ctx) : builder(ctx) {}

  // `value` as seen on stage `to`, receiving (and relaying) it if needed.
  // New ops go after `anchor` on the path, in program order.
  Value on(Value value, int64_t from, int64_t to) {
    if (from == to)
      return value;
    auto key = std::make_pair(value, to);
    if (Value known = copies.lookup(key))
      return known;
    int64_t via = to > from ? to - 1 : to + 1;
    Value local = on(value, from, via);
    if (Operation *anchor = lastOnPath(value, local))
      builder.setInsertionPointAfter(anchor);
    else // a data input, sent as the step begins
      builder.setInsertionPointToStart(cast<BlockArgument>(value).getOwner());
    auto send =
        builder.create<pipe::SendOp>(value.getLoc(), local, to, nextTag);
    pipe::setStage(send, via);
    auto recv = builder.create<pipe::RecvOp>(value.getLoc(), value.getType(),
                                             via, nextTag);
    pipe::setStage(recv, to);
    ++nextTag;
    lastInserted[value] = recv;
    copies[key] = recv.getResult();
    return recv.getResult();
  }

private:
  // The transfers of one value stay together, after its producer (none for
  // a block argument's first transfer).
  Operation *lastOnPath(Value value, Value local) {
    if (Operation *last = lastInserted.lookup(value))
      return last;
    return local.getDefiningOp();
  }

  OpBuilder builder;
  int64_t nextTag = 0;
  llvm::DenseMap<std::pair<Value, int64_t>, Value> copies;
  llvm::DenseMap<Value, Operation *> lastInserted;
};

struct InsertSendRecvPass
    : public mlir::dpc::impl::InsertSendRecvPassBase<InsertSendRecvPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    FailureOr<func::FuncOp> mainOr = getMainFunc(module);
    if (failed(mainOr))
      return signalPassFailure();
    func::FuncOp main = *mainOr;
    Block &body = main.getBody().front();
    for (Operation &op : body.without_terminator()) {
      if (!pipe::getStage(&op)) {
        op.emitError("has no pipe.stage; run --dpc-partition-stages first");
        return signalPassFailure();
      }
    }

    Transfers transfers(&getContext());
    // Gives the uses of `value` on stages other than `from` their copy.
    auto transfer = [&](Value value, int64_t from) {
      // Uses per destination stage, in order of first use.
      llvm::MapVector<int64_t, SmallVector<OpOperand *>> remote;
      for (OpOperand &use : value.getUses()) {
        std::optional<int64_t> to = pipe::getStage(use.getOwner());
        if (to && *to != from)
          remote[*to].push_back(&use);
      }
      for (auto &[to, uses] : remote) {
        Value local = transfers.on(value, from, to);
        for (OpOperand *use : uses)
          use->set(local);
      }
    };
    // Snapshot: the walk must not visit the transfers it inserts.
    SmallVector<Operation *> ops;
    for (Operation &op : body.without_terminator())
      ops.push_back(&op);
    for (BlockArgument arg : body.getArguments())
      if (!pipe::isLabels(arg))
        transfer(arg, /*from=*/0);
    for (Operation *producer : ops)
      for (Value value : producer->getResults())
        transfer(value, *pipe::getStage(producer));
  }
};

} // namespace
