// RUN: dpc-opt %s -split-input-file --dpc-autodiff='microbatches=4 lr=0.05 momentum=0.9 weight-decay=0.0005' | FileCheck %s

// A convolution on the model's input, a shared bias and a linear layer. The
// input needs no gradient, so conv1 gets no conv2d_grad_input; the broadcast
// bias gradient is summed back to its shape; every parameter is updated once.

// CHECK-LABEL: func.func @main
// CHECK-SAME: (%[[X:.*]]: tensor<8x1x6x6xf32>, %[[LABELS:.*]]: tensor<8xi64> {pipe.labels}) -> (tensor<f32>, tensor<8x3xf32>)
func.func @main(%x: tensor<8x1x6x6xf32>) -> tensor<8x3xf32> {
  // CHECK: %[[W:.*]] = nn.param "conv.weight"
  %w = nn.param "conv.weight" : tensor<2x1x3x3xf32>
  // CHECK: %[[C:.*]] = nn.conv2d %[[X]], %[[W]]
  %c = nn.conv2d %x, %w : (tensor<8x1x6x6xf32>, tensor<2x1x3x3xf32>) -> tensor<8x2x4x4xf32>
  // CHECK: %[[R:.*]] = nn.relu %[[C]]
  %r = nn.relu %c : tensor<8x2x4x4xf32>
  // CHECK: %[[F:.*]] = nn.reshape %[[R]]
  %f = nn.reshape %r : (tensor<8x2x4x4xf32>) -> tensor<8x32xf32>
  // CHECK: %[[FW:.*]] = nn.param "fc.weight"
  %fw = nn.param "fc.weight" : tensor<3x32xf32>
  // CHECK: %[[M:.*]] = nn.matmul %[[F]], %[[FW]]
  %m = nn.matmul %f, %fw {transpose_rhs = true} : (tensor<8x32xf32>, tensor<3x32xf32>) -> tensor<8x3xf32>
  // CHECK: %[[B:.*]] = nn.param "fc.bias"
  %b = nn.param "fc.bias" : tensor<3xf32>
  // CHECK: %[[Y:.*]] = nn.add %[[M]], %[[B]]
  %y = nn.add %m, %b : (tensor<8x3xf32>, tensor<3xf32>) -> tensor<8x3xf32>
  // 1 / (4 microbatches x 8 samples) = 0.03125
  // CHECK: %[[LOSS:.*]] = nn.softmax_cross_entropy %[[Y]], %[[LABELS]] {scale = 3.125000e-02 : f32}
  // CHECK: %[[DY:.*]] = nn.softmax_cross_entropy_grad %[[Y]], %[[LABELS]] {scale = 3.125000e-02 : f32}
  // CHECK: %[[DB:.*]] = nn.sum_to_shape %[[DY]] : (tensor<8x3xf32>) -> tensor<3xf32>
  // CHECK: %[[DF:.*]] = nn.matmul_grad_lhs %[[DY]], %[[FW]] {transpose_rhs = true}
  // CHECK: %[[DFW:.*]] = nn.matmul_grad_rhs %[[DY]], %[[F]] {transpose_rhs = true}
  // CHECK: %[[DR:.*]] = nn.reshape %[[DF]] : (tensor<8x32xf32>) -> tensor<8x2x4x4xf32>
  // CHECK: %[[DC:.*]] = nn.relu_grad %[[DR]], %[[R]]
  // CHECK-NOT: nn.conv2d_grad_input
  // CHECK: %[[DW:.*]] = nn.conv2d_grad_filter %[[DC]], %[[X]]
  // CHECK-NOT: nn.conv2d_grad_input
  // CHECK: nn.sgd_update %[[W]], %[[DW]] {lr = 5.000000e-02 : f32, momentum = 0.899999976 : f32, weight_decay = 5.000000e-04 : f32}
  // CHECK: nn.sgd_update %[[FW]], %[[DFW]]
  // CHECK: nn.sgd_update %[[B]], %[[DB]]
  // CHECK: return %[[LOSS]], %[[Y]] : tensor<f32>, tensor<8x3xf32>
  return %y : tensor<8x3xf32>
}

// -----

// A value used twice gets the sum of both gradients; a parameter read twice
// gets one update with the summed gradient.

// CHECK-LABEL: func.func @main
func.func @main(%x: tensor<4x5xf32>) -> tensor<4x5xf32> {
  %w1 = nn.param "w" : tensor<5x5xf32>
  %h = nn.matmul %x, %w1 : (tensor<4x5xf32>, tensor<5x5xf32>) -> tensor<4x5xf32>
  %w2 = nn.param "w" : tensor<5x5xf32>
  %h2 = nn.matmul %h, %w2 : (tensor<4x5xf32>, tensor<5x5xf32>) -> tensor<4x5xf32>
  // %h feeds the second matmul and the residual add.
  %y = nn.add %h2, %h : (tensor<4x5xf32>, tensor<4x5xf32>) -> tensor<4x5xf32>
  // CHECK: %[[DY:.*]] = nn.softmax_cross_entropy_grad
  // CHECK: %[[DH2:.*]] = nn.matmul_grad_lhs %[[DY]]
  // CHECK: %[[DW2:.*]] = nn.matmul_grad_rhs %[[DY]]
  // CHECK: %[[DH:.*]] = nn.add %[[DY]], %[[DH2]]
  // CHECK: %[[DW1:.*]] = nn.matmul_grad_rhs %[[DH]]
  // CHECK: %[[DW:.*]] = nn.add %[[DW1]], %[[DW2]]
  // CHECK: nn.sgd_update %{{.*}}, %[[DW]]
  // CHECK-NOT: nn.sgd_update
  // CHECK: return
  return %y : tensor<4x5xf32>
}
