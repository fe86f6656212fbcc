// RUN: dpc-opt %s --dpc-lower-to-runtime | FileCheck %s

// Batch normalization and pooling become kernel calls. The statistics
// kernel asks the runtime whether it trains and gets the running
// statistics' live buffers, which it updates in place.
module attributes {pipe.num_stages = 1 : i64} {
  func.func @stage0_forward() attributes {pipe.segment = "forward", pipe.stage = 0 : i64} {
    %x = pipe.input 0 : tensor<2x4x6x6xf32>
    %rm = nn.param "bn.running_mean" : tensor<4xf32>
    %rv = nn.param "bn.running_var" : tensor<4xf32>
    %g = nn.param "bn.weight" : tensor<4xf32>
    %b = nn.param "bn.bias" : tensor<4xf32>
    %s = nn.batch_norm_stats %x, %rm, %rv {momentum = 0.8 : f32} : (tensor<2x4x6x6xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
    pipe.stash %s key "s" : tensor<2x4xf32>
    %y = nn.batch_norm %x, %s, %g, %b {epsilon = 1.0e-3 : f32} : (tensor<2x4x6x6xf32>, tensor<2x4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<2x4x6x6xf32>
    %p = nn.avg_pool2d %y {kernel_shape = array<i64: 3, 3>, strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, count_include_pad = true} : (tensor<2x4x6x6xf32>) -> tensor<2x4x3x3xf32>
    %q = nn.global_avg_pool %p : (tensor<2x4x3x3xf32>) -> tensor<2x4x1x1xf32>
    pipe.stash %q key "q" : tensor<2x4x1x1xf32>
    return
  }
  func.func @stage0_backward() attributes {pipe.segment = "backward", pipe.stage = 0 : i64} {
    %x = pipe.input 0 : tensor<2x4x6x6xf32>
    %g = nn.param "bn.weight" : tensor<4xf32>
    %s = pipe.restore key "s" : tensor<2x4xf32>
    %dq = pipe.restore key "q" : tensor<2x4x1x1xf32>
    %dp = nn.global_avg_pool_grad %dq : (tensor<2x4x1x1xf32>) -> tensor<2x4x3x3xf32>
    %dy = nn.avg_pool2d_grad %dp {kernel_shape = array<i64: 3, 3>, strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>} : (tensor<2x4x3x3xf32>) -> tensor<2x4x6x6xf32>
    %dx = nn.batch_norm_grad_input %dy, %x, %s, %g {epsilon = 1.0e-3 : f32} : (tensor<2x4x6x6xf32>, tensor<2x4x6x6xf32>, tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4x6x6xf32>
    %dg = nn.batch_norm_grad_scale %dy, %x, %s {epsilon = 1.0e-3 : f32} : (tensor<2x4x6x6xf32>, tensor<2x4x6x6xf32>, tensor<2x4xf32>) -> tensor<4xf32>
    %db = nn.batch_norm_grad_bias %dy : (tensor<2x4x6x6xf32>) -> tensor<4xf32>
    pipe.accumulate_grad %g, %dg : tensor<4xf32>
    return
  }
}

// Window, strides, pads, then count_include_pad:
// CHECK-DAG: llvm.mlir.global private constant @[[POOL:__dpc_const_[0-9]+]](dense<[3, 3, 2, 2, 1, 1, 1, 1, 1]> : tensor<9xi64>)
// CHECK-DAG: llvm.mlir.global private constant @[[POOLGRAD:__dpc_const_[0-9]+]](dense<[3, 3, 2, 2, 1, 1, 1, 1, 0]> : tensor<9xi64>)

// CHECK-LABEL: llvm.func @dpc_segment_forward(
// CHECK-SAME: %[[CTX:.*]]: !llvm.ptr)
// CHECK: %[[RM:.*]] = llvm.call @dpc_param_state(%[[CTX]], %{{.*}})
// CHECK: %[[RV:.*]] = llvm.call @dpc_param_state(%[[CTX]], %{{.*}})
// CHECK: %[[TRAINING:.*]] = llvm.call @dpc_training(%[[CTX]]) : (!llvm.ptr) -> i64
// n = 2, c = 4, s = 36, plain (block 1), momentum 0.8:
// CHECK-NEXT: llvm.mlir.constant(2 : i64)
// CHECK-NEXT: llvm.mlir.constant(4 : i64)
// CHECK-NEXT: llvm.mlir.constant(36 : i64)
// CHECK-NEXT: %[[PLAIN:.*]] = llvm.mlir.constant(1 : i64)
// CHECK: llvm.call @dpc_batch_norm_stats(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[PLAIN]], %[[RM]], %[[RV]], %{{.*}}, %[[TRAINING]], %[[S:.*]]) : (!llvm.ptr, i64, i64, i64, i64, !llvm.ptr, !llvm.ptr, f32, i64, !llvm.ptr) -> ()
// CHECK: llvm.call @dpc_batch_norm(%{{.*}}, %[[S]],
// CHECK: %[[P:.*]] = llvm.mlir.addressof @[[POOL]]
// CHECK: llvm.call @dpc_avg_pool2d(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[P]])
// 2 x 4 planes of 9:
// CHECK: llvm.call @dpc_global_avg_pool

// CHECK-LABEL: llvm.func @dpc_segment_backward(
// CHECK: llvm.call @dpc_global_avg_pool_grad
// CHECK: %[[PG:.*]] = llvm.mlir.addressof @[[POOLGRAD]]
// CHECK: llvm.call @dpc_avg_pool2d_grad(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[PG]])
// CHECK: llvm.call @dpc_batch_norm_grad_input
// CHECK: llvm.call @dpc_batch_norm_grad_scale
// The bias gradient sums dy over n and s per channel: (2, 4, 36), plain.
// CHECK: llvm.mlir.constant(2 : i64)
// CHECK-NEXT: llvm.mlir.constant(4 : i64)
// CHECK-NEXT: llvm.mlir.constant(36 : i64)
// CHECK-NEXT: %[[BPLAIN:.*]] = llvm.mlir.constant(1 : i64)
// CHECK-NEXT: llvm.call @dpc_batch_norm_grad_bias(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[BPLAIN]], %{{.*}})
