//===- PipeOps.cpp - pipe dialect operations ------------------------------===//

#include "dialects/pipe/IR/PipeOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "llvm/ADT/DenseMap.h"

using namespace mlir;
using namespace mlir::dpc::pipe;
namespace schedule = ::dpc::schedule;

std::optional<int64_t> mlir::dpc::pipe::getStage(Operation *op) {
  if (auto stage = op->getAttrOfType<IntegerAttr>(PipeDialect::kStageAttrName))
    return stage.getInt();
  return std::nullopt;
}

void mlir::dpc::pipe::setStage(Operation *op, int64_t stage) {
  Builder builder(op->getContext());
  op->setAttr(PipeDialect::kStageAttrName, builder.getI64IntegerAttr(stage));
}

bool mlir::dpc::pipe::isLabels(BlockArgument arg) {
  auto func = dyn_cast<FunctionOpInterface>(arg.getOwner()->getParentOp());
  return func && arg.getOwner()->isEntryBlock() &&
         func.getArgAttr(arg.getArgNumber(), PipeDialect::kLabelsAttrName);
}

int64_t mlir::dpc::pipe::getNumChunks(ModuleOp module) {
  if (auto chunks =
          module->getAttrOfType<IntegerAttr>(PipeDialect::kChunksAttrName))
    return chunks.getInt();
  return 1;
}

bool mlir::dpc::pipe::isBf16(ModuleOp module) {
  auto precision =
      module->getAttrOfType<StringAttr>(PipeDialect::kPrecisionAttrName);
  return precision && precision.getValue() == "bf16";
}

// Peers and tags identify transfers; both are non-negative, and a stage never
// sends to itself.
// (I64Attr accessors are unsigned; read the attributes as signed.)
template <typename TransferOp>
static LogicalResult verifyTransfer(TransferOp op) {
  int64_t peer = op.getPeerAttr().getInt();
  int64_t tag = op.getTagAttr().getInt();
  if (peer < 0)
    return op.emitOpError("expects a non-negative peer stage, got ") << peer;
  if (tag < 0)
    return op.emitOpError("expects a non-negative tag, got ") << tag;
  if (std::optional<int64_t> stage = getStage(op); stage && *stage == peer)
    return op.emitOpError("expects a peer other than its own stage ") << *stage;
  return success();
}

LogicalResult SendOp::verify() { return verifyTransfer(*this); }
LogicalResult RecvOp::verify() { return verifyTransfer(*this); }

LogicalResult StashOp::verify() {
  if (getKey().empty())
    return emitOpError("expects a non-empty key");
  return success();
}

LogicalResult RestoreOp::verify() {
  if (getKey().empty())
    return emitOpError("expects a non-empty key");
  return success();
}

LogicalResult AllReduceOp::verify() {
  if (getReduction() != "sum" && getReduction() != "mean")
    return emitOpError("expects reduction \"sum\" or \"mean\", got \"")
           << getReduction() << "\"";
  return success();
}

LogicalResult ReportLossOp::verify() {
  if (cast<RankedTensorType>(getLoss().getType()).getRank() != 0)
    return emitOpError("expects a 0-d loss");
  return success();
}

// The parameter operand names the accumulator; only nn.param can name one.
static LogicalResult verifyNamesParam(Operation *op, Value param) {
  Operation *def = param.getDefiningOp();
  if (!def || def->getName().getStringRef() != "nn.param")
    return op->emitOpError("expects the param operand to come from nn.param");
  return success();
}

LogicalResult AccumulateGradOp::verify() {
  return verifyNamesParam(*this, getParam());
}

LogicalResult AccumulatedGradOp::verify() {
  return verifyNamesParam(*this, getParam());
}

//===----------------------------------------------------------------------===//
// Schedule programs
//===----------------------------------------------------------------------===//

// The opcode as a bare keyword, followed by a transfer's payload without a
// keyword of its own: `pipe.inst forward ...`, `pipe.inst send_start act ...`.
static ParseResult parseOpcode(OpAsmParser &parser, OpcodeAttr &opcode,
                               PayloadAttr &what) {
  SMLoc loc = parser.getCurrentLocation();
  StringRef keyword;
  if (parser.parseKeyword(&keyword))
    return failure();
  std::optional<Opcode> parsed = symbolizeOpcode(keyword);
  if (!parsed)
    return parser.emitError(loc, "unknown opcode '") << keyword << "'";
  opcode = OpcodeAttr::get(parser.getContext(), *parsed);
  if (succeeded(parser.parseOptionalKeyword(
          &keyword, {stringifyPayload(Payload::Activation),
                     stringifyPayload(Payload::Gradient)})))
    what = PayloadAttr::get(parser.getContext(), *symbolizePayload(keyword));
  return success();
}

static void printOpcode(OpAsmPrinter &printer, InstOp, OpcodeAttr opcode,
                        PayloadAttr what) {
  printer << stringifyOpcode(opcode.getValue());
  if (what)
    printer << ' ' << stringifyPayload(what.getValue());
}

namespace {

// The optional fields of a pipe.inst, as bits.
enum Field : unsigned {
  kWhat = 1,
  kMb = 2,
  kChunk = 4,
  kVersion = 8,
  kPeer = 16,
  kTag = 32,
  kBytes = 64,
};

// Which fields an opcode needs and which it may have besides (the table in
// the op's description, and what schedule.json writes for each op).
struct FieldUse {
  unsigned needs, allows;
};

FieldUse getFieldUse(Opcode opcode) {
  switch (opcode) {
  case Opcode::Load:
  case Opcode::BackwardInput:
  case Opcode::BackwardWeight:
    return {kMb, kChunk};
  case Opcode::Forward:
  case Opcode::Backward:
    return {kMb, kChunk | kVersion};
  case Opcode::SendStart:
  case Opcode::SendFinish:
  case Opcode::RecvStart:
  case Opcode::RecvFinish:
    return {kWhat | kMb | kPeer | kTag, kChunk | kBytes};
  case Opcode::AllReduce:
    // bytes: the gradients summed, for the simulator's all-reduce time.
    return {0, kChunk | kBytes};
  case Opcode::OptimizerStep:
    return {0, 0};
  case Opcode::Stash:
  case Opcode::Restore:
  case Opcode::Free:
    return {kMb, kChunk | kBytes};
  case Opcode::StashWeights:
  case Opcode::RestoreWeights:
  case Opcode::FreeWeights:
    return {kVersion, kChunk | kBytes};
  }
  llvm_unreachable("unknown opcode");
}

} // namespace

LogicalResult InstOp::verify() {
  FieldUse use = getFieldUse(getOpcode());
  StringRef opcode = stringifyOpcode(getOpcode());
  std::pair<Field, Attribute> fields[] = {
      {kWhat, getWhatAttr()},   {kMb, getMbAttr()},
      {kChunk, getChunkAttr()}, {kVersion, getVersionAttr()},
      {kPeer, getPeerAttr()},   {kTag, getTagAttr()},
      {kBytes, getBytesAttr()},
  };
  StringAttr names[] = {getWhatAttrName(),  getMbAttrName(),
                        getChunkAttrName(), getVersionAttrName(),
                        getPeerAttrName(),  getTagAttrName(),
                        getBytesAttrName()};
  for (auto [field, name] : llvm::zip_equal(fields, names)) {
    auto [bit, value] = field;
    if ((use.needs & bit) && !value) {
      if (bit == kWhat)
        return emitOpError() << opcode << " expects a payload (act or grad)";
      return emitOpError() << opcode << " expects '" << name.getValue() << "'";
    }
    if (!((use.needs | use.allows) & bit) && value)
      return emitOpError() << opcode << " does not take '" << name.getValue()
                           << "'";
  }
  return success();
}

LogicalResult ProgramOp::verify() {
  auto parent = cast<ScheduleOp>((*this)->getParentOp());
  if (getRank() >= parent.getRanks())
    return emitOpError("expects a rank below the schedule's ")
           << parent.getRanks() << ", got " << getRank();
  for (Operation &op : getBody()->getOperations())
    if (!isa<InstOp>(op))
      return emitOpError("expects only pipe.inst ops, found '")
             << op.getName() << "'";
  return success();
}

LogicalResult ScheduleOp::verify() {
  schedule::ScheduleKind kind;
  if (!schedule::parseKind(getKind().str(), kind))
    return emitOpError("expects kind gpipe, 1f1b, pipedream, interleaved, "
                       "zb-h1 or custom, got '")
           << getKind() << "'";
  schedule::Schedule layout;
  layout.ranks = getRanks();
  layout.microbatches = getMicrobatches();
  layout.chunks = getChunks();
  if (std::optional<ArrayRef<int64_t>> replicas = getReplicas())
    layout.replicas.assign(replicas->begin(), replicas->end());
  if (std::string problem = layout.checkLayout(); !problem.empty())
    return emitOpError(problem);
  int64_t virtualStages = layout.numVirtualStages();
  if (std::optional<ArrayAttr> stages = getStages();
      stages && int64_t(stages->size()) != virtualStages)
    return emitOpError("expects one #pipe.stage per virtual stage (")
           << virtualStages << "), got " << stages->size();
  return success();
}

LogicalResult ScheduleOp::verifyRegions() {
  llvm::DenseMap<uint32_t, ProgramOp> programs;
  for (Operation &op : getBody()->getOperations()) {
    auto program = dyn_cast<ProgramOp>(op);
    if (!program)
      return emitOpError("expects only pipe.program ops, found '")
             << op.getName() << "'";
    auto [it, inserted] = programs.try_emplace(program.getRank(), program);
    if (!inserted) {
      InFlightDiagnostic diag =
          program.emitOpError("duplicates the program of rank ")
          << program.getRank();
      diag.attachNote(it->second.getLoc()) << "the first one";
      return diag;
    }
  }
  for (uint32_t rank = 0; rank < getRanks(); ++rank)
    if (!programs.count(rank))
      return emitOpError("expects a pipe.program for each of its ")
             << getRanks() << " ranks, rank " << rank << " has none";
  return success();
}

void ScheduleOp::build(OpBuilder &builder, OperationState &state,
                       const schedule::Schedule &streams) {
  MLIRContext *context = builder.getContext();
  SmallVector<Attribute> stages;
  for (const schedule::StageInfo &info : streams.stages)
    stages.push_back(StageAttr::get(
        context, APFloat(info.forward), APFloat(info.backwardInput),
        APFloat(info.backwardWeight), info.paramBytes, info.weightBytes,
        info.activationBytes, info.outputBytes));
  build(builder, state, builder.getStringAttr(schedule::kindName(streams.kind)),
        streams.ranks, streams.microbatches, streams.chunks,
        streams.hasReplicas()
            ? builder.getDenseI64ArrayAttr(SmallVector<int64_t>(
                  streams.replicas.begin(), streams.replicas.end()))
            : DenseI64ArrayAttr(),
        streams.verticalSync, builder.getArrayAttr(stages));

  OpBuilder::InsertionGuard guard(builder);
  builder.createBlock(state.regions.front().get());
  // Only the fields an instruction uses, as schedule.json writes them.
  auto index = [&](int32_t value) {
    return value >= 0 ? builder.getI32IntegerAttr(value) : IntegerAttr();
  };
  for (auto [rank, stream] : llvm::enumerate(streams.programs)) {
    OpBuilder::InsertionGuard programGuard(builder);
    auto program = builder.create<ProgramOp>(state.location, rank);
    builder.createBlock(&program.getBodyRegion());
    for (const schedule::Instruction &inst : stream) {
      std::optional<Opcode> opcode =
          symbolizeOpcode(schedule::opJsonName(inst.op));
      assert(opcode && "pipe.inst opcodes are schedule.json's op names");
      PayloadAttr what;
      if (inst.what != schedule::Payload::None)
        what =
            PayloadAttr::get(context, inst.what == schedule::Payload::Activation
                                          ? Payload::Activation
                                          : Payload::Gradient);
      builder.create<InstOp>(
          state.location, OpcodeAttr::get(context, *opcode), what,
          index(inst.mb), inst.chunk ? index(inst.chunk) : IntegerAttr(),
          index(inst.version), index(inst.peer), index(inst.tag),
          inst.bytes ? builder.getI64IntegerAttr(inst.bytes) : IntegerAttr());
    }
  }
}

// The instruction a verified pipe.inst stands for.
static schedule::Instruction toInstruction(InstOp op) {
  schedule::Instruction inst;
  bool known =
      schedule::parseOpJsonName(stringifyOpcode(op.getOpcode()).str(), inst.op);
  assert(known && "pipe.inst opcodes are schedule.json's op names");
  (void)known;
  if (std::optional<Payload> what = op.getWhat())
    inst.what = *what == Payload::Activation ? schedule::Payload::Activation
                                             : schedule::Payload::Gradient;
  inst.mb = op.getMb() ? int32_t(*op.getMb()) : -1;
  inst.chunk = op.getChunk() ? int32_t(*op.getChunk()) : 0;
  inst.version = op.getVersion() ? int32_t(*op.getVersion()) : -1;
  inst.peer = op.getPeer() ? int32_t(*op.getPeer()) : -1;
  inst.tag = op.getTag() ? int32_t(*op.getTag()) : -1;
  inst.bytes = op.getBytes() ? int64_t(*op.getBytes()) : 0;
  return inst;
}

schedule::Schedule ScheduleOp::toSchedule() {
  schedule::Schedule streams;
  bool known = schedule::parseKind(getKind().str(), streams.kind);
  assert(known && "verified kind");
  (void)known;
  streams.ranks = getRanks();
  streams.microbatches = getMicrobatches();
  streams.chunks = getChunks();
  if (std::optional<ArrayRef<int64_t>> replicas = getReplicas())
    streams.replicas.assign(replicas->begin(), replicas->end());
  streams.verticalSync = getVerticalSync();
  streams.stages.assign(streams.numVirtualStages(), schedule::StageInfo());
  if (std::optional<ArrayAttr> stages = getStages()) {
    for (auto [info, attr] :
         llvm::zip_equal(streams.stages, stages->getAsRange<StageAttr>())) {
      info.forward = attr.getForwardMs().convertToDouble();
      info.backwardInput = attr.getBackwardInputMs().convertToDouble();
      info.backwardWeight = attr.getBackwardWeightMs().convertToDouble();
      info.paramBytes = attr.getParamBytes();
      info.weightBytes = attr.getWeightBytes();
      info.activationBytes = attr.getActivationBytes();
      info.outputBytes = attr.getOutputBytes();
    }
  }
  streams.programs.assign(streams.ranks, {});
  for (ProgramOp program : getPrograms())
    for (InstOp inst : program.getInstructions())
      streams.programs[program.getRank()].push_back(toInstruction(inst));
  return streams;
}

Operation *ScheduleOp::lookupInstruction(int rank, int index) {
  if (rank < 0)
    return *this;
  for (ProgramOp program : getPrograms()) {
    if (int64_t(program.getRank()) != rank)
      continue;
    if (index >= 0)
      for (auto [i, inst] : llvm::enumerate(program.getInstructions()))
        if (int64_t(i) == index)
          return inst;
    return program;
  }
  return *this;
}

#define GET_OP_CLASSES
#include "dialects/pipe/IR/PipeOps.cpp.inc"
