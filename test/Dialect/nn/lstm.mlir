// RUN: dpc-opt %s | dpc-opt | FileCheck %s

// CHECK-LABEL: func.func @lstm
// CHECK: nn.lstm %{{.*}}, %{{.*}}, %{{.*}} bias %{{.*}} initial %{{.*}}, %{{.*}} : {{.*}} -> tensor<7x4x96xf32>
// CHECK: nn.lstm %{{.*}}, %{{.*}}, %{{.*}} initial %{{.*}}, %{{.*}} : {{.*}} -> tensor<7x4x96xf32>
// CHECK: nn.lstm_grad %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} : {{.*}} -> tensor<7x4x80xf32>
func.func @lstm(%x: tensor<7x4x8xf32>, %w: tensor<64x8xf32>,
                %r: tensor<64x16xf32>, %b: tensor<128xf32>,
                %h0: tensor<4x16xf32>, %c0: tensor<4x16xf32>,
                %ds: tensor<7x4x96xf32>) -> tensor<7x4x80xf32> {
  %s = nn.lstm %x, %w, %r bias %b initial %h0, %c0
      : (tensor<7x4x8xf32>, tensor<64x8xf32>, tensor<64x16xf32>,
         tensor<128xf32>, tensor<4x16xf32>, tensor<4x16xf32>)
      -> tensor<7x4x96xf32>
  %n = nn.lstm %x, %w, %r initial %h0, %c0
      : (tensor<7x4x8xf32>, tensor<64x8xf32>, tensor<64x16xf32>,
         tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<7x4x96xf32>
  %g = nn.lstm_grad %ds, %s, %r, %c0
      : (tensor<7x4x96xf32>, tensor<7x4x96xf32>, tensor<64x16xf32>,
         tensor<4x16xf32>) -> tensor<7x4x80xf32>
  return %g : tensor<7x4x80xf32>
}
