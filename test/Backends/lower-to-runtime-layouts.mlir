// RUN: dpc-opt %s --dpc-lower-to-runtime | FileCheck %s

// Channel-blocked activations (propagate-layouts) reach the kernels: a
// convolution's params end with which of its sides are blocked (1: the
// input side, 2: the output side), batch normalization takes a block of
// 16, a blocked bias gradient sums like batch normalization's, and a
// relayout converts to blocked (1) or back (0). A filter gradient whose
// one reader accumulates it adds into the parameter's accumulator itself
// (4); one read twice writes a buffer that is accumulated after.
module attributes {pipe.num_stages = 1 : i64} {
  func.func @stage0_forward() attributes {pipe.segment = "forward", pipe.stage = 0 : i64} {
    %x = pipe.input 0 : tensor<2x16x6x6xf32>
    %w = nn.param "w" : tensor<32x16x3x3xf32>
    %rm = nn.param "bn.running_mean" : tensor<32xf32>
    %rv = nn.param "bn.running_var" : tensor<32xf32>
    %g = nn.param "bn.weight" : tensor<32xf32>
    %b = nn.param "bn.bias" : tensor<32xf32>
    %c = nn.conv2d %x, %w {nn.layout = "nChw16c", pads = array<i64: 1, 1, 1, 1>} : (tensor<2x16x6x6xf32>, tensor<32x16x3x3xf32>) -> tensor<2x32x6x6xf32>
    %s = nn.batch_norm_stats %c, %rm, %rv : (tensor<2x32x6x6xf32>, tensor<32xf32>, tensor<32xf32>) -> tensor<2x32xf32>
    %y = nn.batch_norm %c, %s, %g, %b {nn.layout = "nChw16c"} : (tensor<2x32x6x6xf32>, tensor<2x32xf32>, tensor<32xf32>, tensor<32xf32>) -> tensor<2x32x6x6xf32>
    %p = nn.relayout %y : tensor<2x32x6x6xf32>
    pipe.stash %p key "p" : tensor<2x32x6x6xf32>
    pipe.stash %s key "s" : tensor<2x32xf32>
    return
  }
  func.func @stage0_backward() attributes {pipe.segment = "backward", pipe.stage = 0 : i64} {
    %x = pipe.input 0 : tensor<2x16x6x6xf32>
    %w = nn.param "w" : tensor<32x16x3x3xf32>
    %p = pipe.restore key "p" : tensor<2x32x6x6xf32>
    %s = pipe.restore key "s" : tensor<2x32xf32>
    %dy = nn.relayout %p {nn.layout = "nChw16c"} : tensor<2x32x6x6xf32>
    %dx = nn.conv2d_grad_input %dy, %w {pads = array<i64: 1, 1, 1, 1>} : (tensor<2x32x6x6xf32>, tensor<32x16x3x3xf32>) -> tensor<2x16x6x6xf32>
    %dw = nn.conv2d_grad_filter %dy, %x {pads = array<i64: 1, 1, 1, 1>} : (tensor<2x32x6x6xf32>, tensor<2x16x6x6xf32>) -> tensor<32x16x3x3xf32>
    %db = nn.conv2d_grad_bias %dy : (tensor<2x32x6x6xf32>) -> tensor<32xf32>
    %dg = nn.batch_norm_grad_scale %dy, %dy, %s : (tensor<2x32x6x6xf32>, tensor<2x32x6x6xf32>, tensor<2x32xf32>) -> tensor<32xf32>
    %dbb = nn.batch_norm_grad_bias %dy : (tensor<2x32x6x6xf32>) -> tensor<32xf32>
    pipe.accumulate_grad %w, %dw : tensor<32x16x3x3xf32>
    // Read twice, this one gets a buffer and an accumulation of its own.
    %v = nn.param "v" : tensor<32x16x3x3xf32>
    %dv = nn.conv2d_grad_filter %dy, %x {pads = array<i64: 1, 1, 1, 1>} : (tensor<2x32x6x6xf32>, tensor<2x16x6x6xf32>) -> tensor<32x16x3x3xf32>
    pipe.accumulate_grad %v, %dv : tensor<32x16x3x3xf32>
    pipe.stash %dv key "dv" : tensor<32x16x3x3xf32>
    pipe.stash %dx key "dx" : tensor<2x16x6x6xf32>
    pipe.stash %db key "db" : tensor<32xf32>
    pipe.stash %dg key "dg" : tensor<32xf32>
    pipe.stash %dbb key "dbb" : tensor<32xf32>
    return
  }
}

// Strides, pads, dilations, groups, then the layouts: the forward's output
// is blocked (2), the gradients' output gradient (2).
// CHECK-DAG: llvm.mlir.global private constant @[[BLOCKEDY:__dpc_const_[0-9]+]](dense<[1, 1, 1, 1, 1, 1, 1, 1, 1, 2]> : tensor<10xi64>)
// CHECK-DAG: llvm.mlir.global private constant @[[SHAPE:__dpc_const_[0-9]+]](dense<[2, 32, 6, 6]> : tensor<4xi64>)
// CHECK-DAG: llvm.mlir.global private constant @[[ADDS:__dpc_const_[0-9]+]](dense<[1, 1, 1, 1, 1, 1, 1, 1, 1, 6]> : tensor<10xi64>)

// CHECK-LABEL: llvm.func @dpc_segment_forward(
// CHECK: %[[FWD:.*]] = llvm.mlir.addressof @[[BLOCKEDY]]
// CHECK: llvm.call @dpc_conv2d(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[FWD]])
// n = 2, c = 32, s = 36, block 16:
// CHECK: llvm.call @dpc_training
// CHECK-NEXT: %[[N:.*]] = llvm.mlir.constant(2 : i64)
// CHECK-NEXT: %[[C:.*]] = llvm.mlir.constant(32 : i64)
// CHECK-NEXT: %[[S:.*]] = llvm.mlir.constant(36 : i64)
// CHECK-NEXT: %[[B1:.*]] = llvm.mlir.constant(16 : i64)
// CHECK: llvm.call @dpc_batch_norm_stats(%{{.*}}, %[[N]], %[[C]], %[[S]], %[[B1]],
// CHECK: %[[B2:.*]] = llvm.mlir.constant(16 : i64)
// CHECK: llvm.call @dpc_batch_norm(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[B2]],
// CHECK: llvm.mlir.addressof @[[SHAPE]]
// CHECK-NEXT: %[[TOPLAIN:.*]] = llvm.mlir.constant(0 : i64)
// CHECK-NEXT: llvm.call @dpc_relayout(%{{.*}}, %{{.*}}, %[[TOPLAIN]], %{{.*}})

// CHECK-LABEL: llvm.func @dpc_segment_backward(
// CHECK: llvm.mlir.addressof @[[SHAPE]]
// CHECK-NEXT: %[[TOBLOCKED:.*]] = llvm.mlir.constant(1 : i64)
// CHECK-NEXT: llvm.call @dpc_relayout(%{{.*}}, %{{.*}}, %[[TOBLOCKED]], %{{.*}})
// CHECK: %[[GI:.*]] = llvm.mlir.addressof @[[BLOCKEDY]]
// CHECK-NEXT: llvm.call @dpc_conv2d_grad_input(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[GI]])
// CHECK: %[[ACC:.*]] = llvm.call @dpc_grad_accumulator(
// CHECK: %[[GF:.*]] = llvm.mlir.addressof @[[ADDS]]
// CHECK-NEXT: llvm.call @dpc_conv2d_grad_filter(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[ACC]], %{{.*}}, %[[GF]])
// The bias gradient of blocked dy: batch normalization's per-channel sums.
// CHECK-NOT: dpc_conv2d_grad_bias
// CHECK: %[[B3:.*]] = llvm.mlir.constant(16 : i64)
// CHECK-NEXT: llvm.call @dpc_batch_norm_grad_bias(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[B3]], %{{.*}})
// CHECK: %[[B4:.*]] = llvm.mlir.constant(16 : i64)
// CHECK: llvm.call @dpc_batch_norm_grad_scale(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[B4]],
// CHECK: %[[B5:.*]] = llvm.mlir.constant(16 : i64)
// CHECK-NEXT: llvm.call @dpc_batch_norm_grad_bias(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[B5]], %{{.*}})
// The gradient read twice: a buffer, then its accumulation; the first
// filter gradient's accumulation is gone.
// CHECK: %[[DV:.*]] = llvm.call @dpc_alloc
// CHECK: %[[GV:.*]] = llvm.mlir.addressof @[[BLOCKEDY]]
// CHECK-NEXT: llvm.call @dpc_conv2d_grad_filter(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[DV]], %{{.*}}, %[[GV]])
// CHECK: llvm.call @dpc_grad_accumulate(%{{.*}}, %{{.*}}, %[[DV]])
// CHECK-NOT: dpc_grad_accumulate
