// RUN: dpc-opt %s -split-input-file -verify-diagnostics

func.func @axis_past_rank(%x: tensor<2x5xf32>) {
  // expected-error @+1 {{'nn.cumsum' op expects an axis in [0, 2), got 2}}
  %y = nn.cumsum %x {axis = 2 : i64} : tensor<2x5xf32>
  return
}

// -----

func.func @negative_axis(%x: tensor<2x5xf32>) {
  // expected-error @+1 {{'nn.cumsum' op expects an axis in [0, 2), got -1}}
  %y = nn.cumsum %x {axis = -1 : i64} : tensor<2x5xf32>
  return
}

// -----

func.func @scalar(%x: tensor<f32>) {
  // expected-error @+1 {{'nn.cumsum' op expects an axis in [0, 0), got 0}}
  %y = nn.cumsum %x {axis = 0 : i64} : tensor<f32>
  return
}
