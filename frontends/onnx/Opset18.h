//===- Opset18.h - Opset-18 models on an opset-17 onnx library --*- C++ -*-===//
//
// The onnx library dpc builds against (1.12) knows opsets up to 17; ONNX's
// GroupNormalization came in opset 18. A model of opset 18 whose other
// nodes are ops opset 18 left as they were imports as opset 17, its
// GroupNormalization nodes written as the opset-17 nodes torch.onnx writes
// for nn.GroupNorm.
//
//===----------------------------------------------------------------------===//

#ifndef DPC_FRONTENDS_ONNX_OPSET18_H
#define DPC_FRONTENDS_ONNX_OPSET18_H

#include "mlir/IR/Location.h"
#include "mlir/Support/LogicalResult.h"

#include "onnx/onnx_pb.h"

#include <cstdint>

namespace mlir::dpc::onnx_frontend {

/// Rewrites `model`, of default-domain opset `opset`, for an onnx library
/// whose newest opset is `newest`: when `opset` is newest + 1 = 18, every
/// GroupNormalization (opset 18, scale and bias of one value a group)
/// becomes Reshape to [N, groups, -1], InstanceNormalization with that
/// scale and bias, and Reshape back to the input's shape (Shape of it), and
/// the model's opset import becomes 17. A node of an op that opset 18
/// changed or added otherwise is refused, naming it (the library would read
/// it by its opset-17 schema). Other opsets are left as they are.
LogicalResult lowerOpset18(onnx::ModelProto &model, int64_t opset,
                           int64_t newest, Location loc);

} // namespace mlir::dpc::onnx_frontend

#endif // DPC_FRONTENDS_ONNX_OPSET18_H
