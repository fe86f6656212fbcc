//===- OnnxExport.h - Trained weights back into ONNX ------------*- C++ -*-===//
//
// `dpc export` writes the model dpc compiled with its initializers replaced
// by trained values. The importer made every float initializer a model reads
// an `nn.param` of the same name, so the names are the link; nothing else in
// the model changes. A large model is written as torch.onnx writes one: the
// graph in the .onnx file, the tensors in one external data file beside it.
//
//===----------------------------------------------------------------------===//

#ifndef DPC_FRONTENDS_ONNX_ONNXEXPORT_H
#define DPC_FRONTENDS_ONNX_ONNXEXPORT_H

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace mlir::dpc::onnx_frontend {

/// A trained value: `shape` float32 values at `data`, which the caller
/// keeps alive (a view into a mapped checkpoint).
struct TrainedTensor {
  std::vector<int64_t> shape;
  const float *data = nullptr;
};

struct ExportOptions {
  /// Tensors of at least kExternalThreshold bytes go to the external file
  /// `<output>.data` even when the model would fit in one protobuf (which
  /// it must past 2 GiB, and does when the source model had external data).
  bool externalData = false;
};

/// Tensors this size and up go to the external file when one is written
/// (onnx's own default threshold).
constexpr uint64_t kExternalThreshold = 1024;

/// Reads the ONNX model at `modelPath`, replaces the data of the float
/// initializer of every name in `weights` (shapes must agree; a float16,
/// bfloat16 or float64 initializer keeps its type, rounded to nearest) and
/// writes the model to `outputPath`, with external data as `options` and
/// the model's size say. Throws ::dpc::Error saying what is wrong (a weight
/// with no initializer of its name, a shape or type mismatch, an unreadable
/// or unwritable file); nothing is written then.
void writeOnnxWithWeights(const std::string &modelPath,
                          const std::map<std::string, TrainedTensor> &weights,
                          const std::string &outputPath,
                          const ExportOptions &options = {});

/// Copies the model at `modelPath` to `copyPath` for a later export: as is,
/// or, when it keeps tensors in external files, with each location made
/// absolute so that the copy still finds them. Throws ::dpc::Error saying
/// what is wrong.
void copyModelForExport(const std::string &modelPath,
                        const std::string &copyPath);

} // namespace mlir::dpc::onnx_frontend

#endif // DPC_FRONTENDS_ONNX_ONNXEXPORT_H
