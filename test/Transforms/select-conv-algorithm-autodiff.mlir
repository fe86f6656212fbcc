// RUN: dpc-opt %s --dpc-select-conv-algorithm --dpc-autodiff | FileCheck %s

// Autodiff gives a convolution's gradients its algorithm: the input and
// filter gradients of the Winograd layer are Winograd too; the bias's sum
// has none. The strided layer before it stays direct in both its passes
// (its input is the model's, which gets no gradient).

// CHECK-LABEL: func.func @main
// CHECK: nn.conv2d
// CHECK-NOT: winograd
// CHECK-SAME: -> tensor<4x32x8x8xf32>
// CHECK: nn.conv2d {{.*}}algorithm = "winograd"{{.*}} -> tensor<4x32x8x8xf32>
// CHECK-DAG: nn.conv2d_grad_input {{.*}}algorithm = "winograd"{{.*}} -> tensor<4x32x8x8xf32>
// CHECK-DAG: nn.conv2d_grad_filter {{.*}}algorithm = "winograd"{{.*}} -> tensor<32x32x3x3xf32>
// CHECK-DAG: nn.conv2d_grad_bias
// CHECK-DAG: nn.conv2d_grad_filter %{{[0-9a-z_]+}}, %{{[0-9a-z_]+}} {pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : (tensor<4x32x8x8xf32>, tensor<4x32x16x16xf32>)
func.func @main(%x: tensor<4x32x16x16xf32>) -> tensor<4x10xf32> {
  %s = nn.param "s" : tensor<32x32x3x3xf32>
  %w = nn.param "w" : tensor<32x32x3x3xf32>
  %b = nn.param "b" : tensor<32xf32>
  %fc = nn.param "fc" : tensor<10x2048xf32>
  %y = nn.conv2d %x, %s {pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : (tensor<4x32x16x16xf32>, tensor<32x32x3x3xf32>) -> tensor<4x32x8x8xf32>
  %z = nn.conv2d %y, %w, %b {pads = array<i64: 1, 1, 1, 1>} : (tensor<4x32x8x8xf32>, tensor<32x32x3x3xf32>, tensor<32xf32>) -> tensor<4x32x8x8xf32>
  %r = nn.reshape %z : (tensor<4x32x8x8xf32>) -> tensor<4x2048xf32>
  %o = nn.matmul %r, %fc {transpose_rhs = true} : (tensor<4x2048xf32>, tensor<10x2048xf32>) -> tensor<4x10xf32>
  return %o : tensor<4x10xf32>
}
