// RUN: dpc-opt %s --dpc-lower-to-runtime | FileCheck %s

// A regression's loss (--loss mse): the kernels get the element count and
// the constant scale, and the manifest's labels are float targets of the
// output's shape.
module attributes {pipe.num_stages = 1 : i64} {
  func.func @stage0_forward() attributes {pipe.segment = "forward", pipe.stage = 0 : i64} {
    %y = pipe.input 0 : tensor<4x8xf32>
    %t = pipe.labels : tensor<4x8xf32>
    %loss = nn.mse_loss %y, %t {scale = 0.0078125 : f32} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<f32>
    pipe.report_loss %loss : tensor<f32>
    %dy = nn.mse_loss_grad %y, %t {scale = 0.0078125 : f32} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
    return
  }
}

// CHECK-DAG: llvm.func @dpc_mse_loss(!llvm.ptr, !llvm.ptr, i64, f32, !llvm.ptr)
// CHECK-DAG: llvm.func @dpc_mse_loss_grad(!llvm.ptr, !llvm.ptr, i64, f32, !llvm.ptr)
// CHECK-LABEL: llvm.func @dpc_segment_forward(
// CHECK-SAME: %[[CTX:.*]]: !llvm.ptr)
// CHECK: %[[Y:.*]] = llvm.call @dpc_input(%[[CTX]], %{{.*}})
// CHECK: %[[T:.*]] = llvm.call @dpc_labels(%[[CTX]])
// CHECK-DAG: %[[N:.*]] = llvm.mlir.constant(32 : i64)
// CHECK-DAG: %[[SCALE:.*]] = llvm.mlir.constant(7.812500e-03 : f32)
// CHECK: llvm.call @dpc_mse_loss(%[[Y]], %[[T]], %[[N]], %[[SCALE]], %{{.*}})
// CHECK: llvm.call @dpc_report_loss
// CHECK: llvm.call @dpc_mse_loss_grad(%[[Y]], %[[T]], %{{.*}}, %{{.*}}, %{{.*}})
// CHECK: llvm.mlir.global external constant @dpc_rank_manifest(
// CHECK-SAME: \22labels\22:{\22dtype\22:\22f32\22,\22shape\22:[4,8]}
