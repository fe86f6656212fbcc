// RUN: dpc-opt %s | dpc-opt | FileCheck %s
// RUN: dpc-opt %s -mlir-print-op-generic | dpc-opt | FileCheck %s
// RUN: dpc-opt %s --dpc-autodiff | FileCheck %s --check-prefix=GRAD

// CHECK-LABEL: func.func @main
// CHECK: nn.cumsum %{{.*}} {axis = 1 : i64} : tensor<2x5xf32>
// CHECK: nn.cumsum %{{.*}} {axis = 0 : i64, exclusive, reverse} : tensor<2x5xf32>
// The gradient of a forward sum is the reverse sum of the result gradient,
// that of a reverse exclusive sum the forward exclusive one.
// GRAD: %[[G1:.*]] = nn.cumsum %{{.*}} {axis = 0 : i64, exclusive} : tensor<2x5xf32>
// GRAD: nn.cumsum %[[G1]] {axis = 1 : i64, reverse} : tensor<2x5xf32>
func.func @main(%x: tensor<2x5xf32>) -> tensor<2x5xf32> {
  %w = nn.param "w" : tensor<2x5xf32>
  %s = nn.add %x, %w : (tensor<2x5xf32>, tensor<2x5xf32>) -> tensor<2x5xf32>
  %a = nn.cumsum %s {axis = 1 : i64} : tensor<2x5xf32>
  %b = nn.cumsum %a {axis = 0 : i64, exclusive, reverse} : tensor<2x5xf32>
  return %b : tensor<2x5xf32>
}
