// RUN: dpc-opt %s -split-input-file -verify-diagnostics

func.func @recurrence_not_3h_by_h(%x: tensor<7x4x8xf32>, %w: tensor<48x8xf32>,
    %r: tensor<64x16xf32>, %h0: tensor<4x16xf32>) {
  // expected-error @+1 {{'nn.gru' op expects a recurrence weight of shape 3H x H, got 64x16}}
  %s = nn.gru %x, %w, %r initial %h0
      : (tensor<7x4x8xf32>, tensor<48x8xf32>, tensor<64x16xf32>,
         tensor<4x16xf32>) -> tensor<7x4x80xf32>
  return
}

// -----

func.func @weight_of_other_input(%x: tensor<7x4x8xf32>, %w: tensor<48x9xf32>,
    %r: tensor<48x16xf32>, %h0: tensor<4x16xf32>) {
  // expected-error @+1 {{'nn.gru' op expects a weight of shape 48x8 (3H x I), got 48x9}}
  %s = nn.gru %x, %w, %r initial %h0
      : (tensor<7x4x8xf32>, tensor<48x9xf32>, tensor<48x16xf32>,
         tensor<4x16xf32>) -> tensor<7x4x80xf32>
  return
}

// -----

func.func @bias_3h(%x: tensor<7x4x8xf32>, %w: tensor<48x8xf32>,
    %r: tensor<48x16xf32>, %b: tensor<48xf32>, %h0: tensor<4x16xf32>) {
  // expected-error @+1 {{'nn.gru' op expects a bias of shape 96 (6H), got 48}}
  %s = nn.gru %x, %w, %r bias %b initial %h0
      : (tensor<7x4x8xf32>, tensor<48x8xf32>, tensor<48x16xf32>,
         tensor<48xf32>, tensor<4x16xf32>) -> tensor<7x4x80xf32>
  return
}

// -----

func.func @initial_of_other_batch(%x: tensor<7x4x8xf32>, %w: tensor<48x8xf32>,
    %r: tensor<48x16xf32>, %h0: tensor<3x16xf32>) {
  // expected-error @+1 {{'nn.gru' op expects an initial state of shape 4x16 (B x H), got 3x16}}
  %s = nn.gru %x, %w, %r initial %h0
      : (tensor<7x4x8xf32>, tensor<48x8xf32>, tensor<48x16xf32>,
         tensor<3x16xf32>) -> tensor<7x4x80xf32>
  return
}

// -----

func.func @empty_sequence(%x: tensor<0x4x8xf32>, %w: tensor<48x8xf32>,
    %r: tensor<48x16xf32>, %h0: tensor<4x16xf32>) {
  // expected-error @+1 {{'nn.gru' op expects an input of shape T x B x I with T >= 1, got 0x4x8}}
  %s = nn.gru %x, %w, %r initial %h0
      : (tensor<0x4x8xf32>, tensor<48x8xf32>, tensor<48x16xf32>,
         tensor<4x16xf32>) -> tensor<0x4x80xf32>
  return
}

// -----

func.func @result_not_5h(%x: tensor<7x4x8xf32>, %w: tensor<48x8xf32>,
    %r: tensor<48x16xf32>, %h0: tensor<4x16xf32>) {
  // expected-error @+1 {{'nn.gru' op expects states of shape 7x4x80, got 7x4x96}}
  %s = nn.gru %x, %w, %r initial %h0
      : (tensor<7x4x8xf32>, tensor<48x8xf32>, tensor<48x16xf32>,
         tensor<4x16xf32>) -> tensor<7x4x96xf32>
  return
}

// -----

func.func @grad_states_not_5h(%ds: tensor<7x4x96xf32>, %s: tensor<7x4x96xf32>,
    %r: tensor<48x16xf32>, %h0: tensor<4x16xf32>) {
  // expected-error @+1 {{'nn.gru_grad' op expects states of shape T x B x 80 (5H), got 7x4x96}}
  %g = nn.gru_grad %ds, %s, %r, %h0
      : (tensor<7x4x96xf32>, tensor<7x4x96xf32>, tensor<48x16xf32>,
         tensor<4x16xf32>) -> tensor<7x4x80xf32>
  return
}

// -----

func.func @grad_of_other_shape(%ds: tensor<7x4x16xf32>, %s: tensor<7x4x80xf32>,
    %r: tensor<48x16xf32>, %h0: tensor<4x16xf32>) {
  // expected-error @+1 {{'nn.gru_grad' op expects states_grad (the states' shape) of shape 7x4x80, got 7x4x16}}
  %g = nn.gru_grad %ds, %s, %r, %h0
      : (tensor<7x4x16xf32>, tensor<7x4x80xf32>, tensor<48x16xf32>,
         tensor<4x16xf32>) -> tensor<7x4x80xf32>
  return
}
