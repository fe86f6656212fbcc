//===- Importer.h - The importer class, shared by its files -----*- C++ -*-===//
//
// Private to frontends/onnx. The importer is one class whose members are
// defined across the folder by concern and op family, as onnx-mlir splits
// its conversions: OnnxImporter.cpp (the entry points, the graph walk and
// the dispatch through the handler rows), TensorReading.cpp (element types,
// tensors and attributes), Values.cpp (operands, results and host values),
// and the handlers with their rows of the table in NN.cpp, RNN.cpp,
// Math.cpp and Tensor.cpp. Nothing outside the folder includes this header;
// the public interface is OnnxImporter.h.
//
//===----------------------------------------------------------------------===//

#ifndef DPC_FRONTENDS_ONNX_IMPORTER_H
#define DPC_FRONTENDS_ONNX_IMPORTER_H

#include "frontends/onnx/OnnxImporter.h"

#include "dialects/nn/IR/NNOps.h"
#include "dialects/nn/IR/ShapeInference.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Diagnostics.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/StringMap.h"

#include "onnx/onnx_pb.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace mlir::dpc::onnx_frontend::detail {

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
  // Op types and the since-versions of their schemas that the importer
  // implements: the versions in effect at kMinOpset and every later version
  // up to the onnx library's newest opset whose changes the handler covers
  // (most changed only the accepted types). Each op family's file lists its
  // own rows beside its handlers; importNode looks a node up in all of them.
  static ArrayRef<HandlerEntry> nnHandlers();
  static ArrayRef<HandlerEntry> rnnHandlers();
  static ArrayRef<HandlerEntry> mathHandlers();
  static ArrayRef<HandlerEntry> tensorHandlers();

  LogicalResult importNode(const onnx::NodeProto &node);

  // Handlers that build nn ops (NN.cpp).
  LogicalResult importConv(const onnx::NodeProto &node);
  LogicalResult importMaxPool(const onnx::NodeProto &node);
  LogicalResult importAveragePool(const onnx::NodeProto &node);
  LogicalResult importGlobalAveragePool(const onnx::NodeProto &node);
  LogicalResult importBatchNormalization(const onnx::NodeProto &node);
  LogicalResult importLayerNormalization(const onnx::NodeProto &node);
  // Softmax and LogSoftmax.
  template <typename OpTy>
  LogicalResult importSoftmax(const onnx::NodeProto &node);
  LogicalResult importDropout(const onnx::NodeProto &node);
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

  // RNN.cpp.
  LogicalResult importLstm(const onnx::NodeProto &node);

  // Math.cpp.
  // Relu and the other one-input elementwise functions.
  template <typename OpTy>
  LogicalResult importUnary(const onnx::NodeProto &node);
  template <typename OpTy>
  LogicalResult importUnaryFunction(const onnx::NodeProto &node);
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
  LogicalResult importClip(const onnx::NodeProto &node);
  // Masks: Equal, Less, Greater, LessOrEqual, GreaterOrEqual; And, Or, Xor;
  // Not; Where; Trilu (constants only).
  LogicalResult importCompare(const onnx::NodeProto &node);
  LogicalResult importNot(const onnx::NodeProto &node);
  LogicalResult importWhere(const onnx::NodeProto &node);
  LogicalResult importTrilu(const onnx::NodeProto &node);

  // Tensor.cpp: handlers that build nn ops on activations or evaluate
  // shape subgraphs on the host.
  LogicalResult importExpand(const onnx::NodeProto &node);
  LogicalResult importTranspose(const onnx::NodeProto &node);
  LogicalResult importFlatten(const onnx::NodeProto &node);
  LogicalResult importReshape(const onnx::NodeProto &node);
  LogicalResult importIdentity(const onnx::NodeProto &node);
  LogicalResult importConstant(const onnx::NodeProto &node);
  LogicalResult importShape(const onnx::NodeProto &node);
  LogicalResult importGather(const onnx::NodeProto &node);
  LogicalResult importTensorGather(const onnx::NodeProto &node);
  LogicalResult gatherRows(const onnx::NodeProto &node, Value data,
                           int64_t axis);
  // The input of a Reshape, Squeeze or Unsqueeze: known at import time, or
  // an activation.
  struct Reshaped {
    std::optional<HostTensor> host;
    Value value;
    ArrayRef<int64_t> shape() const {
      return host ? ArrayRef<int64_t>(host->shape) : nn::shapeOf(value);
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
  LogicalResult importActivationSlice(const onnx::NodeProto &node);
  struct SliceInputs {
    std::vector<int64_t> starts, ends, axes, steps;
  };
  FailureOr<SliceInputs> sliceInputs(const onnx::NodeProto &node);
  LogicalResult importSplit(const onnx::NodeProto &node);
  LogicalResult importPad(const onnx::NodeProto &node);
  LogicalResult importConstantOfShape(const onnx::NodeProto &node);
  LogicalResult importCast(const onnx::NodeProto &node);

  // Diagnostics name the node, its op type and the opset (OnnxImporter.cpp).
  Location locOf(const onnx::NodeProto &node);
  InFlightDiagnostic nodeError(const onnx::NodeProto &node);
  std::string nodeName(const onnx::NodeProto &node) const;

  // Operands (Values.cpp).
  bool hasInput(const onnx::NodeProto &node, int index) const;
  bool isHost(const std::string &name) const;
  FailureOr<Value> getValue(const onnx::NodeProto &node, int index);
  // An integer or boolean constant read by tensor ops: a frozen float
  // parameter cast to its type.
  FailureOr<Value> materializeConstant(const onnx::NodeProto &node,
                                       const std::string &name,
                                       const HostTensor &tensor);
  FailureOr<HostTensor> getHost(const onnx::NodeProto &node, int index);
  FailureOr<std::vector<int64_t>> getHostInts(const onnx::NodeProto &node,
                                              int index);
  LogicalResult define(const onnx::NodeProto &node, Value value);
  LogicalResult defineHost(const onnx::NodeProto &node, HostTensor tensor);
  LogicalResult checkNoOutputsBeyond(const onnx::NodeProto &node, int count);

  // Attributes (TensorReading.cpp).
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

  // Tensors (TensorReading.cpp).
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

} // namespace mlir::dpc::onnx_frontend::detail

#endif // DPC_FRONTENDS_ONNX_IMPORTER_H
