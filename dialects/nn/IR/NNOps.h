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

// The ABI codes the elementwise function ops name (UnaryFunctions.def).
#include "dpc/runtime/UnaryFunctions.h"

#include "dialects/nn/IR/NNInterfaces.h.inc"

#define GET_OP_CLASSES
#include "dialects/nn/IR/NNOps.h.inc"

namespace mlir::dpc::nn {

/// The forward tensor the gradient of elementwise function `op` reads: its
/// result or its input, as the function's row of UnaryFunctions.def says.
Value unaryGradientSaved(UnaryFunctionOpInterface op);

} // namespace mlir::dpc::nn

#endif // DPC_DIALECTS_NN_IR_NNOPS_H
