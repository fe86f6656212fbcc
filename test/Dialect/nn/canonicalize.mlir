// RUN: dpc-opt %s --canonicalize --split-input-file | FileCheck %s
// A transpose of an operand's last two dimensions folds into the matmul's
// flag for that operand (toggling it), and the dead transpose goes.

// CHECK-LABEL: func.func @linear_on_a_sequence
func.func @linear_on_a_sequence(%x: tensor<8x28x32xf32>) -> tensor<8x28x16xf32> {
  %w = nn.param "w" : tensor<16x32xf32>
  // CHECK-NOT: nn.transpose
  // CHECK: nn.matmul %{{.*}}, %{{.*}} {transpose_rhs = true} : (tensor<8x28x32xf32>, tensor<16x32xf32>) -> tensor<8x28x16xf32>
  %wt = nn.transpose %w {perm = array<i64: 1, 0>} : (tensor<16x32xf32>) -> tensor<32x16xf32>
  %y = nn.matmul %x, %wt : (tensor<8x28x32xf32>, tensor<32x16xf32>) -> tensor<8x28x16xf32>
  return %y : tensor<8x28x16xf32>
}

// -----

// CHECK-LABEL: func.func @both_operands
func.func @both_operands(%a: tensor<2x4x5xf32>, %b: tensor<2x3x5xf32>) -> tensor<2x4x3xf32> {
  // CHECK-NOT: nn.transpose
  // CHECK: nn.matmul %arg0, %arg1 {transpose_rhs = true} : (tensor<2x4x5xf32>, tensor<2x3x5xf32>) -> tensor<2x4x3xf32>
  %at = nn.transpose %a {perm = array<i64: 0, 2, 1>} : (tensor<2x4x5xf32>) -> tensor<2x5x4xf32>
  %bt = nn.transpose %b {perm = array<i64: 0, 2, 1>} : (tensor<2x3x5xf32>) -> tensor<2x5x3xf32>
  %y = nn.matmul %at, %bt {transpose_lhs = true} : (tensor<2x5x4xf32>, tensor<2x5x3xf32>) -> tensor<2x4x3xf32>
  return %y : tensor<2x4x3xf32>
}

// -----

// A permutation that moves a batch dimension is no matmul flag.
// CHECK-LABEL: func.func @batch_moves
func.func @batch_moves(%a: tensor<4x2x5xf32>, %b: tensor<2x5x3xf32>) -> tensor<2x4x3xf32> {
  // CHECK: %[[T:.*]] = nn.transpose %arg0 {perm = array<i64: 1, 0, 2>}
  // CHECK: nn.matmul %[[T]], %arg1 : (tensor<2x4x5xf32>, tensor<2x5x3xf32>) -> tensor<2x4x3xf32>
  %at = nn.transpose %a {perm = array<i64: 1, 0, 2>} : (tensor<4x2x5xf32>) -> tensor<2x4x5xf32>
  %y = nn.matmul %at, %b : (tensor<2x4x5xf32>, tensor<2x5x3xf32>) -> tensor<2x4x3xf32>
  return %y : tensor<2x4x3xf32>
}

// -----

// A reshape to its own type is its input; a reshape of a reshape is one
// reshape of the first input (the inner one then goes, unused).
// CHECK-LABEL: func.func @reshapes
func.func @reshapes(%x: tensor<2x3x4xf32>) -> (tensor<2x3x4xf32>, tensor<4x6xf32>) {
  // CHECK-NOT: nn.reshape %arg0 : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  // CHECK-NOT: tensor<6x4xf32>
  // CHECK: %[[R:.*]] = nn.reshape %arg0 : (tensor<2x3x4xf32>) -> tensor<4x6xf32>
  // CHECK: return %arg0, %[[R]] : tensor<2x3x4xf32>, tensor<4x6xf32>
  %same = nn.reshape %x : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  %a = nn.reshape %x : (tensor<2x3x4xf32>) -> tensor<6x4xf32>
  %b = nn.reshape %a : (tensor<6x4xf32>) -> tensor<4x6xf32>
  return %same, %b : tensor<2x3x4xf32>, tensor<4x6xf32>
}
