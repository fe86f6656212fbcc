// RUN: dpc-opt %s | dpc-opt | FileCheck %s
// RUN: dpc-opt %s -mlir-print-op-generic | dpc-opt | FileCheck %s

// nn.conv_transpose2d (ONNX ConvTranspose) and the ops its gradients are:
// the input's a conv2d by the same filter, the filter's a
// conv2d_grad_filter with the input as its result_grad, the bias's a
// conv2d_grad_bias.

// CHECK-LABEL: func.func @conv_transpose
// CHECK: nn.conv_transpose2d %{{.*}}, %{{.*}}, %{{.*}} {groups = 2 : i64, output_padding = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : (tensor<2x8x7x7xf32>, tensor<8x2x3x3xf32>, tensor<4xf32>) -> tensor<2x4x14x14xf32>
// CHECK: nn.conv_transpose2d %{{.*}}, %{{.*}} {dilations = array<i64: 2, 1>, pads = array<i64: 0, 1, 2, 0>} : (tensor<1x3x4x5xf32>, tensor<3x5x2x3xf32>) -> tensor<1x5x4x6xf32>
// CHECK: nn.conv2d %{{.*}}, %{{.*}} {groups = 2 : i64, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : (tensor<2x4x14x14xf32>, tensor<8x2x3x3xf32>) -> tensor<2x8x7x7xf32>
// CHECK: nn.conv2d_grad_filter %{{.*}}, %{{.*}} {groups = 2 : i64, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : (tensor<2x8x7x7xf32>, tensor<2x4x14x14xf32>) -> tensor<8x2x3x3xf32>
func.func @conv_transpose(%x: tensor<2x8x7x7xf32>, %w: tensor<8x2x3x3xf32>,
                          %b: tensor<4xf32>, %v: tensor<1x3x4x5xf32>,
                          %f: tensor<3x5x2x3xf32>)
    -> tensor<8x2x3x3xf32> {
  // (7 - 1) * 2 - 2 + 3 + 1 = 14.
  %y = nn.conv_transpose2d %x, %w, %b {strides = array<i64: 2, 2>,
      pads = array<i64: 1, 1, 1, 1>, output_padding = array<i64: 1, 1>,
      groups = 2}
      : (tensor<2x8x7x7xf32>, tensor<8x2x3x3xf32>, tensor<4xf32>)
      -> tensor<2x4x14x14xf32>
  // Height (4 - 1) - 0 - 2 + 2 * (2 - 1) + 1 = 4, width (5 - 1) - 1 - 0 +
  // (3 - 1) + 1 = 6.
  %z = nn.conv_transpose2d %v, %f {dilations = array<i64: 2, 1>,
      pads = array<i64: 0, 1, 2, 0>}
      : (tensor<1x3x4x5xf32>, tensor<3x5x2x3xf32>) -> tensor<1x5x4x6xf32>
  %dx = nn.conv2d %y, %w {strides = array<i64: 2, 2>,
      pads = array<i64: 1, 1, 1, 1>, groups = 2}
      : (tensor<2x4x14x14xf32>, tensor<8x2x3x3xf32>) -> tensor<2x8x7x7xf32>
  %dw = nn.conv2d_grad_filter %x, %y {strides = array<i64: 2, 2>,
      pads = array<i64: 1, 1, 1, 1>, groups = 2}
      : (tensor<2x8x7x7xf32>, tensor<2x4x14x14xf32>) -> tensor<8x2x3x3xf32>
  return %dw : tensor<8x2x3x3xf32>
}
