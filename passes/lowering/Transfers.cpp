//===- Transfers.cpp - Parameters, data, transfers, stashes ---------------===//
//
// The ops that do not compute but move tensors across the segment's
// boundary: they become context functions of the ABI (dpc_param,
// dpc_input, dpc_send, dpc_stash, ...) whose integer arguments the manifest
// explains: parameter ids, input indices, transfer tags and stash keys.
//
//===----------------------------------------------------------------------===//

#include "passes/lowering/RuntimeLowering.h"

#include "dialects/nn/IR/NNOps.h"
#include "dialects/nn/IR/ShapeInference.h"
#include "dialects/pipe/IR/PipeOps.h"
#include "dpc/runtime/Abi.h"

using namespace mlir;
using namespace mlir::dpc;
using namespace mlir::dpc::lowering;

// The graph input's name, which the importer gives its argument (and
// OutlineStages the read) as a NameLoc; "inputK" where a location lost it.
static std::string inputName(pipe::InputOp input, int64_t index) {
  Location loc = input.getLoc();
  if (auto fused = dyn_cast<FusedLoc>(loc);
      fused && !fused.getLocations().empty())
    loc = fused.getLocations().front();
  if (auto name = dyn_cast<NameLoc>(loc))
    return name.getName().str();
  return "input" + std::to_string(index);
}

void lowering::populateTransferLowerings(RuntimeLoweringTable &table) {
  table.add<nn::ParamOp>([](nn::ParamOp read, RuntimeLowering &rt) {
    int64_t id = rt.manifest.paramId(read);
    rt.define(read, rt.call<abi::dpc_param>({rt.context, rt.i64(id)}));
  });
  table.add<pipe::InputOp>([](pipe::InputOp input, RuntimeLowering &rt) {
    int64_t index = input.getIndexAttr().getInt();
    bool integer =
        isa<IntegerType>(cast<ShapedType>(input.getType()).getElementType());
    rt.manifest.inputs[index] = {inputName(input, index), shapeOf(input).vec(),
                                 integer};
    rt.manifest.noteBatch(shapeOf(input));
    rt.define(input, rt.call<abi::dpc_input>({rt.context, rt.i64(index)}));
  });
  table.add<pipe::LabelsOp>([](pipe::LabelsOp labels, RuntimeLowering &rt) {
    rt.manifest.labels = shapeOf(labels).vec();
    rt.manifest.floatLabels =
        isa<FloatType>(cast<ShapedType>(labels.getType()).getElementType());
    rt.manifest.noteBatch(shapeOf(labels));
    rt.define(labels, rt.call<abi::dpc_labels>({rt.context}));
  });
  table.add<pipe::RecvOp>([](pipe::RecvOp recv, RuntimeLowering &rt) {
    int64_t tag = recv.getTagAttr().getInt();
    int64_t peer = recv.getPeerAttr().getInt();
    rt.manifest.recvs[tag] = {tag,
                              rt.stage,
                              peer,
                              peer < rt.stage
                                  ? runtime::TransferKind::Activation
                                  : runtime::TransferKind::Gradient,
                              nn::getSizeInBytes(recv),
                              nn::getTransferBytes(recv, rt.manifest.bf16) !=
                                  nn::getSizeInBytes(recv)};
    rt.define(recv, rt.call<abi::dpc_recv>({rt.context, rt.i64(tag)}));
  });
  table.add<pipe::SendOp>([](pipe::SendOp send, RuntimeLowering &rt) {
    int64_t tag = send.getTagAttr().getInt();
    int64_t peer = send.getPeerAttr().getInt();
    rt.manifest.sends[tag] = {
        tag,
        rt.stage,
        peer,
        peer > rt.stage ? runtime::TransferKind::Activation
                        : runtime::TransferKind::Gradient,
        nn::getSizeInBytes(send.getValue()),
        nn::getTransferBytes(send.getValue(), rt.manifest.bf16) !=
            nn::getSizeInBytes(send.getValue())};
    rt.call<abi::dpc_send>(
        {rt.context, rt.i64(tag), rt.ptrOf(send.getValue())});
  });
  table.add<pipe::StashOp>([](pipe::StashOp stash, RuntimeLowering &rt) {
    int64_t id =
        rt.manifest.stashId(stash.getKey(), stash.getValue(), rt.stage);
    rt.call<abi::dpc_stash>(
        {rt.context, rt.i64(id), rt.ptrOf(stash.getValue())});
  });
  table.add<pipe::RestoreOp>([](pipe::RestoreOp restore, RuntimeLowering &rt) {
    int64_t id =
        rt.manifest.stashId(restore.getKey(), restore.getResult(), rt.stage);
    rt.define(restore, rt.call<abi::dpc_restore>({rt.context, rt.i64(id)}));
  });
  table.add<pipe::ReportLossOp>(
      [](pipe::ReportLossOp report, RuntimeLowering &rt) {
        rt.call<abi::dpc_report_loss>({rt.context, rt.ptrOf(report.getLoss())});
      });
  table.add<pipe::ReportOutputOp>(
      [](pipe::ReportOutputOp report, RuntimeLowering &rt) {
        Value output = report.getOutput();
        rt.manifest.output = shapeOf(output).vec();
        Ptr data = rt.ptrOf(output);
        // Predictions are float32: a boolean or integer output (a mask, a
        // comparison) is reported as its values converted to float.
        if (int64_t dtype = dtypeCode(output); dtype != DPC_DTYPE_F32) {
          int64_t count = nn::getNumElements(shapeOf(output));
          auto converted = rt.call<abi::dpc_alloc>(
              {rt.context, rt.i64(count * int64_t(sizeof(float)))});
          rt.call<abi::dpc_cast>({rt.i64(dtype), rt.i64(DPC_DTYPE_F32), data,
                                  converted, rt.i64(count)});
          data = converted;
        }
        rt.call<abi::dpc_report_output>({rt.context, data});
      });
}
