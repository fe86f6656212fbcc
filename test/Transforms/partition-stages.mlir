// RUN: dpc-opt %s -split-input-file --dpc-annotate-costs --dpc-partition-stages='stages=2 microbatches=4' | FileCheck %s
// RUN: rm -f %t.json
// RUN: dpc-opt %s -split-input-file --dpc-annotate-costs --dpc-partition-stages='stages=4 microbatches=8 plan-output=%t.json' -o /dev/null
// RUN: FileCheck %s --check-prefix=PLAN --input-file=%t.json
// RUN: dpc-opt %s -split-input-file --dpc-annotate-costs --dpc-partition-stages='stages=2 virtual-stages=2 schedule=interleaved microbatches=4 plan-output=%t.il.json' | FileCheck %s --check-prefix=CHUNKS
// RUN: FileCheck %s --check-prefix=CHUNKS-PLAN --input-file=%t.il.json
// RUN: dpc-opt %s -split-input-file --dpc-annotate-costs --dpc-partition-stages='stages=2 replicas=2,1 microbatches=4 plan-output=%t.rep.json' | FileCheck %s --check-prefix=REPLICAS
// RUN: FileCheck %s --check-prefix=REPLICAS-PLAN --input-file=%t.rep.json

// Four equal layers over two stages: two each, and each parameter read with
// the layer that uses it.

// CHECK-LABEL: module attributes {pipe.microbatch_size = 64 : i64, pipe.num_stages = 2 : i64, pipe.replicas = array<i64: 1, 1>}
// CHECK: nn.param "w0" {pipe.stage = 0 : i64}
// CHECK: nn.matmul {{.*}}pipe.stage = 0 : i64
// CHECK: nn.relu {{.*}}pipe.stage = 0 : i64
// CHECK: nn.param "w1" {pipe.stage = 0 : i64}
// CHECK: nn.matmul {{.*}}pipe.stage = 0 : i64
// CHECK: nn.relu {{.*}}pipe.stage = 0 : i64
// CHECK: nn.param "w2" {pipe.stage = 1 : i64}
// CHECK: nn.matmul {{.*}}pipe.stage = 1 : i64
// CHECK: nn.relu {{.*}}pipe.stage = 1 : i64
// CHECK: nn.param "w3" {pipe.stage = 1 : i64}
// CHECK: nn.matmul {{.*}}pipe.stage = 1 : i64
// CHECK: nn.relu {{.*}}pipe.stage = 1 : i64

// Interleaved, two ranks of two chunks: four virtual stages, one layer
// each; virtual stages 0 and 2 are rank 0's chunks. plan.json counts the
// ranks as devices.
// CHUNKS-LABEL: module attributes {pipe.chunks = 2 : i64, pipe.microbatch_size = 64 : i64, pipe.num_stages = 4 : i64, pipe.replicas = array<i64: 1, 1, 1, 1>}
// CHUNKS: nn.param "w0" {pipe.stage = 0 : i64}
// CHUNKS: nn.param "w1" {pipe.stage = 1 : i64}
// CHUNKS: nn.param "w2" {pipe.stage = 2 : i64}
// CHUNKS: nn.param "w3" {pipe.stage = 3 : i64}
// CHUNKS-PLAN: "devices": 2
// CHUNKS-PLAN: "virtual_stages": 2

// Pinned replicas: the same cuts as two straight stages, stage 0 on ranks 0
// and 1, stage 1 on rank 2; plan.json counts three devices.
// REPLICAS-LABEL: module attributes {pipe.microbatch_size = 64 : i64, pipe.num_stages = 2 : i64, pipe.replicas = array<i64: 2, 1>}
// REPLICAS: nn.param "w1" {pipe.stage = 0 : i64}
// REPLICAS: nn.param "w2" {pipe.stage = 1 : i64}
// REPLICAS-PLAN: "devices": 3
// REPLICAS-PLAN: "ranks": [
// REPLICAS-PLAN-NEXT: 0,
// REPLICAS-PLAN-NEXT: 1
// REPLICAS-PLAN-NEXT: ],
// REPLICAS-PLAN-NEXT: "replicas": 2,

// With four stages, one layer each; plan.json names the ops by location.
// PLAN: "devices": 4
// PLAN: "kind": "1f1b"
// PLAN: "microbatches": 8
// PLAN: "nodes": [
// PLAN-NEXT: "x",
// PLAN-NEXT: "layer0",
// PLAN-NEXT: "relu0"
// PLAN: "nodes": [
// PLAN-NEXT: "layer1",
// PLAN-NEXT: "relu1"
// PLAN: "nodes": [
// PLAN-NEXT: "layer2",
// PLAN-NEXT: "relu2"
// PLAN: "nodes": [
// PLAN-NEXT: "layer3",
// PLAN-NEXT: "relu3"
// PLAN: "bottleneck_ms":
func.func @main(%x: tensor<64x256xf32> loc("x")) -> tensor<64x256xf32> {
  %w0 = nn.param "w0" : tensor<256x256xf32>
  %m0 = nn.matmul %x, %w0 : (tensor<64x256xf32>, tensor<256x256xf32>) -> tensor<64x256xf32> loc("layer0")
  %r0 = nn.relu %m0 : tensor<64x256xf32> loc("relu0")
  %w1 = nn.param "w1" : tensor<256x256xf32>
  %m1 = nn.matmul %r0, %w1 : (tensor<64x256xf32>, tensor<256x256xf32>) -> tensor<64x256xf32> loc("layer1")
  %r1 = nn.relu %m1 : tensor<64x256xf32> loc("relu1")
  %w2 = nn.param "w2" : tensor<256x256xf32>
  %m2 = nn.matmul %r1, %w2 : (tensor<64x256xf32>, tensor<256x256xf32>) -> tensor<64x256xf32> loc("layer2")
  %r2 = nn.relu %m2 : tensor<64x256xf32> loc("relu2")
  %w3 = nn.param "w3" : tensor<256x256xf32>
  %m3 = nn.matmul %r2, %w3 : (tensor<64x256xf32>, tensor<256x256xf32>) -> tensor<64x256xf32> loc("layer3")
  %r3 = nn.relu %m3 : tensor<64x256xf32> loc("relu3")
  return %r3 : tensor<64x256xf32>
}
