//===- OnnxExport.h - Trained weights back into ONNX ------------*- C++ -*-===//
//
// `dpc export` writes the model dpc compiled with its initializers replaced
// by trained values. The importer made every float initializer a model reads
// an `nn.param` of the same name, so the names are the link; nothing else in
// the model changes.
//
//===----------------------------------------------------------------------===//

#ifndef DPC_FRONTENDS_ONNX_ONNXEXPORT_H
#define DPC_FRONTENDS_ONNX_ONNXEXPORT_H

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace mlir::dpc::onnx_frontend {

struct TrainedTensor {
  std::vector<int64_t> shape;
  std::vector<float> data;
};

/// Reads the ONNX model at `modelPath`, replaces the data of the float32
/// initializer of every name in `weights` (shapes must agree) and writes the
/// model to `outputPath`. Returns an empty string on success, else what is
/// wrong (a weight with no initializer of its name, a shape or type
/// mismatch, an unreadable or unwritable file); nothing is written then.
std::string writeOnnxWithWeights(const std::string &modelPath,
                                 const std::map<std::string, TrainedTensor> &weights,
                                 const std::string &outputPath);

} // namespace mlir::dpc::onnx_frontend

#endif // DPC_FRONTENDS_ONNX_ONNXEXPORT_H
