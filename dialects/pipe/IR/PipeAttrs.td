//===- PipeAttrs.td - pipe dialect attributes --------------*- tablegen -*-===//
//
// The enums and the stage attribute of schedule programs (`pipe.schedule`):
// each mirrors a type of lib/schedule (include/dpc/schedule/Schedule.h) and
// uses the names of schedule.json, so that one program reads alike in JSON,
// in the IR and in the verifier's messages.
//
//===----------------------------------------------------------------------===//

#ifndef DPC_DIALECTS_PIPE_IR_PIPEATTRS_TD
#define DPC_DIALECTS_PIPE_IR_PIPEATTRS_TD

include "dialects/pipe/IR/PipeBase.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/EnumAttr.td"

//===----------------------------------------------------------------------===//
// Enums
//===----------------------------------------------------------------------===//

def Pipe_Opcode : I32EnumAttr<"Opcode", "schedule instruction", [
    I32EnumAttrCase<"Load", 0, "load">,
    I32EnumAttrCase<"Forward", 1, "forward">,
    I32EnumAttrCase<"Backward", 2, "backward">,
    I32EnumAttrCase<"BackwardInput", 3, "backward_input">,
    I32EnumAttrCase<"BackwardWeight", 4, "backward_weight">,
    I32EnumAttrCase<"SendStart", 5, "send_start">,
    I32EnumAttrCase<"SendFinish", 6, "send_finish">,
    I32EnumAttrCase<"RecvStart", 7, "recv_start">,
    I32EnumAttrCase<"RecvFinish", 8, "recv_finish">,
    I32EnumAttrCase<"AllReduce", 9, "allreduce">,
    I32EnumAttrCase<"OptimizerStep", 10, "optimizer_step">,
    I32EnumAttrCase<"Stash", 11, "stash">,
    I32EnumAttrCase<"Restore", 12, "restore">,
    I32EnumAttrCase<"Free", 13, "free">,
    I32EnumAttrCase<"StashWeights", 14, "stash_weights">,
    I32EnumAttrCase<"RestoreWeights", 15, "restore_weights">,
    I32EnumAttrCase<"FreeWeights", 16, "free_weights">]> {
  let cppNamespace = "::mlir::dpc::pipe";
  let genSpecializedAttr = 0;
}

def Pipe_OpcodeAttr : EnumAttr<Pipe_Dialect, Pipe_Opcode, "opcode"> {
  let summary = "what a schedule instruction does (schedule::Op)";
}

def Pipe_Payload : I32EnumAttr<"Payload", "what a transfer carries", [
    I32EnumAttrCase<"Activation", 1, "act">,
    I32EnumAttrCase<"Gradient", 2, "grad">]> {
  let cppNamespace = "::mlir::dpc::pipe";
  let genSpecializedAttr = 0;
}

def Pipe_PayloadAttr : EnumAttr<Pipe_Dialect, Pipe_Payload, "payload"> {
  let summary = "an activation or a gradient (schedule::Payload)";
}

//===----------------------------------------------------------------------===//
// Stage costs and sizes
//===----------------------------------------------------------------------===//

// Milliseconds, printed and parsed as a bare float (1.0 when omitted).
class Pipe_MsParameter<string desc> : APFloatParameter<desc> {
  let defaultValue = "::llvm::APFloat(1.0)";
  let parser = [{ [&]() -> ::mlir::FailureOr<::llvm::APFloat> {
    double value;
    if (::mlir::failed($_parser.parseFloat(value)))
      return ::mlir::failure();
    return ::llvm::APFloat(value);
  }() }];
  let printer = [{ $_printer.printFloat($_self) }];
}

class Pipe_BytesParameter<string desc>
    : DefaultValuedParameter<"int64_t", "0", desc>;

def Pipe_StageAttr : AttrDef<Pipe_Dialect, "Stage"> {
  let mnemonic = "stage";
  let summary = "costs and sizes of one virtual stage (schedule::StageInfo)";
  let description = [{
    What the verifier and the simulator know of a virtual stage: its
    forward, backward-input and backward-weight times in milliseconds, the
    bytes resident all step (`param_bytes`: weights, gradients, optimizer
    state), one extra weight version (`weight_bytes`), the saved tensors of
    one microbatch's forward (`activation_bytes`) and the activation it sends
    on (`output_bytes`). Omitted fields take schedule::StageInfo's defaults
    (1 ms, 0 bytes).

    ```mlir
    #pipe.stage<forward_ms = 2.0, param_bytes = 4096>
    ```
  }];
  let parameters = (ins
    Pipe_MsParameter<"forward time">:$forward_ms,
    Pipe_MsParameter<"input-gradient time">:$backward_input_ms,
    Pipe_MsParameter<"weight-gradient time">:$backward_weight_ms,
    Pipe_BytesParameter<"resident bytes">:$param_bytes,
    Pipe_BytesParameter<"bytes of one weight version">:$weight_bytes,
    Pipe_BytesParameter<"bytes a forward keeps">:$activation_bytes,
    Pipe_BytesParameter<"bytes of the activation sent on">:$output_bytes
  );
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

#endif // DPC_DIALECTS_PIPE_IR_PIPEATTRS_TD
