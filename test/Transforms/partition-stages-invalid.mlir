// RUN: not dpc-opt %s --dpc-partition-stages='stages=2' 2>&1 | FileCheck %s --check-prefix=NOCOST
// RUN: not dpc-opt %s --dpc-annotate-costs --dpc-partition-stages='stages=9' 2>&1 | FileCheck %s --check-prefix=TOOMANY
// RUN: not dpc-opt %s --dpc-annotate-costs --dpc-partition-stages='stages=2 devices=2' 2>&1 | FileCheck %s --check-prefix=BOTH
// RUN: not dpc-opt %s --dpc-annotate-costs --dpc-partition-stages='stages=2 schedule=fifo' 2>&1 | FileCheck %s --check-prefix=SCHEDULE
// RUN: not dpc-opt %s --dpc-annotate-costs --dpc-partition-stages='stages=2 memory-limit=100' 2>&1 | FileCheck %s --check-prefix=MEMORY
// RUN: not dpc-opt %s --dpc-annotate-costs --dpc-partition-stages='stages=2 virtual-stages=2' 2>&1 | FileCheck %s --check-prefix=CHUNKS
// RUN: not dpc-opt %s --dpc-annotate-costs --dpc-partition-stages='devices=2 virtual-stages=2 schedule=interleaved' 2>&1 | FileCheck %s --check-prefix=CHUNKS
// RUN: not dpc-opt %s --dpc-annotate-costs --dpc-partition-stages='stages=2 replicas=2' 2>&1 | FileCheck %s --check-prefix=REPLICAS
// RUN: not dpc-opt %s --dpc-annotate-costs --dpc-partition-stages='stages=2 replicas=0,1' 2>&1 | FileCheck %s --check-prefix=REPLICAS-ZERO

// NOCOST: error: has no nn.cost; run --dpc-annotate-costs first
// REPLICAS: error: replicas lists 1 stages but stages is 2
// REPLICAS-ZERO: error: replicas must be positive
// TOOMANY: error: cannot partition @main: {{.*}}stages
// BOTH: error: expects exactly one of stages and devices
// SCHEDULE: error: unknown schedule 'fifo'
// CHUNKS: error: virtual-stages applies to the interleaved schedule with a stage count
// MEMORY: error: cannot partition @main: no plan fits in 100 bytes per device; the smallest limit that would work is {{[0-9]+}} bytes
func.func @main(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %w = nn.param "w" : tensor<8x8xf32>
  %m = nn.matmul %x, %w : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %r = nn.relu %m : tensor<4x8xf32>
  return %r : tensor<4x8xf32>
}
