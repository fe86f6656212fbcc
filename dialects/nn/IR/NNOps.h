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

#include <array>

// The ABI codes the elementwise function ops name (UnaryFunctions.def).
#include "dpc/runtime/UnaryFunctions.h"

namespace mlir::dpc::nn {
/// The verifier of InferResultOpInterface: the op's one result has the type
/// its inferResultType gives.
LogicalResult verifyInferredResult(Operation *op);
} // namespace mlir::dpc::nn

#include "dialects/nn/IR/NNInterfaces.h.inc"

#define GET_OP_CLASSES
#include "dialects/nn/IR/NNOps.h.inc"

namespace mlir::dpc::nn {

/// The forward tensor the gradient of elementwise function `op` reads: its
/// result or its input, as the function's row of UnaryFunctions.def says.
Value unaryGradientSaved(UnaryFunctionOpInterface op);

/// The attributes of elementwise function `op` that its row names
/// (LeakyRelu's alpha, ...; none for most), which its gradient op carries
/// too.
SmallVector<NamedAttribute> unaryParameters(UnaryFunctionOpInterface op);

/// Their values as dpc_unary takes them, `a` and `b`: zero where the row
/// names none.
std::array<float, 2> unaryParameterValues(UnaryFunctionOpInterface op);

/// The discardable attribute that marks an op's results channel-blocked
/// (propagate-layouts), and its one value.
constexpr StringLiteral kLayoutAttrName = "nn.layout";
constexpr StringLiteral kChannelBlocked = "nChw16c";
/// Channels per block of a channel-blocked tensor.
constexpr int64_t kChannelBlock = 16;

/// Whether `tensor` is channel-blocked in memory: its defining op carries
/// kLayoutAttrName. Block arguments and everything else are plain.
bool isChannelBlocked(Value tensor);

/// Whether `type` can be channel-blocked: a 4-D f32 tensor whose channels
/// (dimension 1) are a multiple of kChannelBlock.
bool canBeChannelBlocked(Type type);

/// Whether `op` is a loss autodiff appends (`nn.softmax_cross_entropy`,
/// `nn.mse_loss`): in a training module, the op that ends the forward pass.
bool isLoss(Operation *op);

/// The losses of `block`, in order; a training @main has exactly one.
SmallVector<Operation *> getLosses(Block &block);

} // namespace mlir::dpc::nn

#endif // DPC_DIALECTS_NN_IR_NNOPS_H
