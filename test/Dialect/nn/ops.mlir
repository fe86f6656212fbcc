// RUN: dpc-opt %s | FileCheck %s
// Round trip: print, parse the printed form again, and compare.
// RUN: dpc-opt %s | dpc-opt | FileCheck %s
// Generic form round trip.
// RUN: dpc-opt %s --mlir-print-op-generic | dpc-opt | FileCheck %s

// A LeNet-5 style forward pass, its loss and a few gradient ops, as the
// frontend and autodiff produce them.

// CHECK-LABEL: func.func @forward
func.func @forward(%x: tensor<16x1x28x28xf32>, %labels: tensor<16xi64>) -> tensor<f32> {
  // CHECK: %[[W:.*]] = nn.param "conv1.weight" : tensor<6x1x5x5xf32>
  %w = nn.param "conv1.weight" : tensor<6x1x5x5xf32>
  %b = nn.param "conv1.bias" : tensor<6xf32>
  // CHECK: nn.conv2d %{{.*}}, %[[W]], %{{.*}} {pads = array<i64: 2, 2, 2, 2>} : (tensor<16x1x28x28xf32>, tensor<6x1x5x5xf32>, tensor<6xf32>) -> tensor<16x6x28x28xf32>
  %c = nn.conv2d %x, %w, %b {pads = array<i64: 2, 2, 2, 2>}
      : (tensor<16x1x28x28xf32>, tensor<6x1x5x5xf32>, tensor<6xf32>) -> tensor<16x6x28x28xf32>
  // CHECK: nn.relu %{{.*}} : tensor<16x6x28x28xf32>
  %r = nn.relu %c : tensor<16x6x28x28xf32>
  // CHECK: nn.max_pool2d %{{.*}} {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>} : (tensor<16x6x28x28xf32>) -> tensor<16x6x14x14xf32>
  %p = nn.max_pool2d %r {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>}
      : (tensor<16x6x28x28xf32>) -> tensor<16x6x14x14xf32>
  // Strided, dilated, grouped convolution without bias.
  %gw = nn.param "conv2.weight" : tensor<12x3x3x3xf32>
  // CHECK: nn.conv2d %{{.*}}, %{{.*}} {dilations = array<i64: 2, 2>, groups = 2 : i64, strides = array<i64: 2, 2>} : (tensor<16x6x14x14xf32>, tensor<12x3x3x3xf32>) -> tensor<16x12x5x5xf32>
  %g = nn.conv2d %p, %gw {strides = array<i64: 2, 2>, dilations = array<i64: 2, 2>, groups = 2}
      : (tensor<16x6x14x14xf32>, tensor<12x3x3x3xf32>) -> tensor<16x12x5x5xf32>
  // CHECK: nn.reshape %{{.*}} : (tensor<16x12x5x5xf32>) -> tensor<16x300xf32>
  %f = nn.reshape %g : (tensor<16x12x5x5xf32>) -> tensor<16x300xf32>
  %fw = nn.param "fc.weight" : tensor<10x300xf32>
  %fb = nn.param "fc.bias" : tensor<10xf32>
  // CHECK: nn.matmul %{{.*}}, %{{.*}} {transpose_rhs = true} : (tensor<16x300xf32>, tensor<10x300xf32>) -> tensor<16x10xf32>
  %m = nn.matmul %f, %fw {transpose_rhs = true}
      : (tensor<16x300xf32>, tensor<10x300xf32>) -> tensor<16x10xf32>
  // CHECK: nn.add %{{.*}}, %{{.*}} : (tensor<16x10xf32>, tensor<10xf32>) -> tensor<16x10xf32>
  %y = nn.add %m, %fb : (tensor<16x10xf32>, tensor<10xf32>) -> tensor<16x10xf32>
  // CHECK: nn.softmax_cross_entropy %{{.*}}, %{{.*}} {scale = 1.562500e-02 : f32} : (tensor<16x10xf32>, tensor<16xi64>) -> tensor<f32>
  %loss = nn.softmax_cross_entropy %y, %labels {scale = 0.015625 : f32}
      : (tensor<16x10xf32>, tensor<16xi64>) -> tensor<f32>
  return %loss : tensor<f32>
}

// CHECK-LABEL: func.func @gradients
func.func @gradients(%x: tensor<16x1x28x28xf32>, %dy: tensor<16x6x28x28xf32>,
                     %y: tensor<16x6x28x28xf32>, %logits: tensor<16x10xf32>,
                     %labels: tensor<16xi64>, %h: tensor<16x300xf32>,
                     %dpool: tensor<16x6x14x14xf32>) {
  %w = nn.param "conv1.weight" : tensor<6x1x5x5xf32>
  // CHECK: nn.conv2d_grad_input %{{.*}}, %{{.*}} {pads = array<i64: 2, 2, 2, 2>} : (tensor<16x6x28x28xf32>, tensor<6x1x5x5xf32>) -> tensor<16x1x28x28xf32>
  %dx = nn.conv2d_grad_input %dy, %w {pads = array<i64: 2, 2, 2, 2>}
      : (tensor<16x6x28x28xf32>, tensor<6x1x5x5xf32>) -> tensor<16x1x28x28xf32>
  // CHECK: nn.conv2d_grad_filter %{{.*}}, %{{.*}} {pads = array<i64: 2, 2, 2, 2>} : (tensor<16x6x28x28xf32>, tensor<16x1x28x28xf32>) -> tensor<6x1x5x5xf32>
  %dw = nn.conv2d_grad_filter %dy, %x {pads = array<i64: 2, 2, 2, 2>}
      : (tensor<16x6x28x28xf32>, tensor<16x1x28x28xf32>) -> tensor<6x1x5x5xf32>
  // CHECK: nn.conv2d_grad_bias %{{.*}} : (tensor<16x6x28x28xf32>) -> tensor<6xf32>
  %db = nn.conv2d_grad_bias %dy : (tensor<16x6x28x28xf32>) -> tensor<6xf32>
  // CHECK: nn.relu_grad %{{.*}}, %{{.*}} : tensor<16x6x28x28xf32>
  %dr = nn.relu_grad %dy, %y : tensor<16x6x28x28xf32>
  // CHECK: nn.max_pool2d_grad %{{.*}}, %{{.*}} {ceil_mode = true, kernel_shape = array<i64: 3, 3>, strides = array<i64: 2, 2>} : (tensor<16x6x14x14xf32>, tensor<16x6x28x28xf32>) -> tensor<16x6x28x28xf32>
  %dp = nn.max_pool2d_grad %dpool, %y {kernel_shape = array<i64: 3, 3>, strides = array<i64: 2, 2>, ceil_mode = true}
      : (tensor<16x6x14x14xf32>, tensor<16x6x28x28xf32>) -> tensor<16x6x28x28xf32>
  // CHECK: nn.softmax_cross_entropy_grad %{{.*}}, %{{.*}} {scale = 1.562500e-02 : f32} : (tensor<16x10xf32>, tensor<16xi64>) -> tensor<16x10xf32>
  %dl = nn.softmax_cross_entropy_grad %logits, %labels {scale = 0.015625 : f32}
      : (tensor<16x10xf32>, tensor<16xi64>) -> tensor<16x10xf32>
  %fw = nn.param "fc.weight" : tensor<10x300xf32>
  // CHECK: nn.matmul_grad_lhs %{{.*}}, %{{.*}} {transpose_rhs = true} : (tensor<16x10xf32>, tensor<10x300xf32>) -> tensor<16x300xf32>
  %dh = nn.matmul_grad_lhs %dl, %fw {transpose_rhs = true}
      : (tensor<16x10xf32>, tensor<10x300xf32>) -> tensor<16x300xf32>
  // CHECK: nn.matmul_grad_rhs %{{.*}}, %{{.*}} {transpose_rhs = true} : (tensor<16x10xf32>, tensor<16x300xf32>) -> tensor<10x300xf32>
  %dfw = nn.matmul_grad_rhs %dl, %h {transpose_rhs = true}
      : (tensor<16x10xf32>, tensor<16x300xf32>) -> tensor<10x300xf32>
  // CHECK: nn.sum_to_shape %{{.*}} : (tensor<16x10xf32>) -> tensor<10xf32>
  %dfb = nn.sum_to_shape %dl : (tensor<16x10xf32>) -> tensor<10xf32>
  // CHECK: nn.sgd_update %{{.*}}, %{{.*}} {lr = 5.000000e-02 : f32, momentum = 0.899999976 : f32} : tensor<10x300xf32>
  nn.sgd_update %fw, %dfw {lr = 0.05 : f32, momentum = 0.9 : f32} : tensor<10x300xf32>
  // CHECK: nn.adam_update %{{.*}}, %{{.*}} {beta2 = 9.800000e-01 : f32, lr = 1.000000e-03 : f32} : tensor<10x300xf32>
  nn.adam_update %fw, %dfw {lr = 0.001 : f32, beta1 = 0.9 : f32, beta2 = 0.98 : f32} : tensor<10x300xf32>
  return
}

// An embedding and a token-level loss: a class per position.
// CHECK-LABEL: func.func @embedding
func.func @embedding(%tokens: tensor<4x16xi64>, %next: tensor<4x16xi64>) {
  %table = nn.param "tok.weight" : tensor<64x32xf32>
  // CHECK: nn.gather %{{.*}}, %{{.*}} : (tensor<64x32xf32>, tensor<4x16xi64>) -> tensor<4x16x32xf32>
  %e = nn.gather %table, %tokens : (tensor<64x32xf32>, tensor<4x16xi64>) -> tensor<4x16x32xf32>
  // CHECK: nn.gather_grad %{{.*}}, %{{.*}} : (tensor<4x16x32xf32>, tensor<4x16xi64>) -> tensor<64x32xf32>
  %dt = nn.gather_grad %e, %tokens : (tensor<4x16x32xf32>, tensor<4x16xi64>) -> tensor<64x32xf32>
  // CHECK: nn.softmax_cross_entropy %{{.*}}, %{{.*}} {scale = 1.562500e-02 : f32} : (tensor<4x16x32xf32>, tensor<4x16xi64>) -> tensor<f32>
  %loss = nn.softmax_cross_entropy %e, %next {scale = 0.015625 : f32} : (tensor<4x16x32xf32>, tensor<4x16xi64>) -> tensor<f32>
  return
}

// A relayout (propagate-layouts) moves a CPU activation into oneDNN's
// channel-blocked layout and back; `nn.layout` marks the blocked result.
// CHECK-LABEL: func.func @relayout
func.func @relayout(%x: tensor<2x32x4x4xf32>) -> tensor<2x32x4x4xf32> {
  // CHECK: %[[B:.*]] = nn.relayout %{{.*}} {nn.layout = "nChw16c"} : tensor<2x32x4x4xf32>
  %b = nn.relayout %x {nn.layout = "nChw16c"} : tensor<2x32x4x4xf32>
  // CHECK: %[[R:.*]] = nn.relu %[[B]] {nn.layout = "nChw16c"} : tensor<2x32x4x4xf32>
  %r = nn.relu %b {nn.layout = "nChw16c"} : tensor<2x32x4x4xf32>
  // CHECK: nn.relayout %[[R]] : tensor<2x32x4x4xf32>
  %p = nn.relayout %r : tensor<2x32x4x4xf32>
  return %p : tensor<2x32x4x4xf32>
}
