// RUN: dpc-opt %s --split-input-file --dpc-fuse-elementwise | FileCheck %s

// A bias add, tanh and a product with the input become one region: the bias
// broadcasts over the last dimension, the input is read twice but passed
// once, and the region takes the root's node name.
// CHECK-LABEL: func.func @stage0_forward
// CHECK: %[[X:.*]] = pipe.input 0
// CHECK: %[[B:.*]] = nn.param "b"
// CHECK: %[[Y:.*]] = nn.fused %[[X]], %[[B]] {nn.node = "mul"} : (tensor<16x64xf32>, tensor<64xf32>) -> tensor<16x64xf32> {
// CHECK-NEXT: ^bb0(%[[A0:.*]]: tensor<16x64xf32>, %[[A1:.*]]: tensor<64xf32>):
// CHECK-NEXT: %[[S:.*]] = nn.add %[[A0]], %[[A1]]
// CHECK-NEXT: %[[T:.*]] = nn.tanh %[[S]]
// CHECK-NEXT: %[[M:.*]] = nn.mul %[[T]], %[[A0]]
// CHECK-NEXT: nn.yield %[[M]] : tensor<16x64xf32>
// CHECK-NEXT: }
// CHECK-NEXT: pipe.send %[[Y]]
func.func @stage0_forward() attributes {pipe.segment = "forward", pipe.stage = 0 : i64} {
  %x = pipe.input 0 : tensor<16x64xf32>
  %b = nn.param "b" : tensor<64xf32>
  %s = nn.add %x, %b {nn.node = "add"} : (tensor<16x64xf32>, tensor<64xf32>) -> tensor<16x64xf32>
  %t = nn.tanh %s {nn.node = "tanh"} : tensor<16x64xf32>
  %m = nn.mul %t, %x {nn.node = "mul"} : (tensor<16x64xf32>, tensor<16x64xf32>) -> tensor<16x64xf32>
  pipe.send %m to 1 tag 0 : tensor<16x64xf32>
  return
}

// -----

// A value stashed for the backward pass stays a buffer: the group above it
// ends there, and the ops after it form their own group that reads it.
// CHECK-LABEL: func.func @stage0_forward
// CHECK: %[[T:.*]] = nn.fused
// CHECK: nn.add
// CHECK-NEXT: nn.sigmoid
// CHECK-NEXT: nn.yield
// CHECK: %[[U:.*]] = nn.fused %[[T]]
// CHECK-NEXT: ^bb0(%[[A:.*]]: tensor<8x8xf32>):
// CHECK-NEXT: nn.exp %[[A]]
// CHECK-NEXT: nn.neg
// CHECK-NEXT: nn.yield
// CHECK: pipe.stash %[[T]] key "t"
// CHECK: pipe.send %[[U]]
func.func @stage0_forward() attributes {pipe.segment = "forward", pipe.stage = 0 : i64} {
  %x = pipe.input 0 : tensor<8x8xf32>
  %s = nn.add %x, %x : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
  %t = nn.sigmoid %s : tensor<8x8xf32>
  %e = nn.exp %t : tensor<8x8xf32>
  %u = nn.neg %e : tensor<8x8xf32>
  pipe.stash %t key "t" : tensor<8x8xf32>
  pipe.send %u to 1 tag 0 : tensor<8x8xf32>
  return
}

// -----

// A value another kernel reads (here the matmul) is materialised; so is a
// value sent to the next stage. Lone ops stay runtime calls: the relu after
// the matmul has no fusible neighbour.
// CHECK-LABEL: func.func @stage0_forward
// CHECK: %[[R:.*]] = nn.fused
// CHECK-NEXT: ^bb0
// CHECK-NEXT: nn.mul
// CHECK-NEXT: nn.relu
// CHECK-NEXT: nn.yield
// CHECK: nn.matmul %[[R]]
// CHECK-NEXT: nn.relu
// CHECK-NOT: nn.fused
// CHECK: return
func.func @stage0_forward() attributes {pipe.segment = "forward", pipe.stage = 0 : i64} {
  %x = pipe.input 0 : tensor<8x8xf32>
  %w = nn.param "w" : tensor<8x8xf32>
  %p = nn.mul %x, %x : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
  %r = nn.relu %p : tensor<8x8xf32>
  %m = nn.matmul %r, %w : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
  %q = nn.relu %m : tensor<8x8xf32>
  pipe.send %r to 1 tag 0 : tensor<8x8xf32>
  pipe.send %q to 1 tag 1 : tensor<8x8xf32>
  return
}

// -----

// Shapes: a producer of another shape is an input, not a member (the tanh of
// the bias); an operand whose dimensions are not one run of the result's
// ([4, 1, 8] against [4, 5, 8]) keeps its op out of every group; a function
// the loop does not compute (sin) is no member either.
// CHECK-LABEL: func.func @stage0_forward
// CHECK: %[[TB:.*]] = nn.tanh %{{.*}} : tensor<8xf32>
// CHECK: nn.add %{{.*}}, %{{.*}} : (tensor<4x5x8xf32>, tensor<4x1x8xf32>)
// CHECK: nn.fused %{{.*}}, %[[TB]] :
// CHECK-NEXT: ^bb0
// CHECK-NEXT: nn.mul
// CHECK-NEXT: nn.exp
// CHECK-NEXT: nn.yield
// CHECK: nn.sin
// CHECK-NOT: nn.fused
// CHECK: return
func.func @stage0_forward() attributes {pipe.segment = "forward", pipe.stage = 0 : i64} {
  %x = pipe.input 0 : tensor<4x5x8xf32>
  %b = nn.param "b" : tensor<8xf32>
  %c = nn.param "c" : tensor<4x1x8xf32>
  %tb = nn.tanh %b : tensor<8xf32>
  %a = nn.add %x, %c : (tensor<4x5x8xf32>, tensor<4x1x8xf32>) -> tensor<4x5x8xf32>
  %m = nn.mul %a, %tb : (tensor<4x5x8xf32>, tensor<8xf32>) -> tensor<4x5x8xf32>
  %e = nn.exp %m : tensor<4x5x8xf32>
  %s = nn.sin %e : tensor<4x5x8xf32>
  pipe.send %s to 1 tag 0 : tensor<4x5x8xf32>
  return
}

// -----

// Gradients: the backward of a tanh layer with a scaled incoming gradient
// is one region; the restored tensor and the received gradient are inputs.
// Nothing fuses across segments: the forward's relu stays alone.
// CHECK-LABEL: func.func @stage0_forward
// CHECK-NOT: nn.fused
// CHECK: nn.relu
// CHECK-LABEL: func.func @stage0_backward
// CHECK: %[[DY:.*]] = pipe.recv
// CHECK: %[[Y:.*]] = pipe.restore key "y"
// CHECK: %[[DX:.*]] = nn.fused %[[DY]], %{{.*}}, %[[Y]] :
// CHECK-NEXT: ^bb0
// CHECK-NEXT: nn.mul
// CHECK-NEXT: nn.tanh_grad
// CHECK-NEXT: nn.relu_grad
// CHECK-NEXT: nn.yield
// CHECK: pipe.send %[[DX]]
func.func @stage0_forward() attributes {pipe.segment = "forward", pipe.stage = 0 : i64} {
  %x = pipe.input 0 : tensor<8x16xf32>
  %y = nn.relu %x : tensor<8x16xf32>
  pipe.stash %y key "y" : tensor<8x16xf32>
  pipe.send %y to 1 tag 0 : tensor<8x16xf32>
  return
}
func.func @stage0_backward() attributes {pipe.segment = "backward", pipe.stage = 0 : i64} {
  %dy = pipe.recv from 1 tag 1 : tensor<8x16xf32>
  %k = nn.param "k" : tensor<f32>
  %y = pipe.restore key "y" : tensor<8x16xf32>
  %g = nn.mul %dy, %k : (tensor<8x16xf32>, tensor<f32>) -> tensor<8x16xf32>
  %t = nn.tanh_grad %g, %y : tensor<8x16xf32>
  %r = nn.relu_grad %t, %y : tensor<8x16xf32>
  pipe.send %r to 1 tag 2 : tensor<8x16xf32>
  return
}
