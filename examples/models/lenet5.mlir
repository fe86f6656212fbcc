// LeNet-5 on 16-sample microbatches in the nn dialect: the forward pass as
// the ONNX frontend imports torch.onnx's export of the model.
func.func @main(%x: tensor<16x1x28x28xf32>) -> tensor<16x10xf32> {
  %w1 = nn.param "conv1.weight" : tensor<6x1x5x5xf32>
  %b1 = nn.param "conv1.bias" : tensor<6xf32>
  %c1 = nn.conv2d %x, %w1, %b1 {pads = array<i64: 2, 2, 2, 2>}
      : (tensor<16x1x28x28xf32>, tensor<6x1x5x5xf32>, tensor<6xf32>) -> tensor<16x6x28x28xf32>
  %r1 = nn.relu %c1 : tensor<16x6x28x28xf32>
  %p1 = nn.max_pool2d %r1 {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>}
      : (tensor<16x6x28x28xf32>) -> tensor<16x6x14x14xf32>
  %w2 = nn.param "conv2.weight" : tensor<16x6x5x5xf32>
  %b2 = nn.param "conv2.bias" : tensor<16xf32>
  %c2 = nn.conv2d %p1, %w2, %b2
      : (tensor<16x6x14x14xf32>, tensor<16x6x5x5xf32>, tensor<16xf32>) -> tensor<16x16x10x10xf32>
  %r2 = nn.relu %c2 : tensor<16x16x10x10xf32>
  %p2 = nn.max_pool2d %r2 {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>}
      : (tensor<16x16x10x10xf32>) -> tensor<16x16x5x5xf32>
  %f = nn.reshape %p2 : (tensor<16x16x5x5xf32>) -> tensor<16x400xf32>
  %w3 = nn.param "fc1.weight" : tensor<120x400xf32>
  %b3 = nn.param "fc1.bias" : tensor<120xf32>
  %m3 = nn.matmul %f, %w3 {transpose_rhs = true}
      : (tensor<16x400xf32>, tensor<120x400xf32>) -> tensor<16x120xf32>
  %a3 = nn.add %m3, %b3 : (tensor<16x120xf32>, tensor<120xf32>) -> tensor<16x120xf32>
  %r3 = nn.relu %a3 : tensor<16x120xf32>
  %w4 = nn.param "fc2.weight" : tensor<84x120xf32>
  %b4 = nn.param "fc2.bias" : tensor<84xf32>
  %m4 = nn.matmul %r3, %w4 {transpose_rhs = true}
      : (tensor<16x120xf32>, tensor<84x120xf32>) -> tensor<16x84xf32>
  %a4 = nn.add %m4, %b4 : (tensor<16x84xf32>, tensor<84xf32>) -> tensor<16x84xf32>
  %r4 = nn.relu %a4 : tensor<16x84xf32>
  %w5 = nn.param "fc3.weight" : tensor<10x84xf32>
  %b5 = nn.param "fc3.bias" : tensor<10xf32>
  %m5 = nn.matmul %r4, %w5 {transpose_rhs = true}
      : (tensor<16x84xf32>, tensor<10x84xf32>) -> tensor<16x10xf32>
  %y = nn.add %m5, %b5 : (tensor<16x10xf32>, tensor<10xf32>) -> tensor<16x10xf32>
  return %y : tensor<16x10xf32>
}
