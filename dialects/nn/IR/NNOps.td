//===- NNOps.td - nn dialect operations --------------------*- tablegen -*-===//
//
// The ops of the nn dialect, a file per family. Each family's NN<Family>.td
// has its NN<Family>.cpp beside it, holding the verifiers and gradient rules
// of its ops; shape rules live in ShapeInference.{h,cpp} as plain functions,
// which the verifiers and the ONNX importer both call.
//
//===----------------------------------------------------------------------===//

#ifndef DPC_DIALECTS_NN_IR_NNOPS_TD
#define DPC_DIALECTS_NN_IR_NNOPS_TD

include "dialects/nn/IR/NNBase.td"

include "dialects/nn/IR/NNConv.td"
include "dialects/nn/IR/NNLoss.td"
include "dialects/nn/IR/NNMath.td"
include "dialects/nn/IR/NNOptimizer.td"
include "dialects/nn/IR/NNPoolNorm.td"
include "dialects/nn/IR/NNRecurrent.td"
include "dialects/nn/IR/NNTensor.td"

#endif // DPC_DIALECTS_NN_IR_NNOPS_TD
