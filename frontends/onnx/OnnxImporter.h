//===- OnnxImporter.h - ONNX to nn dialect ----------------------*- C++ -*-===//
//
// Imports an ONNX model into a module holding one function, @main, in the nn
// dialect. The onnx library does the checking, version conversion and shape
// inference; the importer folds shape subgraphs to constants and dispatches
// every remaining node through a handler table keyed by op type and opset.
// Initializers become `nn.param` ops; their data is returned beside the
// module, never put into the IR.
//
//===----------------------------------------------------------------------===//

#ifndef DPC_FRONTENDS_ONNX_ONNXIMPORTER_H
#define DPC_FRONTENDS_ONNX_ONNXIMPORTER_H

#include "dpc/support/HalfFloat.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace dpc::support {
class MappedFile;
} // namespace dpc::support

namespace mlir::dpc::onnx_frontend {

/// The oldest opset the handler table implements: older models are
/// converted to it first. Newer ones, up to the newest opset the onnx
/// library knows, are imported at their own opset.
constexpr int64_t kMinOpset = 13;

struct ImportOptions {
  /// When positive, the first dimension of every graph input is set to this
  /// batch size before shape inference (`--microbatch-size`).
  int64_t batchSize = 0;
  /// When positive, the second dimension of every graph input and output
  /// (the sequence of a token model, [batch, length, ...]) is set to this
  /// length the same way (`--seq-buckets`). Every data input must then be
  /// token ids, int64 or int32 [batch, length]; a static length shorter than
  /// this is refused. Slices of float constants are then imported as slices,
  /// not folded, so that every length reads the same constant.
  int64_t sequenceLength = 0;
};

/// How an imported parameter's data is stored.
using ParamDType = ::dpc::support::FloatFormat;

/// A parameter's initial value: a float initializer (trainable), or a
/// constant the model's arithmetic reads (frozen). Float16, bfloat16 and
/// float64 initializers keep their type here; they train as float32, and
/// the rank widens them as it loads its weights. The data is held in
/// `bytes` (little-endian, as ONNX stores it), or, for an initializer in an
/// external file, lies at `offset` of the mapped `file`: the compiler
/// streams it from there into the stages' weights without a copy.
struct ImportedParam {
  std::string name;
  std::vector<int64_t> shape;
  ParamDType dtype = ParamDType::F32;
  std::vector<uint8_t> bytes;
  std::shared_ptr<const ::dpc::support::MappedFile> file;
  uint64_t offset = 0;

  /// A float32 parameter holding `values`.
  static ImportedParam fromFloats(std::string name, std::vector<int64_t> shape,
                                  const std::vector<float> &values);
  /// The values as float (float16 and bfloat16 exactly, float64 rounded).
  std::vector<float> toFloats() const;
};

struct ImportedModel {
  OwningOpRef<ModuleOp> module;
  std::vector<ImportedParam> params;
  /// Names of the graph inputs and outputs, in @main's argument and result
  /// order.
  std::vector<std::string> inputNames;
  std::vector<std::string> outputNames;
  /// The opset the file declared (before any conversion to kMinOpset).
  int64_t fileOpset = 0;
};

/// Reads and imports the ONNX file at `path`. Problems (unreadable or
/// malformed file, checker failures, unsupported ops or attributes, missing
/// input shapes) are reported as diagnostics on `context` naming the node,
/// op type and opset; the result is then failure().
FailureOr<ImportedModel> importOnnxFile(llvm::StringRef path,
                                        MLIRContext *context,
                                        const ImportOptions &options);

/// Imports an ONNX model from its serialised bytes; `path` names it in
/// diagnostics. importOnnxFile reads the file and calls this.
FailureOr<ImportedModel> importOnnxBytes(llvm::StringRef bytes,
                                         llvm::StringRef path,
                                         MLIRContext *context,
                                         const ImportOptions &options);

} // namespace mlir::dpc::onnx_frontend

#endif // DPC_FRONTENDS_ONNX_ONNXIMPORTER_H
