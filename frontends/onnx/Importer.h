//===- Importer.h - The importer class, shared by its files -----*- C++ -*-===//
//
// Private to frontends/onnx. The importer is one class whose members are
// defined across the folder by concern, as onnx-mlir splits its
// conversions: OnnxImporter.cpp (the entry points, the graph walk and the
// dispatch through the handler rows), TensorReading.cpp (element types,
// tensors and attributes) and Values.cpp (operands, results and host
// values). The op handlers are free functions over the class's public
// members, each beside its rows of the handler table in its family's file:
// NN.cpp, RNN.cpp, Math.cpp, Tensor.cpp, GatherSlice.cpp and ShapeFold.cpp
// (ops that only shape computations use, folded at import). Adding an op
// to a family touches only that file. Nothing outside the folder includes
// this header; the public interface is OnnxImporter.h.
//
//===----------------------------------------------------------------------===//

#ifndef DPC_FRONTENDS_ONNX_IMPORTER_H
#define DPC_FRONTENDS_ONNX_IMPORTER_H

#include "frontends/onnx/ExternalData.h"
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
  /// Element `i` as a double, whichever the element type.
  double number(int64_t i) const {
    return isFloat ? double(floats[i]) : double(ints[i]);
  }
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

class Importer;

/// Calls `f(result, offsets)` for each element of the numpy broadcast of
/// `operands`, in row-major order, with each operand's offset of that
/// element; `f` appends the element to `result` (Math.cpp).
FailureOr<HostTensor>
foldBroadcast(ArrayRef<const HostTensor *> operands,
              llvm::function_ref<void(HostTensor &, ArrayRef<int64_t>)> f,
              llvm::function_ref<InFlightDiagnostic()> error);

/// An op handler: imports `node` into `im`, or reports with im.nodeError
/// why it cannot. Handlers are free functions in their op family's file,
/// written against Importer's public members.
using ImportHandler = LogicalResult (*)(Importer &im,
                                        const onnx::NodeProto &node);

/// A row of the handler table: an op type and the since-version of its
/// schema that `handler` implements.
struct HandlerEntry {
  const char *opType;
  int sinceVersion;
  ImportHandler handler;
};

// Op types and the since-versions of their schemas that the importer
// implements: the versions in effect at kMinOpset and every later version
// up to the onnx library's newest opset whose changes the handler covers
// (most changed only the accepted types). Each op family's file lists its
// own rows beside its handlers; Importer::importNode looks a node up in all
// of them.
ArrayRef<HandlerEntry> nnHandlers();          // NN.cpp
ArrayRef<HandlerEntry> rnnHandlers();         // RNN.cpp
ArrayRef<HandlerEntry> mathHandlers();        // Math.cpp
ArrayRef<HandlerEntry> tensorHandlers();      // Tensor.cpp
ArrayRef<HandlerEntry> gatherSliceHandlers(); // GatherSlice.cpp
ArrayRef<HandlerEntry> shapeFoldHandlers();   // ShapeFold.cpp

class Importer {
public:
  Importer(MLIRContext *context, StringRef fileName, int64_t opset)
      : builder(context), context(context), fileName(fileName.str()),
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

  //===--------------------------------------------------------------------===//
  // What the handlers use
  //===--------------------------------------------------------------------===//

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
  /// A float initializer's data as a parameter: float32, float16, bfloat16
  /// or float64, held or (external) mapped, never widened here.
  FailureOr<ImportedParam> readParam(const onnx::TensorProto &tensor,
                                     Location loc);
  static bool isFloatInitializer(const onnx::TensorProto &tensor);
  /// Where an external tensor's bytes lie (ExternalData::span).
  FailureOr<ExternalSpan> externalSpan(const onnx::TensorProto &tensor,
                                       Location loc);
  /// The raw bytes of a tensor: its raw_data, or its external data.
  FailureOr<StringRef> tensorBytes(const onnx::TensorProto &tensor,
                                   Location loc);
  FailureOr<Type> elementType(int32_t onnxType, Location loc, StringRef what);
  RankedTensorType tensorType(ArrayRef<int64_t> shape, Type elementType) {
    return RankedTensorType::get(shape, elementType);
  }

  // The import's state that handlers read and write.
  OpBuilder builder;
  // Set by setRebatch: Reshape targets are re-batched (Tensor.cpp).
  int64_t exportedBatch = 0, importedBatch = 0;
  // Dropout ops imported so far: the next one's mask_id.
  int64_t numDropouts = 0;
  // The IR values and host tensors of the outputs imported so far.
  llvm::StringMap<Value> values;
  llvm::StringMap<HostTensor> hostValues;
  bool sliceFloatConstants = false;
  llvm::StringMap<const onnx::TensorProto *> initializers;
  // The model's external files, when it has any (ExternalData.h).
  ExternalData *external = nullptr;
  // Outputs of imported nodes that have no value in the IR, and why.
  llvm::StringMap<std::string> unreadable;
  ImportedModel *model = nullptr;

private:
  LogicalResult importNode(const onnx::NodeProto &node);

  MLIRContext *context;
  std::string fileName;
  int64_t opset;
  const onnx::NodeProto *currentNode = nullptr;
};

} // namespace mlir::dpc::onnx_frontend::detail

#endif // DPC_FRONTENDS_ONNX_IMPORTER_H
