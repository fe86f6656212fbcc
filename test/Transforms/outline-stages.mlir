// RUN: dpc-opt %s --dpc-outline-stages | FileCheck %s

// Two stages after insert-send-recv and insert-stash.
module attributes {pipe.num_stages = 2 : i64} {
  func.func @main(%x: tensor<4x8xf32>, %labels: tensor<4xi64> {pipe.labels}) -> (tensor<f32>, tensor<4x8xf32>) {
    pipe.stash %x key "input" {pipe.stage = 0 : i64} : tensor<4x8xf32>
    pipe.stash %labels key "labels" {pipe.stage = 1 : i64} : tensor<4xi64>
    %w0 = nn.param "w0" {pipe.stage = 0 : i64} : tensor<8x8xf32>
    %m0 = nn.matmul %x, %w0 {pipe.stage = 0 : i64} : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
    %r0 = nn.relu %m0 {pipe.stage = 0 : i64} : tensor<4x8xf32>
    pipe.stash %r0 key "relu0" {pipe.stage = 0 : i64} : tensor<4x8xf32>
    pipe.send %r0 to 1 tag 0 {pipe.stage = 0 : i64} : tensor<4x8xf32>
    %in1 = pipe.recv from 0 tag 0 {pipe.stage = 1 : i64} : tensor<4x8xf32>
    pipe.stash %in1 key "in1" {pipe.stage = 1 : i64} : tensor<4x8xf32>
    %w1 = nn.param "w1" {pipe.stage = 1 : i64} : tensor<8x8xf32>
    %y = nn.matmul %in1, %w1 {pipe.stage = 1 : i64} : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
    pipe.stash %y key "logits" {pipe.stage = 1 : i64} : tensor<4x8xf32>
    %loss = nn.softmax_cross_entropy %y, %labels {pipe.stage = 1 : i64, scale = 0.25 : f32} : (tensor<4x8xf32>, tensor<4xi64>) -> tensor<f32>
    %y_r = pipe.restore key "logits" {pipe.stage = 1 : i64} : tensor<4x8xf32>
    %l_r = pipe.restore key "labels" {pipe.stage = 1 : i64} : tensor<4xi64>
    %dy = nn.softmax_cross_entropy_grad %y_r, %l_r {pipe.stage = 1 : i64, scale = 0.25 : f32} : (tensor<4x8xf32>, tensor<4xi64>) -> tensor<4x8xf32>
    %din = nn.matmul_grad_lhs %dy, %w1 {pipe.stage = 1 : i64} : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
    pipe.send %din to 0 tag 1 {pipe.stage = 1 : i64} : tensor<4x8xf32>
    %g = pipe.recv from 1 tag 1 {pipe.stage = 0 : i64} : tensor<4x8xf32>
    %in1_r = pipe.restore key "in1" {pipe.stage = 1 : i64} : tensor<4x8xf32>
    %dw1 = nn.matmul_grad_rhs %dy, %in1_r {pipe.stage = 1 : i64} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<8x8xf32>
    %r0_r = pipe.restore key "relu0" {pipe.stage = 0 : i64} : tensor<4x8xf32>
    %dr = nn.relu_grad %g, %r0_r {pipe.stage = 0 : i64} : tensor<4x8xf32>
    %x_r = pipe.restore key "input" {pipe.stage = 0 : i64} : tensor<4x8xf32>
    %dw0 = nn.matmul_grad_rhs %dr, %x_r {pipe.stage = 0 : i64} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<8x8xf32>
    nn.sgd_update %w0, %dw0 {lr = 0.1 : f32, pipe.stage = 0 : i64} : tensor<8x8xf32>
    nn.sgd_update %w1, %dw1 {lr = 0.1 : f32, momentum = 0.5 : f32, pipe.stage = 1 : i64} : tensor<8x8xf32>
    return %loss, %y : tensor<f32>, tensor<4x8xf32>
  }
}

// CHECK-NOT: func.func @main

// Stage 0 reads the data itself; its forward stashes and sends.
// CHECK-LABEL: func.func @stage0_forward() attributes {pipe.segment = "forward", pipe.stage = 0 : i64}
// CHECK-DAG: %[[W0:.*]] = nn.param "w0" : tensor<8x8xf32>
// CHECK-DAG: %[[X:.*]] = pipe.input 0 : tensor<4x8xf32>
// CHECK: pipe.stash %[[X]] key "input"
// CHECK: %[[M0:.*]] = nn.matmul %[[X]], %[[W0]]
// CHECK: %[[R0:.*]] = nn.relu %[[M0]]
// CHECK: pipe.stash %[[R0]] key "relu0"
// CHECK: pipe.send %[[R0]] to 1 tag 0
// CHECK-NEXT: return

// CHECK-LABEL: func.func @stage0_backward()
// CHECK-DAG: pipe.recv from 1 tag 1
// CHECK-DAG: pipe.restore key "relu0"
// CHECK-DAG: pipe.restore key "input"
// CHECK: nn.relu_grad
// CHECK: %[[DW0:.*]] = nn.matmul_grad_rhs
// CHECK: pipe.accumulate_grad %{{.*}}, %[[DW0]] : tensor<8x8xf32>

// Stage 0 sends no gradient: its backward is all weight gradient.
// CHECK-LABEL: func.func @stage0_backward_input()
// CHECK-NEXT: return
// CHECK-LABEL: func.func @stage0_backward_weight()
// CHECK: nn.matmul_grad_rhs
// CHECK: pipe.accumulate_grad

// CHECK-LABEL: func.func @stage0_optimizer()
// CHECK: %[[P:.*]] = nn.param "w0"
// CHECK-NEXT: %[[G:.*]] = pipe.accumulated_grad %[[P]] : tensor<8x8xf32>
// CHECK-NEXT: nn.sgd_update %[[P]], %[[G]] {lr = 1.000000e-01 : f32} : tensor<8x8xf32>

// The last stage reads labels, reports loss and output.
// CHECK-LABEL: func.func @stage1_forward()
// CHECK-DAG: pipe.labels : tensor<4xi64>
// CHECK-DAG: pipe.recv from 0 tag 0
// CHECK: %[[LOSS:.*]] = nn.softmax_cross_entropy
// CHECK: pipe.report_loss %[[LOSS]] : tensor<f32>
// CHECK: pipe.report_output %{{.*}} : tensor<4x8xf32>

// CHECK-LABEL: func.func @stage1_backward()
// CHECK: nn.softmax_cross_entropy_grad
// CHECK: nn.matmul_grad_lhs
// CHECK: pipe.send
// CHECK: nn.matmul_grad_rhs
// CHECK: pipe.accumulate_grad

// The input half ends with the gradient send and stashes what the weight
// half needs; the weight half restores it.
// CHECK-LABEL: func.func @stage1_backward_input()
// CHECK: %[[DY:.*]] = nn.softmax_cross_entropy_grad
// CHECK: nn.matmul_grad_lhs %[[DY]]
// CHECK: pipe.send
// CHECK: pipe.stash %[[DY]] key "[[KEY:bw:[0-9]+]]"
// CHECK-NOT: nn.matmul_grad_rhs
// CHECK-LABEL: func.func @stage1_backward_weight()
// CHECK: %[[DY_R:.*]] = pipe.restore key "[[KEY]]"
// CHECK: nn.matmul_grad_rhs %[[DY_R]]
// CHECK: pipe.accumulate_grad
// CHECK-NOT: nn.softmax_cross_entropy_grad

// CHECK-LABEL: func.func @stage1_optimizer()
// CHECK: nn.sgd_update {{.*}}momentum = 5.000000e-01
