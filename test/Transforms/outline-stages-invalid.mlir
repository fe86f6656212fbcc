// RUN: dpc-opt %s -split-input-file --dpc-outline-stages -verify-diagnostics

// A forward value read by the backward without a stash.
func.func @main(%x: tensor<4x8xf32>, %labels: tensor<4xi64> {pipe.labels}) -> tensor<f32> {
  %r = nn.relu %x {pipe.stage = 0 : i64} : tensor<4x8xf32>
  %loss = nn.softmax_cross_entropy %r, %labels {pipe.stage = 0 : i64} : (tensor<4x8xf32>, tensor<4xi64>) -> tensor<f32>
  // expected-error @+1 {{uses a value computed in another segment (nn.relu on stage 0) with no stash or transfer; insert-stash and insert-send-recv must run first}}
  %dy = nn.softmax_cross_entropy_grad %r, %labels {pipe.stage = 0 : i64} : (tensor<4x8xf32>, tensor<4xi64>) -> tensor<4x8xf32>
  return %loss : tensor<f32>
}

// -----

// expected-error @+1 {{expects one loss (nn.softmax_cross_entropy or nn.mse_loss) marking the end of the forward pass, got 0}}
func.func @main(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %r = nn.relu %x {pipe.stage = 0 : i64} : tensor<4x8xf32>
  return %r : tensor<4x8xf32>
}

// -----

// An inference module has no loss.
module attributes {pipe.inference} {
  // expected-error @+1 {{an inference module ('pipe.inference') has no loss, got nn.softmax_cross_entropy}}
  func.func @main(%x: tensor<4x8xf32>, %labels: tensor<4xi64> {pipe.labels}) -> tensor<f32> {
    %loss = nn.softmax_cross_entropy %x, %labels {pipe.stage = 0 : i64, scale = 0.25 : f32} : (tensor<4x8xf32>, tensor<4xi64>) -> tensor<f32>
    return %loss : tensor<f32>
  }
}

// -----

// It reports one output.
module attributes {pipe.inference} {
  // expected-error @+1 {{an inference module reports one output, but @main returns 2 results}}
  func.func @main(%x: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
    %r = nn.relu %x {pipe.stage = 0 : i64} : tensor<4x8xf32>
    return %r, %r : tensor<4x8xf32>, tensor<4x8xf32>
  }
}
