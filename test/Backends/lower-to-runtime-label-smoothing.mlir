// RUN: dpc-opt %s -split-input-file --dpc-lower-to-runtime | FileCheck %s

// Label smoothing: the loss and its gradient call the smoothed kernels with
// the smoothing, no ignored label (0, 0) and the constant scale.
module attributes {pipe.num_stages = 1 : i64} {
  func.func @stage0_forward() attributes {pipe.segment = "forward", pipe.stage = 0 : i64} {
    %y = pipe.input 0 : tensor<4x5xf32>
    %labels = pipe.labels : tensor<4xi64>
    %loss = nn.softmax_cross_entropy %y, %labels {scale = 0.25 : f32, label_smoothing = 0.1 : f32} : (tensor<4x5xf32>, tensor<4xi64>) -> tensor<f32>
    pipe.report_loss %loss : tensor<f32>
    %dy = nn.softmax_cross_entropy_grad %y, %labels {scale = 0.25 : f32, label_smoothing = 0.1 : f32} : (tensor<4x5xf32>, tensor<4xi64>) -> tensor<4x5xf32>
    return
  }
}

// CHECK-DAG: llvm.func @dpc_softmax_cross_entropy_smoothed(!llvm.ptr, !llvm.ptr, i64, i64, i64, i64, f32, f32, !llvm.ptr)
// CHECK-LABEL: llvm.func @dpc_segment_forward(
// CHECK: %[[SCALE:.*]] = llvm.mlir.constant(2.500000e-01 : f32)
// CHECK: %[[ROWS:.*]] = llvm.mlir.constant(4 : i64)
// CHECK-NEXT: %[[CLASSES:.*]] = llvm.mlir.constant(5 : i64)
// CHECK-NEXT: %[[HAS:.*]] = llvm.mlir.constant(0 : i64)
// CHECK-NEXT: %[[INDEX:.*]] = llvm.mlir.constant(0 : i64)
// CHECK-NEXT: %[[SMOOTH:.*]] = llvm.mlir.constant(1.000000e-01 : f32)
// CHECK-NEXT: llvm.call @dpc_softmax_cross_entropy_smoothed(%{{.*}}, %{{.*}}, %[[ROWS]], %[[CLASSES]], %[[HAS]], %[[INDEX]], %[[SMOOTH]], %[[SCALE]], %{{.*}})
// CHECK: llvm.call @dpc_softmax_cross_entropy_smoothed_grad(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}})

// -----

// With ignore_index the run time's scale, and the index.
module attributes {pipe.num_stages = 1 : i64} {
  func.func @stage0_forward() attributes {pipe.segment = "forward", pipe.stage = 0 : i64} {
    %y = pipe.input 0 : tensor<2x3x5xf32>
    %labels = pipe.labels : tensor<2x3xi64>
    %loss = nn.softmax_cross_entropy %y, %labels {ignore_index = -100 : i64, label_smoothing = 0.2 : f32} : (tensor<2x3x5xf32>, tensor<2x3xi64>) -> tensor<f32>
    pipe.report_loss %loss : tensor<f32>
    return
  }
}

// CHECK-LABEL: llvm.func @dpc_segment_forward(
// CHECK-SAME: %[[CTX:.*]]: !llvm.ptr)
// CHECK: %[[SCALE:.*]] = llvm.call @dpc_loss_scale(%[[CTX]]) : (!llvm.ptr) -> f32
// CHECK-NEXT: llvm.mlir.constant(6 : i64)
// CHECK-NEXT: llvm.mlir.constant(5 : i64)
// CHECK-NEXT: %[[HAS:.*]] = llvm.mlir.constant(1 : i64)
// CHECK-NEXT: %[[IGNORE:.*]] = llvm.mlir.constant(-100 : i64)
// CHECK-NEXT: %[[SMOOTH:.*]] = llvm.mlir.constant(2.000000e-01 : f32)
// CHECK-NEXT: llvm.call @dpc_softmax_cross_entropy_smoothed(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[HAS]], %[[IGNORE]], %[[SMOOTH]], %[[SCALE]], %{{.*}})
// CHECK: \22ignore_index\22:-100
