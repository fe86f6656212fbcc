//===- OnnxImporter.cpp - ONNX to nn dialect ------------------------------===//
//
// The import runs in three steps:
//   1. the onnx library parses and checks the model, converts one older than
//      kMinOpset to kMinOpset, and infers shapes (after the batch size is
//      specialised, if asked);
//   2. the importer walks the (topologically sorted) nodes and dispatches
//      each through `kHandlers`, keyed by op type and by the since-version
//      of the op's schema at the model's opset;
//   3. nodes whose inputs are all known at import time (Shape of a statically
//      shaped tensor, and the Gather/Unsqueeze/Concat/... arithmetic that
//      exporters build on it) are evaluated on the host, so that, for
//      example, Reshape receives its target shape as a constant.
//
//===----------------------------------------------------------------------===//

#include "frontends/onnx/OnnxImporter.h"

#include "dialects/nn/IR/NNOps.h"
#include "dialects/nn/IR/ShapeInference.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Verifier.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/ADT/StringSwitch.h"

#include "onnx/checker.h"
#include "onnx/defs/schema.h"
#include "onnx/onnx_pb.h"
#include "onnx/shape_inference/implementation.h"
#include "onnx/version_converter/convert.h"

#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <numeric>
#include <optional>
#include <sstream>

using namespace mlir;
using namespace mlir::dpc;
using namespace mlir::dpc::onnx_frontend;
using nn::shapeOf;

namespace {

/// A tensor known at import time: a Constant node, an initializer read by a
/// shape computation, or the folded result of one.
struct HostTensor {
  std::vector<int64_t> shape;
  bool isFloat = false;
  // Booleans are integers 0 and 1 with this mark (masks, Where's condition).
  bool isBool = false;
  std::vector<int64_t> ints;
  std::vector<float> floats;

  int64_t size() const { return isFloat ? floats.size() : ints.size(); }
  static HostTensor vector(std::vector<int64_t> values) {
    HostTensor t;
    t.shape = {static_cast<int64_t>(values.size())};
    t.ints = std::move(values);
    return t;
  }

  /// A tensor of `shape` whose element at each multi-index is this one's
  /// element at offset `source(index)`, for folds that move or select
  /// elements (Transpose, Slice).
  HostTensor
  gather(ArrayRef<int64_t> shape,
         llvm::function_ref<int64_t(ArrayRef<int64_t>)> source) const {
    HostTensor result;
    result.isFloat = isFloat;
    result.isBool = isBool;
    result.shape.assign(shape.begin(), shape.end());
    int64_t count = 1;
    for (int64_t dim : shape)
      count *= dim;
    std::vector<int64_t> index(shape.size(), 0);
    for (int64_t e = 0; e < count; ++e) {
      int64_t from = source(index);
      if (isFloat)
        result.floats.push_back(floats[from]);
      else
        result.ints.push_back(ints[from]);
      // The next multi-index, last dimension fastest.
      for (size_t d = shape.size(); d-- > 0;) {
        if (++index[d] < shape[d])
          break;
        index[d] = 0;
      }
    }
    return result;
  }

  /// Row-major strides of this tensor's shape.
  std::vector<int64_t> strides() const {
    std::vector<int64_t> result(shape.size(), 1);
    for (size_t d = shape.size(); d-- > 1;)
      result[d - 1] = result[d] * shape[d];
    return result;
  }
};

class Importer {
public:
  Importer(MLIRContext *context, StringRef fileName, int64_t opset)
      : context(context), builder(context), fileName(fileName.str()),
        opset(opset) {}

  /// The batch size the model was exported at and the one it is imported
  /// at (`--microbatch-size`), when they differ.
  void setRebatch(int64_t exported, int64_t imported) {
    exportedBatch = exported;
    importedBatch = imported;
  }
  /// Slices of float constants become nn.slice of the whole constant
  /// (shape buckets: the constant is the same for every bucket).
  void setSliceFloatConstants() { sliceFloatConstants = true; }

  LogicalResult importGraph(const onnx::GraphProto &graph,
                            ImportedModel &model);

private:
  using Handler = LogicalResult (Importer::*)(const onnx::NodeProto &);
  struct HandlerEntry {
    const char *opType;
    int sinceVersion;
    Handler handler;
  };
  static const HandlerEntry kHandlers[];

  LogicalResult importNode(const onnx::NodeProto &node);

  // Handlers that build nn ops.
  LogicalResult importConv(const onnx::NodeProto &node);
  LogicalResult importMaxPool(const onnx::NodeProto &node);
  LogicalResult importAveragePool(const onnx::NodeProto &node);
  LogicalResult importGlobalAveragePool(const onnx::NodeProto &node);
  LogicalResult importBatchNormalization(const onnx::NodeProto &node);
  LogicalResult importLayerNormalization(const onnx::NodeProto &node);
  LogicalResult importLstm(const onnx::NodeProto &node);
  LogicalResult importExpand(const onnx::NodeProto &node);
  // Relu and the other one-input elementwise functions.
  template <typename OpTy>
  LogicalResult importUnary(const onnx::NodeProto &node);
  template <typename OpTy>
  LogicalResult importUnaryFunction(const onnx::NodeProto &node);
  LogicalResult importSplit(const onnx::NodeProto &node);
  LogicalResult importClip(const onnx::NodeProto &node);
  LogicalResult importPad(const onnx::NodeProto &node);
  LogicalResult importDropout(const onnx::NodeProto &node);
  LogicalResult importConstantOfShape(const onnx::NodeProto &node);
  LogicalResult importActivationSlice(const onnx::NodeProto &node);
  struct SliceInputs {
    std::vector<int64_t> starts, ends, axes, steps;
  };
  FailureOr<SliceInputs> sliceInputs(const onnx::NodeProto &node);
  LogicalResult importGemm(const onnx::NodeProto &node);
  LogicalResult importMatMul(const onnx::NodeProto &node);
  // Add, Sub, Mul and Div: tensor ops, or folded on the host when both
  // operands are known at import time (shape arithmetic, constants).
  template <typename OpTy>
  LogicalResult importBinary(const onnx::NodeProto &node);
  // Pow by a constant exponent of 1, 2 or 1/2.
  LogicalResult importPow(const onnx::NodeProto &node);
  // ReduceMean and ReduceSum.
  LogicalResult importReduce(const onnx::NodeProto &node);
  // Softmax and LogSoftmax.
  template <typename OpTy>
  LogicalResult importSoftmax(const onnx::NodeProto &node);
  LogicalResult importTranspose(const onnx::NodeProto &node);
  LogicalResult importFlatten(const onnx::NodeProto &node);
  LogicalResult importReshape(const onnx::NodeProto &node);
  LogicalResult importIdentity(const onnx::NodeProto &node);
  // Handlers evaluated on the host (shape subgraphs).
  LogicalResult importConstant(const onnx::NodeProto &node);
  LogicalResult importShape(const onnx::NodeProto &node);
  LogicalResult importGather(const onnx::NodeProto &node);
  LogicalResult importTensorGather(const onnx::NodeProto &node);
  // The input of a Reshape, Squeeze or Unsqueeze: known at import time, or
  // an activation.
  struct Reshaped {
    std::optional<HostTensor> host;
    Value value;
    ArrayRef<int64_t> shape() const {
      return host ? ArrayRef<int64_t>(host->shape) : shapeOf(value);
    }
  };
  FailureOr<Reshaped> getReshaped(const onnx::NodeProto &node);
  LogicalResult defineReshaped(const onnx::NodeProto &node, Reshaped input,
                               ArrayRef<int64_t> shape);
  LogicalResult rebatchTarget(const onnx::NodeProto &node,
                              ArrayRef<int64_t> inShape,
                              std::vector<int64_t> &shape, int64_t inferred);
  LogicalResult importUnsqueeze(const onnx::NodeProto &node);
  LogicalResult importSqueeze(const onnx::NodeProto &node);
  LogicalResult importConcat(const onnx::NodeProto &node);
  LogicalResult importSlice(const onnx::NodeProto &node);
  LogicalResult importCast(const onnx::NodeProto &node);
  // Masks: Equal, Less, Greater, LessOrEqual, GreaterOrEqual; And, Or, Xor;
  // Not; Where; Trilu (constants only).
  LogicalResult importCompare(const onnx::NodeProto &node);
  LogicalResult importNot(const onnx::NodeProto &node);
  LogicalResult importWhere(const onnx::NodeProto &node);
  LogicalResult importTrilu(const onnx::NodeProto &node);
  // An integer or boolean constant read by tensor ops: a frozen float
  // parameter cast to its type.
  FailureOr<Value> materializeConstant(const onnx::NodeProto &node,
                                       const std::string &name,
                                       const HostTensor &tensor);

  // Diagnostics name the node, its op type and the opset.
  Location locOf(const onnx::NodeProto &node);
  InFlightDiagnostic nodeError(const onnx::NodeProto &node);
  std::string nodeName(const onnx::NodeProto &node) const;

  // Operands.
  bool hasInput(const onnx::NodeProto &node, int index) const;
  bool isHost(const std::string &name) const;
  FailureOr<Value> getValue(const onnx::NodeProto &node, int index);
  FailureOr<HostTensor> getHost(const onnx::NodeProto &node, int index);
  FailureOr<std::vector<int64_t>> getHostInts(const onnx::NodeProto &node,
                                              int index);
  LogicalResult define(const onnx::NodeProto &node, Value value);
  LogicalResult defineHost(const onnx::NodeProto &node, HostTensor tensor);

  // Attributes.
  const onnx::AttributeProto *findAttr(const onnx::NodeProto &node,
                                       StringRef name) const;
  int64_t getInt(const onnx::NodeProto &node, StringRef name,
                 int64_t otherwise) const;
  float getFloat(const onnx::NodeProto &node, StringRef name,
                 float otherwise) const;
  std::string getString(const onnx::NodeProto &node, StringRef name,
                        StringRef otherwise) const;
  std::vector<int64_t> getInts(const onnx::NodeProto &node, StringRef name,
                               std::vector<int64_t> otherwise) const;
  LogicalResult checkNoOutputsBeyond(const onnx::NodeProto &node, int count);
  // The window of MaxPool and AveragePool and the result shape it gives.
  struct PoolWindow {
    std::vector<int64_t> kernel, strides, pads;
    bool ceilMode = false;
    nn::Shape resultShape;
  };
  FailureOr<PoolWindow> poolWindow(const onnx::NodeProto &node,
                                   ArrayRef<int64_t> input);
  FailureOr<std::vector<int64_t>> windowPads(const onnx::NodeProto &node,
                                             ArrayRef<int64_t> input,
                                             ArrayRef<int64_t> kernel,
                                             ArrayRef<int64_t> strides,
                                             ArrayRef<int64_t> dilations);

  FailureOr<HostTensor> readTensor(const onnx::TensorProto &tensor,
                                   Location loc);
  FailureOr<Type> elementType(int32_t onnxType, Location loc, StringRef what);
  RankedTensorType tensorType(ArrayRef<int64_t> shape, Type elementType) {
    return RankedTensorType::get(shape, elementType);
  }

  MLIRContext *context;
  OpBuilder builder;
  std::string fileName;
  int64_t opset;
  int64_t exportedBatch = 0, importedBatch = 0;
  const onnx::NodeProto *currentNode = nullptr;
  // Dropout ops imported so far: the next one's mask_id.
  int64_t numDropouts = 0;

  llvm::StringMap<Value> values;
  llvm::StringMap<HostTensor> hostValues;
  bool sliceFloatConstants = false;
  llvm::StringMap<const onnx::TensorProto *> initializers;
  // Outputs of imported nodes that have no value in the IR, and why.
  llvm::StringMap<std::string> unreadable;
  ImportedModel *model = nullptr;
};

// Op types and the since-versions of their schemas that the importer
// implements: the versions in effect at kMinOpset and every later version up
// to the onnx library's newest opset whose changes the handler covers (most
// changed only the accepted types).
const Importer::HandlerEntry Importer::kHandlers[] = {
    {"Conv", 11, &Importer::importConv},
    {"MaxPool", 12, &Importer::importMaxPool},
    {"AveragePool", 11, &Importer::importAveragePool},
    {"GlobalAveragePool", 1, &Importer::importGlobalAveragePool},
    {"BatchNormalization", 9, &Importer::importBatchNormalization},
    {"BatchNormalization", 14, &Importer::importBatchNormalization},
    {"BatchNormalization", 15, &Importer::importBatchNormalization},
    {"LayerNormalization", 17, &Importer::importLayerNormalization},
    {"LSTM", 7, &Importer::importLstm},
    {"LSTM", 14, &Importer::importLstm},
    {"Expand", 13, &Importer::importExpand},
    {"Relu", 13, &Importer::importUnary<nn::ReluOp>},
    {"Relu", 14, &Importer::importUnary<nn::ReluOp>},
// The elementwise functions, one per row of the runtime's table.
#define DPC_UNARY_FUNCTION(CODE, NAME, SINCE, ...)                             \
  {#NAME, SINCE, &Importer::importUnaryFunction<nn::NAME##Op>},
#include "dpc/runtime/UnaryFunctions.def"
    {"LeakyRelu", 16, &Importer::importUnaryFunction<nn::LeakyReluOp>},
    {"Gemm", 13, &Importer::importGemm},
    {"MatMul", 13, &Importer::importMatMul},
    {"Add", 13, &Importer::importBinary<nn::AddOp>},
    {"Add", 14, &Importer::importBinary<nn::AddOp>},
    {"Sub", 13, &Importer::importBinary<nn::SubOp>},
    {"Sub", 14, &Importer::importBinary<nn::SubOp>},
    {"Mul", 13, &Importer::importBinary<nn::MulOp>},
    {"Mul", 14, &Importer::importBinary<nn::MulOp>},
    {"Div", 13, &Importer::importBinary<nn::DivOp>},
    {"Div", 14, &Importer::importBinary<nn::DivOp>},
    {"Pow", 13, &Importer::importPow},
    {"Pow", 15, &Importer::importPow},
    {"ReduceMean", 13, &Importer::importReduce},
    {"ReduceSum", 13, &Importer::importReduce},
    {"Softmax", 13, &Importer::importSoftmax<nn::SoftmaxOp>},
    {"LogSoftmax", 13, &Importer::importSoftmax<nn::LogSoftmaxOp>},
    {"Transpose", 13, &Importer::importTranspose},
    {"Flatten", 13, &Importer::importFlatten},
    {"Reshape", 13, &Importer::importReshape},
    {"Reshape", 14, &Importer::importReshape},
    {"Identity", 13, &Importer::importIdentity},
    {"Identity", 14, &Importer::importIdentity},
    {"Identity", 16, &Importer::importIdentity},
    {"Constant", 13, &Importer::importConstant},
    {"Shape", 13, &Importer::importShape},
    {"Shape", 15, &Importer::importShape},
    {"Gather", 13, &Importer::importGather},
    {"Unsqueeze", 13, &Importer::importUnsqueeze},
    {"Squeeze", 13, &Importer::importSqueeze},
    {"Concat", 13, &Importer::importConcat},
    {"Slice", 13, &Importer::importSlice},
    {"Split", 13, &Importer::importSplit},
    {"Clip", 13, &Importer::importClip},
    {"Pad", 13, &Importer::importPad},
    {"Dropout", 13, &Importer::importDropout},
    {"ConstantOfShape", 9, &Importer::importConstantOfShape},
    {"Cast", 13, &Importer::importCast},
    {"Equal", 13, &Importer::importCompare},
    {"Less", 13, &Importer::importCompare},
    {"Greater", 13, &Importer::importCompare},
    {"LessOrEqual", 16, &Importer::importCompare},
    {"GreaterOrEqual", 16, &Importer::importCompare},
    {"And", 7, &Importer::importCompare},
    {"Or", 7, &Importer::importCompare},
    {"Xor", 7, &Importer::importCompare},
    {"Not", 1, &Importer::importNot},
    {"Where", 9, &Importer::importWhere},
    {"Where", 16, &Importer::importWhere},
    {"Trilu", 14, &Importer::importTrilu},
};

//===----------------------------------------------------------------------===//
// Diagnostics
//===----------------------------------------------------------------------===//

std::string Importer::nodeName(const onnx::NodeProto &node) const {
  return node.name().empty() ? "<unnamed " + node.op_type() + ">" : node.name();
}

Location Importer::locOf(const onnx::NodeProto &node) {
  Location file = FileLineColLoc::get(context, fileName, 0, 0);
  return NameLoc::get(StringAttr::get(context, nodeName(node)), file);
}

InFlightDiagnostic Importer::nodeError(const onnx::NodeProto &node) {
  InFlightDiagnostic diag = emitError(locOf(node));
  diag << "ONNX node '" << nodeName(node) << "' (" << node.op_type()
       << ", opset " << opset << "): ";
  return diag;
}

//===----------------------------------------------------------------------===//
// Tensors and attributes
//===----------------------------------------------------------------------===//

FailureOr<Type> Importer::elementType(int32_t onnxType, Location loc,
                                      StringRef what) {
  switch (onnxType) {
  case onnx::TensorProto::FLOAT:
    return builder.getF32Type();
  case onnx::TensorProto::FLOAT16:
    return builder.getF16Type();
  case onnx::TensorProto::BFLOAT16:
    return builder.getBF16Type();
  case onnx::TensorProto::INT64:
    return builder.getI64Type();
  case onnx::TensorProto::INT32:
    return builder.getI32Type();
  default:
    return emitError(loc) << what << " has element type "
                          << onnx::TensorProto::DataType_Name(
                                 static_cast<onnx::TensorProto::DataType>(
                                     onnxType))
                          << ", which dpc does not support";
  }
}

FailureOr<HostTensor> Importer::readTensor(const onnx::TensorProto &tensor,
                                           Location loc) {
  if (tensor.data_location() == onnx::TensorProto::EXTERNAL)
    return emitError(loc) << "tensor '" << tensor.name()
                          << "' keeps its data in an external file, which "
                             "dpc does not read yet";
  HostTensor t;
  t.shape.assign(tensor.dims().begin(), tensor.dims().end());
  int64_t count = nn::getNumElements(t.shape);
  const std::string &raw = tensor.raw_data();
  auto readRaw = [&](auto &out, size_t elementSize) -> LogicalResult {
    using T = typename std::decay_t<decltype(out)>::value_type;
    if (raw.size() != static_cast<size_t>(count) * elementSize)
      return emitError(loc)
             << "tensor '" << tensor.name() << "' has " << raw.size()
             << " bytes of data for " << count << " elements";
    out.resize(count);
    std::memcpy(out.data(), raw.data(), raw.size());
    (void)sizeof(T);
    return success();
  };
  switch (tensor.data_type()) {
  case onnx::TensorProto::FLOAT:
    t.isFloat = true;
    if (!raw.empty()) {
      if (failed(readRaw(t.floats, sizeof(float))))
        return failure();
    } else {
      t.floats.assign(tensor.float_data().begin(), tensor.float_data().end());
    }
    break;
  case onnx::TensorProto::INT64:
    if (!raw.empty()) {
      if (failed(readRaw(t.ints, sizeof(int64_t))))
        return failure();
    } else {
      t.ints.assign(tensor.int64_data().begin(), tensor.int64_data().end());
    }
    break;
  case onnx::TensorProto::INT32: {
    std::vector<int32_t> narrow;
    if (!raw.empty()) {
      if (failed(readRaw(narrow, sizeof(int32_t))))
        return failure();
    } else {
      narrow.assign(tensor.int32_data().begin(), tensor.int32_data().end());
    }
    t.ints.assign(narrow.begin(), narrow.end());
    break;
  }
  case onnx::TensorProto::BOOL: {
    // As integers 0 and 1 (Dropout's training_mode, masks of shapes).
    t.isBool = true;
    std::vector<uint8_t> bytes;
    if (!raw.empty()) {
      if (failed(readRaw(bytes, 1)))
        return failure();
      t.ints.assign(bytes.begin(), bytes.end());
    } else {
      t.ints.assign(tensor.int32_data().begin(), tensor.int32_data().end());
    }
    break;
  }
  default:
    return emitError(loc) << "tensor '" << tensor.name()
                          << "' has an element type dpc cannot read "
                             "(only float32, int64, int32 and bool)";
  }
  if (t.size() != count)
    return emitError(loc) << "tensor '" << tensor.name() << "' has " << t.size()
                          << " elements, its shape says " << count;
  return t;
}

const onnx::AttributeProto *Importer::findAttr(const onnx::NodeProto &node,
                                               StringRef name) const {
  for (const onnx::AttributeProto &attr : node.attribute())
    if (attr.name() == name)
      return &attr;
  return nullptr;
}

int64_t Importer::getInt(const onnx::NodeProto &node, StringRef name,
                         int64_t otherwise) const {
  const onnx::AttributeProto *attr = findAttr(node, name);
  return attr ? attr->i() : otherwise;
}

float Importer::getFloat(const onnx::NodeProto &node, StringRef name,
                         float otherwise) const {
  const onnx::AttributeProto *attr = findAttr(node, name);
  return attr ? attr->f() : otherwise;
}

std::string Importer::getString(const onnx::NodeProto &node, StringRef name,
                                StringRef otherwise) const {
  const onnx::AttributeProto *attr = findAttr(node, name);
  return attr ? attr->s() : otherwise.str();
}

std::vector<int64_t> Importer::getInts(const onnx::NodeProto &node,
                                       StringRef name,
                                       std::vector<int64_t> otherwise) const {
  const onnx::AttributeProto *attr = findAttr(node, name);
  if (!attr)
    return otherwise;
  return std::vector<int64_t>(attr->ints().begin(), attr->ints().end());
}

//===----------------------------------------------------------------------===//
// Operands and results
//===----------------------------------------------------------------------===//

bool Importer::hasInput(const onnx::NodeProto &node, int index) const {
  return index < node.input_size() && !node.input(index).empty();
}

bool Importer::isHost(const std::string &name) const {
  return hostValues.count(name) ||
         (initializers.count(name) &&
          initializers.lookup(name)->data_type() != onnx::TensorProto::FLOAT);
}

FailureOr<Value> Importer::getValue(const onnx::NodeProto &node, int index) {
  if (!hasInput(node, index))
    return nodeError(node) << "expects input " << index;
  const std::string &name = node.input(index);
  if (Value value = values.lookup(name))
    return value;
  if (const onnx::TensorProto *init = initializers.lookup(name)) {
    // A float initializer used by compute is a trainable parameter; its
    // data goes to the weights file and the IR reads it by name.
    FailureOr<HostTensor> data = readTensor(*init, locOf(node));
    if (failed(data))
      return failure();
    if (!data->isFloat)
      return materializeConstant(node, name, *data);
    auto type = tensorType(data->shape, builder.getF32Type());
    Value param = builder.create<nn::ParamOp>(
        NameLoc::get(builder.getStringAttr(name)), type, name);
    model->params.push_back({name, data->shape, std::move(data->floats)});
    values[name] = param;
    return param;
  }
  if (auto host = hostValues.find(name); host != hostValues.end()) {
    // A float constant in tensor arithmetic is read like a parameter, from
    // the weights file, but never trained.
    if (!host->second.isFloat)
      return materializeConstant(node, name, host->second);
    auto type = tensorType(host->second.shape, builder.getF32Type());
    auto param = builder.create<nn::ParamOp>(
        NameLoc::get(builder.getStringAttr(name)), type, StringRef(name),
        /*frozen=*/true);
    model->params.push_back({name, host->second.shape, host->second.floats});
    values[name] = param;
    return Value(param);
  }
  if (auto it = unreadable.find(name); it != unreadable.end())
    return nodeError(node) << "reads '" << name << "', " << it->second;
  return nodeError(node) << "input '" << name << "' is not defined";
}

FailureOr<Value> Importer::materializeConstant(const onnx::NodeProto &node,
                                               const std::string &name,
                                               const HostTensor &tensor) {
  // The weights file holds float32, exact for integers up to 2^24.
  constexpr int64_t kExact = int64_t(1) << 24;
  std::vector<float> floats;
  for (int64_t v : tensor.ints) {
    if (v > kExact || v < -kExact)
      return nodeError(node)
             << "input '" << name << "' holds the integer " << v
             << ", beyond the 2^24 that a constant in tensor arithmetic can "
                "hold exactly";
    floats.push_back(float(v));
  }
  auto param = builder.create<nn::ParamOp>(
      NameLoc::get(builder.getStringAttr(name)),
      tensorType(tensor.shape, builder.getF32Type()), StringRef(name),
      /*frozen=*/true);
  model->params.push_back({name, tensor.shape, std::move(floats)});
  Type elementType =
      tensor.isBool ? builder.getI1Type() : Type(builder.getI64Type());
  Value value = builder.create<nn::CastOp>(
      locOf(node), tensorType(tensor.shape, elementType), param);
  values[name] = value;
  return value;
}

FailureOr<HostTensor> Importer::getHost(const onnx::NodeProto &node,
                                        int index) {
  if (!hasInput(node, index))
    return nodeError(node) << "expects input " << index;
  const std::string &name = node.input(index);
  auto it = hostValues.find(name);
  if (it != hostValues.end())
    return it->second;
  if (const onnx::TensorProto *init = initializers.lookup(name))
    return readTensor(*init, locOf(node));
  return nodeError(node) << "input '" << name
                         << "' must be known at import time (a constant or "
                            "a shape computation)";
}

FailureOr<std::vector<int64_t>>
Importer::getHostInts(const onnx::NodeProto &node, int index) {
  FailureOr<HostTensor> t = getHost(node, index);
  if (failed(t))
    return failure();
  if (t->isFloat || t->shape.size() > 1)
    return nodeError(node) << "expects input '" << node.input(index)
                           << "' to be an integer scalar or vector";
  return t->ints;
}

LogicalResult Importer::define(const onnx::NodeProto &node, Value value) {
  if (node.output_size() < 1 || node.output(0).empty())
    return nodeError(node) << "has no output";
  values[node.output(0)] = value;
  return success();
}

LogicalResult Importer::defineHost(const onnx::NodeProto &node,
                                   HostTensor tensor) {
  if (node.output_size() < 1 || node.output(0).empty())
    return nodeError(node) << "has no output";
  hostValues[node.output(0)] = std::move(tensor);
  return success();
}

LogicalResult Importer::checkNoOutputsBeyond(const onnx::NodeProto &node,
                                             int count) {
  for (int i = count; i < node.output_size(); ++i)
    if (!node.output(i).empty())
      return nodeError(node) << "output " << i << " ('" << node.output(i)
                             << "') is not supported";
  return success();
}

// Resolves auto_pad into explicit [top, left, bottom, right] pads.
FailureOr<std::vector<int64_t>>
Importer::windowPads(const onnx::NodeProto &node, ArrayRef<int64_t> input,
                     ArrayRef<int64_t> kernel, ArrayRef<int64_t> strides,
                     ArrayRef<int64_t> dilations) {
  std::string autoPad = getString(node, "auto_pad", "NOTSET");
  if (autoPad == "NOTSET")
    return getInts(node, "pads", {0, 0, 0, 0});
  if (autoPad == "VALID")
    return std::vector<int64_t>{0, 0, 0, 0};
  if (autoPad != "SAME_UPPER" && autoPad != "SAME_LOWER")
    return nodeError(node) << "unknown auto_pad '" << autoPad << "'";
  if (kernel.size() != 2 || strides.size() != 2 || dilations.size() != 2 ||
      input.size() != 4)
    return nodeError(node) << "expects 2-D windows on an NCHW input";
  std::vector<int64_t> pads(4);
  for (int i = 0; i < 2; ++i) {
    int64_t in = input[2 + i];
    int64_t out = (in + strides[i] - 1) / strides[i];
    int64_t total = std::max<int64_t>(
        (out - 1) * strides[i] + (kernel[i] - 1) * dilations[i] + 1 - in, 0);
    int64_t small = total / 2, large = total - small;
    pads[i] = autoPad == "SAME_UPPER" ? small : large;
    pads[2 + i] = autoPad == "SAME_UPPER" ? large : small;
  }
  return pads;
}

//===----------------------------------------------------------------------===//
// Handlers: nn ops
//===----------------------------------------------------------------------===//

LogicalResult Importer::importConv(const onnx::NodeProto &node) {
  FailureOr<Value> input = getValue(node, 0);
  FailureOr<Value> filter =
      failed(input) ? FailureOr<Value>(failure()) : getValue(node, 1);
  if (failed(filter))
    return failure();
  ArrayRef<int64_t> inShape = shapeOf(*input), wShape = shapeOf(*filter);
  if (inShape.size() != 4)
    return nodeError(node) << "only 2-D convolution (rank-4 input) is "
                              "supported, got input of shape "
                           << nn::formatShape(inShape);
  if (wShape.size() != 4)
    return nodeError(node) << "expects a rank-4 filter (output channels, "
                              "input channels, height, width), got '"
                           << node.input(1) << "' of shape "
                           << nn::formatShape(wShape);
  std::vector<int64_t> kernel =
      getInts(node, "kernel_shape", {wShape.begin() + 2, wShape.end()});
  if (ArrayRef<int64_t>(kernel) != wShape.drop_front(2))
    return nodeError(node) << "kernel_shape does not match the filter shape "
                           << nn::formatShape(wShape);
  std::vector<int64_t> strides = getInts(node, "strides", {1, 1});
  std::vector<int64_t> dilations = getInts(node, "dilations", {1, 1});
  FailureOr<std::vector<int64_t>> pads =
      windowPads(node, inShape, kernel, strides, dilations);
  if (failed(pads))
    return failure();
  int64_t groups = getInt(node, "group", 1);
  FailureOr<nn::Shape> shape =
      nn::inferConv2dShape(inShape, wShape, strides, *pads, dilations, groups,
                           [&] { return nodeError(node); });
  if (failed(shape))
    return failure();
  Value bias;
  if (hasInput(node, 2)) {
    FailureOr<Value> b = getValue(node, 2);
    if (failed(b))
      return failure();
    bias = *b;
  }
  auto type = tensorType(
      *shape, cast<RankedTensorType>(input->getType()).getElementType());
  Value result = builder.create<nn::Conv2dOp>(
      locOf(node), type, *input, *filter, bias,
      builder.getDenseI64ArrayAttr(strides),
      builder.getDenseI64ArrayAttr(*pads),
      builder.getDenseI64ArrayAttr(dilations),
      builder.getI64IntegerAttr(groups), builder.getStringAttr("direct"));
  return define(node, result);
}

FailureOr<Importer::PoolWindow>
Importer::poolWindow(const onnx::NodeProto &node, ArrayRef<int64_t> input) {
  PoolWindow window;
  window.kernel = getInts(node, "kernel_shape", {});
  window.strides = getInts(node, "strides", {1, 1});
  std::vector<int64_t> dilations = getInts(node, "dilations", {1, 1});
  if (dilations != std::vector<int64_t>{1, 1})
    return nodeError(node) << "dilated pooling is not supported";
  FailureOr<std::vector<int64_t>> pads =
      windowPads(node, input, window.kernel, window.strides, dilations);
  if (failed(pads))
    return failure();
  window.pads = std::move(*pads);
  window.ceilMode = getInt(node, "ceil_mode", 0) != 0;
  FailureOr<nn::Shape> shape =
      nn::inferPool2dShape(input, window.kernel, window.strides, window.pads,
                           window.ceilMode, [&] { return nodeError(node); });
  if (failed(shape))
    return failure();
  window.resultShape = std::move(*shape);
  return window;
}

LogicalResult Importer::importMaxPool(const onnx::NodeProto &node) {
  if (failed(checkNoOutputsBeyond(node, 1)))
    return failure();
  FailureOr<Value> input = getValue(node, 0);
  if (failed(input))
    return failure();
  if (getInt(node, "storage_order", 0) != 0)
    return nodeError(node) << "storage_order 1 is not supported";
  FailureOr<PoolWindow> w = poolWindow(node, shapeOf(*input));
  if (failed(w))
    return failure();
  auto type =
      tensorType(w->resultShape,
                 cast<RankedTensorType>(input->getType()).getElementType());
  Value result = builder.create<nn::MaxPool2dOp>(
      locOf(node), type, *input, builder.getDenseI64ArrayAttr(w->kernel),
      builder.getDenseI64ArrayAttr(w->strides),
      builder.getDenseI64ArrayAttr(w->pads), builder.getBoolAttr(w->ceilMode));
  return define(node, result);
}

LogicalResult Importer::importAveragePool(const onnx::NodeProto &node) {
  FailureOr<Value> input = getValue(node, 0);
  if (failed(input))
    return failure();
  FailureOr<PoolWindow> w = poolWindow(node, shapeOf(*input));
  if (failed(w))
    return failure();
  auto type =
      tensorType(w->resultShape,
                 cast<RankedTensorType>(input->getType()).getElementType());
  Value result = builder.create<nn::AvgPool2dOp>(
      locOf(node), type, *input, builder.getDenseI64ArrayAttr(w->kernel),
      builder.getDenseI64ArrayAttr(w->strides),
      builder.getDenseI64ArrayAttr(w->pads), builder.getBoolAttr(w->ceilMode),
      builder.getBoolAttr(getInt(node, "count_include_pad", 0) != 0));
  return define(node, result);
}

LogicalResult Importer::importGlobalAveragePool(const onnx::NodeProto &node) {
  FailureOr<Value> input = getValue(node, 0);
  if (failed(input))
    return failure();
  FailureOr<nn::Shape> shape = nn::inferGlobalAvgPoolShape(
      shapeOf(*input), [&] { return nodeError(node); });
  if (failed(shape))
    return failure();
  auto type = tensorType(
      *shape, cast<RankedTensorType>(input->getType()).getElementType());
  return define(node,
                builder.create<nn::GlobalAvgPoolOp>(locOf(node), type, *input));
}

LogicalResult Importer::importBatchNormalization(const onnx::NodeProto &node) {
  // Outputs 1-4 (the updated running statistics and the saved batch
  // statistics of training-mode exports) have no nn counterpart: dpc
  // updates the running statistics in place. Exporters name them anyway, so
  // they are accepted as long as nothing reads them.
  for (int i = 1; i < node.output_size(); ++i)
    if (!node.output(i).empty())
      unreadable[node.output(i)] =
          "output " + std::to_string(i) + " of BatchNormalization '" +
          nodeName(node) +
          "' (running or saved statistics), which dpc keeps as state";
  for (int i = 3; i < 5; ++i)
    if (hasInput(node, i) && !initializers.count(node.input(i)))
      return nodeError(node)
             << "expects the running " << (i == 3 ? "mean" : "variance") << " '"
             << node.input(i)
             << "' to be an initializer: dpc trains batch normalization "
                "and keeps the running statistics as state";
  SmallVector<Value, 5> operands;
  for (int i = 0; i < 5; ++i) {
    FailureOr<Value> value = getValue(node, i);
    if (failed(value))
      return failure();
    operands.push_back(*value);
  }
  Value input = operands[0];
  FailureOr<nn::Shape> statsShape = nn::inferBatchNormStatsShape(
      shapeOf(input), [&] { return nodeError(node); });
  if (failed(statsShape))
    return failure();
  for (int i = 1; i < 5; ++i)
    if (shapeOf(operands[i]) != ArrayRef<int64_t>{(*statsShape)[1]})
      return nodeError(node) << "expects input " << i << " of shape "
                             << (*statsShape)[1] << " (one per channel), got "
                             << nn::formatShape(shapeOf(operands[i]));
  Location loc = locOf(node);
  Type elementType = cast<RankedTensorType>(input.getType()).getElementType();
  Value stats = builder.create<nn::BatchNormStatsOp>(
      loc, tensorType(*statsShape, elementType), input, operands[3],
      operands[4], builder.getF32FloatAttr(getFloat(node, "momentum", 0.9f)));
  Value result = builder.create<nn::BatchNormOp>(
      loc, input.getType(), input, stats, operands[1], operands[2],
      builder.getF32FloatAttr(getFloat(node, "epsilon", 1e-5f)));
  return define(node, result);
}

// One forward LSTM layer (torch's nn.LSTM exports a node per layer). The
// weights arrive as ONNX lays them out for one direction (1 x 4H x I,
// 1 x 4H x H, 1 x 8H) and are read through reshapes, so a weight that the
// exporter sliced and concatenated from torch's parameter (its gate order
// i, f, g, o reordered to ONNX's i, o, f, c) stays that one trainable
// parameter, the slices and the concat differentiated like any others.
// Y, Y_h and Y_c are slices of nn.lstm's state sequence.
LogicalResult Importer::importLstm(const onnx::NodeProto &node) {
  if (failed(checkNoOutputsBeyond(node, 3)))
    return failure();
  std::string direction = getString(node, "direction", "forward");
  if (direction != "forward")
    return nodeError(node) << "direction '" << direction
                           << "' is not supported; dpc imports forward "
                              "LSTMs (one per layer, as torch exports "
                              "unidirectional nn.LSTM)";
  if (const onnx::AttributeProto *clip = findAttr(node, "clip"))
    return nodeError(node) << "cell clipping (clip = " << clip->f()
                           << ") is not supported";
  if (getInt(node, "input_forget", 0) != 0)
    return nodeError(node) << "input_forget = 1 (coupled input and forget "
                              "gates) is not supported";
  if (getInt(node, "layout", 0) != 0)
    return nodeError(node) << "layout = 1 (batch-major) is not supported; "
                              "dpc imports the sequence-major layout torch "
                              "exports";
  if (const onnx::AttributeProto *acts = findAttr(node, "activations")) {
    static const char *const kDefault[] = {"Sigmoid", "Tanh", "Tanh"};
    bool standard = acts->strings_size() == 3;
    for (int i = 0; standard && i < 3; ++i)
      standard = acts->strings(i) == kDefault[i];
    if (!standard || findAttr(node, "activation_alpha") ||
        findAttr(node, "activation_beta"))
      return nodeError(node) << "activations other than the default "
                                "(Sigmoid, Tanh, Tanh) are not supported";
  }
  if (hasInput(node, 4))
    return nodeError(node) << "sequence_lens (input 4) is not supported: "
                              "every sequence of a batch has the full length";
  if (hasInput(node, 7))
    return nodeError(node) << "peephole weights (input 7) are not supported";

  FailureOr<Value> input = getValue(node, 0);
  if (failed(input))
    return failure();
  ArrayRef<int64_t> x = shapeOf(*input);
  if (x.size() != 3)
    return nodeError(node) << "expects X of shape T x B x I, got "
                           << nn::formatShape(x);
  int64_t steps = x[0], batch = x[1];
  Type f32 = builder.getF32Type();
  Location loc = locOf(node);
  // An operand of ONNX's one-direction shape `onnxShape`, read as `shape`.
  auto operand = [&](int index, StringRef what, ArrayRef<int64_t> onnxShape,
                     ArrayRef<int64_t> shape) -> FailureOr<Value> {
    FailureOr<Value> value = getValue(node, index);
    if (failed(value))
      return failure();
    if (shapeOf(*value) != onnxShape)
      return nodeError(node) << "expects " << what << " '" << node.input(index)
                             << "' of shape " << nn::formatShape(onnxShape)
                             << ", got " << nn::formatShape(shapeOf(*value));
    return Value(
        builder.create<nn::ReshapeOp>(loc, tensorType(shape, f32), *value));
  };
  FailureOr<Value> rawR = getValue(node, 2);
  if (failed(rawR))
    return failure();
  ArrayRef<int64_t> rShape = shapeOf(*rawR);
  if (rShape.size() != 3 || rShape[0] != 1)
    return nodeError(node) << "expects R of shape 1 x 4H x H, got "
                           << nn::formatShape(rShape);
  int64_t h = rShape[2];
  if (int64_t declared = getInt(node, "hidden_size", h); declared != h)
    return nodeError(node) << "hidden_size " << declared
                           << " does not match R's shape "
                           << nn::formatShape(rShape);
  FailureOr<Value> w = operand(1, "W", {1, 4 * h, x[2]}, {4 * h, x[2]});
  FailureOr<Value> r = operand(2, "R", {1, 4 * h, h}, {4 * h, h});
  if (failed(w) || failed(r))
    return failure();
  Value bias;
  if (hasInput(node, 3)) {
    FailureOr<Value> b = operand(3, "B", {1, 8 * h}, {8 * h});
    if (failed(b))
      return failure();
    bias = *b;
  }
  // Absent initial states are zeros, read like a constant of the model.
  SmallVector<Value, 2> initial;
  for (auto [index, what] : {std::pair{5, "initial_h"}, {6, "initial_c"}}) {
    if (hasInput(node, index)) {
      FailureOr<Value> state = operand(index, what, {1, batch, h}, {batch, h});
      if (failed(state))
        return failure();
      initial.push_back(*state);
      continue;
    }
    std::string name = nodeName(node) + "." + what;
    initial.push_back(builder.create<nn::ParamOp>(
        NameLoc::get(builder.getStringAttr(name)), tensorType({batch, h}, f32),
        StringRef(name), /*frozen=*/true));
    model->params.push_back(
        {name, {batch, h}, std::vector<float>(batch * h, 0.0f)});
  }
  std::optional<ArrayRef<int64_t>> biasShape;
  if (bias)
    biasShape = shapeOf(bias);
  FailureOr<nn::Shape> statesShape =
      nn::inferLstmShape(x, shapeOf(*w), shapeOf(*r),
                         biasShape ? &*biasShape : nullptr, shapeOf(initial[0]),
                         shapeOf(initial[1]), [&] { return nodeError(node); });
  if (failed(statesShape))
    return failure();
  Value states =
      builder.create<nn::LstmOp>(loc, tensorType(*statesShape, f32), *input, *w,
                                 *r, bias, initial[0], initial[1]);

  // Y (T x 1 x B x H), Y_h and Y_c (1 x B x H): h of every step, h and c of
  // the last.
  auto slice = [&](int64_t first, int64_t count, int64_t offset,
                   ArrayRef<int64_t> shape) -> Value {
    Value box = builder.create<nn::SliceOp>(
        loc, tensorType({count, batch, h}, f32), states,
        ArrayRef<int64_t>{first, 0, offset}, ArrayRef<int64_t>{1, 1, 1});
    return builder.create<nn::ReshapeOp>(loc, tensorType(shape, f32), box);
  };
  if (node.output_size() > 0 && !node.output(0).empty())
    values[node.output(0)] = slice(0, steps, 0, {steps, 1, batch, h});
  if (node.output_size() > 1 && !node.output(1).empty())
    values[node.output(1)] = slice(steps - 1, 1, 0, {1, batch, h});
  if (node.output_size() > 2 && !node.output(2).empty())
    values[node.output(2)] = slice(steps - 1, 1, h, {1, batch, h});
  return success();
}

// Expand by numpy broadcasting: folded on the host for a tensor known at
// import time (torch's zero initial states of nn.LSTM), nn.broadcast_to of
// an activation.
LogicalResult Importer::importExpand(const onnx::NodeProto &node) {
  FailureOr<std::vector<int64_t>> target = getHostInts(node, 1);
  if (failed(target))
    return failure();
  if (!isHost(node.input(0))) {
    FailureOr<Value> input = getValue(node, 0);
    if (failed(input))
      return failure();
    FailureOr<nn::Shape> shape = nn::inferBroadcastShape(
        shapeOf(*input), *target, [&] { return nodeError(node); });
    if (failed(shape))
      return failure();
    if (ArrayRef<int64_t>(*shape) == shapeOf(*input))
      return define(node, *input);
    return define(
        node,
        builder.create<nn::BroadcastToOp>(
            locOf(node),
            tensorType(*shape,
                       cast<ShapedType>(input->getType()).getElementType()),
            *input, builder.getF32FloatAttr(1.0f)));
  }
  FailureOr<HostTensor> data = getHost(node, 0);
  if (failed(data))
    return failure();
  FailureOr<nn::Shape> shape = nn::inferBroadcastShape(
      data->shape, *target, [&] { return nodeError(node); });
  if (failed(shape))
    return failure();
  std::vector<int64_t> strides = data->strides();
  size_t lead = shape->size() - data->shape.size();
  HostTensor result = data->gather(*shape, [&](ArrayRef<int64_t> index) {
    int64_t from = 0;
    for (size_t d = 0; d < data->shape.size(); ++d)
      if (data->shape[d] != 1)
        from += index[lead + d] * strides[d];
    return from;
  });
  return defineHost(node, std::move(result));
}

LogicalResult Importer::importLayerNormalization(const onnx::NodeProto &node) {
  // Mean and InvStdDev (outputs 1 and 2) are what a training framework
  // saves for the backward pass; dpc's gradient recomputes them, so they
  // are accepted as long as nothing reads them.
  static const char *const kSaved[] = {"", "Mean", "InvStdDev"};
  for (int i = 1; i < node.output_size() && i < 3; ++i)
    if (!node.output(i).empty())
      unreadable[node.output(i)] =
          "output " + std::to_string(i) + " (" + kSaved[i] +
          ") of LayerNormalization '" + nodeName(node) +
          "', which dpc does not compute: its gradient recomputes the "
          "statistics";
  if (failed(checkNoOutputsBeyond(node, 3)))
    return failure();
  // stash_type (the precision of the statistics) is not read: dpc computes
  // them in float32 or better for every element type it takes.
  if (!hasInput(node, 1))
    return nodeError(node) << "expects a scale (input 1)";
  FailureOr<Value> input = getValue(node, 0);
  if (failed(input))
    return failure();
  int64_t axis = getInt(node, "axis", -1);
  FailureOr<nn::Shape> weightShape = nn::inferLayerNormWeightShape(
      shapeOf(*input), axis, [&] { return nodeError(node); });
  if (failed(weightShape))
    return failure();
  SmallVector<Value, 2> weights;
  for (int i = 1; i < 3; ++i) {
    if (!hasInput(node, i)) {
      weights.push_back(Value());
      continue;
    }
    FailureOr<Value> weight = getValue(node, i);
    if (failed(weight))
      return failure();
    // ONNX lets the scale and bias broadcast to the normalized shape;
    // exporters write them at that shape, the one dpc takes.
    if (shapeOf(*weight) != ArrayRef<int64_t>(*weightShape))
      return nodeError(node)
             << "expects the " << (i == 1 ? "scale" : "bias") << " '"
             << node.input(i) << "' of the normalized shape "
             << nn::formatShape(*weightShape) << " (input dimensions "
             << (axis < 0 ? axis + int64_t(shapeOf(*input).size()) : axis)
             << " onwards), got " << nn::formatShape(shapeOf(*weight));
    weights.push_back(*weight);
  }
  float epsilon = getFloat(node, "epsilon", 1e-5f);
  if (!(epsilon >= 0.0f))
    return nodeError(node) << "expects a non-negative epsilon, got " << epsilon;
  return define(node, builder.create<nn::LayerNormOp>(
                          locOf(node), input->getType(), *input, weights[0],
                          weights[1], builder.getI64IntegerAttr(axis),
                          builder.getF32FloatAttr(epsilon)));
}

template <typename OpTy>
LogicalResult Importer::importUnary(const onnx::NodeProto &node) {
  FailureOr<Value> input = getValue(node, 0);
  if (failed(input))
    return failure();
  return define(node, builder.create<OpTy>(locOf(node), *input));
}

template <typename OpTy>
LogicalResult Importer::importUnaryFunction(const onnx::NodeProto &node) {
  FailureOr<Value> input = getValue(node, 0);
  if (failed(input))
    return failure();
  // The attributes the function's row names, at their ONNX defaults when
  // the node leaves them out.
  const ::dpc::runtime::UnaryFunctionInfo *info =
      ::dpc::runtime::lookupUnaryFunction(OpTy::kUnaryFunction);
  SmallVector<NamedAttribute> params;
  for (int i = 0; i < 2; ++i)
    if (*info->params[i])
      params.push_back(builder.getNamedAttr(
          info->params[i], builder.getF32FloatAttr(getFloat(
                               node, info->params[i], info->defaults[i]))));
  return define(node,
                builder.create<OpTy>(locOf(node), TypeRange{input->getType()},
                                     ValueRange{*input}, params));
}

LogicalResult Importer::importGemm(const onnx::NodeProto &node) {
  FailureOr<Value> a = getValue(node, 0);
  FailureOr<Value> b =
      failed(a) ? FailureOr<Value>(failure()) : getValue(node, 1);
  if (failed(b))
    return failure();
  if (getFloat(node, "alpha", 1.0f) != 1.0f)
    return nodeError(node) << "alpha other than 1 is not supported";
  if (hasInput(node, 2) && getFloat(node, "beta", 1.0f) != 1.0f)
    return nodeError(node) << "beta other than 1 is not supported";
  if (shapeOf(*a).size() != 2 || shapeOf(*b).size() != 2)
    return nodeError(node) << "expects rank-2 A and B";
  bool transA = getInt(node, "transA", 0), transB = getInt(node, "transB", 0);
  FailureOr<nn::Shape> shape =
      nn::inferMatmulShape(shapeOf(*a), shapeOf(*b), transA, transB,
                           [&] { return nodeError(node); });
  if (failed(shape))
    return failure();
  Type elementType = cast<RankedTensorType>(a->getType()).getElementType();
  Value result = builder.create<nn::MatmulOp>(
      locOf(node), tensorType(*shape, elementType), *a, *b,
      builder.getBoolAttr(transA), builder.getBoolAttr(transB));
  if (hasInput(node, 2)) {
    FailureOr<Value> c = getValue(node, 2);
    if (failed(c))
      return failure();
    // C broadcasts to the product's shape, never the other way round.
    FailureOr<nn::Shape> sum = nn::inferBroadcastShape(
        *shape, shapeOf(*c), [&] { return nodeError(node); });
    if (failed(sum))
      return failure();
    if (ArrayRef<int64_t>(*sum) != ArrayRef<int64_t>(*shape))
      return nodeError(node)
             << "C of shape " << nn::formatShape(shapeOf(*c))
             << " does not broadcast to " << nn::formatShape(*shape);
    result =
        builder.create<nn::AddOp>(locOf(node), result.getType(), result, *c);
  }
  return define(node, result);
}

LogicalResult Importer::importMatMul(const onnx::NodeProto &node) {
  FailureOr<Value> a = getValue(node, 0);
  FailureOr<Value> b =
      failed(a) ? FailureOr<Value>(failure()) : getValue(node, 1);
  if (failed(b))
    return failure();
  FailureOr<nn::Shape> shape = nn::inferMatmulShape(
      shapeOf(*a), shapeOf(*b), false, false, [&] { return nodeError(node); });
  if (failed(shape))
    return failure();
  Type elementType = cast<RankedTensorType>(a->getType()).getElementType();
  return define(node,
                builder.create<nn::MatmulOp>(
                    locOf(node), tensorType(*shape, elementType), *a, *b,
                    builder.getBoolAttr(false), builder.getBoolAttr(false)));
}

// `l op r` of two host numbers, as ONNX defines it for the element type.
static FailureOr<double> foldNumbers(StringRef opType, double l, double r,
                                     bool isFloat) {
  if (opType == "Add")
    return l + r;
  if (opType == "Sub")
    return l - r;
  if (opType == "Mul")
    return l * r;
  if (r == 0 && !isFloat)
    return failure();
  // Integer division truncates toward zero.
  return isFloat ? l / r : std::trunc(l / r);
}

template <typename OpTy>
LogicalResult Importer::importBinary(const onnx::NodeProto &node) {
  if (isHost(node.input(0)) && isHost(node.input(1))) {
    FailureOr<HostTensor> l = getHost(node, 0), r = getHost(node, 1);
    if (failed(l) || failed(r))
      return failure();
    // Equal shapes, or a single number against a tensor.
    bool scalarL = l->size() == 1, scalarR = r->size() == 1;
    if (l->isFloat != r->isFloat ||
        (l->shape != r->shape && !scalarL && !scalarR))
      return nodeError(node) << "folds only operands of one element type "
                                "with equal shapes or a single element";
    HostTensor out = scalarL && !scalarR ? *r : *l;
    for (int64_t i = 0; i < out.size(); ++i) {
      auto at = [&](const HostTensor &t) {
        int64_t k = t.size() == 1 ? 0 : i;
        return t.isFloat ? double(t.floats[k]) : double(t.ints[k]);
      };
      FailureOr<double> v =
          foldNumbers(node.op_type(), at(*l), at(*r), out.isFloat);
      if (failed(v))
        return nodeError(node) << "divides by zero at import time";
      if (out.isFloat)
        out.floats[i] = float(*v);
      else
        out.ints[i] = int64_t(*v);
    }
    return defineHost(node, std::move(out));
  }
  FailureOr<Value> l = getValue(node, 0);
  FailureOr<Value> r =
      failed(l) ? FailureOr<Value>(failure()) : getValue(node, 1);
  if (failed(r))
    return failure();
  FailureOr<nn::Shape> shape = nn::inferBroadcastShape(
      shapeOf(*l), shapeOf(*r), [&] { return nodeError(node); });
  if (failed(shape))
    return failure();
  Type elementType = cast<RankedTensorType>(l->getType()).getElementType();
  return define(node,
                builder.create<OpTy>(locOf(node),
                                     tensorType(*shape, elementType), *l, *r));
}

LogicalResult Importer::importPow(const onnx::NodeProto &node) {
  FailureOr<HostTensor> exponent = getHost(node, 1);
  if (failed(exponent))
    return failure();
  if (exponent->size() != 1)
    return nodeError(node) << "expects a single exponent, got "
                           << exponent->size() << " values";
  double p = exponent->isFloat ? double(exponent->floats[0])
                               : double(exponent->ints[0]);
  FailureOr<Value> base = getValue(node, 0);
  if (failed(base))
    return failure();
  Location loc = locOf(node);
  if (p == 1.0)
    return define(node, *base);
  if (p == 2.0)
    return define(
        node, builder.create<nn::MulOp>(loc, base->getType(), *base, *base));
  if (p == 0.5)
    return define(node, builder.create<nn::SqrtOp>(loc, *base));
  std::ostringstream text;
  text << p;
  return nodeError(node) << "exponent " << text.str()
                         << " is not supported (only 0.5, 1 and 2)";
}

LogicalResult Importer::importReduce(const onnx::NodeProto &node) {
  FailureOr<Value> input = getValue(node, 0);
  if (failed(input))
    return failure();
  ArrayRef<int64_t> shape = shapeOf(*input);
  size_t rank = shape.size();
  bool mean = node.op_type() == "ReduceMean";
  // ReduceMean-13 has its axes as an attribute, ReduceSum-13 as an input.
  std::vector<int64_t> axes;
  if (mean) {
    axes = getInts(node, "axes", {});
  } else if (hasInput(node, 1)) {
    FailureOr<std::vector<int64_t>> given = getHostInts(node, 1);
    if (failed(given))
      return failure();
    axes = *given;
  }
  if (axes.empty()) {
    if (!mean && getInt(node, "noop_with_empty_axes", 0))
      return define(node, *input);
    for (size_t d = 0; d < rank; ++d)
      axes.push_back(int64_t(d));
  }
  // Summed onto the shape with every reduced dimension 1, which is the
  // result when keepdims is set and is reshaped away when not.
  nn::Shape kept(shape.begin(), shape.end());
  std::vector<bool> reduced(rank, false);
  int64_t count = 1;
  for (int64_t axis : axes) {
    FailureOr<int64_t> d =
        nn::normalizeAxis(axis, rank, [&] { return nodeError(node); });
    if (failed(d))
      return failure();
    if (reduced[*d])
      return nodeError(node) << "reduces axis " << axis << " twice";
    reduced[*d] = true;
    count *= shape[*d];
    kept[*d] = 1;
  }
  if (mean && count == 0)
    return nodeError(node) << "averages over no elements";
  Type elementType = cast<RankedTensorType>(input->getType()).getElementType();
  Location loc = locOf(node);
  float scale = mean ? 1.0f / float(count) : 1.0f;
  Value sum =
      builder.create<nn::SumToShapeOp>(loc, tensorType(kept, elementType),
                                       *input, builder.getF32FloatAttr(scale));
  if (getInt(node, "keepdims", 1))
    return define(node, sum);
  nn::Shape squeezed;
  for (size_t d = 0; d < rank; ++d)
    if (!reduced[d])
      squeezed.push_back(shape[d]);
  return define(node, builder.create<nn::ReshapeOp>(
                          loc, tensorType(squeezed, elementType), sum));
}

template <typename OpTy>
LogicalResult Importer::importSoftmax(const onnx::NodeProto &node) {
  FailureOr<Value> input = getValue(node, 0);
  if (failed(input))
    return failure();
  int64_t axis = getInt(node, "axis", -1);
  if (failed(nn::normalizeAxis(axis, shapeOf(*input).size(),
                               [&] { return nodeError(node); })))
    return failure();
  return define(node,
                builder.create<OpTy>(locOf(node), input->getType(), *input,
                                     builder.getI64IntegerAttr(axis)));
}

LogicalResult Importer::importTranspose(const onnx::NodeProto &node) {
  if (isHost(node.input(0))) {
    // A transpose of a tensor known at import time (F.pad's pads).
    FailureOr<HostTensor> data = getHost(node, 0);
    if (failed(data))
      return failure();
    int64_t rank = int64_t(data->shape.size());
    std::vector<int64_t> reversed(rank);
    for (int64_t d = 0; d < rank; ++d)
      reversed[d] = rank - 1 - d;
    std::vector<int64_t> perm = getInts(node, "perm", reversed);
    FailureOr<nn::Shape> shape = nn::inferTransposeShape(
        data->shape, perm, [&] { return nodeError(node); });
    if (failed(shape))
      return failure();
    // Result dimension d walks the input's dimension perm[d].
    std::vector<int64_t> strides = data->strides();
    HostTensor result = data->gather(*shape, [&](ArrayRef<int64_t> index) {
      int64_t from = 0;
      for (size_t d = 0; d < index.size(); ++d)
        from += index[d] * strides[perm[d]];
      return from;
    });
    return defineHost(node, std::move(result));
  }
  FailureOr<Value> input = getValue(node, 0);
  if (failed(input))
    return failure();
  ArrayRef<int64_t> shape = shapeOf(*input);
  // The default reverses the dimensions.
  std::vector<int64_t> reversed(shape.size());
  for (size_t d = 0; d < shape.size(); ++d)
    reversed[d] = int64_t(shape.size() - 1 - d);
  std::vector<int64_t> perm = getInts(node, "perm", reversed);
  FailureOr<nn::Shape> result =
      nn::inferTransposeShape(shape, perm, [&] { return nodeError(node); });
  if (failed(result))
    return failure();
  auto type = tensorType(
      *result, cast<RankedTensorType>(input->getType()).getElementType());
  return define(
      node, builder.create<nn::TransposeOp>(locOf(node), type, *input, perm));
}

LogicalResult Importer::importFlatten(const onnx::NodeProto &node) {
  FailureOr<Value> input = getValue(node, 0);
  if (failed(input))
    return failure();
  ArrayRef<int64_t> shape = shapeOf(*input);
  int64_t rank = shape.size();
  int64_t axis = getInt(node, "axis", 1);
  if (axis < 0)
    axis += rank;
  if (axis < 0 || axis > rank)
    return nodeError(node) << "axis " << getInt(node, "axis", 1)
                           << " is out of range for rank " << rank;
  int64_t outer = nn::getNumElements(shape.take_front(axis));
  int64_t inner = nn::getNumElements(shape.drop_front(axis));
  auto type =
      tensorType({outer, inner},
                 cast<RankedTensorType>(input->getType()).getElementType());
  return define(node, builder.create<nn::ReshapeOp>(locOf(node), type, *input));
}

// Reshape, Squeeze and Unsqueeze of a tensor known at import time (shape
// arithmetic, F.pad's pads) change its host shape; of an activation they
// are an nn.reshape.
FailureOr<Importer::Reshaped>
Importer::getReshaped(const onnx::NodeProto &node) {
  Reshaped input;
  if (hasInput(node, 0) && isHost(node.input(0))) {
    FailureOr<HostTensor> host = getHost(node, 0);
    if (failed(host))
      return failure();
    input.host = std::move(*host);
    return input;
  }
  FailureOr<Value> value = getValue(node, 0);
  if (failed(value))
    return failure();
  input.value = *value;
  return input;
}

LogicalResult Importer::defineReshaped(const onnx::NodeProto &node,
                                       Reshaped input,
                                       ArrayRef<int64_t> shape) {
  if (input.host) {
    input.host->shape.assign(shape.begin(), shape.end());
    return defineHost(node, std::move(*input.host));
  }
  auto type = tensorType(
      shape, cast<ShapedType>(input.value.getType()).getElementType());
  return define(node,
                builder.create<nn::ReshapeOp>(locOf(node), type, input.value));
}

// Exporters bake the batch size into Reshape targets they compute from
// shapes (torch's multi-head attention views [T, B*heads, d]; x.view(B, T,
// heads, d) with B read from x.shape), so after --microbatch-size a target
// may no longer fit its input. The one case rewritten is the unambiguous
// one: the target repeats the input's leading dimensions up to the input's
// batch dimension (of the new batch size), and its entry there is a
// multiple of the exported batch size that, scaled to the new one, makes
// the element counts agree. A target that fits is never touched; where the
// batch is merged into another dimension ([T*B, D] viewed as [T, B, D])
// nothing says which factor it is, and the import stops naming the node.
LogicalResult Importer::rebatchTarget(const onnx::NodeProto &node,
                                      ArrayRef<int64_t> inShape,
                                      std::vector<int64_t> &shape,
                                      int64_t inferred) {
  int64_t count = nn::getNumElements(inShape);
  auto fits = [&](const std::vector<int64_t> &candidate) {
    if (inferred < 0)
      return nn::getNumElements(candidate) == count;
    std::vector<int64_t> known = candidate;
    known[inferred] = 1;
    int64_t rest = nn::getNumElements(known);
    return rest != 0 && count % rest == 0;
  };
  if (fits(shape) || exportedBatch <= 0 || importedBatch <= 0)
    return success();
  size_t i = 0;
  while (i < shape.size() && i < inShape.size() &&
         (shape[i] == inShape[i] || int64_t(i) == inferred))
    ++i;
  std::vector<int64_t> scaled = shape;
  if (i < shape.size() && i < inShape.size() && int64_t(i) != inferred &&
      inShape[i] == importedBatch && shape[i] % exportedBatch == 0) {
    scaled[i] = shape[i] / exportedBatch * importedBatch;
    if (fits(scaled)) {
      shape = std::move(scaled);
      return success();
    }
  }
  return nodeError(node) << "cannot reshape " << nn::formatShape(inShape)
                         << " to " << nn::formatShape(shape)
                         << ": the exporter computed this target for batch "
                         << "size " << exportedBatch << " and dpc cannot tell "
                         << "which entry holds it; export the model at batch "
                         << "size " << importedBatch
                         << " instead of using --microbatch-size";
}

LogicalResult Importer::importReshape(const onnx::NodeProto &node) {
  FailureOr<std::vector<int64_t>> target = getHostInts(node, 1);
  if (failed(target))
    return failure();
  FailureOr<Reshaped> input = getReshaped(node);
  if (failed(input))
    return failure();
  ArrayRef<int64_t> inShape = input->shape();
  bool allowZero = getInt(node, "allowzero", 0) != 0;
  std::vector<int64_t> shape = *target;
  int64_t inferred = -1;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == 0 && !allowZero) {
      if (i >= inShape.size())
        return nodeError(node)
               << "shape entry " << i << " copies a dimension the input lacks";
      shape[i] = inShape[i];
    } else if (shape[i] == -1) {
      if (inferred >= 0)
        return nodeError(node) << "shape has more than one -1";
      inferred = i;
    } else if (shape[i] < 0) {
      return nodeError(node) << "shape entry " << shape[i] << " is invalid";
    }
  }
  // A target folded from a shape subgraph can hold any numbers: their
  // product must be counted without overflow before it is compared with
  // the input's element count.
  int64_t known = 1;
  for (size_t i = 0; i < shape.size(); ++i)
    if (int64_t(i) != inferred && __builtin_mul_overflow(known, shape[i], &known))
      return nodeError(node) << "cannot reshape " << nn::formatShape(inShape)
                             << " to " << nn::formatShape(*target)
                             << ": more elements than a 64-bit count holds";
  int64_t count = nn::getNumElements(inShape);
  if (failed(rebatchTarget(node, inShape, shape, inferred)))
    return failure();
  if (inferred >= 0) {
    shape[inferred] = 1;
    int64_t known = nn::getNumElements(shape);
    if (known == 0 || count % known != 0)
      return nodeError(node) << "cannot reshape " << nn::formatShape(inShape)
                             << " to " << nn::formatShape(*target);
    shape[inferred] = count / known;
  }
  if (nn::getNumElements(shape) != count)
    return nodeError(node) << "cannot reshape " << nn::formatShape(inShape)
                           << " to " << nn::formatShape(shape);
  return defineReshaped(node, std::move(*input), shape);
}

LogicalResult Importer::importIdentity(const onnx::NodeProto &node) {
  if (isHost(node.input(0))) {
    FailureOr<HostTensor> t = getHost(node, 0);
    return failed(t) ? failure() : defineHost(node, std::move(*t));
  }
  FailureOr<Value> input = getValue(node, 0);
  return failed(input) ? failure() : define(node, *input);
}

//===----------------------------------------------------------------------===//
// Handlers: host evaluation of shape subgraphs
//===----------------------------------------------------------------------===//

LogicalResult Importer::importConstant(const onnx::NodeProto &node) {
  if (const onnx::AttributeProto *value = findAttr(node, "value")) {
    FailureOr<HostTensor> t = readTensor(value->t(), locOf(node));
    return failed(t) ? failure() : defineHost(node, std::move(*t));
  }
  if (const onnx::AttributeProto *ints = findAttr(node, "value_ints"))
    return defineHost(
        node, HostTensor::vector({ints->ints().begin(), ints->ints().end()}));
  if (const onnx::AttributeProto *i = findAttr(node, "value_int")) {
    HostTensor t;
    t.ints = {i->i()};
    return defineHost(node, std::move(t));
  }
  if (const onnx::AttributeProto *f = findAttr(node, "value_float")) {
    HostTensor t;
    t.isFloat = true;
    t.floats = {f->f()};
    return defineHost(node, std::move(t));
  }
  return nodeError(node) << "only value, value_int, value_ints and "
                            "value_float constants are supported";
}

LogicalResult Importer::importShape(const onnx::NodeProto &node) {
  std::vector<int64_t> shape;
  if (isHost(node.input(0))) {
    FailureOr<HostTensor> t = getHost(node, 0);
    if (failed(t))
      return failure();
    shape = t->shape;
  } else {
    FailureOr<Value> input = getValue(node, 0);
    if (failed(input))
      return failure();
    shape.assign(shapeOf(*input).begin(), shapeOf(*input).end());
  }
  int64_t rank = shape.size();
  int64_t start = getInt(node, "start", 0), end = getInt(node, "end", rank);
  start = std::clamp<int64_t>(start < 0 ? start + rank : start, 0, rank);
  end = std::clamp<int64_t>(end < 0 ? end + rank : end, 0, rank);
  return defineHost(
      node, HostTensor::vector(std::vector<int64_t>(
                shape.begin() + start, shape.begin() + std::max(start, end))));
}

LogicalResult Importer::importGather(const onnx::NodeProto &node) {
  if (!hasInput(node, 0) || !hasInput(node, 1))
    return nodeError(node) << "expects data and indices";
  if (!isHost(node.input(0)) || !isHost(node.input(1)))
    return importTensorGather(node);
  FailureOr<HostTensor> data = getHost(node, 0);
  FailureOr<HostTensor> indices =
      failed(data) ? FailureOr<HostTensor>(failure()) : getHost(node, 1);
  if (failed(indices))
    return failure();
  if (data->isFloat || data->shape.size() != 1 || getInt(node, "axis", 0) != 0)
    return nodeError(node) << "folds only gathers from an integer vector";
  HostTensor result;
  result.shape = indices->shape;
  int64_t size = data->ints.size();
  for (int64_t index : indices->ints) {
    if (index < -size || index >= size)
      return nodeError(node) << "index " << index << " is out of range";
    result.ints.push_back(data->ints[index < 0 ? index + size : index]);
  }
  return defineHost(node, std::move(result));
}

// Gather of tensors: rows of a float table (an embedding) picked by token
// ids the model computes or reads, or, with indices known at import time
// that step evenly (positions 0..T-1, one class token), a slice.
LogicalResult Importer::importTensorGather(const onnx::NodeProto &node) {
  FailureOr<Value> data = getValue(node, 0);
  if (failed(data))
    return failure();
  ArrayRef<int64_t> shape = shapeOf(*data);
  int64_t rank = int64_t(shape.size());
  int64_t axis = getInt(node, "axis", 0);
  if (axis < -rank || axis >= rank)
    return nodeError(node) << "axis " << axis << " is out of range for rank "
                           << rank;
  if (axis < 0)
    axis += rank;
  Type element = cast<RankedTensorType>(data->getType()).getElementType();
  if (!isa<FloatType>(element))
    return nodeError(node) << "gathers from float tensors only, got "
                           << data->getType();
  if (!isHost(node.input(1))) {
    FailureOr<Value> indices = getValue(node, 1);
    if (failed(indices))
      return failure();
    if (!cast<RankedTensorType>(indices->getType())
             .getElementType()
             .isInteger(64))
      return nodeError(node)
             << "expects int64 indices, got " << indices->getType();
    if (axis != 0)
      return nodeError(node) << "gathers by computed indices along axis 0 "
                             << "only (an embedding), not axis " << axis;
    nn::Shape result(shapeOf(*indices));
    result.append(shape.begin() + 1, shape.end());
    return define(
        node, builder.create<nn::GatherOp>(
                  locOf(node), tensorType(result, element), *data, *indices));
  }
  FailureOr<HostTensor> indices = getHost(node, 1);
  if (failed(indices))
    return failure();
  if (indices->isFloat || indices->ints.empty())
    return nodeError(node) << "expects integer indices";
  int64_t dim = shape[axis];
  std::vector<int64_t> rows;
  for (int64_t index : indices->ints) {
    if (index < -dim || index >= dim)
      return nodeError(node) << "index " << index << " is out of range for "
                             << "dimension " << axis << " of size " << dim;
    rows.push_back(index < 0 ? index + dim : index);
  }
  int64_t step = rows.size() > 1 ? rows[1] - rows[0] : 1;
  for (size_t i = 1; i < rows.size(); ++i)
    if (rows[i] - rows[i - 1] != step || step < 1)
      return nodeError(node) << "gathers constant indices that are not an "
                             << "increasing arithmetic sequence, which dpc "
                             << "does not support";
  std::vector<int64_t> offsets(rank, 0), steps(rank, 1);
  nn::Shape box(shape.begin(), shape.end());
  offsets[axis] = rows.front();
  steps[axis] = step;
  box[axis] = int64_t(rows.size());
  Value slice = builder.create<nn::SliceOp>(
      locOf(node), tensorType(box, element), *data, offsets, steps);
  // The indices' shape replaces the gathered dimension (none for a scalar).
  nn::Shape result(shape.begin(), shape.begin() + axis);
  result.append(indices->shape.begin(), indices->shape.end());
  result.append(shape.begin() + axis + 1, shape.end());
  if (result == box)
    return define(node, slice);
  return define(node, builder.create<nn::ReshapeOp>(
                          locOf(node), tensorType(result, element), slice));
}

// Unsqueeze and Squeeze fold on the host for tensors known at import time;
// of an activation they are a reshape.
LogicalResult Importer::importUnsqueeze(const onnx::NodeProto &node) {
  FailureOr<Reshaped> input = getReshaped(node);
  if (failed(input))
    return failure();
  ArrayRef<int64_t> inputShape = input->shape();
  FailureOr<std::vector<int64_t>> axes = getHostInts(node, 1);
  if (failed(axes))
    return failure();
  int64_t rank = inputShape.size() + axes->size();
  std::vector<int64_t> shape;
  std::vector<bool> inserted(rank, false);
  for (int64_t axis : *axes) {
    int64_t a = axis < 0 ? axis + rank : axis;
    if (a < 0 || a >= rank || inserted[a])
      return nodeError(node) << "axis " << axis << " is invalid";
    inserted[a] = true;
  }
  size_t next = 0;
  for (int64_t i = 0; i < rank; ++i)
    shape.push_back(inserted[i] ? 1 : inputShape[next++]);
  return defineReshaped(node, std::move(*input), shape);
}

LogicalResult Importer::importSqueeze(const onnx::NodeProto &node) {
  FailureOr<Reshaped> input = getReshaped(node);
  if (failed(input))
    return failure();
  ArrayRef<int64_t> inputShape = input->shape();
  std::vector<int64_t> axes;
  if (hasInput(node, 1)) {
    FailureOr<std::vector<int64_t>> given = getHostInts(node, 1);
    if (failed(given))
      return failure();
    axes = *given;
  }
  int64_t rank = inputShape.size();
  std::vector<int64_t> shape;
  for (int64_t i = 0; i < rank; ++i) {
    bool named = llvm::any_of(
        axes, [&](int64_t a) { return (a < 0 ? a + rank : a) == i; });
    bool drop = axes.empty() ? inputShape[i] == 1 : named;
    if (drop && inputShape[i] != 1)
      return nodeError(node) << "cannot squeeze dimension " << i << " of size "
                             << inputShape[i];
    if (!drop)
      shape.push_back(inputShape[i]);
  }
  return defineReshaped(node, std::move(*input), shape);
}

LogicalResult Importer::importConcat(const onnx::NodeProto &node) {
  // Integer tensors known at import time fold on the host (shape
  // arithmetic); anything else is a concatenation of activations.
  bool hostOnly = true;
  for (int i = 0; i < node.input_size(); ++i) {
    auto host = hostValues.find(node.input(i));
    hostOnly = hostOnly && isHost(node.input(i)) &&
               (host == hostValues.end() || !host->second.isFloat);
  }
  if (!hostOnly) {
    // Activations (a float constant among them is a frozen parameter).
    SmallVector<Value> inputs;
    for (int i = 0; i < node.input_size(); ++i) {
      FailureOr<Value> input = getValue(node, i);
      if (failed(input))
        return failure();
      inputs.push_back(*input);
    }
    int64_t rank = int64_t(shapeOf(inputs.front()).size());
    int64_t axis = getInt(node, "axis", 0);
    if (axis < 0)
      axis += rank;
    SmallVector<ArrayRef<int64_t>> shapes;
    for (Value input : inputs)
      shapes.push_back(shapeOf(input));
    FailureOr<nn::Shape> shape =
        nn::inferConcatShape(shapes, axis, [&] { return nodeError(node); });
    if (failed(shape))
      return failure();
    auto type = tensorType(
        *shape,
        cast<RankedTensorType>(inputs.front().getType()).getElementType());
    return define(
        node, builder.create<nn::ConcatOp>(locOf(node), type, inputs, axis));
  }
  HostTensor result;
  result.shape = {0};
  for (int i = 0; i < node.input_size(); ++i) {
    FailureOr<HostTensor> part = getHost(node, i);
    if (failed(part))
      return failure();
    if (part->isFloat || part->shape.size() != 1)
      return nodeError(node) << "folds only concatenations of integer "
                                "vectors";
    result.ints.insert(result.ints.end(), part->ints.begin(), part->ints.end());
  }
  result.shape[0] = result.ints.size();
  return defineHost(node, std::move(result));
}

// Slice's starts, ends, axes and steps, known at import time; axes default
// to the first dimensions and steps to 1.
FailureOr<Importer::SliceInputs>
Importer::sliceInputs(const onnx::NodeProto &node) {
  SliceInputs in;
  std::vector<int64_t> *lists[] = {&in.starts, &in.ends, &in.axes, &in.steps};
  for (int index = 1; index <= 4; ++index) {
    if (index > 2 && !hasInput(node, index))
      continue;
    FailureOr<std::vector<int64_t>> given = getHostInts(node, index);
    if (failed(given))
      return failure();
    *lists[index - 1] = *given;
    if (index == 2) {
      in.axes.resize(in.starts.size());
      std::iota(in.axes.begin(), in.axes.end(), 0);
      in.steps.assign(in.starts.size(), 1);
    }
  }
  size_t n = in.starts.size();
  if (in.ends.size() != n || in.axes.size() != n || in.steps.size() != n)
    return nodeError(node) << "expects as many starts, ends, axes and steps";
  return in;
}

// ONNX Slice of an activation: starts, ends, axes and steps known at import
// time, normalized to one offset and one positive step per dimension.
LogicalResult Importer::importActivationSlice(const onnx::NodeProto &node) {
  FailureOr<Value> input = getValue(node, 0);
  if (failed(input))
    return failure();
  ArrayRef<int64_t> shape = shapeOf(*input);
  int64_t rank = int64_t(shape.size());
  FailureOr<SliceInputs> inputs = sliceInputs(node);
  if (failed(inputs))
    return failure();
  const std::vector<int64_t> &starts = inputs->starts, &ends = inputs->ends,
                             &axes = inputs->axes, &steps = inputs->steps;
  std::vector<int64_t> offsets(rank, 0), strides(rank, 1);
  nn::Shape result(shape.begin(), shape.end());
  std::vector<bool> seen(rank, false);
  for (size_t i = 0; i < axes.size(); ++i) {
    int64_t axis = axes[i] < 0 ? axes[i] + rank : axes[i];
    if (axis < 0 || axis >= rank || seen[axis])
      return nodeError(node) << "axis " << axes[i] << " is out of range or "
                             << "repeated for rank " << rank;
    seen[axis] = true;
    if (steps[i] < 1)
      return nodeError(node) << "step " << steps[i] << " along axis " << axis
                             << " is not supported (only positive steps)";
    // ONNX's clamping: negative indices count from the end, then both ends
    // are clamped to [0, dim].
    int64_t dim = shape[axis];
    auto clampIndex = [&](int64_t index) {
      if (index < 0)
        index = index < -dim ? 0 : index + dim;
      return std::min(index, dim);
    };
    int64_t begin = clampIndex(starts[i]), end = clampIndex(ends[i]);
    int64_t size = end > begin ? (end - begin + steps[i] - 1) / steps[i] : 0;
    if (size == 0)
      return nodeError(node) << "the slice along axis " << axis
                             << " is empty, which dpc does not support";
    offsets[axis] = begin;
    strides[axis] = steps[i];
    result[axis] = size;
  }
  auto type = tensorType(
      result, cast<RankedTensorType>(input->getType()).getElementType());
  return define(node, builder.create<nn::SliceOp>(locOf(node), type, *input,
                                                  offsets, strides));
}

// Split into consecutive parts along an axis: one nn.slice per output.
LogicalResult Importer::importSplit(const onnx::NodeProto &node) {
  FailureOr<Value> input = getValue(node, 0);
  if (failed(input))
    return failure();
  ArrayRef<int64_t> shape = shapeOf(*input);
  int64_t rank = int64_t(shape.size());
  int64_t axis = getInt(node, "axis", 0);
  if (axis < 0)
    axis += rank;
  if (axis < 0 || axis >= rank)
    return nodeError(node) << "axis " << getInt(node, "axis", 0)
                           << " is out of range for rank " << rank;
  int64_t parts = node.output_size();
  std::vector<int64_t> sizes;
  if (hasInput(node, 1)) {
    FailureOr<std::vector<int64_t>> given = getHostInts(node, 1);
    if (failed(given))
      return failure();
    sizes = *given;
  } else {
    if (parts < 1 || shape[axis] % parts != 0)
      return nodeError(node) << "cannot split dimension " << shape[axis]
                             << " into " << parts << " equal parts";
    sizes.assign(parts, shape[axis] / parts);
  }
  int64_t total = 0;
  for (int64_t size : sizes)
    total += size > 0 ? size : -1;
  if (int64_t(sizes.size()) != parts || total != shape[axis])
    return nodeError(node) << "expects " << parts << " positive sizes that "
                           << "sum to " << shape[axis];
  Type element = cast<RankedTensorType>(input->getType()).getElementType();
  std::vector<int64_t> offsets(rank, 0), steps(rank, 1);
  for (int64_t k = 0; k < parts; ++k) {
    nn::Shape part(shape.begin(), shape.end());
    part[axis] = sizes[k];
    Value slice = builder.create<nn::SliceOp>(
        locOf(node), tensorType(part, element), *input, offsets, steps);
    if (!node.output(k).empty())
      values[node.output(k)] = slice;
    offsets[axis] += sizes[k];
  }
  return success();
}

// Clip with bounds known at import time (ReLU6: 0 and 6); an absent bound
// is infinite.
LogicalResult Importer::importClip(const onnx::NodeProto &node) {
  FailureOr<Value> input = getValue(node, 0);
  if (failed(input))
    return failure();
  float bounds[2] = {-std::numeric_limits<float>::infinity(),
                     std::numeric_limits<float>::infinity()};
  for (int index : {1, 2}) {
    if (!hasInput(node, index))
      continue;
    FailureOr<HostTensor> bound = getHost(node, index);
    if (failed(bound))
      return failure();
    if (!bound->isFloat || bound->floats.size() != 1)
      return nodeError(node) << "expects a float scalar for input '"
                             << node.input(index) << "'";
    bounds[index - 1] = bound->floats[0];
  }
  if (!(bounds[0] <= bounds[1]))
    return nodeError(node) << "min " << bounds[0] << " exceeds max "
                           << bounds[1];
  return define(
      node, builder.create<nn::ClipOp>(locOf(node), input->getType(), *input,
                                       builder.getF32FloatAttr(bounds[0]),
                                       builder.getF32FloatAttr(bounds[1])));
}

// Dropout: in training mode (training_mode true, as a model exported for
// training has it) an nn.dropout with the next mask number; otherwise the
// identity, as ONNX defines it. Nothing may read the mask output.
LogicalResult Importer::importDropout(const onnx::NodeProto &node) {
  // PyTorch names the mask output even when nothing reads it.
  if (node.output_size() > 1 && !node.output(1).empty())
    unreadable[node.output(1)] =
        "Dropout's mask, which dpc does not materialize";
  FailureOr<Value> input = getValue(node, 0);
  if (failed(input))
    return failure();
  float ratio = 0.5f;
  if (hasInput(node, 1)) {
    FailureOr<HostTensor> given = getHost(node, 1);
    if (failed(given))
      return failure();
    if (!given->isFloat || given->floats.size() != 1)
      return nodeError(node) << "expects a float scalar ratio";
    ratio = given->floats[0];
  }
  bool training = false;
  if (hasInput(node, 2)) {
    FailureOr<HostTensor> given = getHost(node, 2);
    if (failed(given))
      return failure();
    if (given->isFloat || given->ints.size() != 1)
      return nodeError(node) << "expects a bool scalar training_mode";
    training = given->ints[0] != 0;
  }
  if (!training || ratio == 0.0f)
    return define(node, *input);
  if (!(ratio > 0.0f && ratio < 1.0f))
    return nodeError(node) << "expects a ratio in [0, 1), got " << ratio;
  return define(node, builder.create<nn::DropoutOp>(
                          locOf(node), input->getType(), *input,
                          builder.getF32FloatAttr(ratio),
                          builder.getI64IntegerAttr(numDropouts++)));
}

// Pad in constant mode with pads (and the value) known at import time.
LogicalResult Importer::importPad(const onnx::NodeProto &node) {
  FailureOr<Value> input = getValue(node, 0);
  if (failed(input))
    return failure();
  std::string mode = getString(node, "mode", "constant");
  if (mode != "constant")
    return nodeError(node) << "mode '" << mode
                           << "' is not supported (only constant)";
  FailureOr<std::vector<int64_t>> pads = getHostInts(node, 1);
  if (failed(pads))
    return failure();
  float value = 0.0f;
  if (hasInput(node, 2)) {
    FailureOr<HostTensor> given = getHost(node, 2);
    if (failed(given))
      return failure();
    if (!given->isFloat || given->floats.size() != 1)
      return nodeError(node) << "expects a float scalar pad value";
    value = given->floats[0];
  }
  FailureOr<nn::Shape> shape = nn::inferPadShape(
      shapeOf(*input), *pads, [&] { return nodeError(node); });
  if (failed(shape))
    return failure();
  auto type = tensorType(
      *shape, cast<RankedTensorType>(input->getType()).getElementType());
  return define(node,
                builder.create<nn::PadOp>(locOf(node), type, *input,
                                          builder.getDenseI64ArrayAttr(*pads),
                                          builder.getF32FloatAttr(value)));
}

LogicalResult Importer::importSlice(const onnx::NodeProto &node) {
  // A shape bucket's slice of a float constant (a causal mask cut to the
  // sequence length) stays a slice of the whole constant, which every
  // bucket then shares, instead of a constant of the bucket's own shape.
  auto host = hostValues.find(node.input(0));
  if (!isHost(node.input(0)) ||
      (sliceFloatConstants && host != hostValues.end() && host->second.isFloat))
    return importActivationSlice(node);
  // A slice of a tensor known at import time (shape arithmetic, such as the
  // pads PyTorch computes for F.pad), with ONNX's rules: negative indices
  // count from the end, negative steps walk backwards.
  FailureOr<HostTensor> data = getHost(node, 0);
  if (failed(data))
    return failure();
  int64_t rank = int64_t(data->shape.size());
  FailureOr<SliceInputs> inputs = sliceInputs(node);
  if (failed(inputs))
    return failure();
  const std::vector<int64_t> &starts = inputs->starts, &ends = inputs->ends,
                             &axes = inputs->axes, &steps = inputs->steps;
  // Per dimension: the indices taken, in order.
  std::vector<std::vector<int64_t>> taken(rank);
  for (int64_t d = 0; d < rank; ++d) {
    taken[d].resize(data->shape[d]);
    std::iota(taken[d].begin(), taken[d].end(), 0);
  }
  for (size_t i = 0; i < axes.size(); ++i) {
    int64_t axis = axes[i] < 0 ? axes[i] + rank : axes[i];
    if (axis < 0 || axis >= rank || steps[i] == 0)
      return nodeError(node) << "bad axis " << axes[i] << " or zero step";
    int64_t dim = data->shape[axis], step = steps[i];
    auto clampIndex = [&](int64_t index, int64_t low, int64_t high) {
      if (index < 0)
        index = index < -dim ? low : index + dim;
      return std::clamp(index, low, high);
    };
    int64_t begin = step > 0 ? clampIndex(starts[i], 0, dim)
                             : clampIndex(starts[i], -1, dim - 1);
    int64_t end = step > 0 ? clampIndex(ends[i], 0, dim)
                           : clampIndex(ends[i], -1, dim - 1);
    taken[axis].clear();
    for (int64_t k = begin; step > 0 ? k < end : k > end; k += step)
      taken[axis].push_back(k);
  }
  nn::Shape shape;
  for (const std::vector<int64_t> &indices : taken)
    shape.push_back(int64_t(indices.size()));
  std::vector<int64_t> strides = data->strides();
  HostTensor result = data->gather(shape, [&](ArrayRef<int64_t> index) {
    int64_t from = 0;
    for (size_t d = 0; d < index.size(); ++d)
      from += taken[d][index[d]] * strides[d];
    return from;
  });
  return defineHost(node, std::move(result));
}

// ConstantOfShape: a tensor known at import time (PyTorch builds F.pad's
// pads with it).
LogicalResult Importer::importConstantOfShape(const onnx::NodeProto &node) {
  FailureOr<std::vector<int64_t>> shape = getHostInts(node, 0);
  if (failed(shape))
    return failure();
  for (int64_t dim : *shape)
    if (dim < 0)
      return nodeError(node) << "expects a non-negative shape";
  HostTensor result;
  result.shape = *shape;
  result.isFloat = true;
  float floatValue = 0.0f;
  int64_t intValue = 0;
  if (const onnx::AttributeProto *attr = findAttr(node, "value")) {
    FailureOr<HostTensor> value = readTensor(attr->t(), locOf(node));
    if (failed(value))
      return failure();
    if (value->size() != 1)
      return nodeError(node) << "expects a one-element value";
    result.isFloat = value->isFloat;
    if (value->isFloat)
      floatValue = value->floats[0];
    else
      intValue = value->ints[0];
  }
  int64_t count = nn::getNumElements(result.shape);
  if (result.isFloat)
    result.floats.assign(count, floatValue);
  else
    result.ints.assign(count, intValue);
  return defineHost(node, std::move(result));
}

LogicalResult Importer::importCast(const onnx::NodeProto &node) {
  int64_t to = getInt(node, "to", 0);
  if (!isHost(node.input(0))) {
    // Casts of activations: masks to and from bool, ids to float.
    FailureOr<Value> input = getValue(node, 0);
    if (failed(input))
      return failure();
    Type elementType;
    if (to == onnx::TensorProto::FLOAT)
      elementType = builder.getF32Type();
    else if (to == onnx::TensorProto::BOOL)
      elementType = builder.getI1Type();
    else if (to == onnx::TensorProto::INT64 || to == onnx::TensorProto::INT32)
      elementType = builder.getI64Type(); // int32 widened, as ids are
    else
      return nodeError(node) << "casts tensors only to float, int64, int32 "
                                "and bool";
    auto type = tensorType(shapeOf(*input), elementType);
    if (type == input->getType())
      return define(node, *input);
    if (!cast<ShapedType>(input->getType()).getElementType().isF32() &&
        !cast<ShapedType>(input->getType()).getElementType().isInteger(64) &&
        !cast<ShapedType>(input->getType()).getElementType().isInteger(1))
      return nodeError(node) << "casts only float32, int64 and bool tensors";
    return define(node, builder.create<nn::CastOp>(locOf(node), type, *input));
  }
  FailureOr<HostTensor> data = getHost(node, 0);
  if (failed(data))
    return failure();
  if (to == onnx::TensorProto::INT64 || to == onnx::TensorProto::INT32) {
    if (data->isFloat) {
      for (float f : data->floats)
        data->ints.push_back(static_cast<int64_t>(f));
      data->floats.clear();
      data->isFloat = false;
    }
    data->isBool = false;
    return defineHost(node, std::move(*data));
  }
  if (to == onnx::TensorProto::BOOL) {
    if (data->isFloat)
      for (float f : data->floats)
        data->ints.push_back(f != 0.0f);
    else
      for (int64_t &i : data->ints)
        i = i != 0;
    data->floats.clear();
    data->isFloat = false;
    data->isBool = true;
    return defineHost(node, std::move(*data));
  }
  if (to == onnx::TensorProto::FLOAT) {
    if (!data->isFloat) {
      for (int64_t i : data->ints)
        data->floats.push_back(static_cast<float>(i));
      data->ints.clear();
      data->isFloat = true;
      data->isBool = false;
    }
    return defineHost(node, std::move(*data));
  }
  return nodeError(node) << "folds only casts to int64, int32, float and bool";
}

//===----------------------------------------------------------------------===//
// Handlers: masks
//===----------------------------------------------------------------------===//

// Folds `f` over host tensors broadcast by the numpy rules.
static FailureOr<HostTensor>
foldBroadcast(ArrayRef<const HostTensor *> operands,
              llvm::function_ref<void(HostTensor &, ArrayRef<int64_t>)> f,
              llvm::function_ref<InFlightDiagnostic()> error) {
  nn::Shape shape;
  for (const HostTensor *t : operands) {
    FailureOr<nn::Shape> next = nn::inferBroadcastShape(shape, t->shape, error);
    if (failed(next))
      return failure();
    shape = *next;
  }
  int64_t rank = shape.size();
  std::vector<std::vector<int64_t>> strides;
  for (const HostTensor *t : operands) {
    std::vector<int64_t> own = t->strides(), full(rank, 0);
    int64_t offset = rank - int64_t(t->shape.size());
    for (int64_t d = 0; d < int64_t(t->shape.size()); ++d)
      full[offset + d] = t->shape[d] == 1 ? 0 : own[d];
    strides.push_back(std::move(full));
  }
  HostTensor result;
  result.shape.assign(shape.begin(), shape.end());
  int64_t count = nn::getNumElements(shape);
  std::vector<int64_t> index(rank, 0), offsets(operands.size(), 0);
  for (int64_t e = 0; e < count; ++e) {
    f(result, offsets);
    for (int64_t d = rank - 1; d >= 0; --d) {
      for (size_t n = 0; n < operands.size(); ++n)
        offsets[n] += strides[n][d];
      if (++index[d] < shape[d])
        break;
      for (size_t n = 0; n < operands.size(); ++n)
        offsets[n] -= strides[n][d] * shape[d];
      index[d] = 0;
    }
  }
  return result;
}

static double hostNumber(const HostTensor &t, int64_t i) {
  return t.isFloat ? double(t.floats[i]) : double(t.ints[i]);
}

LogicalResult Importer::importCompare(const onnx::NodeProto &node) {
  StringRef op = node.op_type();
  StringRef name = llvm::StringSwitch<StringRef>(op)
                       .Case("Equal", "eq")
                       .Case("Less", "lt")
                       .Case("Greater", "gt")
                       .Case("LessOrEqual", "le")
                       .Case("GreaterOrEqual", "ge")
                       .Case("And", "and")
                       .Case("Or", "or")
                       .Default("xor");
  bool logical = op == "And" || op == "Or" || op == "Xor";
  if (isHost(node.input(0)) && isHost(node.input(1))) {
    FailureOr<HostTensor> l = getHost(node, 0), r = getHost(node, 1);
    if (failed(l) || failed(r))
      return failure();
    const HostTensor &a = *l, &b = *r;
    FailureOr<HostTensor> out = foldBroadcast(
        {&a, &b},
        [&](HostTensor &y, ArrayRef<int64_t> o) {
          double u = hostNumber(a, o[0]), v = hostNumber(b, o[1]);
          bool value = llvm::StringSwitch<bool>(name)
                           .Case("eq", u == v)
                           .Case("lt", u < v)
                           .Case("gt", u > v)
                           .Case("le", u <= v)
                           .Case("ge", u >= v)
                           .Case("and", u != 0 && v != 0)
                           .Case("or", u != 0 || v != 0)
                           .Default((u != 0) != (v != 0));
          y.ints.push_back(value);
        },
        [&] { return nodeError(node); });
    if (failed(out))
      return failure();
    out->isBool = true;
    return defineHost(node, std::move(*out));
  }
  FailureOr<Value> l = getValue(node, 0);
  FailureOr<Value> r =
      failed(l) ? FailureOr<Value>(failure()) : getValue(node, 1);
  if (failed(r))
    return failure();
  Type lt = cast<ShapedType>(l->getType()).getElementType();
  Type rt = cast<ShapedType>(r->getType()).getElementType();
  if (lt != rt)
    return nodeError(node) << "compares tensors of one element type, got " << lt
                           << " and " << rt;
  bool accepted = logical ? lt.isInteger(1)
                          : lt.isF32() || lt.isInteger(64) ||
                                (lt.isInteger(1) && name == "eq");
  if (!accepted)
    return nodeError(node) << "does not take tensors of element type " << lt;
  FailureOr<nn::Shape> shape = nn::inferBroadcastShape(
      shapeOf(*l), shapeOf(*r), [&] { return nodeError(node); });
  if (failed(shape))
    return failure();
  auto type = tensorType(*shape, builder.getI1Type());
  if (logical)
    return define(
        node, builder.create<nn::LogicalOp>(locOf(node), type, *l, *r, name));
  return define(node,
                builder.create<nn::CompareOp>(locOf(node), type, *l, *r, name));
}

LogicalResult Importer::importNot(const onnx::NodeProto &node) {
  if (isHost(node.input(0))) {
    FailureOr<HostTensor> t = getHost(node, 0);
    if (failed(t))
      return failure();
    for (int64_t &i : t->ints)
      i = i == 0;
    return defineHost(node, std::move(*t));
  }
  FailureOr<Value> input = getValue(node, 0);
  if (failed(input))
    return failure();
  return define(
      node, builder.create<nn::NotOp>(locOf(node), input->getType(), *input));
}

LogicalResult Importer::importWhere(const onnx::NodeProto &node) {
  if (isHost(node.input(0)) && isHost(node.input(1)) && isHost(node.input(2))) {
    FailureOr<HostTensor> c = getHost(node, 0), a = getHost(node, 1),
                          b = getHost(node, 2);
    if (failed(c) || failed(a) || failed(b))
      return failure();
    if (a->isFloat != b->isFloat)
      return nodeError(node) << "folds only branches of one element type";
    FailureOr<HostTensor> out = foldBroadcast(
        {&*c, &*a, &*b},
        [&](HostTensor &y, ArrayRef<int64_t> o) {
          const HostTensor &from = c->ints[o[0]] ? *a : *b;
          int64_t i = c->ints[o[0]] ? o[1] : o[2];
          if (from.isFloat)
            y.floats.push_back(from.floats[i]);
          else
            y.ints.push_back(from.ints[i]);
        },
        [&] { return nodeError(node); });
    if (failed(out))
      return failure();
    out->isFloat = a->isFloat;
    out->isBool = a->isBool && b->isBool;
    return defineHost(node, std::move(*out));
  }
  SmallVector<Value, 3> operands;
  for (int i = 0; i < 3; ++i) {
    FailureOr<Value> v = getValue(node, i);
    if (failed(v))
      return failure();
    operands.push_back(*v);
  }
  if (!cast<ShapedType>(operands[0].getType()).getElementType().isInteger(1))
    return nodeError(node) << "expects a boolean condition";
  Type elementType = cast<ShapedType>(operands[1].getType()).getElementType();
  if (!elementType.isF32() ||
      cast<ShapedType>(operands[2].getType()).getElementType() != elementType)
    return nodeError(node) << "selects only between float32 tensors";
  auto error = [&] { return nodeError(node); };
  FailureOr<nn::Shape> shape = nn::inferBroadcastShape(
      shapeOf(operands[0]), shapeOf(operands[1]), error);
  if (succeeded(shape))
    shape = nn::inferBroadcastShape(*shape, shapeOf(operands[2]), error);
  if (failed(shape))
    return failure();
  return define(node, builder.create<nn::WhereOp>(
                          locOf(node), tensorType(*shape, elementType),
                          operands[0], operands[1], operands[2]));
}

// Trilu of a constant (the causal mask torch.triu/tril builds in forward).
LogicalResult Importer::importTrilu(const onnx::NodeProto &node) {
  if (!isHost(node.input(0)))
    return nodeError(node) << "folds only Trilu of a constant; a causal mask "
                              "built from tensors the model computes is not "
                              "supported";
  FailureOr<HostTensor> t = getHost(node, 0);
  if (failed(t))
    return failure();
  int64_t k = 0;
  if (hasInput(node, 1)) {
    FailureOr<std::vector<int64_t>> kk = getHostInts(node, 1);
    if (failed(kk))
      return failure();
    if (kk->size() != 1)
      return nodeError(node) << "expects a single k";
    k = (*kk)[0];
  }
  if (t->shape.size() < 2)
    return nodeError(node) << "expects a tensor of rank >= 2";
  bool upper = getInt(node, "upper", 1) != 0;
  int64_t rows = t->shape.end()[-2], cols = t->shape.back();
  for (int64_t e = 0; e < t->size(); ++e) {
    int64_t i = (e / cols) % rows, j = e % cols;
    bool keep = upper ? j - i >= k : j - i <= k;
    if (keep)
      continue;
    if (t->isFloat)
      t->floats[e] = 0.0f;
    else
      t->ints[e] = 0;
  }
  return defineHost(node, std::move(*t));
}

//===----------------------------------------------------------------------===//
// Graph
//===----------------------------------------------------------------------===//

LogicalResult Importer::importNode(const onnx::NodeProto &node) {
  currentNode = &node;
  if (!node.domain().empty() && node.domain() != "ai.onnx")
    return nodeError(node) << "op domain '" << node.domain()
                           << "' is not supported";
  const onnx::OpSchema *schema =
      onnx::OpSchemaRegistry::Schema(node.op_type(), opset);
  if (!schema)
    return nodeError(node) << "unknown ONNX op";
  int since = schema->SinceVersion();
  bool knownType = false;
  for (const HandlerEntry &entry : kHandlers) {
    if (node.op_type() != entry.opType)
      continue;
    knownType = true;
    if (entry.sinceVersion == since)
      return (this->*entry.handler)(node);
  }
  if (knownType)
    return nodeError(node) << "version " << since << " of " << node.op_type()
                           << " is not supported";
  return nodeError(node) << "unsupported op " << node.op_type();
}

LogicalResult Importer::importGraph(const onnx::GraphProto &graph,
                                    ImportedModel &out) {
  model = &out;
  for (const onnx::TensorProto &init : graph.initializer())
    initializers[init.name()] = &init;

  Location fileLoc = FileLineColLoc::get(context, fileName, 0, 0);
  SmallVector<Type> argTypes;
  SmallVector<Location> argLocs;
  for (const onnx::ValueInfoProto &input : graph.input()) {
    if (initializers.count(input.name()))
      continue; // older exporters list initializers as inputs too
    Location loc = NameLoc::get(builder.getStringAttr(input.name()), fileLoc);
    if (!input.type().has_tensor_type())
      return emitError(loc)
             << "graph input '" << input.name() << "' is not a tensor";
    const onnx::TypeProto::Tensor &tensor = input.type().tensor_type();
    FailureOr<Type> element = elementType(tensor.elem_type(), loc,
                                          "graph input '" + input.name() + "'");
    if (failed(element))
      return failure();
    // Integer inputs are token ids; the runtime reads them as int64.
    if (element->isInteger(32))
      element = builder.getI64Type();
    if (!tensor.has_shape())
      return emitError(loc) << "graph input '" << input.name()
                            << "' has no shape; dpc needs static shapes";
    SmallVector<int64_t> shape;
    for (auto [i, dim] : llvm::enumerate(tensor.shape().dim())) {
      if (!dim.has_dim_value() || dim.dim_value() <= 0)
        return emitError(loc)
               << "graph input '" << input.name() << "' has no static size "
               << "for dimension " << i
               << (dim.has_dim_param() ? " ('" + dim.dim_param() + "')" : "")
               << (i == 1 ? "; give the sequence lengths with --seq-buckets"
                          : "; give the batch size with --microbatch-size");
      shape.push_back(dim.dim_value());
    }
    argTypes.push_back(tensorType(shape, *element));
    argLocs.push_back(loc);
    out.inputNames.push_back(input.name());
  }

  auto module = ModuleOp::create(fileLoc);
  builder.setInsertionPointToEnd(module.getBody());
  auto func = builder.create<func::FuncOp>(
      fileLoc, "main", builder.getFunctionType(argTypes, {}));
  Block *entry = func.addEntryBlock();
  for (auto [arg, loc] : llvm::zip(entry->getArguments(), argLocs))
    arg.setLoc(loc);
  for (auto [name, arg] : llvm::zip(out.inputNames, entry->getArguments()))
    values[name] = arg;
  out.module = OwningOpRef<ModuleOp>(module);

  builder.setInsertionPointToEnd(entry);
  for (const onnx::NodeProto &node : graph.node())
    if (failed(importNode(node)))
      return failure();

  SmallVector<Value> results;
  for (const onnx::ValueInfoProto &output : graph.output()) {
    Value value = values.lookup(output.name());
    if (auto it = unreadable.find(output.name());
        !value && it != unreadable.end())
      return emitError(fileLoc)
             << "graph output '" << output.name() << "' is " << it->second;
    if (!value)
      return emitError(fileLoc)
             << "graph output '" << output.name()
             << "' is not computed from the inputs (a constant output)";
    results.push_back(value);
    out.outputNames.push_back(output.name());
  }
  builder.create<func::ReturnOp>(fileLoc, results);
  func.setFunctionType(
      builder.getFunctionType(argTypes, ValueRange(results).getTypes()));
  return verify(module);
}

// Parses `bytes`, the contents of `name`; fails after reporting what is
// wrong.
LogicalResult parseModel(StringRef bytes, StringRef name, MLIRContext *context,
                         onnx::ModelProto &model) {
  Location loc = FileLineColLoc::get(context, name, 0, 0);
  // protobuf's limit for one message.
  if (bytes.size() > size_t(std::numeric_limits<int>::max()))
    return emitError(loc) << "'" << name
                          << "' is larger than the 2 GiB a protobuf "
                             "message can hold";
  if (!model.ParseFromArray(bytes.data(), int(bytes.size())))
    return emitError(loc) << "'" << name
                          << "' is not a valid ONNX protobuf file";
  return success();
}

// Exporters bake a fixed batch size into Reshape targets (x.view(16, -1)
// exports the constant [16, -1]). When the batch is re-specialised, a
// constant target whose leading entry is the model's old batch size is
// rewritten to the new one; anything else is left for shape inference to
// judge.
// The batch size the model was exported at: the first dimension of its
// first graph input with a static one; 0 when none has.
int64_t exportedBatchSize(const onnx::GraphProto &graph) {
  for (const onnx::ValueInfoProto &input : graph.input()) {
    const auto &shape = input.type().tensor_type().shape();
    if (shape.dim_size() > 0 && shape.dim(0).has_dim_value())
      return shape.dim(0).dim_value();
  }
  return 0;
}

void respecialiseReshapeTargets(onnx::GraphProto &graph, int64_t batch) {
  int64_t oldBatch = exportedBatchSize(graph);
  if (oldBatch <= 1 || oldBatch == batch)
    return;
  auto rewrite = [&](onnx::TensorProto &tensor) {
    if (tensor.data_type() != onnx::TensorProto::INT64 ||
        tensor.dims_size() != 1 || tensor.dims(0) < 1)
      return;
    if (!tensor.raw_data().empty()) {
      int64_t first;
      std::memcpy(&first, tensor.raw_data().data(), sizeof(first));
      if (first == oldBatch)
        std::memcpy(tensor.mutable_raw_data()->data(), &batch, sizeof(batch));
    } else if (tensor.int64_data_size() > 0 &&
               tensor.int64_data(0) == oldBatch) {
      tensor.set_int64_data(0, batch);
    }
  };
  for (const onnx::NodeProto &node : graph.node()) {
    if (node.op_type() != "Reshape" || node.input_size() < 2)
      continue;
    const std::string &target = node.input(1);
    for (onnx::TensorProto &init : *graph.mutable_initializer())
      if (init.name() == target)
        rewrite(init);
    for (onnx::NodeProto &producer : *graph.mutable_node())
      if (producer.op_type() == "Constant" && producer.output_size() == 1 &&
          producer.output(0) == target)
        for (onnx::AttributeProto &attr : *producer.mutable_attribute())
          if (attr.name() == "value")
            rewrite(*attr.mutable_t());
  }
}

// Whether `name` is an initializer (which ONNX may also list as an input).
bool isInitializer(const onnx::GraphProto &graph, const std::string &name) {
  return llvm::any_of(graph.initializer(), [&](const onnx::TensorProto &init) {
    return init.name() == name;
  });
}

// The graph output no node, input or initializer produces, or "". The onnx
// checker lets such a graph through, and the version converter crashes on
// it, so it is refused before conversion.
std::string unproducedOutput(const onnx::GraphProto &graph) {
  llvm::StringSet<> produced;
  for (const onnx::ValueInfoProto &input : graph.input())
    produced.insert(input.name());
  for (const onnx::TensorProto &init : graph.initializer())
    produced.insert(init.name());
  for (const onnx::NodeProto &node : graph.node())
    for (const std::string &output : node.output())
      produced.insert(output);
  for (const onnx::ValueInfoProto &output : graph.output())
    if (!produced.contains(output.name()))
      return output.name();
  return "";
}

// A node attribute the onnx library's shape inference (and the version
// converter's) uses without checking: strides and dilations divide (0 stops
// convPoolShapeInference with SIGFPE) and kernel sizes size the output. The
// first non-positive entry of one, in the graph or any subgraph, which
// shape inference enters too.
struct BadAttribute {
  const onnx::NodeProto *node = nullptr;
  std::string name;
  int64_t value = 0;
};

std::optional<BadAttribute> nonPositiveWindow(const onnx::GraphProto &graph) {
  for (const onnx::NodeProto &node : graph.node()) {
    for (const onnx::AttributeProto &attr : node.attribute()) {
      if (attr.name() == "strides" || attr.name() == "dilations" ||
          attr.name() == "kernel_shape")
        for (int64_t value : attr.ints())
          if (value <= 0)
            return BadAttribute{&node, attr.name(), value};
      if (attr.has_g())
        if (std::optional<BadAttribute> bad = nonPositiveWindow(attr.g()))
          return bad;
      for (const onnx::GraphProto &subgraph : attr.graphs())
        if (std::optional<BadAttribute> bad = nonPositiveWindow(subgraph))
          return bad;
    }
  }
  return std::nullopt;
}

// The default-domain opset the model imports.
int64_t modelOpset(const onnx::ModelProto &model) {
  for (const onnx::OperatorSetIdProto &set : model.opset_import())
    if (set.domain().empty() || set.domain() == "ai.onnx")
      return set.version();
  return 0;
}

} // namespace

FailureOr<ImportedModel>
mlir::dpc::onnx_frontend::importOnnxFile(StringRef path, MLIRContext *context,
                                         const ImportOptions &options) {
  std::ifstream in(path.str(), std::ios::binary);
  if (!in)
    return emitError(FileLineColLoc::get(context, path, 0, 0))
           << "cannot open ONNX model '" << path << "'";
  std::string bytes((std::istreambuf_iterator<char>(in)),
                    std::istreambuf_iterator<char>());
  return importOnnxBytes(bytes, path, context, options);
}

FailureOr<ImportedModel>
mlir::dpc::onnx_frontend::importOnnxBytes(StringRef bytes, StringRef path,
                                          MLIRContext *context,
                                          const ImportOptions &options) {
  context->loadDialect<nn::NNDialect, func::FuncDialect>();
  Location loc = FileLineColLoc::get(context, path, 0, 0);
  onnx::ModelProto model;
  if (failed(parseModel(bytes, path, context, model)))
    return failure();

  ImportedModel imported;
  imported.fileOpset = modelOpset(model);
  try {
    onnx::checker::check_model(model);
  } catch (const std::exception &e) {
    return emitError(loc) << "the ONNX checker rejects the model: " << e.what();
  }
  if (std::string output = unproducedOutput(model.graph()); !output.empty())
    return emitError(loc) << "graph output '" << output
                          << "' is produced by no node, input or initializer";
  if (std::optional<BadAttribute> bad = nonPositiveWindow(model.graph())) {
    const onnx::NodeProto &node = *bad->node;
    std::string name =
        node.name().empty() ? "<unnamed " + node.op_type() + ">" : node.name();
    return emitError(NameLoc::get(StringAttr::get(context, name), loc))
           << "ONNX node '" << name << "' (" << node.op_type() << ", opset "
           << imported.fileOpset << "): attribute '" << bad->name
           << "' holds " << bad->value << "; strides, dilations and kernel "
           << "sizes must be positive";
  }
  int64_t newest = onnx::OpSchemaRegistry::DomainToVersionRange::Instance()
                       .Map()
                       .at(onnx::ONNX_DOMAIN)
                       .second;
  if (imported.fileOpset > newest)
    return emitError(loc) << "the model's opset " << imported.fileOpset
                          << " is newer than opset " << newest
                          << ", the newest this build's onnx library knows";
  int64_t opset = std::max(imported.fileOpset, kMinOpset);
  if (imported.fileOpset < kMinOpset) {
    try {
      model = onnx::version_conversion::ConvertVersion(model, kMinOpset);
    } catch (const std::exception &e) {
      return emitError(loc)
             << "cannot convert the model from opset " << imported.fileOpset
             << " to opset " << kMinOpset << ": " << e.what();
    }
  }
  int64_t exportedBatch = exportedBatchSize(model.graph());
  // The sizes to bind, by dimension of the data inputs and the outputs.
  SmallVector<int64_t, 2> bind = {options.batchSize, options.sequenceLength};
  if (options.sequenceLength > 0) {
    // Only token ids have a length to bind. A length the model fixed can
    // shrink (where nothing else depends on it) but never grow.
    for (const onnx::ValueInfoProto &input : model.graph().input()) {
      if (isInitializer(model.graph(), input.name()))
        continue;
      const auto &tensor = input.type().tensor_type();
      int32_t type = tensor.elem_type();
      if (tensor.shape().dim_size() != 2 || (type != onnx::TensorProto::INT64 &&
                                             type != onnx::TensorProto::INT32))
        return emitError(loc)
               << "graph input '" << input.name() << "' is not token ids "
               << "(int64 or int32 [batch, length]), so it has no sequence "
               << "length to bind to " << options.sequenceLength;
      const auto &shape = tensor.shape();
      if (!shape.dim(1).has_dim_value() ||
          shape.dim(1).dim_value() >= options.sequenceLength)
        continue;
      return emitError(loc)
             << "graph input '" << input.name() << "' has a static length of "
             << shape.dim(1).dim_value() << " in dimension 1, shorter than "
             << options.sequenceLength;
    }
  }
  if (llvm::any_of(bind, [](int64_t size) { return size > 0; })) {
    // Re-specialise the batch (and sequence) dimensions before shape
    // inference so that every inferred shape follows them; shapes recorded
    // for the old sizes would contradict them, so they are dropped and
    // inferred again.
    onnx::GraphProto *graph = model.mutable_graph();
    if (options.batchSize > 0)
      respecialiseReshapeTargets(*graph, options.batchSize);
    graph->clear_value_info();
    for (auto *list : {graph->mutable_input(), graph->mutable_output()}) {
      for (onnx::ValueInfoProto &value : *list) {
        if (list == graph->mutable_input() &&
            isInitializer(*graph, value.name()))
          continue;
        auto *shape =
            value.mutable_type()->mutable_tensor_type()->mutable_shape();
        for (auto [dim, size] : llvm::enumerate(bind))
          if (size > 0 && shape->dim_size() > int(dim))
            shape->mutable_dim(dim)->set_dim_value(size);
      }
    }
  }
  try {
    onnx::ShapeInferenceOptions inferenceOptions{/*check_type=*/true,
                                                 /*error_mode=*/1};
    onnx::shape_inference::InferShapes(
        model, onnx::OpSchemaRegistry::Instance(), inferenceOptions);
  } catch (const std::exception &e) {
    return emitError(loc) << "ONNX shape inference fails: " << e.what();
  }

  Importer importer(context, path, opset);
  if (options.batchSize > 0 && exportedBatch > 0 &&
      exportedBatch != options.batchSize)
    importer.setRebatch(exportedBatch, options.batchSize);
  if (options.sequenceLength > 0)
    importer.setSliceFloatConstants();
  if (failed(importer.importGraph(model.graph(), imported)))
    return failure();
  return imported;
}
