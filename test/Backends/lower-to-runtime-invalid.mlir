// RUN: dpc-opt %s -split-input-file -verify-diagnostics -allow-unregistered-dialect --dpc-lower-to-runtime

// The kernels read int64 indices: an int32 gather is refused, and the pass
// stops there instead of lowering the ops that use its result.
module {
  func.func @stage0_forward() attributes {pipe.segment = "forward", pipe.stage = 0 : i64} {
    %table = nn.param "table" : tensor<10x4xf32>
    %ids = pipe.input 0 : tensor<2xi32>
    // expected-error @+1 {{'nn.gather' op expects int64 indices for the runtime's kernels, got 'tensor<2xi32>'}}
    %rows = nn.gather %table, %ids : (tensor<10x4xf32>, tensor<2xi32>) -> tensor<2x4xf32>
    pipe.report_output %rows : tensor<2x4xf32>
    return
  }
}

// -----

// An op no family lowers.
module {
  func.func @stage0_forward() attributes {pipe.segment = "forward", pipe.stage = 0 : i64} {
    %x = pipe.input 0 : tensor<2x4xf32>
    // expected-error @+1 {{'test.opaque' op has no lowering to runtime calls}}
    %y = "test.opaque"(%x) : (tensor<2x4xf32>) -> tensor<2x4xf32>
    pipe.report_output %y : tensor<2x4xf32>
    return
  }
}
