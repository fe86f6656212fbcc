// RUN: dpc-opt %s -split-input-file --dpc-insert-send-recv -verify-diagnostics

func.func @main(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %a = nn.relu %x {pipe.stage = 0 : i64} : tensor<4x8xf32>
  // expected-error @+1 {{has no pipe.stage; run --dpc-partition-stages first}}
  %b = nn.relu %a : tensor<4x8xf32>
  return %b : tensor<4x8xf32>
}

// -----

// expected-error @+1 {{expects a single-block function @main}}
module {
  func.func @forward(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
    return %x : tensor<4x8xf32>
  }
}
