// RUN: dpc-opt %s --dpc-plan-memory | FileCheck %s

// A chain a -> b -> c -> d of 4 KiB buffers: each is dead once the next one
// is computed, so two slots suffice; the reshape aliases b and keeps it alive
// until d reads it.
// CHECK-LABEL: func.func @stage0_forward()
// CHECK-SAME: pipe.arena_bytes = 12288 : i64
func.func @stage0_forward() attributes {pipe.segment = "forward", pipe.stage = 0 : i64} {
  %x = pipe.input 0 : tensor<32x32xf32>
  // CHECK: nn.relu %{{.*}} {pipe.offset = 0 : i64}
  %a = nn.relu %x : tensor<32x32xf32>
  // CHECK: nn.relu %{{.*}} {pipe.offset = 4096 : i64}
  %b = nn.relu %a : tensor<32x32xf32>
  // CHECK: nn.reshape
  // CHECK-NOT: pipe.offset
  %v = nn.reshape %b : (tensor<32x32xf32>) -> tensor<1024xf32>
  // a is dead: c takes its slot.
  // CHECK: nn.relu %{{.*}} {pipe.offset = 0 : i64}
  %c = nn.relu %b : tensor<32x32xf32>
  // b is still alive through %v: d needs a third slot.
  // CHECK: nn.add %{{.*}}, %{{.*}} {pipe.offset = 8192 : i64}
  %d = nn.add %c, %c : (tensor<32x32xf32>, tensor<32x32xf32>) -> tensor<32x32xf32>
  pipe.send %d to 1 tag 0 : tensor<32x32xf32>
  pipe.send %v to 1 tag 1 : tensor<1024xf32>
  return
}

// Odd sizes are placed at 64-byte boundaries; a freed slot is reused only
// when the new buffer fits.
// CHECK-LABEL: func.func @stage0_backward()
// CHECK-SAME: pipe.arena_bytes = 256 : i64
func.func @stage0_backward() attributes {pipe.segment = "backward", pipe.stage = 0 : i64} {
  %x = pipe.input 0 : tensor<5xf32>
  // CHECK: nn.relu %{{.*}} {pipe.offset = 0 : i64} : tensor<5xf32>
  %a = nn.relu %x : tensor<5xf32>
  // CHECK: nn.relu %{{.*}} {pipe.offset = 64 : i64} : tensor<5xf32>
  %b = nn.relu %a : tensor<5xf32>
  // 80 bytes (128 aligned) do not fit in a's 64-byte slot.
  %w = nn.param "w" : tensor<20xf32>
  // CHECK: nn.relu %{{.*}} {pipe.offset = 128 : i64} : tensor<20xf32>
  %c = nn.relu %w : tensor<20xf32>
  pipe.send %b to 1 tag 0 : tensor<5xf32>
  pipe.send %c to 1 tag 1 : tensor<20xf32>
  %r = nn.reshape %c : (tensor<20xf32>) -> tensor<4x5xf32>
  return
}

// A filter gradient whose one reader accumulates it is added into the
// parameter's accumulator by its kernel: it gets no place. One that is also
// stashed does.
// CHECK-LABEL: func.func @stage0_backward_weight()
// CHECK-SAME: pipe.arena_bytes = 320 : i64
func.func @stage0_backward_weight() attributes {pipe.segment = "backward_weight", pipe.stage = 0 : i64} {
  %x = pipe.input 0 : tensor<1x2x4x4xf32>
  %dy = pipe.restore key "dy" : tensor<1x4x4x4xf32>
  %w = nn.param "w" : tensor<4x2x3x3xf32>
  %v = nn.param "v" : tensor<4x2x3x3xf32>
  // CHECK: nn.conv2d_grad_filter
  // CHECK-NOT: pipe.offset
  // CHECK-SAME: -> tensor<4x2x3x3xf32>
  %dw = nn.conv2d_grad_filter %dy, %x {pads = array<i64: 1, 1, 1, 1>} : (tensor<1x4x4x4xf32>, tensor<1x2x4x4xf32>) -> tensor<4x2x3x3xf32>
  pipe.accumulate_grad %w, %dw : tensor<4x2x3x3xf32>
  // CHECK: nn.conv2d_grad_filter %{{.*}}, %{{.*}} {pads = array<i64: 1, 1, 1, 1>, pipe.offset = 0 : i64}
  %dv = nn.conv2d_grad_filter %dy, %x {pads = array<i64: 1, 1, 1, 1>} : (tensor<1x4x4x4xf32>, tensor<1x2x4x4xf32>) -> tensor<4x2x3x3xf32>
  pipe.accumulate_grad %v, %dv : tensor<4x2x3x3xf32>
  pipe.stash %dv key "dv" : tensor<4x2x3x3xf32>
  return
}
