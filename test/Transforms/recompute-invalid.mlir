// RUN: dpc-opt %s --split-input-file --verify-diagnostics --dpc-recompute=stages=2

// A stage the module does not have.
// expected-error @+1 {{cannot recompute stage 2: the module has 2 stages}}
module attributes {pipe.num_stages = 2 : i64} {
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}
}

// -----

// Recomputation needs the partition.
// expected-error @+1 {{expects 'pipe.num_stages' (run --dpc-partition-stages first)}}
module {
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}
}
