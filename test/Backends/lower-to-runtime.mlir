// RUN: dpc-opt %s --dpc-lower-to-runtime | FileCheck %s

// The last stage of a two-stage MLP: its segments become calls into the
// runtime C ABI and the manifest lists what the runtime must provide.
module attributes {pipe.num_stages = 2 : i64} {
  func.func @stage1_forward() attributes {pipe.segment = "forward", pipe.stage = 1 : i64} {
    %w = nn.param "fc2.weight" : tensor<10x32xf32>
    %b = nn.param "fc2.bias" : tensor<10xf32>
    %labels = pipe.labels : tensor<4xi64>
    pipe.stash %labels key "labels" : tensor<4xi64>
    %h = pipe.recv from 0 tag 0 : tensor<4x32xf32>
    pipe.stash %h key "h" : tensor<4x32xf32>
    %m = nn.matmul %h, %w {transpose_rhs = true} : (tensor<4x32xf32>, tensor<10x32xf32>) -> tensor<4x10xf32>
    %y = nn.add %m, %b : (tensor<4x10xf32>, tensor<10xf32>) -> tensor<4x10xf32>
    pipe.stash %y key "logits" : tensor<4x10xf32>
    %loss = nn.softmax_cross_entropy %y, %labels {scale = 0.0625 : f32} : (tensor<4x10xf32>, tensor<4xi64>) -> tensor<f32>
    pipe.report_loss %loss : tensor<f32>
    pipe.report_output %y : tensor<4x10xf32>
    return
  }
  func.func @stage1_backward() attributes {pipe.segment = "backward", pipe.stage = 1 : i64} {
    %w = nn.param "fc2.weight" : tensor<10x32xf32>
    %b = nn.param "fc2.bias" : tensor<10xf32>
    %y = pipe.restore key "logits" : tensor<4x10xf32>
    %labels = pipe.restore key "labels" : tensor<4xi64>
    %h = pipe.restore key "h" : tensor<4x32xf32>
    %dy = nn.softmax_cross_entropy_grad %y, %labels {scale = 0.0625 : f32} : (tensor<4x10xf32>, tensor<4xi64>) -> tensor<4x10xf32>
    %db = nn.sum_to_shape %dy : (tensor<4x10xf32>) -> tensor<10xf32>
    %dh = nn.matmul_grad_lhs %dy, %w {transpose_rhs = true} : (tensor<4x10xf32>, tensor<10x32xf32>) -> tensor<4x32xf32>
    pipe.send %dh to 0 tag 1 : tensor<4x32xf32>
    %dw = nn.matmul_grad_rhs %dy, %h {transpose_rhs = true} : (tensor<4x10xf32>, tensor<4x32xf32>) -> tensor<10x32xf32>
    %f = nn.reshape %dw : (tensor<10x32xf32>) -> tensor<320xf32>
    %g = nn.reshape %f : (tensor<320xf32>) -> tensor<10x32xf32>
    pipe.accumulate_grad %w, %g : tensor<10x32xf32>
    pipe.accumulate_grad %b, %db : tensor<10xf32>
    return
  }
  func.func @stage1_optimizer() attributes {pipe.segment = "optimizer", pipe.stage = 1 : i64} {
    %w = nn.param "fc2.weight" : tensor<10x32xf32>
    %gw = pipe.accumulated_grad %w : tensor<10x32xf32>
    nn.sgd_update %w, %gw {lr = 0.05 : f32, momentum = 0.9 : f32} : tensor<10x32xf32>
    return
  }
}

// CHECK-DAG: llvm.mlir.global private constant @[[XSHAPE:__dpc_const_[0-9]+]](dense<[4, 10]> : tensor<2xi64>)
// CHECK-DAG: llvm.func @dpc_matmul(!llvm.ptr, !llvm.ptr, !llvm.ptr, i64, i64, i64, i64, i64, i64, i64, i64, i64)

// CHECK-LABEL: llvm.func @dpc_segment_forward(
// CHECK-SAME: %[[CTX:.*]]: !llvm.ptr)
// CHECK: %[[W:.*]] = llvm.call @dpc_param(%[[CTX]], %{{.*}})
// CHECK: %[[LABELS:.*]] = llvm.call @dpc_labels(%[[CTX]])
// CHECK: llvm.call @dpc_stash(%[[CTX]], %{{.*}}, %[[LABELS]])
// CHECK: %[[H:.*]] = llvm.call @dpc_recv(%[[CTX]], %{{.*}})
// 4 x 10 floats:
// CHECK: %[[BYTES:.*]] = llvm.mlir.constant(160 : i64)
// CHECK: %[[M:.*]] = llvm.call @dpc_alloc(%[[CTX]], %[[BYTES]])
// batch 1, M 4, N 10, K 32, B transposed, strides 128 and 0, no accumulation
// CHECK: llvm.call @dpc_matmul(%[[H]], %[[W]], %[[M]], {{.*}})
// CHECK: llvm.call @dpc_binary
// CHECK: llvm.call @dpc_softmax_cross_entropy
// CHECK: llvm.call @dpc_report_loss
// CHECK: llvm.call @dpc_report_output
// CHECK: llvm.return

// CHECK-LABEL: llvm.func @dpc_segment_backward(
// CHECK: llvm.call @dpc_restore
// CHECK: llvm.call @dpc_softmax_cross_entropy_grad
// CHECK: llvm.call @dpc_sum_to_shape
// CHECK: llvm.call @dpc_send
// Reshapes alias their input: the accumulated pointer is the matmul's.
// CHECK: %[[DW:.*]] = llvm.call @dpc_alloc
// CHECK-NEXT: llvm.mlir.constant
// CHECK: llvm.call @dpc_matmul(%{{.*}}, %{{.*}}, %[[DW]],
// CHECK-NOT: llvm.call @dpc_copy
// CHECK: llvm.call @dpc_grad_accumulate(%{{.*}}, %{{.*}}, %[[DW]])
// CHECK: llvm.call @dpc_grad_accumulate

// Segments this stage does not have are defined empty.
// CHECK-LABEL: llvm.func @dpc_segment_backward_input(
// CHECK-NEXT: llvm.return
// CHECK-LABEL: llvm.func @dpc_segment_backward_weight(
// CHECK-NEXT: llvm.return

// CHECK-LABEL: llvm.func @dpc_segment_optimizer(
// CHECK: llvm.call @dpc_sgd_step(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) : (!llvm.ptr, i64, f32, f32, f32) -> ()

// CHECK: llvm.mlir.global external constant @dpc_rank_manifest(
// CHECK-SAME: \22chunks\22:1
// CHECK-SAME: \22format\22:\22dpc-rank\22
// CHECK-SAME: \22inputs\22:[]
// CHECK-SAME: \22labels\22:{\22dtype\22:\22i64\22,\22shape\22:[4]}
// CHECK-SAME: \22microbatch_size\22:4
// CHECK-SAME: \22optimizer\22:\22sgd\22
// CHECK-SAME: \22output\22:{\22shape\22:[4,10]}
// CHECK-SAME: \22params\22:[{\22id\22:0,\22name\22:\22fc2.weight\22,\22shape\22:[10,32]},{\22id\22:1,\22name\22:\22fc2.bias\22,\22shape\22:[10]}]
// CHECK-SAME: \22recvs\22:[{\22bytes\22:512,\22peer_stage\22:0,\22stage\22:1,\22tag\22:0,\22what\22:\22act\22}]
// CHECK-SAME: \22sends\22:[{\22bytes\22:512,\22peer_stage\22:0,\22stage\22:1,\22tag\22:1,\22what\22:\22grad\22}]
// CHECK-SAME: \22stage\22:1
// CHECK-SAME: \22stashes\22:[{\22bytes\22:32,\22key\22:0,\22name\22:\22labels\22,\22stage\22:1},{\22bytes\22:512,\22key\22:1,\22name\22:\22h\22,\22stage\22:1},{\22bytes\22:160,\22key\22:2,\22name\22:\22logits\22,\22stage\22:1}]
// CHECK-SAME: \22weights\22:\22weights/stage1.safetensors\22
