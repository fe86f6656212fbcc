//===- OnnxExport.cpp - Trained weights back into ONNX --------------------===//

#include "frontends/onnx/OnnxExport.h"
#include "frontends/onnx/ExternalData.h"

#include "dpc/support/Error.h"
#include "dpc/support/HalfFloat.h"
#include "dpc/support/MappedFile.h"

#include "onnx/checker.h"
#include "onnx/onnx_pb.h"

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <set>

namespace fs = std::filesystem;

namespace mlir::dpc::onnx_frontend {

namespace {

// A protobuf message holds at most 2 GiB; a model whose tensors come near
// that is written with external data.
constexpr uint64_t kInlineLimit = (uint64_t(2) << 30) - (uint64_t(64) << 20);

std::string shapeText(const std::vector<int64_t> &shape) {
  std::string text = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    text += (i ? ", " : "") + std::to_string(shape[i]);
  return text + "]";
}

bool isExternal(const onnx::TensorProto &tensor) {
  return tensor.data_location() == onnx::TensorProto::EXTERNAL;
}

void setLocation(onnx::TensorProto &tensor, const std::string &location) {
  for (onnx::StringStringEntryProto &e : *tensor.mutable_external_data())
    if (e.key() == "location")
      e.set_value(location);
}

// `count` trained floats in initializer type `type`, little-endian.
std::string trainedBytes(const float *data, size_t count, int32_t type) {
  std::string raw;
  switch (type) {
  case onnx::TensorProto::FLOAT:
    raw.assign(reinterpret_cast<const char *>(data), count * sizeof(float));
    break;
  case onnx::TensorProto::DOUBLE:
    raw.resize(count * sizeof(double));
    for (size_t i = 0; i < count; ++i) {
      double x = data[i];
      std::memcpy(&raw[i * 8], &x, 8);
    }
    break;
  default: // FLOAT16, BFLOAT16
    raw.resize(count * 2);
    for (size_t i = 0; i < count; ++i) {
      uint16_t bits = type == onnx::TensorProto::FLOAT16
                          ? ::dpc::support::floatToHalf(data[i])
                          : ::dpc::support::floatToBf16(data[i]);
      std::memcpy(&raw[i * 2], &bits, 2);
    }
  }
  return raw;
}

// The external data file being written: tensors appended at 64-byte
// aligned offsets.
class DataFile {
public:
  DataFile(std::string path, std::string location)
      : path(std::move(path)), location(std::move(location)),
        out(this->path, std::ios::binary | std::ios::trunc) {}
  bool ok() const { return bool(out); }

  // Moves `size` bytes at `data` out of `tensor` into the file.
  void put(onnx::TensorProto &tensor, const char *data, uint64_t size) {
    static const char zeros[64] = {};
    uint64_t pad = (64 - offset % 64) % 64;
    out.write(zeros, std::streamsize(pad));
    offset += pad;
    out.write(data, std::streamsize(size));
    tensor.clear_raw_data();
    tensor.clear_float_data();
    tensor.clear_external_data();
    tensor.set_data_location(onnx::TensorProto::EXTERNAL);
    for (auto [key, value] :
         {std::pair<const char *, std::string>{"location", location},
          {"offset", std::to_string(offset)},
          {"length", std::to_string(size)}}) {
      onnx::StringStringEntryProto *e = tensor.add_external_data();
      e->set_key(key);
      e->set_value(value);
    }
    offset += size;
  }
  bool close() {
    out.flush();
    return bool(out);
  }

  const std::string path, location;

private:
  std::ofstream out;
  uint64_t offset = 0;
};

// The bytes of an initializer the checkpoint does not hold that lies in an
// external file, found relative to `sourceDir` (the copy dpc compile made
// has absolute locations).
std::string externalSource(const onnx::TensorProto &tensor,
                           const fs::path &sourceDir, std::string &problem) {
  detail::ExternalEntries entries = detail::externalEntries(tensor);
  fs::path file = entries.location;
  if (file.is_relative())
    file = sourceDir / file;
  try {
    ::dpc::support::MappedFile mapped(file.string());
    std::optional<uint64_t> offset =
        detail::parseByteCount(entries.offset.value_or("0"));
    std::optional<uint64_t> size =
        entries.length ? detail::parseByteCount(*entries.length)
                       : std::optional(detail::onnxByteCount(tensor));
    if (!offset || !size) {
      problem = "initializer '" + tensor.name() +
                "' has an external offset or length that is not a byte count";
      return "";
    }
    if (*offset > mapped.size() || *size > mapped.size() - *offset) {
      problem = "initializer '" + tensor.name() + "': " + file.string() +
                " is shorter than its external data says";
      return "";
    }
    return std::string(reinterpret_cast<const char *>(mapped.data()) + *offset,
                       *size);
  } catch (const ::dpc::Error &e) {
    problem = "initializer '" + tensor.name() + "': " + e.what();
    return "";
  }
}

// Replaces the trained initializers' data and places every tensor inline or
// in `data`; returns what is wrong, or "".
std::string placeTensors(onnx::ModelProto &model,
                         const std::map<std::string, TrainedTensor> &weights,
                         const fs::path &sourceDir, DataFile *data,
                         std::set<std::string> &replaced) {
  for (onnx::TensorProto &init :
       *model.mutable_graph()->mutable_initializer()) {
    auto it = weights.find(init.name());
    std::string problem;
    if (it != weights.end()) {
      const TrainedTensor &trained = it->second;
      std::vector<int64_t> dims(init.dims().begin(), init.dims().end());
      int32_t type = init.data_type();
      if (type != onnx::TensorProto::FLOAT &&
          type != onnx::TensorProto::FLOAT16 &&
          type != onnx::TensorProto::BFLOAT16 &&
          type != onnx::TensorProto::DOUBLE)
        return "initializer '" + init.name() +
               "' is not a float tensor, but the checkpoint trained it";
      if (dims != trained.shape)
        return "initializer '" + init.name() + "' has shape " +
               shapeText(dims) + ", the checkpoint " + shapeText(trained.shape);
      size_t count = 1;
      for (int64_t d : dims)
        count *= size_t(d);
      std::string raw = trainedBytes(trained.data, count, type);
      init.clear_float_data();
      init.clear_double_data();
      init.clear_int32_data();
      init.clear_data_location();
      init.clear_external_data();
      if (data && raw.size() >= kExternalThreshold)
        data->put(init, raw.data(), raw.size());
      else
        init.set_raw_data(std::move(raw));
      replaced.insert(init.name());
      continue;
    }
    if (isExternal(init)) {
      std::string raw = externalSource(init, sourceDir, problem);
      if (!problem.empty())
        return problem;
      init.clear_external_data();
      init.clear_data_location();
      if (data && raw.size() >= kExternalThreshold)
        data->put(init, raw.data(), raw.size());
      else
        init.set_raw_data(std::move(raw));
    } else if (data && init.raw_data().size() >= kExternalThreshold) {
      std::string raw = std::move(*init.mutable_raw_data());
      data->put(init, raw.data(), raw.size());
    }
  }
  return "";
}

// Whether the model, with the trained weights, needs external data.
bool needsExternal(const onnx::ModelProto &model,
                   const std::map<std::string, TrainedTensor> &weights) {
  uint64_t total = 0;
  for (const onnx::TensorProto &init : model.graph().initializer()) {
    if (isExternal(init))
      return true;
    if (!weights.count(init.name()))
      total += init.raw_data().size() + uint64_t(init.float_data_size()) * 4;
  }
  for (const auto &[name, tensor] : weights) {
    uint64_t count = 1;
    for (int64_t d : tensor.shape)
      count *= uint64_t(d);
    total += count * 4;
  }
  return total > kInlineLimit;
}

bool readModel(const std::string &path, onnx::ModelProto &model) {
  std::ifstream in(path, std::ios::binary);
  return in && model.ParseFromIstream(&in);
}

bool writeModel(const onnx::ModelProto &model, const std::string &path) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  return out && model.SerializeToOstream(&out) && out.flush();
}

/// writeOnnxWithWeights's writing; "" or what is wrong.
std::string
writeWithWeights(const std::string &modelPath,
                 const std::map<std::string, TrainedTensor> &weights,
                 const std::string &outputPath, const ExportOptions &options) {
  onnx::ModelProto model;
  if (!fs::is_regular_file(modelPath))
    return "cannot open ONNX model '" + modelPath + "'";
  if (!readModel(modelPath, model))
    return "'" + modelPath + "' is not a valid ONNX protobuf file";
  // Constants the model's arithmetic reads are kept in the weights like
  // parameters, untrained; the model still holds them as Constant nodes.
  std::set<std::string> constants;
  for (const onnx::NodeProto &node : model.graph().node())
    if (node.op_type() == "Constant")
      constants.insert(node.output().begin(), node.output().end());

  bool external = options.externalData || needsExternal(model, weights);
  fs::path output = fs::absolute(outputPath);
  std::string location = output.filename().string() + ".data";
  std::unique_ptr<DataFile> data;
  if (external) {
    data = std::make_unique<DataFile>(output.string() + ".data.dpc-partial",
                                      location);
    if (!data->ok())
      return "cannot write '" + output.string() + ".data'";
  }
  auto cleanUp = [&](const std::string &problem) {
    if (data)
      std::remove(data->path.c_str());
    return problem;
  };
  std::set<std::string> replaced;
  std::string problem = placeTensors(
      model, weights, fs::path(modelPath).parent_path(), data.get(), replaced);
  if (!problem.empty())
    return cleanUp(problem);
  for (const auto &[name, tensor] : weights)
    if (!replaced.count(name) && !constants.count(name))
      return cleanUp("the checkpoint's parameter '" + name +
                     "' is no initializer of " + modelPath);
  if (data && !data->close())
    return cleanUp("cannot write '" + output.string() + ".data'");
  try {
    // The checker looks for external files from the working directory.
    onnx::ModelProto checked = model;
    for (onnx::TensorProto &init :
         *checked.mutable_graph()->mutable_initializer())
      if (isExternal(init))
        setLocation(init, data->path);
    onnx::checker::check_model(checked);
  } catch (const std::exception &e) {
    return cleanUp("the written model fails the ONNX checker: " +
                   std::string(e.what()));
  }
  // Through temporary files, so a failed write leaves no partial model.
  std::string temporary = output.string() + ".dpc-partial";
  if (!writeModel(model, temporary)) {
    std::remove(temporary.c_str());
    return cleanUp("cannot write '" + outputPath + "'");
  }
  if ((data && std::rename(data->path.c_str(),
                           (output.string() + ".data").c_str()) != 0) ||
      std::rename(temporary.c_str(), output.c_str()) != 0) {
    std::remove(temporary.c_str());
    return cleanUp("cannot write '" + outputPath + "'");
  }
  return "";
}

/// copyModelForExport's copy; "" or what is wrong.
std::string copyModel(const std::string &modelPath,
                      const std::string &copyPath) {
  onnx::ModelProto model;
  if (!readModel(modelPath, model))
    return "'" + modelPath + "' is not a valid ONNX protobuf file";
  bool external = false;
  fs::path dir = fs::absolute(modelPath).parent_path();
  for (onnx::TensorProto &init :
       *model.mutable_graph()->mutable_initializer()) {
    if (!isExternal(init))
      continue;
    external = true;
    fs::path location = detail::externalEntries(init).location;
    if (location.is_relative())
      setLocation(init, (dir / location).lexically_normal().string());
  }
  if (!external) {
    std::error_code error;
    fs::copy_file(modelPath, copyPath, fs::copy_options::overwrite_existing,
                  error);
    return error ? error.message() : "";
  }
  return writeModel(model, copyPath) ? "" : "cannot write '" + copyPath + "'";
}

} // namespace

void writeOnnxWithWeights(const std::string &modelPath,
                          const std::map<std::string, TrainedTensor> &weights,
                          const std::string &outputPath,
                          const ExportOptions &options) {
  if (std::string problem =
          writeWithWeights(modelPath, weights, outputPath, options);
      !problem.empty())
    throw ::dpc::Error(problem);
}

void copyModelForExport(const std::string &modelPath,
                        const std::string &copyPath) {
  if (std::string problem = copyModel(modelPath, copyPath); !problem.empty())
    throw ::dpc::Error(problem);
}

} // namespace mlir::dpc::onnx_frontend
