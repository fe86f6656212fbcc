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
