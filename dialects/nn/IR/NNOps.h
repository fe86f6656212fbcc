//===- NNOps.h - nn dialect operations --------------------------*- C++ -*-===//

#ifndef DPC_DIALECTS_NN_IR_NNOPS_H
#define DPC_DIALECTS_NN_IR_NNOPS_H

#include "dialects/nn/IR/NNDialect.h"
#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "dialects/nn/IR/NNInterfaces.h.inc"

#define GET_OP_CLASSES
#include "dialects/nn/IR/NNOps.h.inc"

#endif // DPC_DIALECTS_NN_IR_NNOPS_H
