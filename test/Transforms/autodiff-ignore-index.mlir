// RUN: dpc-opt %s --dpc-autodiff='microbatches=4 has-ignore-index=true ignore-index=-100' | FileCheck %s
// RUN: dpc-opt %s --dpc-autodiff='microbatches=4' | FileCheck %s --check-prefix=CONST

// With an ignored label, the mean's count is the data's: the loss and its
// gradient carry ignore_index and leave the scale (1) to the run time.
// Without, the constant is 1 / (4 microbatches x 2 x 3 positions).
// CHECK: nn.softmax_cross_entropy %{{.*}}, %{{.*}} {ignore_index = -100 : i64{{(, scale = 1.000000e\+00 : f32)?}}} : (tensor<2x3x5xf32>, tensor<2x3xi64>) -> tensor<f32>
// CHECK: nn.softmax_cross_entropy_grad %{{.*}}, %{{.*}} {ignore_index = -100 : i64{{(, scale = 1.000000e\+00 : f32)?}}}
// CONST: nn.softmax_cross_entropy %{{.*}}, %{{.*}} {scale = 0.0416666679 : f32}
// CONST-NOT: ignore_index
func.func @main(%x: tensor<2x3x5xf32>) -> tensor<2x3x5xf32> {
  %w = nn.param "w" : tensor<2x3x5xf32>
  %y = nn.add %x, %w : (tensor<2x3x5xf32>, tensor<2x3x5xf32>) -> tensor<2x3x5xf32>
  return %y : tensor<2x3x5xf32>
}
