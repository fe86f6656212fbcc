// RUN: dpc-opt %s --dpc-lower-to-runtime=profile=true | FileCheck %s
// RUN: dpc-opt %s --dpc-lower-to-runtime | FileCheck %s --check-prefix=PLAIN

// A timing build brackets each kernel call of the forward and backward
// segments with its op id; the manifest names each id's node and phase.
// The halves of the backward and the optimizer are not timed.
module attributes {pipe.num_stages = 1 : i64} {
  func.func @stage0_forward() attributes {pipe.segment = "forward", pipe.stage = 0 : i64} {
    %x = pipe.input 0 : tensor<4x8xf32>
    %w = nn.param "w" : tensor<8x8xf32>
    %m = nn.matmul %x, %w {nn.node = "fc"} : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
    %v = nn.reshape %m {nn.node = "view"} : (tensor<4x8xf32>) -> tensor<32xf32>
    %r = nn.relu %v {nn.node = "act"} : tensor<32xf32>
    pipe.stash %r key "r" : tensor<32xf32>
    return
  }
  func.func @stage0_backward() attributes {pipe.segment = "backward", pipe.stage = 0 : i64} {
    %r = pipe.restore key "r" : tensor<32xf32>
    %g = nn.relu_grad %r, %r {nn.node = "act"} : tensor<32xf32>
    return
  }
  func.func @stage0_backward_weight() attributes {pipe.segment = "backward_weight", pipe.stage = 0 : i64} {
    %r = pipe.restore key "r" : tensor<32xf32>
    %g = nn.relu_grad %r, %r {nn.node = "act"} : tensor<32xf32>
    return
  }
}

// CHECK-LABEL: llvm.func @dpc_segment_forward(
// CHECK: llvm.call @dpc_profile_begin
// CHECK: llvm.call @dpc_matmul
// CHECK: llvm.call @dpc_profile_end
// The reshape is a view: no kernel, no timing.
// CHECK-NEXT: llvm.mlir.constant(1 : i64)
// CHECK-NEXT: llvm.call @dpc_profile_begin
// CHECK: llvm.call @dpc_relu
// CHECK: llvm.call @dpc_profile_end
// CHECK-LABEL: llvm.func @dpc_segment_backward(
// CHECK: llvm.call @dpc_profile_begin
// CHECK: llvm.call @dpc_relu_grad
// CHECK: llvm.call @dpc_profile_end
// CHECK-LABEL: llvm.func @dpc_segment_backward_weight(
// CHECK-NOT: dpc_profile_begin
// CHECK: llvm.call @dpc_relu_grad
// CHECK-NOT: dpc_profile_begin
// CHECK: llvm.mlir.global external constant @dpc_rank_manifest
// CHECK-SAME: \22profile\22:[{\22id\22:0,\22node\22:\22fc\22,\22phase\22:\22forward\22},{\22id\22:1,\22node\22:\22act\22,\22phase\22:\22forward\22},{\22id\22:2,\22node\22:\22act\22,\22phase\22:\22backward\22}]

// PLAIN-NOT: dpc_profile_begin
// PLAIN-NOT: \22profile\22
