// RUN: dpc-opt %s | FileCheck %s
// RUN: dpc-opt %s --mlir-print-op-generic | dpc-opt | FileCheck %s
// RUN: dpc-opt %s --dpc-autodiff | FileCheck %s --check-prefix=GRAD
// The functions with attributes (DPC_UNARY_FUNCTION_WITH_PARAMS rows): each
// op carries its row's attributes, and autodiff copies them onto the
// gradient op, which saves the input.
// CHECK-LABEL: func.func @main
func.func @main(%x: tensor<4x6xf32>) -> tensor<4x6xf32> {
  %w = nn.param "w" : tensor<6x6xf32>
  %m = nn.matmul %x, %w : (tensor<4x6xf32>, tensor<6x6xf32>) -> tensor<4x6xf32>
  // CHECK: nn.leaky_relu %{{.*}} {alpha = 1.000000e-01 : f32} : tensor<4x6xf32>
  %a = nn.leaky_relu %m {alpha = 0.1 : f32} : tensor<4x6xf32>
  // CHECK: nn.elu %{{.*}} {alpha = 5.000000e-01 : f32}
  %b = nn.elu %a {alpha = 0.5 : f32} : tensor<4x6xf32>
  // CHECK: nn.selu %{{.*}} {alpha = 1.700000e+00 : f32, gamma = 1.050000e+00 : f32}
  %c = nn.selu %b {alpha = 1.7 : f32, gamma = 1.05 : f32} : tensor<4x6xf32>
  // CHECK: nn.celu %{{.*}} {alpha = 2.000000e+00 : f32}
  %d = nn.celu %c {alpha = 2.0 : f32} : tensor<4x6xf32>
  // CHECK: nn.thresholded_relu %{{.*}} {alpha = 5.000000e-01 : f32}
  %e = nn.thresholded_relu %d {alpha = 0.5 : f32} : tensor<4x6xf32>
  // CHECK: nn.hard_sigmoid %{{.*}} {alpha = 2.500000e-01 : f32, beta = 4.000000e-01 : f32}
  %f = nn.hard_sigmoid %e {alpha = 0.25 : f32, beta = 0.4 : f32} : tensor<4x6xf32>
  // CHECK: nn.shrink %{{.*}} {bias = 2.000000e-01 : f32, lambd = 0.699999988 : f32}
  %g = nn.shrink %f {bias = 0.2 : f32, lambd = 0.7 : f32} : tensor<4x6xf32>
  return %g : tensor<4x6xf32>
}

// GRAD: %[[M:.*]] = nn.matmul
// GRAD: %[[A:.*]] = nn.leaky_relu %[[M]]
// GRAD: %[[F:.*]] = nn.hard_sigmoid
// GRAD: nn.shrink_grad %{{.*}}, %[[F]] {bias = 2.000000e-01 : f32, lambd = 0.699999988 : f32}
// GRAD: nn.hard_sigmoid_grad %{{.*}} {alpha = 2.500000e-01 : f32, beta = 4.000000e-01 : f32}
// GRAD: nn.thresholded_relu_grad %{{.*}} {alpha = 5.000000e-01 : f32}
// GRAD: nn.celu_grad %{{.*}} {alpha = 2.000000e+00 : f32}
// GRAD: nn.selu_grad %{{.*}} {alpha = 1.700000e+00 : f32, gamma = 1.050000e+00 : f32}
// GRAD: nn.elu_grad %{{.*}}, %[[A]] {alpha = 5.000000e-01 : f32}
// GRAD: nn.leaky_relu_grad %{{.*}}, %[[M]] {alpha = 1.000000e-01 : f32}
// GRAD: nn.matmul_grad_rhs

