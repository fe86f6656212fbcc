// RUN: dpc-opt %s -split-input-file -verify-diagnostics

func.func @wrong_result(%x: tensor<1x2x4x4x4xf32>, %w: tensor<3x2x3x3x3xf32>) {
  // expected-error @+1 {{'nn.conv3d' op expects result of shape 1x3x2x2x2, got 1x3x4x4x4}}
  %y = nn.conv3d %x, %w : (tensor<1x2x4x4x4xf32>, tensor<3x2x3x3x3xf32>) -> tensor<1x3x4x4x4xf32>
  return
}

// -----

func.func @rank(%x: tensor<1x2x4x4xf32>, %w: tensor<3x2x3x3xf32>) {
  // expected-error @+1 {{expects a rank-5 NCDHW input, got 1x2x4x4}}
  %y = nn.conv3d %x, %w : (tensor<1x2x4x4xf32>, tensor<3x2x3x3xf32>) -> tensor<1x3x2x2xf32>
  return
}

// -----

func.func @filter_rank(%x: tensor<1x2x4x4x4xf32>, %w: tensor<3x2x3x3xf32>) {
  // expected-error @+1 {{expects a rank-5 filter (O x C/groups x KD x KH x KW), got 3x2x3x3}}
  %y = nn.conv3d %x, %w : (tensor<1x2x4x4x4xf32>, tensor<3x2x3x3xf32>) -> tensor<1x3x2x2x2xf32>
  return
}

// -----

func.func @pads(%x: tensor<1x2x4x4x4xf32>, %w: tensor<3x2x3x3x3xf32>) {
  // expected-error @+1 {{expects 6 non-negative pads [front, top, left, back, bottom, right]}}
  %y = nn.conv3d %x, %w {pads = array<i64: 1, 1, 1, 1>} : (tensor<1x2x4x4x4xf32>, tensor<3x2x3x3x3xf32>) -> tensor<1x3x2x2x2xf32>
  return
}

// -----

func.func @strides(%x: tensor<1x2x4x4x4xf32>, %w: tensor<3x2x3x3x3xf32>) {
  // expected-error @+1 {{expects 3 positive strides}}
  %y = nn.conv3d %x, %w {strides = array<i64: 1, 1>} : (tensor<1x2x4x4x4xf32>, tensor<3x2x3x3x3xf32>) -> tensor<1x3x2x2x2xf32>
  return
}

// -----

func.func @grad_input(%dy: tensor<1x3x2x2x2xf32>, %w: tensor<3x2x3x3x3xf32>) {
  // expected-error @+1 {{'nn.conv3d_grad_input' op expects result_grad (the forward result's shape) of shape 1x3x3x3x3, got 1x3x2x2x2}}
  %dx = nn.conv3d_grad_input %dy, %w : (tensor<1x3x2x2x2xf32>, tensor<3x2x3x3x3xf32>) -> tensor<1x2x5x5x5xf32>
  return
}

// -----

func.func @bias(%x: tensor<1x2x4x4x4xf32>, %w: tensor<3x2x3x3x3xf32>, %b: tensor<2xf32>) {
  // expected-error @+1 {{expects bias of shape 3, got 2}}
  %y = nn.conv3d %x, %w, %b : (tensor<1x2x4x4x4xf32>, tensor<3x2x3x3x3xf32>, tensor<2xf32>) -> tensor<1x3x2x2x2xf32>
  return
}

// -----

func.func @transpose_output_padding(%x: tensor<1x2x3x3x3xf32>, %w: tensor<2x3x2x2x2xf32>) {
  // expected-error @+1 {{'nn.conv_transpose3d' op expects output_padding in [0, stride), got 1x0x0 with strides 1x1x1}}
  %y = nn.conv_transpose3d %x, %w {output_padding = array<i64: 1, 0, 0>} : (tensor<1x2x3x3x3xf32>, tensor<2x3x2x2x2xf32>) -> tensor<1x3x5x4x4xf32>
  return
}

// -----

func.func @bias_grad_rank(%dy: tensor<2x3x4xf32>) {
  // expected-error @+1 {{expects a rank-4 NCHW or rank-5 NCDHW result_grad, got 2x3x4}}
  %db = nn.conv2d_grad_bias %dy : (tensor<2x3x4xf32>) -> tensor<3xf32>
  return
}
