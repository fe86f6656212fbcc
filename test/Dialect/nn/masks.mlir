// RUN: dpc-opt %s | dpc-opt | FileCheck %s

// The ops of attention masks round-trip: a padding mask from token ids, a
// causal mask cast from a frozen float constant, their union, masked_fill
// and its gradient.
// CHECK-LABEL: func.func @masks
func.func @masks(%ids: tensor<4x16xi64>, %scores: tensor<4x2x16x16xf32>,
                 %dy: tensor<4x2x16x16xf32>) -> tensor<4x2x16x16xf32> {
  %pad = nn.param "pad" {frozen} : tensor<f32>
  // CHECK: nn.cast %{{.*}} : (tensor<f32>) -> tensor<i64>
  %padId = nn.cast %pad : (tensor<f32>) -> tensor<i64>
  // CHECK: nn.compare %{{.*}}, %{{.*}} {predicate = "eq"} : (tensor<4x16xi64>, tensor<i64>) -> tensor<4x16xi1>
  %isPad = nn.compare %ids, %padId {predicate = "eq"}
      : (tensor<4x16xi64>, tensor<i64>) -> tensor<4x16xi1>
  // CHECK: nn.reshape %{{.*}} : (tensor<4x16xi1>) -> tensor<4x1x1x16xi1>
  %keys = nn.reshape %isPad : (tensor<4x16xi1>) -> tensor<4x1x1x16xi1>
  %triu = nn.param "triu" {frozen} : tensor<16x16xf32>
  %causal = nn.cast %triu : (tensor<16x16xf32>) -> tensor<16x16xi1>
  // CHECK: nn.logical %{{.*}}, %{{.*}} {kind = "or"} : (tensor<16x16xi1>, tensor<4x1x1x16xi1>) -> tensor<4x1x16x16xi1>
  %either = nn.logical %causal, %keys {kind = "or"}
      : (tensor<16x16xi1>, tensor<4x1x1x16xi1>) -> tensor<4x1x16x16xi1>
  // CHECK: nn.not %{{.*}} : tensor<4x1x16x16xi1>
  %keep = nn.not %either : tensor<4x1x16x16xi1>
  %ninf = nn.param "ninf" {frozen} : tensor<f32>
  // CHECK: nn.where %{{.*}}, %{{.*}}, %{{.*}} : (tensor<4x1x16x16xi1>, tensor<4x2x16x16xf32>, tensor<f32>) -> tensor<4x2x16x16xf32>
  %masked = nn.where %keep, %scores, %ninf
      : (tensor<4x1x16x16xi1>, tensor<4x2x16x16xf32>, tensor<f32>)
        -> tensor<4x2x16x16xf32>
  // CHECK: nn.where_grad %{{.*}}, %{{.*}} {branch = true} : (tensor<4x2x16x16xf32>, tensor<4x1x16x16xi1>) -> tensor<4x2x16x16xf32>
  %g = nn.where_grad %dy, %keep {branch = true}
      : (tensor<4x2x16x16xf32>, tensor<4x1x16x16xi1>) -> tensor<4x2x16x16xf32>
  return %masked : tensor<4x2x16x16xf32>
}
