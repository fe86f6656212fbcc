// RUN: dpc-opt %s -split-input-file --dpc-outline-stages -verify-diagnostics

// A forward value read by the backward without a stash.
func.func @main(%x: tensor<4x8xf32>, %labels: tensor<4xi64>) -> tensor<f32> {
  %r = nn.relu %x {pipe.stage = 0 : i64} : tensor<4x8xf32>
  %loss = nn.softmax_cross_entropy %r, %labels {pipe.stage = 0 : i64} : (tensor<4x8xf32>, tensor<4xi64>) -> tensor<f32>
  // expected-error @+1 {{uses a value computed in another segment (nn.relu on stage 0) with no stash or transfer; insert-stash and insert-send-recv must run first}}
  %dy = nn.softmax_cross_entropy_grad %r, %labels {pipe.stage = 0 : i64} : (tensor<4x8xf32>, tensor<4xi64>) -> tensor<4x8xf32>
  return %loss : tensor<f32>
}

// -----

// expected-error @+1 {{expects one nn.softmax_cross_entropy marking the end of the forward pass, got 0}}
func.func @main(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %r = nn.relu %x {pipe.stage = 0 : i64} : tensor<4x8xf32>
  return %r : tensor<4x8xf32>
}
