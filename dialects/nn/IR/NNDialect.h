//===- NNDialect.h - nn dialect ---------------------------------*- C++ -*-===//

#ifndef DPC_DIALECTS_NN_IR_NNDIALECT_H
#define DPC_DIALECTS_NN_IR_NNDIALECT_H

#include "mlir/IR/Dialect.h"

#include "dialects/nn/IR/NNDialect.h.inc"

#endif // DPC_DIALECTS_NN_IR_NNDIALECT_H
