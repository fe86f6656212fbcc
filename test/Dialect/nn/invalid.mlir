// RUN: dpc-opt %s -split-input-file -verify-diagnostics

func.func @param_empty_name() {
  // expected-error @+1 {{'nn.param' op expects a non-empty parameter name}}
  %w = nn.param "" : tensor<4xf32>
  return
}

// -----

func.func @param_dynamic_shape() {
  // expected-error @+1 {{must be statically shaped tensor}}
  %w = nn.param "w" : tensor<?x4xf32>
  return
}

// -----

func.func @conv_wrong_result(%x: tensor<1x1x28x28xf32>, %w: tensor<6x1x5x5xf32>) {
  // expected-error @+1 {{'nn.conv2d' op expects result of shape 1x6x24x24, got 1x6x28x28}}
  %y = nn.conv2d %x, %w : (tensor<1x1x28x28xf32>, tensor<6x1x5x5xf32>) -> tensor<1x6x28x28xf32>
  return
}

// -----

func.func @conv_channels(%x: tensor<1x3x8x8xf32>, %w: tensor<6x1x3x3xf32>) {
  // expected-error @+1 {{expects filter input channels (1) x groups (1) to equal the input channels (3)}}
  %y = nn.conv2d %x, %w : (tensor<1x3x8x8xf32>, tensor<6x1x3x3xf32>) -> tensor<1x6x6x6xf32>
  return
}

// -----

func.func @conv_groups(%x: tensor<1x4x8x8xf32>, %w: tensor<6x2x3x3xf32>) {
  // expected-error @+1 {{expects input channels (4) and output channels (6) divisible by groups (4)}}
  %y = nn.conv2d %x, %w {groups = 4} : (tensor<1x4x8x8xf32>, tensor<6x2x3x3xf32>) -> tensor<1x6x6x6xf32>
  return
}

// -----

func.func @conv_bad_strides(%x: tensor<1x1x8x8xf32>, %w: tensor<1x1x3x3xf32>) {
  // expected-error @+1 {{expects 2 positive strides}}
  %y = nn.conv2d %x, %w {strides = array<i64: 0, 1>} : (tensor<1x1x8x8xf32>, tensor<1x1x3x3xf32>) -> tensor<1x1x6x6xf32>
  return
}

// -----

func.func @conv_bad_pads(%x: tensor<1x1x8x8xf32>, %w: tensor<1x1x3x3xf32>) {
  // expected-error @+1 {{expects 4 non-negative pads [top, left, bottom, right]}}
  %y = nn.conv2d %x, %w {pads = array<i64: 1, 1>} : (tensor<1x1x8x8xf32>, tensor<1x1x3x3xf32>) -> tensor<1x1x8x8xf32>
  return
}

// -----

func.func @conv_window_too_big(%x: tensor<1x1x2x2xf32>, %w: tensor<1x1x3x3xf32>) {
  // expected-error @+1 {{expects the filter window to fit in the padded input}}
  %y = nn.conv2d %x, %w : (tensor<1x1x2x2xf32>, tensor<1x1x3x3xf32>) -> tensor<1x1x1x1xf32>
  return
}

// -----

func.func @conv_bias(%x: tensor<1x1x8x8xf32>, %w: tensor<2x1x3x3xf32>, %b: tensor<3xf32>) {
  // expected-error @+1 {{expects bias of shape 2, got 3}}
  %y = nn.conv2d %x, %w, %b : (tensor<1x1x8x8xf32>, tensor<2x1x3x3xf32>, tensor<3xf32>) -> tensor<1x2x6x6xf32>
  return
}

// -----

func.func @conv_rank(%x: tensor<1x8x8xf32>, %w: tensor<2x1x3x3xf32>) {
  // expected-error @+1 {{expects a rank-4 NCHW input, got 1x8x8}}
  %y = nn.conv2d %x, %w : (tensor<1x8x8xf32>, tensor<2x1x3x3xf32>) -> tensor<1x2x6x6xf32>
  return
}

// -----

func.func @conv_mixed_types(%x: tensor<1x1x8x8xf32>, %w: tensor<1x1x3x3xf16>) {
  // expected-error @+1 {{expects filter of element type 'f32', got 'f16'}}
  %y = nn.conv2d %x, %w : (tensor<1x1x8x8xf32>, tensor<1x1x3x3xf16>) -> tensor<1x1x6x6xf32>
  return
}

// -----

func.func @conv_unknown_algorithm(%x: tensor<1x1x8x8xf32>, %w: tensor<1x1x3x3xf32>) {
  // expected-error @+1 {{'nn.conv2d' op expects algorithm 'direct' or 'winograd', got 'fft'}}
  %y = nn.conv2d %x, %w {algorithm = "fft"} : (tensor<1x1x8x8xf32>, tensor<1x1x3x3xf32>) -> tensor<1x1x6x6xf32>
  return
}

// -----

func.func @conv_winograd_5x5(%x: tensor<1x1x28x28xf32>, %w: tensor<6x1x5x5xf32>) {
  // expected-error @+1 {{'nn.conv2d' op winograd needs a 3x3 filter, strides and dilations of 1, one group and pads all 0 or all 1, got filter 6x1x5x5, strides 1x1, dilations 1x1, groups 1, pads 0x0x0x0}}
  %y = nn.conv2d %x, %w {algorithm = "winograd"} : (tensor<1x1x28x28xf32>, tensor<6x1x5x5xf32>) -> tensor<1x6x24x24xf32>
  return
}

// -----

func.func @conv_winograd_strided(%x: tensor<1x1x8x8xf32>, %w: tensor<1x1x3x3xf32>) {
  // expected-error @+1 {{winograd needs a 3x3 filter, strides and dilations of 1, one group and pads all 0 or all 1, got filter 1x1x3x3, strides 2x2}}
  %y = nn.conv2d %x, %w {algorithm = "winograd", strides = array<i64: 2, 2>} : (tensor<1x1x8x8xf32>, tensor<1x1x3x3xf32>) -> tensor<1x1x3x3xf32>
  return
}

// -----

func.func @conv_winograd_grouped(%x: tensor<1x4x8x8xf32>, %w: tensor<4x2x3x3xf32>) {
  // expected-error @+1 {{groups 2}}
  %y = nn.conv2d %x, %w {algorithm = "winograd", groups = 2} : (tensor<1x4x8x8xf32>, tensor<4x2x3x3xf32>) -> tensor<1x4x6x6xf32>
  return
}

// -----

func.func @conv_winograd_uneven_pads(%x: tensor<1x1x8x8xf32>, %w: tensor<1x1x3x3xf32>) {
  // expected-error @+1 {{groups 1, pads 1x0x0x1}}
  %y = nn.conv2d %x, %w {algorithm = "winograd", pads = array<i64: 1, 0, 0, 1>} : (tensor<1x1x8x8xf32>, tensor<1x1x3x3xf32>) -> tensor<1x1x7x7xf32>
  return
}

// -----

func.func @conv_winograd_f16(%x: tensor<1x1x8x8xf16>, %w: tensor<1x1x3x3xf16>) {
  // expected-error @+1 {{'nn.conv2d' op winograd needs f32, got 'f16'}}
  %y = nn.conv2d %x, %w {algorithm = "winograd"} : (tensor<1x1x8x8xf16>, tensor<1x1x3x3xf16>) -> tensor<1x1x6x6xf16>
  return
}

// -----

func.func @conv_grad_filter_winograd_dilated(%dy: tensor<1x1x4x4xf32>, %x: tensor<1x1x8x8xf32>) {
  // expected-error @+1 {{'nn.conv2d_grad_filter' op winograd needs a 3x3 filter, strides and dilations of 1, one group and pads all 0 or all 1, got filter 1x1x3x3, strides 1x1, dilations 2x2}}
  %dw = nn.conv2d_grad_filter %dy, %x {algorithm = "winograd", dilations = array<i64: 2, 2>} : (tensor<1x1x4x4xf32>, tensor<1x1x8x8xf32>) -> tensor<1x1x3x3xf32>
  return
}

// -----

func.func @conv_grad_input(%dy: tensor<1x6x24x24xf32>, %w: tensor<6x1x5x5xf32>) {
  // expected-error @+1 {{'nn.conv2d_grad_input' op expects result_grad (the forward result's shape) of shape 1x6x23x23, got 1x6x24x24}}
  %dx = nn.conv2d_grad_input %dy, %w : (tensor<1x6x24x24xf32>, tensor<6x1x5x5xf32>) -> tensor<1x1x27x27xf32>
  return
}

// -----

func.func @conv_grad_filter(%dy: tensor<1x6x24x24xf32>, %x: tensor<1x1x28x28xf32>) {
  // expected-error @+1 {{'nn.conv2d_grad_filter' op expects result_grad (the forward result's shape) of shape 1x6x26x26, got 1x6x24x24}}
  %dw = nn.conv2d_grad_filter %dy, %x : (tensor<1x6x24x24xf32>, tensor<1x1x28x28xf32>) -> tensor<6x1x3x3xf32>
  return
}

// -----

func.func @conv_grad_bias(%dy: tensor<1x6x24x24xf32>) {
  // expected-error @+1 {{'nn.conv2d_grad_bias' op expects bias_grad of shape 6, got 24}}
  %db = nn.conv2d_grad_bias %dy : (tensor<1x6x24x24xf32>) -> tensor<24xf32>
  return
}

// -----

func.func @matmul_contraction(%a: tensor<4x8xf32>, %b: tensor<7x5xf32>) {
  // expected-error @+1 {{'nn.matmul' op expects matching contraction sizes, got 8 and 7}}
  %y = nn.matmul %a, %b : (tensor<4x8xf32>, tensor<7x5xf32>) -> tensor<4x5xf32>
  return
}

// -----

func.func @matmul_result(%a: tensor<4x8xf32>, %b: tensor<5x8xf32>) {
  // expected-error @+1 {{'nn.matmul' op expects result of shape 4x5, got 4x8}}
  %y = nn.matmul %a, %b {transpose_rhs = true} : (tensor<4x8xf32>, tensor<5x8xf32>) -> tensor<4x8xf32>
  return
}

// -----

func.func @matmul_batch(%a: tensor<2x4x8xf32>, %b: tensor<3x8x5xf32>) {
  // expected-error @+1 {{'nn.matmul' op expects equal batch dimensions, got 2x4x8 and 3x8x5}}
  %y = nn.matmul %a, %b : (tensor<2x4x8xf32>, tensor<3x8x5xf32>) -> tensor<2x4x5xf32>
  return
}

// -----

func.func @matmul_rank(%a: tensor<8xf32>, %b: tensor<8x5xf32>) {
  // expected-error @+1 {{'nn.matmul' op expects operands of rank >= 2, got 8 and 8x5}}
  %y = nn.matmul %a, %b : (tensor<8xf32>, tensor<8x5xf32>) -> tensor<5xf32>
  return
}

// -----

func.func @matmul_grad_rhs(%dy: tensor<4x5xf32>, %a: tensor<4x8xf32>) {
  // expected-error @+1 {{'nn.matmul_grad_rhs' op expects result_grad (the forward result's shape) of shape 4x6, got 4x5}}
  %db = nn.matmul_grad_rhs %dy, %a : (tensor<4x5xf32>, tensor<4x8xf32>) -> tensor<8x6xf32>
  return
}

// -----

func.func @matmul_grad_lhs(%dy: tensor<4x5xf32>, %b: tensor<8x5xf32>) {
  // expected-error @+1 {{'nn.matmul_grad_lhs' op expects matching contraction sizes, got 8 and 5}}
  %da = nn.matmul_grad_lhs %dy, %b {transpose_rhs = true} : (tensor<4x5xf32>, tensor<8x5xf32>) -> tensor<4x8xf32>
  return
}

// -----

func.func @add_broadcast(%a: tensor<4x3xf32>, %b: tensor<4xf32>) {
  // expected-error @+1 {{'nn.add' op expects broadcast-compatible shapes, got 4x3 and 4}}
  %y = nn.add %a, %b : (tensor<4x3xf32>, tensor<4xf32>) -> tensor<4x3xf32>
  return
}

// -----

func.func @add_result(%a: tensor<4x3xf32>, %b: tensor<1x3xf32>) {
  // expected-error @+1 {{'nn.add' op expects result of shape 4x3, got 1x3}}
  %y = nn.add %a, %b : (tensor<4x3xf32>, tensor<1x3xf32>) -> tensor<1x3xf32>
  return
}

// -----

func.func @mul_broadcast(%a: tensor<4x3xf32>, %b: tensor<2x3xf32>) {
  // expected-error @+1 {{'nn.mul' op expects broadcast-compatible shapes, got 4x3 and 2x3}}
  %y = nn.mul %a, %b : (tensor<4x3xf32>, tensor<2x3xf32>) -> tensor<4x3xf32>
  return
}

// -----

func.func @div_element_type(%a: tensor<4x3xf32>, %b: tensor<3xf16>) {
  // expected-error @+1 {{'nn.div' op expects rhs of element type 'f32', got 'f16'}}
  %y = nn.div %a, %b : (tensor<4x3xf32>, tensor<3xf16>) -> tensor<4x3xf32>
  return
}

// -----

func.func @sub_result(%a: tensor<3xf32>, %b: tensor<2x1xf32>) {
  // expected-error @+1 {{'nn.sub' op expects result of shape 2x3, got 3}}
  %y = nn.sub %a, %b : (tensor<3xf32>, tensor<2x1xf32>) -> tensor<3xf32>
  return
}

// -----

func.func @neg_type(%a: tensor<3xf32>) {
  // expected-error @+1 {{'nn.neg' op requires the same type for all operands and results}}
  %y = "nn.neg"(%a) : (tensor<3xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @sum_to_shape(%g: tensor<4x1xf32>) {
  // expected-error @+1 {{'nn.sum_to_shape' op expects the result shape 4x3 to broadcast to the input shape 4x1}}
  %y = nn.sum_to_shape %g : (tensor<4x1xf32>) -> tensor<4x3xf32>
  return
}

// -----

func.func @sum_to_shape_incompatible(%g: tensor<4x3xf32>) {
  // expected-error @+1 {{'nn.sum_to_shape' op expects broadcast-compatible shapes, got 2x3 and 4x3}}
  %y = nn.sum_to_shape %g : (tensor<4x3xf32>) -> tensor<2x3xf32>
  return
}

// -----

func.func @broadcast_to_narrower(%x: tensor<4x3xf32>) {
  // expected-error @+1 {{'nn.broadcast_to' op expects the input shape 4x3 to broadcast to the result shape 1x3}}
  %y = nn.broadcast_to %x : (tensor<4x3xf32>) -> tensor<1x3xf32>
  return
}

// -----

func.func @transpose_not_a_permutation(%x: tensor<2x3x4xf32>) {
  // expected-error @+1 {{'nn.transpose' op expects a permutation of the 3 dimensions of 2x3x4, got [0, 2, 2]}}
  %y = nn.transpose %x {perm = array<i64: 0, 2, 2>} : (tensor<2x3x4xf32>) -> tensor<2x4x4xf32>
  return
}

// -----

func.func @transpose_result(%x: tensor<2x3x4xf32>) {
  // expected-error @+1 {{'nn.transpose' op expects result of shape 2x4x3, got 2x3x4}}
  %y = nn.transpose %x {perm = array<i64: 0, 2, 1>} : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  return
}

// -----

func.func @softmax_axis(%x: tensor<2x3xf32>) {
  // expected-error @+1 {{'nn.softmax' op expects an axis in [-2, 2) for rank 2, got 2}}
  %y = nn.softmax %x {axis = 2 : i64} : tensor<2x3xf32>
  return
}

// -----

func.func @log_softmax_grad_axis(%dy: tensor<2x3xf32>, %y: tensor<2x3xf32>) {
  // expected-error @+1 {{'nn.log_softmax_grad' op expects an axis in [-2, 2) for rank 2, got -3}}
  %dx = nn.log_softmax_grad %dy, %y {axis = -3 : i64} : tensor<2x3xf32>
  return
}

// -----

// expected-note @+1 {{prior use here}}
func.func @relu_types(%a: tensor<4xf32>) {
  // expected-error @+1 {{use of value '%a' expects different type than prior uses}}
  %y = nn.relu %a : tensor<5xf32>
  return
}

// -----

func.func @relu_integer(%a: tensor<4xi32>) {
  // expected-error @+1 {{must be statically shaped tensor of 32-bit float or 16-bit float or bfloat16 type values}}
  %y = nn.relu %a : tensor<4xi32>
  return
}

// -----

func.func @pool_result(%x: tensor<1x6x28x28xf32>) {
  // expected-error @+1 {{'nn.max_pool2d' op expects result of shape 1x6x14x14, got 1x6x13x13}}
  %y = nn.max_pool2d %x {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>} : (tensor<1x6x28x28xf32>) -> tensor<1x6x13x13xf32>
  return
}

// -----

func.func @pool_kernel(%x: tensor<1x6x28x28xf32>) {
  // expected-error @+1 {{'nn.max_pool2d' op expects a kernel_shape of 2 positive sizes}}
  %y = nn.max_pool2d %x {kernel_shape = array<i64: 2>} : (tensor<1x6x28x28xf32>) -> tensor<1x6x14x14xf32>
  return
}

// -----

func.func @pool_pads(%x: tensor<1x6x28x28xf32>) {
  // expected-error @+1 {{'nn.max_pool2d' op expects pads smaller than the kernel}}
  %y = nn.max_pool2d %x {kernel_shape = array<i64: 2, 2>, pads = array<i64: 2, 2, 2, 2>} : (tensor<1x6x28x28xf32>) -> tensor<1x6x31x31xf32>
  return
}

// -----

func.func @pool_grad(%dy: tensor<1x6x14x14xf32>, %x: tensor<1x6x28x28xf32>) {
  // expected-error @+1 {{'nn.max_pool2d_grad' op expects input_grad of shape 1x6x28x28, got 1x6x27x27}}
  %dx = nn.max_pool2d_grad %dy, %x {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>} : (tensor<1x6x14x14xf32>, tensor<1x6x28x28xf32>) -> tensor<1x6x27x27xf32>
  return
}

// -----

func.func @reshape_count(%x: tensor<4x4xf32>) {
  // expected-error @+1 {{'nn.reshape' op expects the same number of elements, got 16 in 4x4 and 15 in 15}}
  %y = nn.reshape %x : (tensor<4x4xf32>) -> tensor<15xf32>
  return
}

// -----

func.func @loss_labels(%l: tensor<16x10xf32>, %y: tensor<8xi64>) {
  // expected-error @+1 {{'nn.softmax_cross_entropy' op expects a label per row of the logits (shape 16), got labels of shape 8}}
  %loss = nn.softmax_cross_entropy %l, %y : (tensor<16x10xf32>, tensor<8xi64>) -> tensor<f32>
  return
}

// -----

func.func @loss_smoothing(%l: tensor<16x10xf32>, %y: tensor<16xi64>) {
  // expected-error @+1 {{'nn.softmax_cross_entropy_grad' op expects label_smoothing in [0, 1), got 1.000000e+00}}
  %g = nn.softmax_cross_entropy_grad %l, %y {label_smoothing = 1.0 : f32} : (tensor<16x10xf32>, tensor<16xi64>) -> tensor<16x10xf32>
  return
}

// -----

func.func @loss_scalar(%l: tensor<16x10xf32>, %y: tensor<16xi64>) {
  // expected-error @+1 {{'nn.softmax_cross_entropy' op expects a 0-d loss of shape scalar, got 16}}
  %loss = nn.softmax_cross_entropy %l, %y : (tensor<16x10xf32>, tensor<16xi64>) -> tensor<16xf32>
  return
}

// -----

func.func @loss_grad_rank(%l: tensor<16xf32>, %y: tensor<16xi64>) {
  // expected-error @+1 {{'nn.softmax_cross_entropy_grad' op expects logits of rank >= 2 (batch, positions..., classes), got 16}}
  %g = nn.softmax_cross_entropy_grad %l, %y : (tensor<16xf32>, tensor<16xi64>) -> tensor<16xf32>
  return
}

// -----

func.func @token_loss_labels(%l: tensor<4x8x10xf32>, %y: tensor<4x7xi64>) {
  // expected-error @+1 {{'nn.softmax_cross_entropy' op expects a label per row of the logits (shape 4x8), got labels of shape 4x7}}
  %loss = nn.softmax_cross_entropy %l, %y : (tensor<4x8x10xf32>, tensor<4x7xi64>) -> tensor<f32>
  return
}

// -----

func.func @gather_scalar_table(%t: tensor<f32>, %i: tensor<4xi64>) {
  // expected-error @+1 {{'nn.gather' op expects a table of rank >= 1, got a scalar}}
  %e = nn.gather %t, %i : (tensor<f32>, tensor<4xi64>) -> tensor<4xf32>
  return
}

// -----

func.func @gather_shape(%t: tensor<64x32xf32>, %i: tensor<4x16xi64>) {
  // expected-error @+1 {{'nn.gather' op expects result of shape 4x16x32, got 4x16x64}}
  %e = nn.gather %t, %i : (tensor<64x32xf32>, tensor<4x16xi64>) -> tensor<4x16x64xf32>
  return
}

// -----

func.func @gather_float_indices(%t: tensor<64x32xf32>, %i: tensor<4xf32>) {
  // expected-error @+1 {{'nn.gather' op operand #1 must be statically shaped tensor of 64-bit signless integer or 32-bit signless integer values}}
  %e = nn.gather %t, %i : (tensor<64x32xf32>, tensor<4xf32>) -> tensor<4x32xf32>
  return
}

// -----

func.func @gather_grad_shape(%dy: tensor<4x16x32xf32>, %i: tensor<4x8xi64>) {
  // expected-error @+1 {{'nn.gather_grad' op expects result_grad of shape 4x8x32 (the indices' shape, then a table row's), got 4x16x32}}
  %g = nn.gather_grad %dy, %i : (tensor<4x16x32xf32>, tensor<4x8xi64>) -> tensor<64x32xf32>
  return
}

// -----

func.func @sgd_not_param(%w: tensor<4xf32>, %g: tensor<4xf32>) {
  // expected-error @+1 {{'nn.sgd_update' op expects the param operand to come from nn.param}}
  nn.sgd_update %w, %g {lr = 0.1 : f32} : tensor<4xf32>
  return
}

// -----

func.func @sgd_momentum(%g: tensor<4xf32>) {
  %w = nn.param "w" : tensor<4xf32>
  // expected-error @+1 {{'nn.sgd_update' op expects momentum in [0, 1), got 1.5}}
  nn.sgd_update %w, %g {lr = 0.1 : f32, momentum = 1.5 : f32} : tensor<4xf32>
  return
}

// -----

func.func @sgd_lr(%g: tensor<4xf32>) {
  %w = nn.param "w" : tensor<4xf32>
  // expected-error @+1 {{'nn.sgd_update' op expects a positive learning rate}}
  nn.sgd_update %w, %g {lr = 0.0 : f32} : tensor<4xf32>
  return
}

// -----

func.func @adam_not_param(%w: tensor<4xf32>, %g: tensor<4xf32>) {
  // expected-error @+1 {{'nn.adam_update' op expects the param operand to come from nn.param}}
  nn.adam_update %w, %g {lr = 0.1 : f32} : tensor<4xf32>
  return
}

// -----

func.func @adam_beta(%g: tensor<4xf32>) {
  %w = nn.param "w" : tensor<4xf32>
  // expected-error @+1 {{'nn.adam_update' op expects beta2 in [0, 1), got 1}}
  nn.adam_update %w, %g {lr = 0.1 : f32, beta2 = 1.0 : f32} : tensor<4xf32>
  return
}

// -----

func.func @adam_eps(%g: tensor<4xf32>) {
  %w = nn.param "w" : tensor<4xf32>
  // expected-error @+1 {{'nn.adam_update' op expects a positive eps}}
  nn.adam_update %w, %g {lr = 0.1 : f32, eps = 0.0 : f32} : tensor<4xf32>
  return
}

// -----

func.func @adam_grad_type(%g: tensor<5xf32>) {
  %w = nn.param "w" : tensor<4xf32>
  // expected-error @+1 {{'nn.adam_update' op failed to verify that all of {param, grad} have same type}}
  "nn.adam_update"(%w, %g) {lr = 0.1 : f32} : (tensor<4xf32>, tensor<5xf32>) -> ()
  return
}

// -----

func.func @cost_attr(%x: tensor<4xf32>) {
  // expected-error @+1 {{expects 'nn.cost' field 'time_ms' to be non-negative}}
  %y = nn.relu %x {nn.cost = {time_ms = -1.0 : f64}} : tensor<4xf32>
  return
}

// -----

func.func @unknown_attr(%x: tensor<4xf32>) {
  // expected-error @+1 {{unknown nn dialect attribute 'nn.costs'}}
  %y = nn.relu %x {nn.costs = 1} : tensor<4xf32>
  return
}

// -----

func.func @tanh_grad_mismatch(%dy: tensor<4xf32>, %y: tensor<5xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'nn.tanh_grad' op requires the same type for all operands and results}}
  %dx = "nn.tanh_grad"(%dy, %y) : (tensor<4xf32>, tensor<5xf32>) -> tensor<4xf32>
  return %dx : tensor<4xf32>
}

// -----

func.func @sigmoid_integer(%x: tensor<4xi64>) -> tensor<4xi64> {
  // expected-error @+1 {{'nn.sigmoid' op operand #0 must be}}
  %y = "nn.sigmoid"(%x) : (tensor<4xi64>) -> tensor<4xi64>
  return %y : tensor<4xi64>
}

// -----

func.func @erf_of_integers(%x: tensor<4xi64>) -> tensor<4xi64> {
  // expected-error @+1 {{'nn.erf' op operand #0 must be}}
  %y = "nn.erf"(%x) : (tensor<4xi64>) -> tensor<4xi64>
  return %y : tensor<4xi64>
}

// -----

func.func @concat_mismatch(%a: tensor<4x3xf32>, %b: tensor<5x3xf32>) -> tensor<9x3xf32> {
  // expected-error @+1 {{'nn.concat' op expects inputs equal but along axis 1, got 4x3 and 5x3}}
  %y = nn.concat %a, %b {axis = 1 : i64} : (tensor<4x3xf32>, tensor<5x3xf32>) -> tensor<9x3xf32>
  return %y : tensor<9x3xf32>
}

// -----

func.func @concat_axis(%a: tensor<4x3xf32>) -> tensor<4x3xf32> {
  // expected-error @+1 {{'nn.concat' op expects an axis in [0, 2), got 2}}
  %y = nn.concat %a {axis = 2 : i64} : (tensor<4x3xf32>) -> tensor<4x3xf32>
  return %y : tensor<4x3xf32>
}

// -----

func.func @slice_past_end(%x: tensor<4x6xf32>) -> tensor<4x3xf32> {
  // expected-error @+1 {{'nn.slice' op reads past dimension 1 of 4x6 (offset 2, 3 elements, step 2)}}
  %y = nn.slice %x {offsets = array<i64: 0, 2>, steps = array<i64: 1, 2>} : (tensor<4x6xf32>) -> tensor<4x3xf32>
  return %y : tensor<4x3xf32>
}

// -----

func.func @slice_zero_step(%x: tensor<4x6xf32>) -> tensor<4x3xf32> {
  // expected-error @+1 {{'nn.slice' op expects non-negative offsets and positive steps}}
  %y = nn.slice %x {offsets = array<i64: 0, 0>, steps = array<i64: 1, 0>} : (tensor<4x6xf32>) -> tensor<4x3xf32>
  return %y : tensor<4x3xf32>
}

// -----

func.func @clip_bounds(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'nn.clip' op expects min <= max, got 6.000000e+00 and 0.000000e+00}}
  %y = nn.clip %x {min = 6.0 : f32, max = 0.0 : f32} : tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

func.func @pad_negative(%x: tensor<4x6xf32>) -> tensor<4x6xf32> {
  // expected-error @+1 {{'nn.pad' op expects non-negative pads, got -1 and 1 in dimension 1}}
  %y = nn.pad %x {pads = array<i64: 0, -1, 0, 1>, value = 0.0 : f32} : (tensor<4x6xf32>) -> tensor<4x6xf32>
  return %y : tensor<4x6xf32>
}

// -----

func.func @missing_alpha(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'nn.leaky_relu' op requires attribute 'alpha'}}
  %y = nn.leaky_relu %x : tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

func.func @grad_missing_beta(%dy: tensor<4xf32>, %x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'nn.hard_sigmoid_grad' op requires attribute 'beta'}}
  %y = nn.hard_sigmoid_grad %dy, %x {alpha = 0.2 : f32} : tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

func.func @relayout_channels(%x: tensor<2x6x4x4xf32>) -> tensor<2x6x4x4xf32> {
  // expected-error @+1 {{'nn.relayout' op expects a 4-D f32 tensor whose channels are a multiple of 16, got 'tensor<2x6x4x4xf32>'}}
  %y = nn.relayout %x : tensor<2x6x4x4xf32>
  return %y : tensor<2x6x4x4xf32>
}

// -----

func.func @layout_unknown(%x: tensor<2x16x4x4xf32>) -> tensor<2x16x4x4xf32> {
  // expected-error @+1 {{expects 'nn.layout' to be "nChw16c"}}
  %y = nn.relayout %x {nn.layout = "nhwc"} : tensor<2x16x4x4xf32>
  return %y : tensor<2x16x4x4xf32>
}

// -----

func.func @layout_on_a_matrix(%x: tensor<16x16xf32>) -> tensor<16x16xf32> {
  // expected-error @+1 {{expects 'nn.layout' on an op of one 4-D f32 result whose channels are a multiple of 16}}
  %y = nn.relu %x {nn.layout = "nChw16c"} : tensor<16x16xf32>
  return %y : tensor<16x16xf32>
}
