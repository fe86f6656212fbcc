//===- Passes.td - dpc compiler passes ---------------------*- tablegen -*-===//
//
// Every pass of the pipeline in DESIGN.md, one file each, named alike:
// AnnotateCosts.cpp <-> AnnotateCostsPass <-> --dpc-annotate-costs <->
// test/Transforms/annotate-costs.mlir.
//
//===----------------------------------------------------------------------===//

#ifndef DPC_PASSES_PASSES_TD
#define DPC_PASSES_PASSES_TD

include "mlir/Pass/PassBase.td"

def AnnotateCostsPass : Pass<"dpc-annotate-costs", "::mlir::ModuleOp"> {
  let summary = "attach analytic forward/backward costs to every nn op";
  let description = [{
    Estimates, for each forward `nn` op, the floating-point operations and
    bytes moved by the op and by its gradient ops, and converts them to
    milliseconds with a roofline model of the target: time is the larger of
    flops / peak compute rate and bytes / memory bandwidth. The result is the
    discardable attribute `nn.cost`:

    ```mlir
    %y = nn.relu %x {nn.cost = {forward_ms = 1.2e-3 : f64, backward_ms = ...,
                                flops = 4704 : i64, bytes = 37632 : i64,
                                activation_bytes = 18816 : i64,
                                parameter_bytes = 0 : i64}} : tensor<...>
    ```

    `partition-stages` and `dpc plan` read these costs; a measured profile
    (`dpc profile`) replaces them when given.
  }];
  let dependentDialects = ["::mlir::dpc::nn::NNDialect"];
  let options = [
    Option<"peakGflops", "peak-gflops", "double", /*default=*/"100.0",
           "Peak compute rate of one device in GFLOP/s">,
    Option<"memoryGBps", "memory-gbps", "double", /*default=*/"20.0",
           "Memory bandwidth of one device in GB/s">,
  ];
}

#endif // DPC_PASSES_PASSES_TD
