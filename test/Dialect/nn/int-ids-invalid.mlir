// RUN: dpc-opt %s -split-input-file -verify-diagnostics
// Slices, concats and transposes of integer ids (#43) keep the element type,
// and take no booleans.

func.func @slice_to_float(%x: tensor<2x8xi64>) {
  // expected-error @+1 {{'nn.slice' op expects the input's element type}}
  %y = nn.slice %x {offsets = array<i64: 0, 0>, steps = array<i64: 1, 1>} : (tensor<2x8xi64>) -> tensor<2x4xf32>
  return
}

// -----

func.func @concat_mix(%a: tensor<2x4xf32>, %b: tensor<2x4xi64>) {
  // expected-error @+1 {{'nn.concat' op expects inputs of one element type, got 'f32' and 'i64'}}
  %y = nn.concat %a, %b {axis = 1 : i64} : (tensor<2x4xf32>, tensor<2x4xi64>) -> tensor<2x8xf32>
  return
}

// -----

func.func @concat_to_float(%a: tensor<2x4xi64>, %b: tensor<2x4xi64>) {
  // expected-error @+1 {{'nn.concat' op}}
  %y = nn.concat %a, %b {axis = 1 : i64} : (tensor<2x4xi64>, tensor<2x4xi64>) -> tensor<2x8xf32>
  return
}

// -----

func.func @transpose_to_int32(%x: tensor<2x4xi64>) {
  // expected-error @+1 {{'nn.transpose' op}}
  %y = nn.transpose %x {perm = array<i64: 1, 0>} : (tensor<2x4xi64>) -> tensor<4x2xi32>
  return
}

// -----

func.func @slice_mask(%x: tensor<2x8xi1>) {
  // expected-error @+1 {{'nn.slice' op operand #0 must be statically shaped tensor of 32-bit float or 16-bit float or bfloat16 type or 64-bit signless integer or 32-bit signless integer values}}
  %y = nn.slice %x {offsets = array<i64: 0, 0>, steps = array<i64: 1, 1>} : (tensor<2x8xi1>) -> tensor<2x4xi1>
  return
}
