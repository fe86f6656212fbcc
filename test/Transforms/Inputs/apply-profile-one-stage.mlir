// apply-profile.mlir on one stage (no send or receive): a job of one rank.
module attributes {pipe.num_stages = 1 : i64} {
  func.func @main(%x: tensor<4x8xf32>, %labels: tensor<4xi64> {pipe.labels}) -> (tensor<f32>, tensor<4x8xf32>) {
    pipe.stash %x key "input" {pipe.stage = 0 : i64} : tensor<4x8xf32>
    pipe.stash %labels key "labels" {pipe.stage = 0 : i64} : tensor<4xi64>
    %w0 = nn.param "w0" {pipe.stage = 0 : i64} : tensor<8x8xf32>
    %m0 = nn.matmul %x, %w0 {nn.node = "fc0", pipe.stage = 0 : i64} : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
    %r0 = nn.relu %m0 {nn.node = "act", pipe.stage = 0 : i64} : tensor<4x8xf32>
    pipe.stash %r0 key "relu0" {pipe.stage = 0 : i64} : tensor<4x8xf32>
    pipe.stash %r0 key "in1" {pipe.stage = 0 : i64} : tensor<4x8xf32>
    %w1 = nn.param "w1" {pipe.stage = 0 : i64} : tensor<8x8xf32>
    %y = nn.matmul %r0, %w1 {nn.node = "fc1", pipe.stage = 0 : i64} : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
    pipe.stash %y key "logits" {pipe.stage = 0 : i64} : tensor<4x8xf32>
    %loss = nn.softmax_cross_entropy %y, %labels {nn.node = "loss", pipe.stage = 0 : i64, scale = 0.25 : f32} : (tensor<4x8xf32>, tensor<4xi64>) -> tensor<f32>
    %y_r = pipe.restore key "logits" {pipe.stage = 0 : i64} : tensor<4x8xf32>
    %l_r = pipe.restore key "labels" {pipe.stage = 0 : i64} : tensor<4xi64>
    %dy = nn.softmax_cross_entropy_grad %y_r, %l_r {nn.node = "loss", pipe.stage = 0 : i64, scale = 0.25 : f32} : (tensor<4x8xf32>, tensor<4xi64>) -> tensor<4x8xf32>
    %din = nn.matmul_grad_lhs %dy, %w1 {nn.node = "fc1", pipe.stage = 0 : i64} : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
    %in1_r = pipe.restore key "in1" {pipe.stage = 0 : i64} : tensor<4x8xf32>
    %dw1 = nn.matmul_grad_rhs %dy, %in1_r {nn.node = "fc1", pipe.stage = 0 : i64} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<8x8xf32>
    %r0_r = pipe.restore key "relu0" {pipe.stage = 0 : i64} : tensor<4x8xf32>
    %dr = nn.relu_grad %din, %r0_r {nn.node = "act", pipe.stage = 0 : i64} : tensor<4x8xf32>
    %x_r = pipe.restore key "input" {pipe.stage = 0 : i64} : tensor<4x8xf32>
    %dw0 = nn.matmul_grad_rhs %dr, %x_r {nn.node = "fc0", pipe.stage = 0 : i64} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<8x8xf32>
    nn.sgd_update %w0, %dw0 {lr = 0.1 : f32, pipe.stage = 0 : i64} : tensor<8x8xf32>
    nn.sgd_update %w1, %dw1 {lr = 0.1 : f32, momentum = 0.5 : f32, pipe.stage = 0 : i64} : tensor<8x8xf32>
    return %loss, %y : tensor<f32>, tensor<4x8xf32>
  }
}
