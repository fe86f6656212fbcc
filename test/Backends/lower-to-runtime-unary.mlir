// RUN: dpc-opt %s --dpc-lower-to-runtime | FileCheck %s

// Elementwise functions become dpc_unary and dpc_unary_grad calls with the
// function's code and its two attributes: a row's attributes in the order
// UnaryFunctions.def names them, zero for a function without.
module attributes {pipe.num_stages = 1 : i64} {
  func.func @stage0_forward() attributes {pipe.segment = "forward", pipe.stage = 0 : i64} {
    %x = pipe.input 0 : tensor<2x8xf32>
    %t = nn.tanh %x : tensor<2x8xf32>
    %h = nn.hard_sigmoid %t {alpha = 0.25 : f32, beta = 0.375 : f32} : tensor<2x8xf32>
    pipe.stash %h key "h" : tensor<2x8xf32>
    return
  }
  func.func @stage0_backward() attributes {pipe.segment = "backward", pipe.stage = 0 : i64} {
    %x = pipe.input 0 : tensor<2x8xf32>
    %dy = pipe.restore key "h" : tensor<2x8xf32>
    %dx = nn.shrink_grad %dy, %x {bias = 0.5 : f32, lambd = 1.5 : f32} : tensor<2x8xf32>
    pipe.stash %dx key "dx" : tensor<2x8xf32>
    return
  }
}

// CHECK-DAG: llvm.func @dpc_unary(i64, f32, f32, !llvm.ptr, !llvm.ptr, i64)
// CHECK-DAG: llvm.func @dpc_unary_grad(i64, f32, f32, !llvm.ptr, !llvm.ptr, !llvm.ptr, i64)
// CHECK-LABEL: llvm.func @dpc_segment_forward(
// CHECK: %[[A:.*]] = llvm.mlir.constant(0.000000e+00 : f32)
// CHECK: %[[B:.*]] = llvm.mlir.constant(0.000000e+00 : f32)
// CHECK: llvm.call @dpc_unary(%{{.*}}, %[[A]], %[[B]], %{{.*}}, %{{.*}}, %{{.*}})
// CHECK: %[[ALPHA:.*]] = llvm.mlir.constant(2.500000e-01 : f32)
// CHECK: %[[BETA:.*]] = llvm.mlir.constant(3.750000e-01 : f32)
// CHECK: llvm.call @dpc_unary(%{{.*}}, %[[ALPHA]], %[[BETA]], %{{.*}}, %{{.*}}, %{{.*}})
// CHECK-LABEL: llvm.func @dpc_segment_backward(
// CHECK: %[[BIAS:.*]] = llvm.mlir.constant(5.000000e-01 : f32)
// CHECK: %[[LAMBD:.*]] = llvm.mlir.constant(1.500000e+00 : f32)
// CHECK: llvm.call @dpc_unary_grad(%{{.*}}, %[[BIAS]], %[[LAMBD]], %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}})
