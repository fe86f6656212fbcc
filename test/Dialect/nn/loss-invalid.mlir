// RUN: dpc-opt %s -split-input-file -verify-diagnostics

// With ignore_index the run time supplies the step's scale, so a constant
// one as well would scale twice.
func.func @ignore_with_scale(%l: tensor<4x8x10xf32>, %y: tensor<4x8xi64>) {
  // expected-error @+1 {{'nn.softmax_cross_entropy' op expects scale = 1 with ignore_index (the run time scales by the step's counted labels), got 3.125000e-02}}
  %loss = nn.softmax_cross_entropy %l, %y {ignore_index = -100 : i64, scale = 0.03125 : f32} : (tensor<4x8x10xf32>, tensor<4x8xi64>) -> tensor<f32>
  return
}

// -----

func.func @ignore_grad_with_scale(%l: tensor<4x8x10xf32>, %y: tensor<4x8xi64>) {
  // expected-error @+1 {{'nn.softmax_cross_entropy_grad' op expects scale = 1 with ignore_index}}
  %g = nn.softmax_cross_entropy_grad %l, %y {ignore_index = 0 : i64, scale = 2.0 : f32} : (tensor<4x8x10xf32>, tensor<4x8xi64>) -> tensor<4x8x10xf32>
  return
}

// -----

func.func @ignore_index_type(%l: tensor<4x8x10xf32>, %y: tensor<4x8xi64>) {
  // expected-error @+1 {{'nn.softmax_cross_entropy' op attribute 'ignore_index' failed to satisfy constraint: 64-bit signless integer attribute}}
  %loss = nn.softmax_cross_entropy %l, %y {ignore_index = 1.5 : f32} : (tensor<4x8x10xf32>, tensor<4x8xi64>) -> tensor<f32>
  return
}

// -----

func.func @negative_scale(%l: tensor<16x10xf32>, %y: tensor<16xi64>) {
  // expected-error @+1 {{'nn.softmax_cross_entropy' op expects a positive finite scale, got -1.000000e+00}}
  %loss = nn.softmax_cross_entropy %l, %y {scale = -1.0 : f32} : (tensor<16x10xf32>, tensor<16xi64>) -> tensor<f32>
  return
}

// -----

func.func @mse_target_shape(%p: tensor<16x8xf32>, %t: tensor<16x4xf32>) {
  // expected-error @+1 {{'nn.mse_loss' op expects a target of the prediction's shape 16x8, got target of shape 16x4}}
  %loss = nn.mse_loss %p, %t : (tensor<16x8xf32>, tensor<16x4xf32>) -> tensor<f32>
  return
}

// -----

func.func @mse_grad_target_shape(%p: tensor<16x8xf32>, %t: tensor<8x16xf32>) {
  // expected-error @+1 {{'nn.mse_loss_grad' op expects a target of the prediction's shape 16x8, got target of shape 8x16}}
  %g = nn.mse_loss_grad %p, %t : (tensor<16x8xf32>, tensor<8x16xf32>) -> tensor<16x8xf32>
  return
}

// -----

func.func @mse_target_type(%p: tensor<16x8xf32>, %t: tensor<16x8xf16>) {
  // expected-error @+1 {{'nn.mse_loss' op expects target of element type 'f32', got 'f16'}}
  %loss = nn.mse_loss %p, %t : (tensor<16x8xf32>, tensor<16x8xf16>) -> tensor<f32>
  return
}

// -----

func.func @mse_integer_target(%p: tensor<16x8xf32>, %t: tensor<16x8xi64>) {
  // expected-error @+1 {{'nn.mse_loss' op operand #1 must be statically shaped tensor of}}
  %loss = nn.mse_loss %p, %t : (tensor<16x8xf32>, tensor<16x8xi64>) -> tensor<f32>
  return
}

// -----

func.func @mse_zero_scale(%p: tensor<16x8xf32>, %t: tensor<16x8xf32>) {
  // expected-error @+1 {{'nn.mse_loss' op expects a positive finite scale, got 0.000000e+00}}
  %loss = nn.mse_loss %p, %t {scale = 0.0 : f32} : (tensor<16x8xf32>, tensor<16x8xf32>) -> tensor<f32>
  return
}

// -----

func.func @mse_loss_not_scalar(%p: tensor<16x8xf32>, %t: tensor<16x8xf32>) {
  // expected-error @+1 {{'nn.mse_loss' op expects a 0-d loss of shape scalar, got 16}}
  %loss = nn.mse_loss %p, %t : (tensor<16x8xf32>, tensor<16x8xf32>) -> tensor<16xf32>
  return
}

// -----

func.func @mse_grad_shape(%p: tensor<16x8xf32>, %t: tensor<16x8xf32>) {
  // expected-error @+1 {{'nn.mse_loss_grad' op expects prediction_grad of shape 16x8, got 16}}
  %g = nn.mse_loss_grad %p, %t : (tensor<16x8xf32>, tensor<16x8xf32>) -> tensor<16xf32>
  return
}
