//===- PipeOps.h - pipe dialect operations ----------------------*- C++ -*-===//

#ifndef DPC_DIALECTS_PIPE_IR_PIPEOPS_H
#define DPC_DIALECTS_PIPE_IR_PIPEOPS_H

#include "dialects/pipe/IR/PipeAttrs.h"
#include "dialects/pipe/IR/PipeDialect.h"
#include "dpc/schedule/Schedule.h"
#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#define GET_OP_CLASSES
#include "dialects/pipe/IR/PipeOps.h.inc"

namespace mlir::dpc::pipe {

/// The stage an op was assigned to by partition-stages, if any.
std::optional<int64_t> getStage(Operation *op);
/// Assigns `op` to `stage`.
void setStage(Operation *op, int64_t stage);

/// Whether an argument of @main holds the labels (integer class indices,
/// read by the last stage; marked `pipe.labels` by autodiff) rather than a
/// data input (read by the first stage: floats, or integer token ids).
bool isLabels(BlockArgument arg);

/// Model chunks per rank of `module`: its `pipe.chunks`, or 1.
int64_t getNumChunks(ModuleOp module);
/// Whether `module` is a bf16 mixed-precision build (`pipe.precision`).
bool isBf16(ModuleOp module);

} // namespace mlir::dpc::pipe

#endif // DPC_DIALECTS_PIPE_IR_PIPEOPS_H
