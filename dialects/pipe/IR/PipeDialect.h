//===- PipeDialect.h - pipe dialect -----------------------------*- C++ -*-===//

#ifndef DPC_DIALECTS_PIPE_IR_PIPEDIALECT_H
#define DPC_DIALECTS_PIPE_IR_PIPEDIALECT_H

#include "mlir/IR/Dialect.h"

#include "dialects/pipe/IR/PipeDialect.h.inc"

#endif // DPC_DIALECTS_PIPE_IR_PIPEDIALECT_H
