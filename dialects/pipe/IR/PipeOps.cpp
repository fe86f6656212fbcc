//===- PipeOps.cpp - pipe dialect operations ------------------------------===//

#include "dialects/pipe/IR/PipeOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"

using namespace mlir;
using namespace mlir::dpc::pipe;

std::optional<int64_t> mlir::dpc::pipe::getStage(Operation *op) {
  if (auto stage = op->getAttrOfType<IntegerAttr>(PipeDialect::kStageAttrName))
    return stage.getInt();
  return std::nullopt;
}

void mlir::dpc::pipe::setStage(Operation *op, int64_t stage) {
  Builder builder(op->getContext());
  op->setAttr(PipeDialect::kStageAttrName, builder.getI64IntegerAttr(stage));
}

// Peers and tags identify transfers; both are non-negative, and a stage never
// sends to itself.
// (I64Attr accessors are unsigned; read the attributes as signed.)
template <typename TransferOp>
static LogicalResult verifyTransfer(TransferOp op) {
  int64_t peer = op.getPeerAttr().getInt();
  int64_t tag = op.getTagAttr().getInt();
  if (peer < 0)
    return op.emitOpError("expects a non-negative peer stage, got ") << peer;
  if (tag < 0)
    return op.emitOpError("expects a non-negative tag, got ") << tag;
  if (std::optional<int64_t> stage = getStage(op); stage && *stage == peer)
    return op.emitOpError("expects a peer other than its own stage ") << *stage;
  return success();
}

LogicalResult SendOp::verify() { return verifyTransfer(*this); }
LogicalResult RecvOp::verify() { return verifyTransfer(*this); }

LogicalResult StashOp::verify() {
  if (getKey().empty())
    return emitOpError("expects a non-empty key");
  return success();
}

LogicalResult RestoreOp::verify() {
  if (getKey().empty())
    return emitOpError("expects a non-empty key");
  return success();
}

LogicalResult AllReduceOp::verify() {
  if (getReduction() != "sum" && getReduction() != "mean")
    return emitOpError("expects reduction \"sum\" or \"mean\", got \"")
           << getReduction() << "\"";
  return success();
}

LogicalResult ReportLossOp::verify() {
  if (cast<RankedTensorType>(getLoss().getType()).getRank() != 0)
    return emitOpError("expects a 0-d loss");
  return success();
}

// The parameter operand names the accumulator; only nn.param can name one.
static LogicalResult verifyNamesParam(Operation *op, Value param) {
  Operation *def = param.getDefiningOp();
  if (!def || def->getName().getStringRef() != "nn.param")
    return op->emitOpError("expects the param operand to come from nn.param");
  return success();
}

LogicalResult AccumulateGradOp::verify() {
  return verifyNamesParam(*this, getParam());
}

LogicalResult AccumulatedGradOp::verify() {
  return verifyNamesParam(*this, getParam());
}

#define GET_OP_CLASSES
#include "dialects/pipe/IR/PipeOps.cpp.inc"
