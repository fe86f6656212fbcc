// RUN: dpc-opt %s -split-input-file -verify-diagnostics

func.func @no_channels(%x: tensor<8xf32>) {
  // expected-error @+1 {{'nn.lrn' op expects an input of rank at least 2 (N x C x ...), got rank 1}}
  %y = nn.lrn %x {size = 3 : i64} : (tensor<8xf32>) -> tensor<8xf32>
  return
}

// -----

func.func @empty_window(%x: tensor<1x4x2x2xf32>) {
  // expected-error @+1 {{'nn.lrn' op expects size at least 1, got 0}}
  %y = nn.lrn %x {size = 0 : i64} : (tensor<1x4x2x2xf32>) -> tensor<1x4x2x2xf32>
  return
}

// -----

func.func @result_shape(%x: tensor<1x4x2x2xf32>) {
  // expected-error @+1 {{'nn.lrn' op expects result of shape 1x4x2x2, got 1x4x2x3}}
  %y = nn.lrn %x {size = 3 : i64} : (tensor<1x4x2x2xf32>) -> tensor<1x4x2x3xf32>
  return
}

// -----

func.func @grad_of_another_shape(%dy: tensor<1x4x2x3xf32>, %x: tensor<1x4x2x2xf32>) {
  // expected-error @+1 {{'nn.lrn_grad' op expects result_grad (the forward result's shape) of shape 1x4x2x2, got 1x4x2x3}}
  %dx = nn.lrn_grad %dy, %x {size = 3 : i64}
      : (tensor<1x4x2x3xf32>, tensor<1x4x2x2xf32>) -> tensor<1x4x2x2xf32>
  return
}

// -----

func.func @grad_empty_window(%dy: tensor<1x4xf32>, %x: tensor<1x4xf32>) {
  // expected-error @+1 {{'nn.lrn_grad' op expects size at least 1, got -1}}
  %dx = nn.lrn_grad %dy, %x {size = -1 : i64}
      : (tensor<1x4xf32>, tensor<1x4xf32>) -> tensor<1x4xf32>
  return
}

// -----

func.func @grad_input_grad(%dy: tensor<1x4xf32>, %x: tensor<1x4xf32>) {
  // expected-error @+1 {{'nn.lrn_grad' op expects input_grad of shape 1x4, got 4x1}}
  %dx = nn.lrn_grad %dy, %x {size = 3 : i64}
      : (tensor<1x4xf32>, tensor<1x4xf32>) -> tensor<4x1xf32>
  return
}
