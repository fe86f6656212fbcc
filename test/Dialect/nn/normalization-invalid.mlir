// RUN: dpc-opt %s -split-input-file -verify-diagnostics

func.func @stats_not_param(%x: tensor<8x4x6x6xf32>, %rm: tensor<4xf32>) {
  %rv = nn.param "bn.running_var" : tensor<4xf32>
  // expected-error @+1 {{'nn.batch_norm_stats' op expects the running statistics to come from nn.param}}
  %s = nn.batch_norm_stats %x, %rm, %rv : (tensor<8x4x6x6xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  return
}

// -----

func.func @stats_shape(%x: tensor<8x4x6x6xf32>) {
  %rm = nn.param "bn.running_mean" : tensor<4xf32>
  %rv = nn.param "bn.running_var" : tensor<4xf32>
  // expected-error @+1 {{'nn.batch_norm_stats' op expects stats (mean and variance rows) of shape 2x4, got 4x2}}
  %s = nn.batch_norm_stats %x, %rm, %rv : (tensor<8x4x6x6xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<4x2xf32>
  return
}

// -----

func.func @stats_running_shape(%x: tensor<8x4x6x6xf32>) {
  %rm = nn.param "bn.running_mean" : tensor<6xf32>
  %rv = nn.param "bn.running_var" : tensor<4xf32>
  // expected-error @+1 {{'nn.batch_norm_stats' op expects running_mean of shape 4, got 6}}
  %s = nn.batch_norm_stats %x, %rm, %rv : (tensor<8x4x6x6xf32>, tensor<6xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  return
}

// -----

func.func @stats_momentum(%x: tensor<8x4x6x6xf32>) {
  %rm = nn.param "bn.running_mean" : tensor<4xf32>
  %rv = nn.param "bn.running_var" : tensor<4xf32>
  // expected-error @+1 {{'nn.batch_norm_stats' op expects momentum in [0, 1], got 1.5}}
  %s = nn.batch_norm_stats %x, %rm, %rv {momentum = 1.5 : f32} : (tensor<8x4x6x6xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  return
}

// -----

func.func @stats_rank(%x: tensor<8xf32>) {
  %rm = nn.param "bn.running_mean" : tensor<8xf32>
  %rv = nn.param "bn.running_var" : tensor<8xf32>
  // expected-error @+1 {{'nn.batch_norm_stats' op expects an input of rank >= 2 (N x C x ...), got 8}}
  %s = nn.batch_norm_stats %x, %rm, %rv : (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<2x8xf32>
  return
}

// -----

func.func @norm_scale(%x: tensor<8x4x6x6xf32>, %s: tensor<2x4xf32>, %g: tensor<3xf32>, %b: tensor<4xf32>) {
  // expected-error @+1 {{'nn.batch_norm' op expects scale of shape 4, got 3}}
  %y = nn.batch_norm %x, %s, %g, %b : (tensor<8x4x6x6xf32>, tensor<2x4xf32>, tensor<3xf32>, tensor<4xf32>) -> tensor<8x4x6x6xf32>
  return
}

// -----

func.func @norm_result(%x: tensor<8x4x6x6xf32>, %s: tensor<2x4xf32>, %g: tensor<4xf32>, %b: tensor<4xf32>) {
  // expected-error @+1 {{'nn.batch_norm' op expects result of shape 8x4x6x6, got 8x4x36}}
  %y = nn.batch_norm %x, %s, %g, %b : (tensor<8x4x6x6xf32>, tensor<2x4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<8x4x36xf32>
  return
}

// -----

func.func @norm_epsilon(%x: tensor<8x4x6x6xf32>, %s: tensor<2x4xf32>, %g: tensor<4xf32>, %b: tensor<4xf32>) {
  // expected-error @+1 {{'nn.batch_norm' op expects a non-negative epsilon}}
  %y = nn.batch_norm %x, %s, %g, %b {epsilon = -1.0 : f32} : (tensor<8x4x6x6xf32>, tensor<2x4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<8x4x6x6xf32>
  return
}

// -----

func.func @grad_input_shape(%dy: tensor<8x4x6x5xf32>, %x: tensor<8x4x6x6xf32>, %s: tensor<2x4xf32>, %g: tensor<4xf32>) {
  // expected-error @+1 {{'nn.batch_norm_grad_input' op expects result_grad of shape 8x4x6x6, got 8x4x6x5}}
  %dx = nn.batch_norm_grad_input %dy, %x, %s, %g : (tensor<8x4x6x5xf32>, tensor<8x4x6x6xf32>, tensor<2x4xf32>, tensor<4xf32>) -> tensor<8x4x6x6xf32>
  return
}

// -----

func.func @grad_scale_shape(%dy: tensor<8x4x6x6xf32>, %x: tensor<8x4x6x6xf32>, %s: tensor<2x4xf32>) {
  // expected-error @+1 {{'nn.batch_norm_grad_scale' op expects scale_grad of shape 4, got 8}}
  %dg = nn.batch_norm_grad_scale %dy, %x, %s : (tensor<8x4x6x6xf32>, tensor<8x4x6x6xf32>, tensor<2x4xf32>) -> tensor<8xf32>
  return
}

// -----

func.func @grad_bias_shape(%dy: tensor<8x4x6x6xf32>) {
  // expected-error @+1 {{'nn.batch_norm_grad_bias' op expects bias_grad of shape 4, got 6}}
  %db = nn.batch_norm_grad_bias %dy : (tensor<8x4x6x6xf32>) -> tensor<6xf32>
  return
}

// -----

func.func @avg_pool_result(%x: tensor<1x6x28x28xf32>) {
  // expected-error @+1 {{'nn.avg_pool2d' op expects result of shape 1x6x14x14, got 1x6x13x13}}
  %y = nn.avg_pool2d %x {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>} : (tensor<1x6x28x28xf32>) -> tensor<1x6x13x13xf32>
  return
}

// -----

func.func @avg_pool_grad(%dy: tensor<1x6x14x14xf32>) {
  // expected-error @+1 {{'nn.avg_pool2d_grad' op expects result_grad (the forward result's shape) of shape 1x6x13x13, got 1x6x14x14}}
  %dx = nn.avg_pool2d_grad %dy {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>} : (tensor<1x6x14x14xf32>) -> tensor<1x6x27x27xf32>
  return
}

// -----

func.func @global_pool_rank(%x: tensor<4x6xf32>) {
  // expected-error @+1 {{'nn.global_avg_pool' op expects an input of rank >= 3 (N x C x spatial), got 4x6}}
  %y = nn.global_avg_pool %x : (tensor<4x6xf32>) -> tensor<4x6xf32>
  return
}

// -----

func.func @global_pool_result(%x: tensor<4x6x7x7xf32>) {
  // expected-error @+1 {{'nn.global_avg_pool' op expects result of shape 4x6x1x1, got 4x6}}
  %y = nn.global_avg_pool %x : (tensor<4x6x7x7xf32>) -> tensor<4x6xf32>
  return
}

// -----

func.func @global_pool_grad(%dy: tensor<4x6x1x1xf32>) {
  // expected-error @+1 {{'nn.global_avg_pool_grad' op expects result_grad (the forward result's shape) of shape 4x3x1x1, got 4x6x1x1}}
  %dx = nn.global_avg_pool_grad %dy : (tensor<4x6x1x1xf32>) -> tensor<4x3x7x7xf32>
  return
}

// -----

func.func @layer_norm_axis(%x: tensor<4x6x8xf32>) {
  // expected-error @+1 {{'nn.layer_norm' op expects an axis in [-3, 3) for rank 3, got 3}}
  %y = nn.layer_norm %x {axis = 3 : i64} : (tensor<4x6x8xf32>) -> tensor<4x6x8xf32>
  return
}

// -----

func.func @layer_norm_scale_shape(%x: tensor<4x6x8xf32>, %g: tensor<6x8xf32>) {
  // expected-error @+1 {{'nn.layer_norm' op expects scale (the normalized shape) of shape 8, got 6x8}}
  %y = nn.layer_norm %x scale %g : (tensor<4x6x8xf32>, tensor<6x8xf32>) -> tensor<4x6x8xf32>
  return
}

// -----

func.func @layer_norm_bias_shape(%x: tensor<4x6x8xf32>, %b: tensor<8xf32>) {
  // expected-error @+1 {{'nn.layer_norm' op expects bias (the normalized shape) of shape 6x8, got 8}}
  %y = nn.layer_norm %x bias %b {axis = 1 : i64} : (tensor<4x6x8xf32>, tensor<8xf32>) -> tensor<4x6x8xf32>
  return
}

// -----

func.func @layer_norm_epsilon(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'nn.layer_norm' op expects a non-negative epsilon}}
  %y = nn.layer_norm %x {epsilon = -1.0 : f32} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  return
}

// -----

func.func @layer_norm_result(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'nn.layer_norm' op expects result of shape 4x8, got 8x4}}
  %y = nn.layer_norm %x : (tensor<4x8xf32>) -> tensor<8x4xf32>
  return
}

// -----

func.func @layer_norm_grad_input(%dy: tensor<4x6xf32>, %x: tensor<4x8xf32>) {
  // expected-error @+1 {{'nn.layer_norm_grad_input' op expects result_grad of shape 4x8, got 4x6}}
  %dx = nn.layer_norm_grad_input %dy, %x : (tensor<4x6xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  return
}

// -----

func.func @layer_norm_grad_scale(%dy: tensor<4x6x8xf32>, %x: tensor<4x6x8xf32>) {
  // expected-error @+1 {{'nn.layer_norm_grad_scale' op expects scale_grad (the normalized shape) of shape 6x8, got 8}}
  %dg = nn.layer_norm_grad_scale %dy, %x {axis = -2 : i64} : (tensor<4x6x8xf32>, tensor<4x6x8xf32>) -> tensor<8xf32>
  return
}
