//===- dpc-opt.cpp - Pass driver for dpc dialects and passes --------------===//
//
// mlir-opt with the dialects a dpc module may contain (builtin, func, arith,
// tensor, nn, pipe), the dpc passes and dpc compile's pipeline
// (--dpc-pipeline), for pass development and lit tests.
//
//===----------------------------------------------------------------------===//

#include "dialects/nn/IR/NNDialect.h"
#include "dialects/pipe/IR/PipeDialect.h"
#include "passes/Passes.h"
#include "passes/Pipeline.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "mlir/Transforms/Passes.h"

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  registry.insert<mlir::func::FuncDialect, mlir::arith::ArithDialect,
                  mlir::tensor::TensorDialect, mlir::dpc::nn::NNDialect,
                  mlir::dpc::pipe::PipeDialect>();
  mlir::registerCanonicalizerPass();
  mlir::registerCSEPass();
  mlir::registerSymbolDCEPass();
  mlir::dpc::registerDPCPasses();
  mlir::dpc::registerPipeline();
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "dpc pass driver\n", registry));
}
