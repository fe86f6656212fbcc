// RUN: dpc-opt %s --dpc-annotate-costs --dpc-partition-stages='stages=2 microbatches=4' -verify-diagnostics -split-input-file

// One parameter value read on both stages cannot be placed.
func.func @main(%x: tensor<64x256xf32>) -> tensor<64x256xf32> {
  // expected-error @+1 {{parameter 'tied' is used on stages 0 and 1; sharing a parameter across stages is not supported}}
  %w = nn.param "tied" : tensor<256x256xf32>
  %m0 = nn.matmul %x, %w : (tensor<64x256xf32>, tensor<256x256xf32>) -> tensor<64x256xf32>
  %r0 = nn.relu %m0 : tensor<64x256xf32>
  %m1 = nn.matmul %r0, %w : (tensor<64x256xf32>, tensor<256x256xf32>) -> tensor<64x256xf32>
  %r1 = nn.relu %m1 : tensor<64x256xf32>
  return %r1 : tensor<64x256xf32>
}
