// RUN: dpc-opt %s -split-input-file -verify-diagnostics

func.func @unknown_predicate(%a: tensor<4xf32>, %b: tensor<4xf32>) {
  // expected-error @+1 {{'nn.compare' op expects predicate eq, lt, gt, le or ge, got 'ne'}}
  %c = nn.compare %a, %b {predicate = "ne"} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xi1>
  return
}

// -----

func.func @mixed_operands(%a: tensor<4xi64>, %b: tensor<4xf32>) {
  // expected-error @+1 {{'nn.compare' op expects rhs of element type 'i64', got 'f32'}}
  %c = nn.compare %a, %b {predicate = "eq"} : (tensor<4xi64>, tensor<4xf32>) -> tensor<4xi1>
  return
}

// -----

func.func @ordered_booleans(%a: tensor<4xi1>, %b: tensor<4xi1>) {
  // expected-error @+1 {{'nn.compare' op orders only numbers, not booleans}}
  %c = nn.compare %a, %b {predicate = "lt"} : (tensor<4xi1>, tensor<4xi1>) -> tensor<4xi1>
  return
}

// -----

func.func @compare_shape(%a: tensor<4x3xf32>, %b: tensor<3xf32>) {
  // expected-error @+1 {{'nn.compare' op expects result of shape 4x3, got 3}}
  %c = nn.compare %a, %b {predicate = "gt"} : (tensor<4x3xf32>, tensor<3xf32>) -> tensor<3xi1>
  return
}

// -----

func.func @logical_kind(%a: tensor<4xi1>, %b: tensor<4xi1>) {
  // expected-error @+1 {{'nn.logical' op expects kind and, or or xor, got 'nand'}}
  %c = nn.logical %a, %b {kind = "nand"} : (tensor<4xi1>, tensor<4xi1>) -> tensor<4xi1>
  return
}

// -----

func.func @where_float_condition(%c: tensor<4xf32>, %a: tensor<4xf32>) {
  // expected-error @+1 {{'nn.where' op operand #0 must be statically shaped tensor of 1-bit signless integer values}}
  %y = nn.where %c, %a, %a : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @where_not_broadcast(%c: tensor<3xi1>, %a: tensor<4xf32>) {
  // expected-error @+1 {{'nn.where' op}}
  %y = nn.where %c, %a, %a : (tensor<3xi1>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @where_result_shape(%c: tensor<2x1xi1>, %a: tensor<4xf32>) {
  // expected-error @+1 {{'nn.where' op expects result of shape 2x4, got 4}}
  %y = nn.where %c, %a, %a : (tensor<2x1xi1>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @where_grad_condition_wider(%dy: tensor<4xf32>, %c: tensor<2x4xi1>) {
  // expected-error @+1 {{'nn.where_grad' op expects the condition to broadcast to the gradient's shape 4}}
  %g = nn.where_grad %dy, %c {branch = false} : (tensor<4xf32>, tensor<2x4xi1>) -> tensor<4xf32>
  return
}

// -----

func.func @cast_i32(%a: tensor<4xi32>) {
  // expected-error @+1 {{'nn.cast' op casts only between f32, i64 and i1, got 'i32' to 'f32'}}
  %y = nn.cast %a : (tensor<4xi32>) -> tensor<4xf32>
  return
}

// -----

func.func @cast_shape(%a: tensor<4xf32>) {
  // expected-error @+1 {{'nn.cast' op requires the same shape for all operands and results}}
  %y = nn.cast %a : (tensor<4xf32>) -> tensor<2xi1>
  return
}
