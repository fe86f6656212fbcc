// RUN: dpc-opt %s -split-input-file -verify-diagnostics

func.func @recurrence_not_4h_by_h(%x: tensor<7x4x8xf32>, %w: tensor<64x8xf32>,
    %r: tensor<60x16xf32>, %h0: tensor<4x16xf32>, %c0: tensor<4x16xf32>) {
  // expected-error @+1 {{'nn.lstm' op expects a recurrence weight of shape 4H x H, got 60x16}}
  %s = nn.lstm %x, %w, %r initial %h0, %c0
      : (tensor<7x4x8xf32>, tensor<64x8xf32>, tensor<60x16xf32>,
         tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<7x4x96xf32>
  return
}

// -----

func.func @weight_of_other_input(%x: tensor<7x4x8xf32>, %w: tensor<64x9xf32>,
    %r: tensor<64x16xf32>, %h0: tensor<4x16xf32>, %c0: tensor<4x16xf32>) {
  // expected-error @+1 {{'nn.lstm' op expects a weight of shape 64x8 (4H x I), got 64x9}}
  %s = nn.lstm %x, %w, %r initial %h0, %c0
      : (tensor<7x4x8xf32>, tensor<64x9xf32>, tensor<64x16xf32>,
         tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<7x4x96xf32>
  return
}

// -----

func.func @bias_4h(%x: tensor<7x4x8xf32>, %w: tensor<64x8xf32>,
    %r: tensor<64x16xf32>, %b: tensor<64xf32>, %h0: tensor<4x16xf32>,
    %c0: tensor<4x16xf32>) {
  // expected-error @+1 {{'nn.lstm' op expects a bias of shape 128 (8H), got 64}}
  %s = nn.lstm %x, %w, %r bias %b initial %h0, %c0
      : (tensor<7x4x8xf32>, tensor<64x8xf32>, tensor<64x16xf32>,
         tensor<64xf32>, tensor<4x16xf32>, tensor<4x16xf32>)
      -> tensor<7x4x96xf32>
  return
}

// -----

func.func @initial_state_of_other_batch(%x: tensor<7x4x8xf32>,
    %w: tensor<64x8xf32>, %r: tensor<64x16xf32>, %h0: tensor<2x16xf32>,
    %c0: tensor<4x16xf32>) {
  // expected-error @+1 {{'nn.lstm' op expects initial states of shape 4x16 (B x H), got 2x16}}
  %s = nn.lstm %x, %w, %r initial %h0, %c0
      : (tensor<7x4x8xf32>, tensor<64x8xf32>, tensor<64x16xf32>,
         tensor<2x16xf32>, tensor<4x16xf32>) -> tensor<7x4x96xf32>
  return
}

// -----

func.func @states_not_6h(%x: tensor<7x4x8xf32>, %w: tensor<64x8xf32>,
    %r: tensor<64x16xf32>, %h0: tensor<4x16xf32>, %c0: tensor<4x16xf32>) {
  // expected-error @+1 {{'nn.lstm' op expects states of shape 7x4x96, got 7x4x16}}
  %s = nn.lstm %x, %w, %r initial %h0, %c0
      : (tensor<7x4x8xf32>, tensor<64x8xf32>, tensor<64x16xf32>,
         tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<7x4x16xf32>
  return
}

// -----

func.func @grad_of_other_states(%ds: tensor<7x4x96xf32>,
    %s: tensor<6x4x96xf32>, %r: tensor<64x16xf32>, %c0: tensor<4x16xf32>) {
  // expected-error @+1 {{'nn.lstm_grad' op expects states_grad (the states' shape) of shape 6x4x96, got 7x4x96}}
  %g = nn.lstm_grad %ds, %s, %r, %c0
      : (tensor<7x4x96xf32>, tensor<6x4x96xf32>, tensor<64x16xf32>,
         tensor<4x16xf32>) -> tensor<6x4x80xf32>
  return
}

// -----

func.func @grad_result_not_5h(%ds: tensor<7x4x96xf32>,
    %s: tensor<7x4x96xf32>, %r: tensor<64x16xf32>, %c0: tensor<4x16xf32>) {
  // expected-error @+1 {{'nn.lstm_grad' op expects result of shape 7x4x80, got 7x4x64}}
  %g = nn.lstm_grad %ds, %s, %r, %c0
      : (tensor<7x4x96xf32>, tensor<7x4x96xf32>, tensor<64x16xf32>,
         tensor<4x16xf32>) -> tensor<7x4x64xf32>
  return
}
