//===- PipeAttrs.h - pipe dialect attributes --------------------*- C++ -*-===//

#ifndef DPC_DIALECTS_PIPE_IR_PIPEATTRS_H
#define DPC_DIALECTS_PIPE_IR_PIPEATTRS_H

#include "mlir/IR/Attributes.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/DialectImplementation.h"

#include "dialects/pipe/IR/PipeEnums.h.inc"

#define GET_ATTRDEF_CLASSES
#include "dialects/pipe/IR/PipeAttrs.h.inc"

#endif // DPC_DIALECTS_PIPE_IR_PIPEATTRS_H
