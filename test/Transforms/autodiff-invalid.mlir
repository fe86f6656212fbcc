// RUN: dpc-opt %s -split-input-file --dpc-autodiff -verify-diagnostics

// expected-error @+1 {{expects a function @main holding the forward pass}}
module {
  func.func @forward(%x: tensor<4x3xf32>) -> tensor<4x3xf32> {
    return %x : tensor<4x3xf32>
  }
}

// -----

// expected-error @+1 {{expects @main to return the logits alone, got 2 results}}
func.func @main(%x: tensor<4x3xf32>) -> (tensor<4x3xf32>, tensor<4x3xf32>) {
  return %x, %x : tensor<4x3xf32>, tensor<4x3xf32>
}

// -----

// expected-error @+1 {{expects logits of rank >= 2 (batch, positions..., classes) for softmax-cross-entropy, got 'tensor<4xf32>'}}
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %w = nn.param "w" : tensor<4xf32>
  %y = nn.add %x, %w : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

// expected-error @+1 {{the output does not depend on any parameter: nothing to train}}
func.func @main(%x: tensor<4x3xf32>) -> tensor<4x3xf32> {
  %y = nn.relu %x : tensor<4x3xf32>
  return %y : tensor<4x3xf32>
}

// -----

func.func @main(%x: tensor<4x3xf32>) -> tensor<4x3xf32> {
  %w = nn.param "w" : tensor<4x3xf32>
  %g = nn.relu_grad %x, %w : tensor<4x3xf32>
  // expected-error @+1 {{'nn.relu_grad' has no gradient rule}}
  %h = nn.relu_grad %g, %x : tensor<4x3xf32>
  return %h : tensor<4x3xf32>
}
