//===- Passes.h - dpc compiler passes ---------------------------*- C++ -*-===//

#ifndef DPC_PASSES_PASSES_H
#define DPC_PASSES_PASSES_H

#include "dialects/nn/IR/NNDialect.h"
#include "dialects/pipe/IR/PipeDialect.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Pass/Pass.h"

namespace mlir::dpc {

#define GEN_PASS_DECL
#include "passes/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "passes/Passes.h.inc"

} // namespace mlir::dpc

#endif // DPC_PASSES_PASSES_H
