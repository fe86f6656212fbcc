// Two 3x3 convolutions of 64 channels at 28x28 and a classifier: layers
// select-conv-algorithm gives Winograd under auto (conv-algorithm.test).
// The first reads the model's 8-channel input; the second is strided.
func.func @main(%x: tensor<16x8x28x28xf32>) -> tensor<16x10xf32> {
  %w1 = nn.param "conv1.weight" : tensor<64x8x3x3xf32>
  %c1 = nn.conv2d %x, %w1 {pads = array<i64: 1, 1, 1, 1>}
      : (tensor<16x8x28x28xf32>, tensor<64x8x3x3xf32>) -> tensor<16x64x28x28xf32>
  %r1 = nn.relu %c1 : tensor<16x64x28x28xf32>
  %w2 = nn.param "conv2.weight" : tensor<64x64x3x3xf32>
  %c2 = nn.conv2d %r1, %w2 {pads = array<i64: 1, 1, 1, 1>}
      : (tensor<16x64x28x28xf32>, tensor<64x64x3x3xf32>) -> tensor<16x64x28x28xf32>
  %r2 = nn.relu %c2 : tensor<16x64x28x28xf32>
  %w3 = nn.param "conv3.weight" : tensor<64x64x3x3xf32>
  %c3 = nn.conv2d %r2, %w3 {pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>}
      : (tensor<16x64x28x28xf32>, tensor<64x64x3x3xf32>) -> tensor<16x64x14x14xf32>
  %p = nn.global_avg_pool %c3 : (tensor<16x64x14x14xf32>) -> tensor<16x64x1x1xf32>
  %f = nn.reshape %p : (tensor<16x64x1x1xf32>) -> tensor<16x64xf32>
  %w4 = nn.param "fc.weight" : tensor<10x64xf32>
  %y = nn.matmul %f, %w4 {transpose_rhs = true}
      : (tensor<16x64xf32>, tensor<10x64xf32>) -> tensor<16x10xf32>
  return %y : tensor<16x10xf32>
}
