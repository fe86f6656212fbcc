// RUN: dpc-opt %s -split-input-file -verify-diagnostics

func.func @wrong_result(%x: tensor<1x2x4x4xf32>, %w: tensor<2x3x3x3xf32>) {
  // expected-error @+1 {{'nn.conv_transpose2d' op expects result of shape 1x3x6x6, got 1x3x8x8}}
  %y = nn.conv_transpose2d %x, %w : (tensor<1x2x4x4xf32>, tensor<2x3x3x3xf32>) -> tensor<1x3x8x8xf32>
  return
}

// -----

func.func @filter_channels(%x: tensor<1x2x4x4xf32>, %w: tensor<3x3x3x3xf32>) {
  // expected-error @+1 {{expects filter input channels (3) equal to the input channels (2) and divisible by groups (1)}}
  %y = nn.conv_transpose2d %x, %w : (tensor<1x2x4x4xf32>, tensor<3x3x3x3xf32>) -> tensor<1x3x6x6xf32>
  return
}

// -----

func.func @groups(%x: tensor<1x2x4x4xf32>, %w: tensor<2x3x3x3xf32>) {
  // expected-error @+1 {{expects filter input channels (2) equal to the input channels (2) and divisible by groups (3)}}
  %y = nn.conv_transpose2d %x, %w {groups = 3} : (tensor<1x2x4x4xf32>, tensor<2x3x3x3xf32>) -> tensor<1x9x6x6xf32>
  return
}

// -----

func.func @output_padding_at_stride(%x: tensor<1x2x4x4xf32>, %w: tensor<2x3x3x3xf32>) {
  // expected-error @+1 {{expects output_padding in [0, stride), got 2x0 with strides 2x2}}
  %y = nn.conv_transpose2d %x, %w {strides = array<i64: 2, 2>, output_padding = array<i64: 2, 0>} : (tensor<1x2x4x4xf32>, tensor<2x3x3x3xf32>) -> tensor<1x3x11x9xf32>
  return
}

// -----

func.func @output_padding_count(%x: tensor<1x2x4x4xf32>, %w: tensor<2x3x3x3xf32>) {
  // expected-error @+1 {{expects 2 output_padding values}}
  %y = nn.conv_transpose2d %x, %w {output_padding = array<i64: 0>} : (tensor<1x2x4x4xf32>, tensor<2x3x3x3xf32>) -> tensor<1x3x6x6xf32>
  return
}

// -----

func.func @pads_past_output(%x: tensor<1x2x1x1xf32>, %w: tensor<2x3x1x1xf32>) {
  // expected-error @+1 {{expects pads to leave a non-empty output, got input 1x2x1x1, filter 2x3x1x1 and pads 1x0x0x0}}
  %y = nn.conv_transpose2d %x, %w {pads = array<i64: 1, 0, 0, 0>} : (tensor<1x2x1x1xf32>, tensor<2x3x1x1xf32>) -> tensor<1x3x1x1xf32>
  return
}

// -----

func.func @rank(%x: tensor<1x2x4xf32>, %w: tensor<2x3x3xf32>) {
  // expected-error @+1 {{expects a rank-4 NCHW input, got 1x2x4}}
  %y = nn.conv_transpose2d %x, %w : (tensor<1x2x4xf32>, tensor<2x3x3xf32>) -> tensor<1x3x6xf32>
  return
}

// -----

func.func @bias(%x: tensor<1x2x4x4xf32>, %w: tensor<2x3x3x3xf32>, %b: tensor<2xf32>) {
  // expected-error @+1 {{expects bias of shape 3, got 2}}
  %y = nn.conv_transpose2d %x, %w, %b : (tensor<1x2x4x4xf32>, tensor<2x3x3x3xf32>, tensor<2xf32>) -> tensor<1x3x6x6xf32>
  return
}

// -----

func.func @bad_strides(%x: tensor<1x2x4x4xf32>, %w: tensor<2x3x3x3xf32>) {
  // expected-error @+1 {{expects 2 positive strides}}
  %y = nn.conv_transpose2d %x, %w {strides = array<i64: 0, 1>} : (tensor<1x2x4x4xf32>, tensor<2x3x3x3xf32>) -> tensor<1x3x6x6xf32>
  return
}
