// RUN: dpc-opt %s --dpc-autodiff='loss=mse microbatches=4 lr=0.05' | FileCheck %s
// RUN: not dpc-opt %s --dpc-autodiff='loss=mse has-ignore-index=true' 2>&1 | FileCheck %s --check-prefix=IGNORE

// --loss mse: the labels argument is a float target of the output's shape,
// and the loss is the mean over every element of the minibatch: 1 / (4
// microbatches x 8 samples x 3 outputs) = 1/96. Its gradient flows into the
// linear layer as cross-entropy's would.

// CHECK-LABEL: func.func @main
// CHECK-SAME: (%[[X:.*]]: tensor<8x5xf32>, %[[T:.*]]: tensor<8x3xf32> {pipe.labels}) -> (tensor<f32>, tensor<8x3xf32>)
func.func @main(%x: tensor<8x5xf32>) -> tensor<8x3xf32> {
  // CHECK: %[[W:.*]] = nn.param "fc.weight"
  %w = nn.param "fc.weight" : tensor<3x5xf32>
  // CHECK: %[[Y:.*]] = nn.matmul %[[X]], %[[W]]
  %y = nn.matmul %x, %w {transpose_rhs = true} : (tensor<8x5xf32>, tensor<3x5xf32>) -> tensor<8x3xf32>
  // CHECK: %[[LOSS:.*]] = nn.mse_loss %[[Y]], %[[T]] {scale = 0.010416667 : f32} : (tensor<8x3xf32>, tensor<8x3xf32>) -> tensor<f32>
  // CHECK-NOT: nn.softmax_cross_entropy
  // CHECK: %[[DY:.*]] = nn.mse_loss_grad %[[Y]], %[[T]] {scale = 0.010416667 : f32} : (tensor<8x3xf32>, tensor<8x3xf32>) -> tensor<8x3xf32>
  // CHECK: %[[DW:.*]] = nn.matmul_grad_rhs %[[DY]], %[[X]] {transpose_rhs = true}
  // CHECK: nn.sgd_update %[[W]], %[[DW]]
  // CHECK: return %[[LOSS]], %[[Y]] : tensor<f32>, tensor<8x3xf32>
  return %y : tensor<8x3xf32>
}

// IGNORE: error: ignore-index applies to the softmax-cross-entropy loss, not mse
