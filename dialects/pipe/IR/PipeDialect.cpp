//===- PipeDialect.cpp - pipe dialect -------------------------------------===//

#include "dialects/pipe/IR/PipeDialect.h"
#include "dialects/pipe/IR/PipeAttrs.h"
#include "dialects/pipe/IR/PipeOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinOps.h"

#include <cmath>

using namespace mlir;
using namespace mlir::dpc::pipe;

#include "dialects/pipe/IR/PipeDialect.cpp.inc"

void PipeDialect::initialize() {
  registerAttributes();
  addOperations<
#define GET_OP_LIST
#include "dialects/pipe/IR/PipeOps.cpp.inc"
      >();
}

LogicalResult PipeDialect::verifyOperationAttribute(Operation *op,
                                                    NamedAttribute attr) {
  if (attr.getName() == kStageAttrName) {
    auto stage = dyn_cast<IntegerAttr>(attr.getValue());
    if (!stage || !stage.getType().isInteger(64) || stage.getInt() < 0)
      return op->emitError("expects '")
             << kStageAttrName << "' to be a non-negative i64, got "
             << attr.getValue();
    return success();
  }
  if (attr.getName() == kNumStagesAttrName ||
      attr.getName() == kMicrobatchSizeAttrName ||
      attr.getName() == kChunksAttrName) {
    auto count = dyn_cast<IntegerAttr>(attr.getValue());
    if (!isa<ModuleOp>(op) || !count || count.getInt() < 1)
      return op->emitError("expects '")
             << attr.getName().getValue()
             << "' to be a positive integer on a module";
    return success();
  }
  if (attr.getName() == kInferenceAttrName) {
    if (!isa<ModuleOp>(op) || !isa<UnitAttr>(attr.getValue()))
      return op->emitError("expects '")
             << kInferenceAttrName << "' to be a unit attribute on a module";
    return success();
  }
  if (attr.getName() == kPrecisionAttrName) {
    auto precision = dyn_cast<StringAttr>(attr.getValue());
    if (!isa<ModuleOp>(op) || !precision ||
        !llvm::is_contained({"fp32", "bf16"}, precision.getValue()))
      return op->emitError("expects '")
             << kPrecisionAttrName
             << "' to be \"fp32\" or \"bf16\" on a module";
    return success();
  }
  if (attr.getName() == "pipe.offset" || attr.getName() == "pipe.arena_bytes") {
    auto value = dyn_cast<IntegerAttr>(attr.getValue());
    if (!value || value.getInt() < 0)
      return op->emitError("expects '")
             << attr.getName().getValue() << "' to be a non-negative integer";
    return success();
  }
  if (attr.getName() == "pipe.peak_memory") {
    auto peaks = dyn_cast<DenseI64ArrayAttr>(attr.getValue());
    if (!isa<ModuleOp>(op) || !peaks)
      return op->emitError("expects 'pipe.peak_memory' to be an array of "
                           "byte counts on a module");
    return success();
  }
  if (attr.getName() == "pipe.predicted_step_ms" ||
      attr.getName() == "pipe.predicted_bubble" ||
      attr.getName() == kMessageLatencyAttrName ||
      attr.getName() == kWakeLatencyAttrName) {
    auto value = dyn_cast<FloatAttr>(attr.getValue());
    if (!isa<ModuleOp>(op) || !value || value.getValueAsDouble() < 0)
      return op->emitError("expects '")
             << attr.getName().getValue()
             << "' to be a non-negative float on a module";
    return success();
  }
  if (attr.getName() == kComputeFactorAttrName) {
    auto value = dyn_cast<FloatAttr>(attr.getValue());
    if (!isa<ModuleOp>(op) || !value || !(value.getValueAsDouble() > 0))
      return op->emitError("expects '")
             << attr.getName().getValue()
             << "' to be a positive float on a module";
    return success();
  }
  if (attr.getName() == kSegmentAttrName) {
    auto segment = dyn_cast<StringAttr>(attr.getValue());
    if (!segment ||
        !llvm::is_contained({"forward", "backward", "backward_input",
                             "backward_weight", "optimizer"},
                            segment.getValue()))
      return op->emitError("expects '")
             << kSegmentAttrName
             << "' to be one of forward, backward, backward_input, "
                "backward_weight, optimizer";
    return success();
  }
  if (attr.getName() == kReplicasAttrName) {
    auto replicas = dyn_cast<DenseI64ArrayAttr>(attr.getValue());
    if (!isa<ModuleOp>(op) || !replicas ||
        llvm::any_of(replicas.asArrayRef(), [](int64_t r) { return r < 1; }))
      return op->emitError("expects '")
             << kReplicasAttrName
             << "' to be an array of positive counts on a module";
    return success();
  }
  if (attr.getName() == kStageSpeedsAttrName) {
    auto speeds = dyn_cast<DenseF64ArrayAttr>(attr.getValue());
    if (!isa<ModuleOp>(op) || !speeds ||
        llvm::any_of(speeds.asArrayRef(),
                     [](double s) { return !(s > 0) || !std::isfinite(s); }))
      return op->emitError("expects '")
             << kStageSpeedsAttrName
             << "' to be an array of positive finite speeds on a module";
    return success();
  }
  if (attr.getName() == kRankMemoryAttrName) {
    auto bytes = dyn_cast<DenseI64ArrayAttr>(attr.getValue());
    if (!isa<ModuleOp>(op) || !bytes ||
        llvm::any_of(bytes.asArrayRef(), [](int64_t b) { return b < 0; }))
      return op->emitError("expects '")
             << kRankMemoryAttrName
             << "' to be an array of non-negative byte counts on a module";
    return success();
  }
  if (attr.getName() == kRecomputeAttrName) {
    auto stages = dyn_cast<DenseI64ArrayAttr>(attr.getValue());
    if (!isa<ModuleOp>(op) || !stages ||
        llvm::any_of(stages.asArrayRef(), [](int64_t s) { return s < 0; }))
      return op->emitError("expects '")
             << kRecomputeAttrName
             << "' to be an array of stage numbers on a module";
    return success();
  }
  if (attr.getName() == kRecomputedAttrName) {
    if (!isa<UnitAttr>(attr.getValue()))
      return op->emitError("expects '")
             << kRecomputedAttrName << "' to be a unit attribute";
    return success();
  }
  return op->emitError("unknown pipe dialect attribute '")
         << attr.getName().getValue() << "'";
}
