// RUN: dpc-opt %s | dpc-opt | FileCheck %s
// RUN: dpc-opt %s -mlir-print-op-generic | dpc-opt | FileCheck %s

// CHECK-LABEL: func.func @gru
// CHECK: nn.gru %{{.*}}, %{{.*}}, %{{.*}} bias %{{.*}} initial %{{.*}} {{.*}}: {{.*}} -> tensor<7x4x80xf32>
// CHECK: nn.gru %{{.*}}, %{{.*}}, %{{.*}} initial %{{.*}} {linear_before_reset = false, reverse} : {{.*}} -> tensor<7x4x80xf32>
// CHECK: nn.gru_grad %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} {{.*}}: {{.*}} -> tensor<7x4x80xf32>
// CHECK: nn.lstm %{{.*}} initial %{{.*}}, %{{.*}} {reverse} : {{.*}} -> tensor<7x4x96xf32>
// CHECK: nn.lstm_grad %{{.*}} {reverse} : {{.*}} -> tensor<7x4x80xf32>
func.func @gru(%x: tensor<7x4x8xf32>, %w: tensor<48x8xf32>,
               %r: tensor<48x16xf32>, %b: tensor<96xf32>,
               %h0: tensor<4x16xf32>, %ds: tensor<7x4x80xf32>,
               %lw: tensor<64x8xf32>, %lr: tensor<64x16xf32>,
               %ls: tensor<7x4x96xf32>)
    -> (tensor<7x4x80xf32>, tensor<7x4x80xf32>) {
  %s = nn.gru %x, %w, %r bias %b initial %h0 {linear_before_reset = true}
      : (tensor<7x4x8xf32>, tensor<48x8xf32>, tensor<48x16xf32>,
         tensor<96xf32>, tensor<4x16xf32>) -> tensor<7x4x80xf32>
  %n = nn.gru %x, %w, %r initial %h0 {linear_before_reset = false, reverse}
      : (tensor<7x4x8xf32>, tensor<48x8xf32>, tensor<48x16xf32>,
         tensor<4x16xf32>) -> tensor<7x4x80xf32>
  %g = nn.gru_grad %ds, %s, %r, %h0
      : (tensor<7x4x80xf32>, tensor<7x4x80xf32>, tensor<48x16xf32>,
         tensor<4x16xf32>) -> tensor<7x4x80xf32>
  %l = nn.lstm %x, %lw, %lr initial %h0, %h0 {reverse}
      : (tensor<7x4x8xf32>, tensor<64x8xf32>, tensor<64x16xf32>,
         tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<7x4x96xf32>
  %lg = nn.lstm_grad %ls, %l, %lr, %h0 {reverse}
      : (tensor<7x4x96xf32>, tensor<7x4x96xf32>, tensor<64x16xf32>,
         tensor<4x16xf32>) -> tensor<7x4x80xf32>
  return %g, %lg : tensor<7x4x80xf32>, tensor<7x4x80xf32>
}
