// RUN: dpc-opt %s -split-input-file -verify-diagnostics

func.func @unknown_mode(%x: tensor<1x2x4x4xf32>) {
  // expected-error @+1 {{'nn.resize' op expects mode 'nearest', 'linear', got 'cubic'}}
  %y = nn.resize %x {mode = "cubic", scales = array<f64: 2.0, 2.0>}
      : (tensor<1x2x4x4xf32>) -> tensor<1x2x8x8xf32>
  return
}

// -----

func.func @unknown_coordinates(%x: tensor<1x2x4x4xf32>) {
  // expected-error @+1 {{'nn.resize' op expects coordinate transformation mode 'half_pixel', 'pytorch_half_pixel', 'align_corners', 'asymmetric', 'tf_half_pixel_for_nn', got 'tf_crop_and_resize'}}
  %y = nn.resize %x {coordinates = "tf_crop_and_resize",
                     scales = array<f64: 2.0, 2.0>}
      : (tensor<1x2x4x4xf32>) -> tensor<1x2x8x8xf32>
  return
}

// -----

func.func @unknown_rounding(%x: tensor<1x2x4x4xf32>) {
  // expected-error @+1 {{'nn.resize' op expects nearest mode 'round_prefer_floor', 'round_prefer_ceil', 'floor', 'ceil', got 'round'}}
  %y = nn.resize %x {nearest_mode = "round", scales = array<f64: 2.0, 2.0>}
      : (tensor<1x2x4x4xf32>) -> tensor<1x2x8x8xf32>
  return
}

// -----

func.func @rank_two(%x: tensor<4x4xf32>) {
  // expected-error @+1 {{'nn.resize' op expects an input of rank 3 to 5 (N x C x 1 to 3 spatial dimensions), got 4x4}}
  %y = nn.resize %x {scales = array<f64: 2.0, 2.0>}
      : (tensor<4x4xf32>) -> tensor<8x8xf32>
  return
}

// -----

func.func @scale_count(%x: tensor<1x2x4x4xf32>) {
  // expected-error @+1 {{'nn.resize' op expects 2 scales, one per spatial dimension, got 4}}
  %y = nn.resize %x {scales = array<f64: 1.0, 1.0, 2.0, 2.0>}
      : (tensor<1x2x4x4xf32>) -> tensor<1x2x8x8xf32>
  return
}

// -----

func.func @negative_scale(%x: tensor<1x2x4x4xf32>) {
  // expected-error @+1 {{'nn.resize' op expects non-negative finite scales, got -2}}
  %y = nn.resize %x {scales = array<f64: -2.0, 2.0>}
      : (tensor<1x2x4x4xf32>) -> tensor<1x2x8x8xf32>
  return
}

// -----

func.func @scaled_to_nothing(%x: tensor<1x2x4x4xf32>) {
  // expected-error @+1 {{'nn.resize' op expects every resized dimension in [1, 2^40], got 0 for spatial dimension 1}}
  %y = nn.resize %x {scales = array<f64: 1.0, 0.2>}
      : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x1xf32>
  return
}

// -----

func.func @wrong_result(%x: tensor<1x2x4x4xf32>) {
  // expected-error @+1 {{'nn.resize' op expects result of shape 1x2x8x8, got 1x2x8x9}}
  %y = nn.resize %x {scales = array<f64: 2.0, 2.0>}
      : (tensor<1x2x4x4xf32>) -> tensor<1x2x8x9xf32>
  return
}

// -----

func.func @channels_change(%x: tensor<1x2x4x4xf32>) {
  // expected-error @+1 {{'nn.resize' op expects result of shape 1x2x8x8, got 1x3x8x8}}
  %y = nn.resize %x {scales = array<f64: 0.0, 0.0>}
      : (tensor<1x2x4x4xf32>) -> tensor<1x3x8x8xf32>
  return
}

// -----

func.func @grad_wrong_input(%dy: tensor<1x2x8x8xf32>) {
  // expected-error @+1 {{'nn.resize_grad' op expects result_grad of shape 1x2x6x6, got 1x2x8x8}}
  %dx = nn.resize_grad %dy {mode = "linear", scales = array<f64: 1.5, 1.5>}
      : (tensor<1x2x8x8xf32>) -> tensor<1x2x4x4xf32>
  return
}
