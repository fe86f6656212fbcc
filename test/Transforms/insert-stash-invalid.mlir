// RUN: dpc-opt %s -split-input-file --dpc-insert-stash -verify-diagnostics

// expected-error @+1 {{expects one loss (nn.softmax_cross_entropy or nn.mse_loss) marking the end of the forward pass (run --dpc-autodiff first), got 0}}
func.func @main(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %a = nn.relu %x {pipe.stage = 0 : i64} : tensor<4x8xf32>
  return %a : tensor<4x8xf32>
}

// -----

func.func @main(%y: tensor<4x8xf32>, %labels: tensor<4xi64> {pipe.labels}) -> tensor<f32> {
  %loss = nn.softmax_cross_entropy %y, %labels {pipe.stage = 0 : i64} : (tensor<4x8xf32>, tensor<4xi64>) -> tensor<f32>
  // expected-error @+1 {{has no pipe.stage; run --dpc-partition-stages first}}
  %dy = nn.softmax_cross_entropy_grad %y, %labels : (tensor<4x8xf32>, tensor<4xi64>) -> tensor<4x8xf32>
  return %loss : tensor<f32>
}
