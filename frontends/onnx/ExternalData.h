//===- ExternalData.h - ONNX tensors kept beside the model ------*- C++ -*-===//
//
// Private to frontends/onnx. A model past protobuf's 2 GiB (every large
// torch.onnx export) keeps its tensors in external files: a TensorProto
// with data_location EXTERNAL names a `location` relative to the model
// file, an `offset` and a `length`. ExternalData finds those files beside
// the model (wherever dpc was started), checks every such tensor before
// anything reads it, and maps each file once; the importer reads small
// tensors through it and hands large ones on as views into the mapping, so
// that no weight is copied until `dpc compile` streams it into a stage's
// weights file.
//
//===----------------------------------------------------------------------===//

#ifndef DPC_FRONTENDS_ONNX_EXTERNALDATA_H
#define DPC_FRONTENDS_ONNX_EXTERNALDATA_H

#include "dpc/support/MappedFile.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Location.h"
#include "llvm/ADT/StringMap.h"

#include "onnx/onnx_pb.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace mlir::dpc::onnx_frontend::detail {

/// Where an external tensor's bytes lie.
struct ExternalSpan {
  std::shared_ptr<const ::dpc::support::MappedFile> file;
  uint64_t offset = 0;
  uint64_t length = 0;
  const uint8_t *data() const { return file->data() + offset; }
};

class ExternalData {
public:
  /// Files are found relative to `modelDir`, the model file's folder.
  explicit ExternalData(std::string modelDir) : dir(std::move(modelDir)) {}

  /// Checks every external tensor of `graph` (initializers and Constant
  /// values, subgraphs included). An integer or boolean one, and any of at
  /// most 64 KiB, is read into the proto (shape inference and the version
  /// converter read shape constants from there); the others keep their
  /// data external, their location rewritten to the file's absolute path,
  /// so that the onnx checker looks where dpc did. Fails
  /// naming the tensor and the file: a location missing, a file not found
  /// in the model's folder, an offset past the file's end, a file that ends
  /// before the tensor does, or a length its shape and type disagree with.
  LogicalResult resolve(onnx::GraphProto &graph, Location loc);

  /// The bytes of external `tensor`, checked by resolve().
  FailureOr<ExternalSpan> span(const onnx::TensorProto &tensor, Location loc);

  /// Whether any tensor was external.
  bool any() const { return !files.empty(); }

private:
  LogicalResult resolveTensor(onnx::TensorProto &tensor, Location loc);

  std::string dir;
  llvm::StringMap<std::shared_ptr<const ::dpc::support::MappedFile>> files;
};

/// The external initializers of `graph`, without data (the references
/// only): onnx's version converter drops the references, and
/// restoreExternalReferences puts them back on the converted graph's
/// initializers of the same names.
std::vector<onnx::TensorProto>
externalReferences(const onnx::GraphProto &graph);
void restoreExternalReferences(onnx::GraphProto &graph,
                               const std::vector<onnx::TensorProto> &refs);

/// The size in bytes of one element of ONNX data type `type`; 0 for the
/// types dpc does not read.
size_t onnxElementSize(int32_t type);

/// The bytes `tensor`'s shape and type need (0 for a type dpc does not
/// read).
uint64_t onnxByteCount(const onnx::TensorProto &tensor);

/// Whether ONNX data type `type` is one dpc reads as float (float32,
/// float16, bfloat16, float64).
bool isOnnxFloatType(int32_t type);

/// The entries of a tensor's external_data, by key.
struct ExternalEntries {
  std::string location;
  std::optional<std::string> offset, length;
};
ExternalEntries externalEntries(const onnx::TensorProto &tensor);

/// A non-negative decimal integer (an offset or a length), or nullopt.
std::optional<uint64_t> parseByteCount(const std::string &text);

} // namespace mlir::dpc::onnx_frontend::detail

#endif // DPC_FRONTENDS_ONNX_EXTERNALDATA_H
