// RUN: dpc-opt %s --dpc-lower-to-runtime | FileCheck %s

// A token-level loss with ignore_index: the kernels get the index and the
// run time's scale (dpc_loss_scale: 1 / the step's kept labels) instead of
// a constant, and the manifest's labels tell the runtime what to count.
module attributes {pipe.num_stages = 1 : i64} {
  func.func @stage0_forward() attributes {pipe.segment = "forward", pipe.stage = 0 : i64} {
    %y = pipe.input 0 : tensor<2x3x5xf32>
    %labels = pipe.labels : tensor<2x3xi64>
    %loss = nn.softmax_cross_entropy %y, %labels {ignore_index = -100 : i64} : (tensor<2x3x5xf32>, tensor<2x3xi64>) -> tensor<f32>
    pipe.report_loss %loss : tensor<f32>
    %dy = nn.softmax_cross_entropy_grad %y, %labels {ignore_index = -100 : i64} : (tensor<2x3x5xf32>, tensor<2x3xi64>) -> tensor<2x3x5xf32>
    return
  }
}

// CHECK-DAG: llvm.func @dpc_loss_scale(!llvm.ptr) -> f32
// CHECK-DAG: llvm.func @dpc_softmax_cross_entropy_ignore(!llvm.ptr, !llvm.ptr, i64, i64, i64, f32, !llvm.ptr)
// CHECK-LABEL: llvm.func @dpc_segment_forward(
// CHECK-SAME: %[[CTX:.*]]: !llvm.ptr)
// CHECK-DAG: %[[ROWS:.*]] = llvm.mlir.constant(6 : i64)
// CHECK-DAG: %[[CLASSES:.*]] = llvm.mlir.constant(5 : i64)
// CHECK-DAG: %[[IGNORE:.*]] = llvm.mlir.constant(-100 : i64)
// CHECK-DAG: %[[SCALE:.*]] = llvm.call @dpc_loss_scale(%[[CTX]]) : (!llvm.ptr) -> f32
// CHECK: llvm.call @dpc_softmax_cross_entropy_ignore(%{{.*}}, %{{.*}}, %[[ROWS]], %[[CLASSES]], %[[IGNORE]], %[[SCALE]], %{{.*}})
// CHECK: llvm.call @dpc_report_loss
// CHECK: %[[SCALE2:.*]] = llvm.call @dpc_loss_scale(%[[CTX]])
// CHECK: llvm.call @dpc_softmax_cross_entropy_ignore_grad(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[SCALE2]], %{{.*}})
// CHECK: llvm.mlir.global external constant @dpc_rank_manifest(
// CHECK-SAME: \22labels\22:{\22dtype\22:\22i64\22,\22ignore_index\22:-100,\22shape\22:[2,3]}
