//===- PipeOps.td - pipe dialect operations ----------------*- tablegen -*-===//

#ifndef DPC_DIALECTS_PIPE_IR_PIPEOPS_TD
#define DPC_DIALECTS_PIPE_IR_PIPEOPS_TD

include "dialects/pipe/IR/PipeBase.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/IR/CommonAttrConstraints.td"
include "mlir/IR/CommonTypeConstraints.td"
include "mlir/Interfaces/InferTypeOpInterface.td"

def Pipe_Tensor : StaticShapeTensorOf<[AnyType]>;

def Pipe_SendOp : Pipe_Op<"send", [MemoryEffects<[MemRead, MemWrite]>]> {
  let summary = "sends a value to another pipeline stage";
  let description = [{
    Sends `value` for the current microbatch to stage `peer`. `tag`
    distinguishes the transfers between one pair of stages; the matching
    `pipe.recv` on `peer` has the same tag, type and this op's stage as its
    peer. The runtime starts the transfer without blocking; the schedule
    decides when it must have finished.

    ```mlir
    pipe.send %act to 1 tag 0 : tensor<16x6x14x14xf32>
    ```
  }];
  let arguments = (ins Pipe_Tensor:$value, I64Attr:$peer, I64Attr:$tag);
  let assemblyFormat = "$value `to` $peer `tag` $tag attr-dict `:` type($value)";
  let hasVerifier = 1;
}

def Pipe_RecvOp : Pipe_Op<"recv", [MemoryEffects<[MemRead, MemWrite]>]> {
  let summary = "receives a value from another pipeline stage";
  let description = [{
    Yields the value that stage `peer` sent with `tag` for the current
    microbatch.

    ```mlir
    %act = pipe.recv from 0 tag 0 : tensor<16x6x14x14xf32>
    ```
  }];
  let arguments = (ins I64Attr:$peer, I64Attr:$tag);
  let results = (outs Pipe_Tensor:$result);
  let assemblyFormat = "`from` $peer `tag` $tag attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def Pipe_StashOp : Pipe_Op<"stash", [MemoryEffects<[MemWrite]>]> {
  let summary = "keeps a forward value until the microbatch's backward";
  let description = [{
    Stores `value` under `key` for the current microbatch. The backward of
    the same microbatch takes it back with `pipe.restore` of the same key,
    which frees the slot. A stage holds one slot per key for each microbatch
    in flight, which is what bounds a schedule's activation memory. For the
    PipeDream schedule the weight versions a microbatch's forward used are
    stashed the same way.

    ```mlir
    pipe.stash %x key "conv1.input" : tensor<16x1x28x28xf32>
    ```
  }];
  let arguments = (ins Pipe_Tensor:$value, StrAttr:$key);
  let assemblyFormat = "$value `key` $key attr-dict `:` type($value)";
  let hasVerifier = 1;
}

def Pipe_RestoreOp : Pipe_Op<"restore", [MemoryEffects<[MemRead, MemWrite]>]> {
  let summary = "takes back a value stashed by the microbatch's forward";
  let description = [{
    Yields the value stashed under `key` for the current microbatch and
    releases its slot.

    ```mlir
    %x = pipe.restore key "conv1.input" : tensor<16x1x28x28xf32>
    ```
  }];
  let arguments = (ins StrAttr:$key);
  let results = (outs Pipe_Tensor:$result);
  let assemblyFormat = "`key` $key attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def Pipe_AllReduceOp : Pipe_Op<"allreduce",
    [MemoryEffects<[MemRead, MemWrite]>, SameOperandsAndResultType]> {
  let summary = "sums or averages a gradient over the replicas of a stage";
  let description = [{
    Reduces `value` over the ranks that replicate the current stage
    (hybrid data parallelism). `reduction` is "sum" or "mean".

    ```mlir
    %g = pipe.allreduce %gw mean : tensor<120x400xf32>
    ```
  }];
  let arguments = (ins Pipe_Tensor:$value,
                       DefaultValuedAttr<StrAttr, "\"sum\"">:$reduction);
  let results = (outs Pipe_Tensor:$result);
  let assemblyFormat = "$value $reduction attr-dict `:` type($result)";
  let hasVerifier = 1;
}

#endif // DPC_DIALECTS_PIPE_IR_PIPEOPS_TD
