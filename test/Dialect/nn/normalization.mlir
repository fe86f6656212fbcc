// RUN: dpc-opt %s | FileCheck %s
// RUN: dpc-opt %s | dpc-opt | FileCheck %s
// RUN: dpc-opt %s --mlir-print-op-generic | dpc-opt | FileCheck %s

// A ResNet-style block head: batch normalization (statistics, then the
// affine normalization), average and global average pooling, and the
// gradient ops autodiff builds for them.

// CHECK-LABEL: func.func @norm_and_pool
func.func @norm_and_pool(%x: tensor<8x4x6x6xf32>, %dy: tensor<8x4x6x6xf32>) -> tensor<8x4x1x1xf32> {
  %rm = nn.param "bn.running_mean" : tensor<4xf32>
  %rv = nn.param "bn.running_var" : tensor<4xf32>
  %g = nn.param "bn.weight" : tensor<4xf32>
  %b = nn.param "bn.bias" : tensor<4xf32>
  // CHECK: %[[S:.*]] = nn.batch_norm_stats %{{.*}}, %{{.*}}, %{{.*}} {momentum = 8.000000e-01 : f32} : (tensor<8x4x6x6xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  %s = nn.batch_norm_stats %x, %rm, %rv {momentum = 0.8 : f32}
      : (tensor<8x4x6x6xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  // The default momentum (0.9, PyTorch's 0.1) is not printed.
  // CHECK: nn.batch_norm_stats %{{.*}}, %{{.*}}, %{{.*}} : (tensor<8x4x6x6xf32>
  %s2 = nn.batch_norm_stats %x, %rm, %rv
      : (tensor<8x4x6x6xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  // CHECK: nn.batch_norm %{{.*}}, %[[S]], %{{.*}}, %{{.*}} : (tensor<8x4x6x6xf32>, tensor<2x4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<8x4x6x6xf32>
  %y = nn.batch_norm %x, %s, %g, %b
      : (tensor<8x4x6x6xf32>, tensor<2x4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<8x4x6x6xf32>
  // CHECK: nn.batch_norm_grad_input %{{.*}}, %{{.*}}, %[[S]], %{{.*}} {epsilon = 1.000000e-03 : f32}
  %dx = nn.batch_norm_grad_input %dy, %x, %s, %g {epsilon = 1.0e-3 : f32}
      : (tensor<8x4x6x6xf32>, tensor<8x4x6x6xf32>, tensor<2x4xf32>, tensor<4xf32>) -> tensor<8x4x6x6xf32>
  // CHECK: nn.batch_norm_grad_scale %{{.*}}, %{{.*}}, %[[S]] : {{.*}} -> tensor<4xf32>
  %dg = nn.batch_norm_grad_scale %dy, %x, %s
      : (tensor<8x4x6x6xf32>, tensor<8x4x6x6xf32>, tensor<2x4xf32>) -> tensor<4xf32>
  // CHECK: nn.batch_norm_grad_bias %{{.*}} : (tensor<8x4x6x6xf32>) -> tensor<4xf32>
  %db = nn.batch_norm_grad_bias %dy : (tensor<8x4x6x6xf32>) -> tensor<4xf32>
  // CHECK: nn.avg_pool2d %{{.*}} {count_include_pad = true, kernel_shape = array<i64: 3, 3>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : (tensor<8x4x6x6xf32>) -> tensor<8x4x3x3xf32>
  %p = nn.avg_pool2d %y {kernel_shape = array<i64: 3, 3>, strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, count_include_pad = true}
      : (tensor<8x4x6x6xf32>) -> tensor<8x4x3x3xf32>
  // CHECK: nn.avg_pool2d_grad %{{.*}} {kernel_shape = array<i64: 3, 3>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : (tensor<8x4x3x3xf32>) -> tensor<8x4x6x6xf32>
  %dp = nn.avg_pool2d_grad %p {kernel_shape = array<i64: 3, 3>, strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>}
      : (tensor<8x4x3x3xf32>) -> tensor<8x4x6x6xf32>
  // CHECK: nn.global_avg_pool %{{.*}} : (tensor<8x4x3x3xf32>) -> tensor<8x4x1x1xf32>
  %gp = nn.global_avg_pool %p : (tensor<8x4x3x3xf32>) -> tensor<8x4x1x1xf32>
  // CHECK: nn.global_avg_pool_grad %{{.*}} : (tensor<8x4x1x1xf32>) -> tensor<8x4x3x3xf32>
  %dgp = nn.global_avg_pool_grad %gp : (tensor<8x4x1x1xf32>) -> tensor<8x4x3x3xf32>
  return %gp : tensor<8x4x1x1xf32>
}

// Batch normalization of a rank-2 input (BatchNorm1d): one statistic per
// feature.
// CHECK-LABEL: func.func @features
func.func @features(%x: tensor<16x32xf32>) -> tensor<16x32xf32> {
  %rm = nn.param "bn.running_mean" : tensor<32xf32>
  %rv = nn.param "bn.running_var" : tensor<32xf32>
  %g = nn.param "bn.weight" : tensor<32xf32>
  %b = nn.param "bn.bias" : tensor<32xf32>
  // CHECK: nn.batch_norm_stats {{.*}} -> tensor<2x32xf32>
  %s = nn.batch_norm_stats %x, %rm, %rv
      : (tensor<16x32xf32>, tensor<32xf32>, tensor<32xf32>) -> tensor<2x32xf32>
  %y = nn.batch_norm %x, %s, %g, %b
      : (tensor<16x32xf32>, tensor<2x32xf32>, tensor<32xf32>, tensor<32xf32>) -> tensor<16x32xf32>
  return %y : tensor<16x32xf32>
}

// Layer normalization over the last dimension (scale and bias) and over the
// last two (neither), and the gradient ops autodiff builds: the input's,
// the scale's, and the bias's as a sum to the normalized shape.
// CHECK-LABEL: func.func @layer_norm
func.func @layer_norm(%x: tensor<16x28x32xf32>, %dy: tensor<16x28x32xf32>) -> tensor<16x28x32xf32> {
  %g = nn.param "ln.weight" : tensor<32xf32>
  %b = nn.param "ln.bias" : tensor<32xf32>
  // CHECK: %[[Y:.*]] = nn.layer_norm %{{.*}} scale %{{.*}} bias %{{.*}} {axis = 2 : i64} : (tensor<16x28x32xf32>, tensor<32xf32>, tensor<32xf32>) -> tensor<16x28x32xf32>
  %y = nn.layer_norm %x scale %g bias %b {axis = 2 : i64}
      : (tensor<16x28x32xf32>, tensor<32xf32>, tensor<32xf32>) -> tensor<16x28x32xf32>
  // The defaults (axis -1, epsilon 1e-5) are not printed.
  // CHECK: nn.layer_norm %{{.*}} : (tensor<16x28x32xf32>) -> tensor<16x28x32xf32>
  %y2 = nn.layer_norm %x {axis = -1 : i64, epsilon = 1.0e-5 : f32}
      : (tensor<16x28x32xf32>) -> tensor<16x28x32xf32>
  // CHECK: nn.layer_norm %{{.*}} bias %{{.*}} {axis = -2 : i64, epsilon = 1.000000e-01 : f32} : (tensor<16x28x32xf32>, tensor<28x32xf32>) -> tensor<16x28x32xf32>
  %b2 = nn.param "ln2.bias" : tensor<28x32xf32>
  %y3 = nn.layer_norm %x bias %b2 {axis = -2 : i64, epsilon = 0.1 : f32}
      : (tensor<16x28x32xf32>, tensor<28x32xf32>) -> tensor<16x28x32xf32>
  // CHECK: nn.layer_norm_grad_input %{{.*}}, %{{.*}} scale %{{.*}} {axis = 2 : i64} : (tensor<16x28x32xf32>, tensor<16x28x32xf32>, tensor<32xf32>) -> tensor<16x28x32xf32>
  %dx = nn.layer_norm_grad_input %dy, %x scale %g {axis = 2 : i64}
      : (tensor<16x28x32xf32>, tensor<16x28x32xf32>, tensor<32xf32>) -> tensor<16x28x32xf32>
  // CHECK: nn.layer_norm_grad_input %{{.*}}, %{{.*}} : (tensor<16x28x32xf32>, tensor<16x28x32xf32>) -> tensor<16x28x32xf32>
  %dx2 = nn.layer_norm_grad_input %dy, %x
      : (tensor<16x28x32xf32>, tensor<16x28x32xf32>) -> tensor<16x28x32xf32>
  // CHECK: nn.layer_norm_grad_scale %{{.*}}, %{{.*}} {axis = 2 : i64} : (tensor<16x28x32xf32>, tensor<16x28x32xf32>) -> tensor<32xf32>
  %dg = nn.layer_norm_grad_scale %dy, %x {axis = 2 : i64}
      : (tensor<16x28x32xf32>, tensor<16x28x32xf32>) -> tensor<32xf32>
  return %y : tensor<16x28x32xf32>
}
