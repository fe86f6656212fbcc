//===- Fused.h - Elementwise ops computed in one generated loop -*- C++ -*-===//
//
// What fuse-elementwise (passes/FuseElementwise.cpp) may group and what
// lower-to-runtime generates for an nn.fused region (Fused.cpp): one loop
// over the result's elements in the rank object instead of one runtime call
// and one buffer per op. The pass asks isFusible, so it never builds a
// region the code generator cannot compute.
//
//===----------------------------------------------------------------------===//

#ifndef DPC_PASSES_LOWERING_FUSED_H
#define DPC_PASSES_LOWERING_FUSED_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/PassManager.h"

#include <functional>
#include <optional>

namespace mlir::dpc::lowering {

/// How a loop over the elements of a result reads an operand broadcast to
/// it: element i of the result reads the operand's element
/// (i / inner) % extent. The operand's dimensions that are not 1 must be
/// one contiguous run of the result's (a bias over the last dimensions, a
/// per-row value, a scalar, or the whole shape).
struct BroadcastAccess {
  int64_t inner = 1;
  int64_t extent = 1;
};
std::optional<BroadcastAccess> broadcastAccess(ArrayRef<int64_t> operand,
                                               ArrayRef<int64_t> result);

/// Whether `op` is an elementwise op of f32 tensors the fused loop computes:
/// nn.add, nn.sub, nn.mul and nn.div whose operands broadcast as
/// broadcastAccess allows, nn.relu and nn.relu_grad, and the functions of
/// UnaryFunctions.def the loop knows (and their gradients).
bool isFusible(Operation *op);

class RuntimeLoweringTable;

/// Lowers each nn.fused op to a call of a generated kernel, whose body
/// (memrefs, scf, vector, arith, math) is built in a module nested in the
/// rank module; lowerFusedKernels turns that module into the LLVM dialect
/// and moves its functions into the rank module.
void populateFusedLowerings(RuntimeLoweringTable &table);
LogicalResult lowerFusedKernels(
    ModuleOp module,
    const std::function<LogicalResult(OpPassManager &, Operation *)>
        &runPipeline);

} // namespace mlir::dpc::lowering

#endif // DPC_PASSES_LOWERING_FUSED_H
