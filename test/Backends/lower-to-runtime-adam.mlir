// RUN: not dpc-opt %s -split-input-file --dpc-lower-to-runtime 2>/dev/null | FileCheck %s
// RUN: not dpc-opt %s -split-input-file --dpc-lower-to-runtime 2>&1 | FileCheck %s --check-prefix=MIXED

// Adam updates call dpc_adam_step with their settings, and the manifest
// tells the runtime to keep Adam's two moments per parameter.
module attributes {pipe.num_stages = 1 : i64} {
  func.func @stage0_optimizer() attributes {pipe.segment = "optimizer", pipe.stage = 0 : i64} {
    %w = nn.param "w" : tensor<10x32xf32>
    %gw = pipe.accumulated_grad %w : tensor<10x32xf32>
    nn.adam_update %w, %gw {lr = 0.001 : f32, beta2 = 0.98 : f32, eps = 1.0e-6 : f32, weight_decay = 0.01 : f32} : tensor<10x32xf32>
    return
  }
}

// CHECK-LABEL: llvm.func @dpc_segment_optimizer(
// CHECK-DAG: %[[LR:.*]] = llvm.mlir.constant(1.000000e-03 : f32)
// CHECK-DAG: %[[B1:.*]] = llvm.mlir.constant(0.899999976 : f32)
// CHECK-DAG: %[[B2:.*]] = llvm.mlir.constant(9.800000e-01 : f32)
// CHECK-DAG: %[[EPS:.*]] = llvm.mlir.constant(9.99999997E-7 : f32)
// CHECK-DAG: %[[WD:.*]] = llvm.mlir.constant(0.00999999977 : f32)
// CHECK: llvm.call @dpc_adam_step(%{{.*}}, %{{.*}}, %[[LR]], %[[B1]], %[[B2]], %[[EPS]], %[[WD]]) : (!llvm.ptr, i64, f32, f32, f32, f32, f32) -> ()
// CHECK: llvm.mlir.global external constant @dpc_rank_manifest(
// CHECK-SAME: \22optimizer\22:\22adam\22

// -----

// AdamW calls the same step; the manifest's "adamw" decouples the decay.
module attributes {pipe.num_stages = 1 : i64} {
  func.func @stage0_optimizer() attributes {pipe.segment = "optimizer", pipe.stage = 0 : i64} {
    %w = nn.param "w" : tensor<10x32xf32>
    %gw = pipe.accumulated_grad %w : tensor<10x32xf32>
    nn.adam_update %w, %gw {lr = 0.001 : f32, weight_decay = 0.1 : f32, decoupled} : tensor<10x32xf32>
    return
  }
}

// CHECK-LABEL: llvm.func @dpc_segment_optimizer(
// CHECK: llvm.call @dpc_adam_step(
// CHECK: llvm.mlir.global external constant @dpc_rank_manifest(
// CHECK-SAME: \22optimizer\22:\22adamw\22

// -----

// One stage keeps one kind of optimizer state.
module attributes {pipe.num_stages = 1 : i64} {
  func.func @stage0_optimizer() attributes {pipe.segment = "optimizer", pipe.stage = 0 : i64} {
    %w = nn.param "w" : tensor<4xf32>
    %b = nn.param "b" : tensor<4xf32>
    %gw = pipe.accumulated_grad %w : tensor<4xf32>
    %gb = pipe.accumulated_grad %b : tensor<4xf32>
    nn.sgd_update %w, %gw {lr = 0.1 : f32} : tensor<4xf32>
    nn.adam_update %b, %gb {lr = 0.1 : f32} : tensor<4xf32>
    return
  }
}

// MIXED: error: 'nn.adam_update' op mixes optimizers on one stage: sgd and adam
