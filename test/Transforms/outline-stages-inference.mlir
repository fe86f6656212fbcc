// RUN: dpc-opt %s --dpc-insert-stash --dpc-outline-stages | FileCheck %s

// An inference module (pipe.inference): no loss and no backward. Insert-stash
// leaves it alone; outline-stages makes every op forward work, reports
// @main's one result as the output, and leaves the other segments empty.
module attributes {pipe.inference, pipe.num_stages = 2 : i64} {
  func.func @main(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
    %w0 = nn.param "w0" {pipe.stage = 0 : i64} : tensor<8x8xf32>
    %m0 = nn.matmul %x, %w0 {pipe.stage = 0 : i64} : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
    %r0 = nn.relu %m0 {pipe.stage = 0 : i64} : tensor<4x8xf32>
    pipe.send %r0 to 1 tag 0 {pipe.stage = 0 : i64} : tensor<4x8xf32>
    %in1 = pipe.recv from 0 tag 0 {pipe.stage = 1 : i64} : tensor<4x8xf32>
    %w1 = nn.param "w1" {pipe.stage = 1 : i64} : tensor<8x8xf32>
    %y = nn.matmul %in1, %w1 {pipe.stage = 1 : i64} : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
    return %y : tensor<4x8xf32>
  }
}

// CHECK-NOT: pipe.stash
// CHECK-LABEL: func.func @stage0_forward()
// CHECK: %[[X:.*]] = pipe.input 0 : tensor<4x8xf32>
// CHECK: nn.matmul %[[X]]
// CHECK: pipe.send
// CHECK-NOT: pipe.report
// CHECK: return
// CHECK-LABEL: func.func @stage0_backward()
// CHECK-NEXT: return
// CHECK-LABEL: func.func @stage0_optimizer()
// CHECK-NEXT: return
// CHECK-LABEL: func.func @stage1_forward()
// CHECK: %[[Y:.*]] = nn.matmul
// CHECK-NOT: pipe.report_loss
// CHECK: pipe.report_output %[[Y]]
// CHECK-NEXT: return
