// RUN: dpc-opt %s --split-input-file --dpc-propagate-layouts | FileCheck %s

// A forward segment: the convolution's result is blocked, and so are the
// batch normalization and relu that follow it and the convolution after
// them; the statistics and the stash read the blocked values as they are.
// The pooling reads plain values: one relayout before it. The first
// convolution's input (1 channel) and its 6-channel sibling stay plain.
// CHECK-LABEL: func.func @stage0_forward
// CHECK: %[[X:.*]] = pipe.input 0
// CHECK: %[[C1:.*]] = nn.conv2d %[[X]], %{{.*}} {nn.layout = "nChw16c", nn.node = "conv1"
// CHECK: %[[C6:.*]] = nn.conv2d %[[X]], %{{.*}} {nn.node = "conv6"
// CHECK: %[[S:.*]] = nn.batch_norm_stats %[[C1]]
// CHECK-NOT: nn.relayout
// CHECK: %[[N:.*]] = nn.batch_norm %[[C1]], %[[S]], %{{.*}}, %{{.*}} {nn.layout = "nChw16c"
// CHECK: %[[R:.*]] = nn.relu %[[N]] {nn.layout = "nChw16c"
// CHECK: pipe.stash %[[R]] key "r"
// CHECK: %[[C2:.*]] = nn.conv2d %[[R]], %{{.*}} {nn.layout = "nChw16c", nn.node = "conv2"
// CHECK: %[[P:.*]] = nn.relayout %[[C2]] {nn.node = "pool"} : tensor<2x32x8x8xf32>
// CHECK: nn.global_avg_pool %[[P]]
// CHECK: pipe.stash %[[C6]] key "c6"
// CHECK: return
func.func @stage0_forward() attributes {pipe.segment = "forward", pipe.stage = 0 : i64} {
  %x = pipe.input 0 : tensor<2x1x8x8xf32>
  %w1 = nn.param "w1" : tensor<16x1x3x3xf32>
  %w6 = nn.param "w6" : tensor<6x1x3x3xf32>
  %w2 = nn.param "w2" : tensor<32x16x3x3xf32>
  %rm = nn.param "rm" : tensor<16xf32>
  %rv = nn.param "rv" : tensor<16xf32>
  %g = nn.param "g" : tensor<16xf32>
  %b = nn.param "b" : tensor<16xf32>
  %c1 = nn.conv2d %x, %w1 {nn.node = "conv1", pads = array<i64: 1, 1, 1, 1>} : (tensor<2x1x8x8xf32>, tensor<16x1x3x3xf32>) -> tensor<2x16x8x8xf32>
  %c6 = nn.conv2d %x, %w6 {nn.node = "conv6", pads = array<i64: 1, 1, 1, 1>} : (tensor<2x1x8x8xf32>, tensor<6x1x3x3xf32>) -> tensor<2x6x8x8xf32>
  %s = nn.batch_norm_stats %c1, %rm, %rv {nn.node = "bn"} : (tensor<2x16x8x8xf32>, tensor<16xf32>, tensor<16xf32>) -> tensor<2x16xf32>
  %n = nn.batch_norm %c1, %s, %g, %b {nn.node = "bn.1"} : (tensor<2x16x8x8xf32>, tensor<2x16xf32>, tensor<16xf32>, tensor<16xf32>) -> tensor<2x16x8x8xf32>
  %r = nn.relu %n {nn.node = "relu"} : tensor<2x16x8x8xf32>
  pipe.stash %r key "r" : tensor<2x16x8x8xf32>
  %c2 = nn.conv2d %r, %w2 {nn.node = "conv2", pads = array<i64: 1, 1, 1, 1>} : (tensor<2x16x8x8xf32>, tensor<32x16x3x3xf32>) -> tensor<2x32x8x8xf32>
  %p = nn.global_avg_pool %c2 {nn.node = "pool"} : (tensor<2x32x8x8xf32>) -> tensor<2x32x1x1xf32>
  pipe.stash %c6 key "c6" : tensor<2x6x8x8xf32>
  pipe.send %p to 1 tag 0 : tensor<2x32x1x1xf32>
  return
}

// A backward segment of the same stage: the restore of "r" is blocked like
// its stash; the plain gradient of the pooling is converted once for both
// of its blocked readers (the relu gradient and the batch norm's input
// gradient read it with a blocked operand), and the result of the relu
// gradient, blocked, feeds the filter gradient as it is. The restore of
// the 6-channel "c6" stays plain.
// CHECK-LABEL: func.func @stage0_backward
// CHECK: %[[R:.*]] = pipe.restore key "r" {nn.layout = "nChw16c"}
// CHECK: %[[C6:.*]] = pipe.restore key "c6" :
// CHECK: %[[D:.*]] = nn.global_avg_pool_grad
// CHECK: %[[DB:.*]] = nn.relayout %[[D]] {nn.layout = "nChw16c", nn.node = "relu"}
// CHECK-NOT: nn.relayout
// CHECK: %[[G:.*]] = nn.relu_grad %[[DB]], %[[R]] {nn.layout = "nChw16c"
// CHECK: nn.batch_norm_grad_input %[[DB]], %[[R]], %{{.*}}, %{{.*}} {nn.layout = "nChw16c"
// CHECK: nn.conv2d_grad_filter %[[G]], %[[R]]
// CHECK: nn.relu_grad %{{.*}}, %[[C6]] {nn.node = "relu6"}
// CHECK: return
func.func @stage0_backward() attributes {pipe.segment = "backward", pipe.stage = 0 : i64} {
  %r = pipe.restore key "r" : tensor<2x16x8x8xf32>
  %c6 = pipe.restore key "c6" : tensor<2x6x8x8xf32>
  %dp = pipe.recv from 1 tag 1 : tensor<2x16x1x1xf32>
  %d = nn.global_avg_pool_grad %dp {nn.node = "pool"} : (tensor<2x16x1x1xf32>) -> tensor<2x16x8x8xf32>
  %g = nn.relu_grad %d, %r {nn.node = "relu"} : tensor<2x16x8x8xf32>
  %s = nn.param "s" : tensor<2x16xf32>
  %sc = nn.param "sc" : tensor<16xf32>
  %bi = nn.batch_norm_grad_input %d, %r, %s, %sc {nn.node = "bn"} : (tensor<2x16x8x8xf32>, tensor<2x16x8x8xf32>, tensor<2x16xf32>, tensor<16xf32>) -> tensor<2x16x8x8xf32>
  %dw = nn.conv2d_grad_filter %g, %r {nn.node = "conv", pads = array<i64: 1, 1, 1, 1>} : (tensor<2x16x8x8xf32>, tensor<2x16x8x8xf32>) -> tensor<16x16x3x3xf32>
  %z = nn.param "z" : tensor<2x6x8x8xf32>
  %g6 = nn.relu_grad %z, %c6 {nn.node = "relu6"} : tensor<2x6x8x8xf32>
  pipe.stash %bi key "bi" : tensor<2x16x8x8xf32>
  pipe.stash %dw key "dw" : tensor<16x16x3x3xf32>
  pipe.stash %g6 key "g6" : tensor<2x6x8x8xf32>
  return
}

// -----

// An add that broadcasts a per-channel bias is no follower: it reads the
// convolution's result plain. So do a reshape and a send; the relayout is
// made once, before the first of them, for all three.
// CHECK-LABEL: func.func @stage0_forward
// CHECK: %[[C:.*]] = nn.conv2d {{.*}}nn.layout = "nChw16c"
// CHECK: %[[P:.*]] = nn.relayout %[[C]] {nn.node = "bias"} : tensor<2x16x4x4xf32>
// CHECK-NOT: nn.relayout
// CHECK: nn.add %[[P]], %{{.*}} {nn.node = "bias"}
// CHECK: nn.reshape %[[P]]
// CHECK: pipe.send %[[P]]
func.func @stage0_forward() attributes {pipe.segment = "forward", pipe.stage = 0 : i64} {
  %x = pipe.input 0 : tensor<2x16x4x4xf32>
  %w = nn.param "w" : tensor<16x16x1x1xf32>
  %bias = nn.param "bias" : tensor<1x16x1x1xf32>
  %c = nn.conv2d %x, %w {nn.node = "conv"} : (tensor<2x16x4x4xf32>, tensor<16x16x1x1xf32>) -> tensor<2x16x4x4xf32>
  %a = nn.add %c, %bias {nn.node = "bias"} : (tensor<2x16x4x4xf32>, tensor<1x16x1x1xf32>) -> tensor<2x16x4x4xf32>
  %f = nn.reshape %c : (tensor<2x16x4x4xf32>) -> tensor<2x256xf32>
  pipe.send %c to 1 tag 0 : tensor<2x16x4x4xf32>
  pipe.stash %a key "a" : tensor<2x16x4x4xf32>
  pipe.stash %f key "f" : tensor<2x256xf32>
  return
}

// -----

// A fused region whose operands all have its shape follows a blocked
// operand: its other, plain operand is converted to blocked.
// CHECK-LABEL: func.func @stage0_forward
// CHECK: %[[C:.*]] = nn.conv2d {{.*}}nn.layout = "nChw16c"
// CHECK: %[[B:.*]] = nn.relayout %[[X:.*]] {nn.layout = "nChw16c", nn.node = "add"}
// CHECK: nn.fused %[[C]], %[[B]] {nn.layout = "nChw16c", nn.node = "add"}
func.func @stage0_forward() attributes {pipe.segment = "forward", pipe.stage = 0 : i64} {
  %x = pipe.input 0 : tensor<2x16x4x4xf32>
  %w = nn.param "w" : tensor<16x16x1x1xf32>
  %c = nn.conv2d %x, %w {nn.node = "conv"} : (tensor<2x16x4x4xf32>, tensor<16x16x1x1xf32>) -> tensor<2x16x4x4xf32>
  %y = nn.fused %c, %x {nn.node = "add"} : (tensor<2x16x4x4xf32>, tensor<2x16x4x4xf32>) -> tensor<2x16x4x4xf32> {
  ^bb0(%a: tensor<2x16x4x4xf32>, %b: tensor<2x16x4x4xf32>):
    %s = nn.add %a, %b : (tensor<2x16x4x4xf32>, tensor<2x16x4x4xf32>) -> tensor<2x16x4x4xf32>
    %r = nn.relu %s : tensor<2x16x4x4xf32>
    nn.yield %r : tensor<2x16x4x4xf32>
  }
  pipe.stash %y key "y" : tensor<2x16x4x4xf32>
  return
}
