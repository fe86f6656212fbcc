//===- OnnxExport.cpp - Trained weights back into ONNX --------------------===//

#include "frontends/onnx/OnnxExport.h"

#include "onnx/checker.h"
#include "onnx/onnx_pb.h"

#include <cstdio>
#include <fstream>
#include <set>

namespace mlir::dpc::onnx_frontend {

namespace {

std::string shapeText(const std::vector<int64_t> &shape) {
  std::string text = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    text += (i ? ", " : "") + std::to_string(shape[i]);
  return text + "]";
}

} // namespace

std::string
writeOnnxWithWeights(const std::string &modelPath,
                     const std::map<std::string, TrainedTensor> &weights,
                     const std::string &outputPath) {
  onnx::ModelProto model;
  {
    std::ifstream in(modelPath, std::ios::binary);
    if (!in)
      return "cannot open ONNX model '" + modelPath + "'";
    if (!model.ParseFromIstream(&in))
      return "'" + modelPath + "' is not a valid ONNX protobuf file";
  }
  std::set<std::string> replaced;
  for (onnx::TensorProto &init :
       *model.mutable_graph()->mutable_initializer()) {
    auto it = weights.find(init.name());
    if (it == weights.end())
      continue;
    const TrainedTensor &trained = it->second;
    std::vector<int64_t> dims(init.dims().begin(), init.dims().end());
    if (init.data_type() != onnx::TensorProto::FLOAT)
      return "initializer '" + init.name() + "' of " + modelPath +
             " is not float32, but the checkpoint trained it";
    if (dims != trained.shape)
      return "initializer '" + init.name() + "' of " + modelPath +
             " has shape " + shapeText(dims) + ", the checkpoint " +
             shapeText(trained.shape);
    // Raw little-endian data, whatever field the exporter used.
    init.clear_float_data();
    init.clear_data_location();
    init.clear_external_data();
    init.set_raw_data(trained.data.data(), trained.data.size() * sizeof(float));
    replaced.insert(init.name());
  }
  // Constants the model's arithmetic reads are kept in the weights like
  // parameters, untrained; the model still holds them as Constant nodes.
  std::set<std::string> constants;
  for (const onnx::NodeProto &node : model.graph().node())
    if (node.op_type() == "Constant")
      constants.insert(node.output().begin(), node.output().end());
  for (const auto &[name, tensor] : weights)
    if (!replaced.count(name) && !constants.count(name))
      return "the checkpoint's parameter '" + name + "' is no initializer of " +
             modelPath;
  try {
    onnx::checker::check_model(model);
  } catch (const std::exception &e) {
    return "the written model fails the ONNX checker: " + std::string(e.what());
  }
  // Through a temporary file, so a failed write leaves no partial model.
  std::string temporary = outputPath + ".dpc-partial";
  {
    std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
    if (!out || !model.SerializeToOstream(&out) || !out.flush()) {
      std::remove(temporary.c_str());
      return "cannot write '" + outputPath + "'";
    }
  }
  if (std::rename(temporary.c_str(), outputPath.c_str()) != 0) {
    std::remove(temporary.c_str());
    return "cannot write '" + outputPath + "'";
  }
  return "";
}

} // namespace mlir::dpc::onnx_frontend
