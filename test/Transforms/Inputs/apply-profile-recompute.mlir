// apply-profile.mlir before insert-stash, for a build that recomputes: each op's
// model node as autodiff names them: gradient ops carry the node of the
// forward op they differentiate; the optimizer updates have none.
module attributes {pipe.num_stages = 2 : i64} {
  func.func @main(%x: tensor<4x8xf32>, %labels: tensor<4xi64> {pipe.labels}) -> (tensor<f32>, tensor<4x8xf32>) {
    %w0 = nn.param "w0" {pipe.stage = 0 : i64} : tensor<8x8xf32>
    %m0 = nn.matmul %x, %w0 {nn.node = "fc0", pipe.stage = 0 : i64} : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
    %r0 = nn.relu %m0 {nn.node = "act", pipe.stage = 0 : i64} : tensor<4x8xf32>
    pipe.send %r0 to 1 tag 0 {pipe.stage = 0 : i64} : tensor<4x8xf32>
    %in1 = pipe.recv from 0 tag 0 {pipe.stage = 1 : i64} : tensor<4x8xf32>
    %w1 = nn.param "w1" {pipe.stage = 1 : i64} : tensor<8x8xf32>
    %y = nn.matmul %in1, %w1 {nn.node = "fc1", pipe.stage = 1 : i64} : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
    %loss = nn.softmax_cross_entropy %y, %labels {nn.node = "loss", pipe.stage = 1 : i64, scale = 0.25 : f32} : (tensor<4x8xf32>, tensor<4xi64>) -> tensor<f32>
    %dy = nn.softmax_cross_entropy_grad %y, %labels {nn.node = "loss", pipe.stage = 1 : i64, scale = 0.25 : f32} : (tensor<4x8xf32>, tensor<4xi64>) -> tensor<4x8xf32>
    %din = nn.matmul_grad_lhs %dy, %w1 {nn.node = "fc1", pipe.stage = 1 : i64} : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
    pipe.send %din to 0 tag 1 {pipe.stage = 1 : i64} : tensor<4x8xf32>
    %g = pipe.recv from 1 tag 1 {pipe.stage = 0 : i64} : tensor<4x8xf32>
    %dw1 = nn.matmul_grad_rhs %dy, %in1 {nn.node = "fc1", pipe.stage = 1 : i64} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<8x8xf32>
    %dr = nn.relu_grad %g, %r0 {nn.node = "act", pipe.stage = 0 : i64} : tensor<4x8xf32>
    %dw0 = nn.matmul_grad_rhs %dr, %x {nn.node = "fc0", pipe.stage = 0 : i64} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<8x8xf32>
    nn.sgd_update %w0, %dw0 {lr = 0.1 : f32, pipe.stage = 0 : i64} : tensor<8x8xf32>
    nn.sgd_update %w1, %dw1 {lr = 0.1 : f32, momentum = 0.5 : f32, pipe.stage = 1 : i64} : tensor<8x8xf32>
    return %loss, %y : tensor<f32>, tensor<4x8xf32>
  }
}
