// RUN: dpc-opt %s -split-input-file --dpc-insert-send-recv | FileCheck %s

// A forward activation crossing 0 -> 1, used twice on stage 1 (one pair),
// and a skip connection 0 -> 2, relayed by stage 1 so that every transfer
// crosses one boundary; a gradient crossing back 1 -> 0. Arguments used on
// their stage (the input on stage 0) need no transfer.

// CHECK-LABEL: func.func @main
func.func @main(%x: tensor<4x8xf32>, %labels: tensor<4xi64> {pipe.labels}) -> tensor<4x8xf32> {
  // CHECK: %[[A:.*]] = nn.relu %arg0 {pipe.stage = 0 : i64}
  // CHECK-NEXT: pipe.send %[[A]] to 1 tag 0 {pipe.stage = 0 : i64}
  // CHECK-NEXT: %[[A1:.*]] = pipe.recv from 0 tag 0 {pipe.stage = 1 : i64}
  // CHECK-NEXT: pipe.send %[[A1]] to 2 tag 1 {pipe.stage = 1 : i64}
  // CHECK-NEXT: %[[A2:.*]] = pipe.recv from 1 tag 1 {pipe.stage = 2 : i64}
  %a = nn.relu %x {pipe.stage = 0 : i64} : tensor<4x8xf32>
  // CHECK: %[[B:.*]] = nn.add %[[A1]], %[[A1]] {pipe.stage = 1 : i64}
  // CHECK-NEXT: pipe.send %[[B]] to 2 tag 2
  // CHECK-NEXT: %[[B2:.*]] = pipe.recv from 1 tag 2 {pipe.stage = 2 : i64}
  %b = nn.add %a, %a {pipe.stage = 1 : i64} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  // CHECK-NEXT: nn.relu %[[A1]] {pipe.stage = 1 : i64}
  %b2 = nn.relu %a {pipe.stage = 1 : i64} : tensor<4x8xf32>
  // CHECK-NEXT: nn.add %[[B2]], %[[A2]] {pipe.stage = 2 : i64}
  %c = nn.add %b, %a {pipe.stage = 2 : i64} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  // A gradient flowing back from stage 1 to stage 0.
  // CHECK: %[[G:.*]] = nn.relu_grad %{{.*}}, %[[A1]] {pipe.stage = 1 : i64}
  // CHECK-NEXT: pipe.send %[[G]] to 0 tag 3 {pipe.stage = 1 : i64}
  // CHECK-NEXT: %[[G0:.*]] = pipe.recv from 1 tag 3 {pipe.stage = 0 : i64}
  %g = nn.relu_grad %b2, %a {pipe.stage = 1 : i64} : tensor<4x8xf32>
  // CHECK: nn.relu_grad %[[G0]], %[[A]] {pipe.stage = 0 : i64}
  %g0 = nn.relu_grad %g, %a {pipe.stage = 0 : i64} : tensor<4x8xf32>
  // CHECK-NOT: pipe.send
  // CHECK: return
  return %c : tensor<4x8xf32>
}

// -----

// Everything on one stage: nothing to transfer.
// CHECK-LABEL: func.func @main
// CHECK-NOT: pipe.send
// CHECK-NOT: pipe.recv
func.func @main(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %a = nn.relu %x {pipe.stage = 0 : i64} : tensor<4x8xf32>
  %b = nn.relu %a {pipe.stage = 0 : i64} : tensor<4x8xf32>
  return %b : tensor<4x8xf32>
}

// -----

// Only the first stage reads data: the input used on stage 2 is sent from
// stage 0 and relayed by stage 1 as the step begins. A value needed two
// stages back is relayed too (0 <- 1 <- 2).
// CHECK-LABEL: func.func @main
func.func @main(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // CHECK-NEXT: pipe.send %arg0 to 1 tag 0 {pipe.stage = 0 : i64}
  // CHECK-NEXT: %[[X1:.*]] = pipe.recv from 0 tag 0 {pipe.stage = 1 : i64}
  // CHECK-NEXT: pipe.send %[[X1]] to 2 tag 1 {pipe.stage = 1 : i64}
  // CHECK-NEXT: %[[X2:.*]] = pipe.recv from 1 tag 1 {pipe.stage = 2 : i64}
  // CHECK-NEXT: %[[G:.*]] = nn.relu %[[X2]] {pipe.stage = 2 : i64}
  // CHECK-NEXT: pipe.send %[[G]] to 1 tag 2 {pipe.stage = 2 : i64}
  // CHECK-NEXT: %[[G1:.*]] = pipe.recv from 2 tag 2 {pipe.stage = 1 : i64}
  // CHECK-NEXT: pipe.send %[[G1]] to 0 tag 3 {pipe.stage = 1 : i64}
  // CHECK-NEXT: %[[G0:.*]] = pipe.recv from 1 tag 3 {pipe.stage = 0 : i64}
  %g = nn.relu %x {pipe.stage = 2 : i64} : tensor<4x8xf32>
  // CHECK: nn.relu %[[G0]] {pipe.stage = 0 : i64}
  %a = nn.relu %g {pipe.stage = 0 : i64} : tensor<4x8xf32>
  // CHECK: nn.relu %[[G1]] {pipe.stage = 1 : i64}
  %b = nn.relu %g {pipe.stage = 1 : i64} : tensor<4x8xf32>
  return %a : tensor<4x8xf32>
}

// -----

// Labels (integer arguments) are read where they are used, on the last
// stage; an input used on stages 0 and 1 goes over once.
// CHECK-LABEL: func.func @main
func.func @main(%x: tensor<4x8xf32>, %labels: tensor<4xi64> {pipe.labels}) -> tensor<f32> {
  // CHECK-NEXT: pipe.send %arg0 to 1 tag 0 {pipe.stage = 0 : i64}
  // CHECK-NEXT: %[[X1:.*]] = pipe.recv from 0 tag 0 {pipe.stage = 1 : i64}
  // CHECK-NEXT: nn.relu %arg0 {pipe.stage = 0 : i64}
  %a = nn.relu %x {pipe.stage = 0 : i64} : tensor<4x8xf32>
  // CHECK: nn.add %{{.*}}, %[[X1]] {pipe.stage = 1 : i64}
  %b = nn.add %a, %x {pipe.stage = 1 : i64} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  // CHECK-NOT: pipe.send %arg1
  // CHECK: nn.softmax_cross_entropy %{{.*}}, %arg1 {pipe.stage = 1 : i64
  %l = nn.softmax_cross_entropy %b, %labels {pipe.stage = 1 : i64} : (tensor<4x8xf32>, tensor<4xi64>) -> tensor<f32>
  return %l : tensor<f32>
}
