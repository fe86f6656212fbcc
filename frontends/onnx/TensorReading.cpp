//===- TensorReading.cpp - ONNX tensors and attributes --------------------===//
//
// What the importer reads out of the protobuf: the MLIR element type of an
// ONNX data type, the data of a TensorProto (an initializer or a Constant's
// value) as a HostTensor, and node attributes with their defaults.
//
//===----------------------------------------------------------------------===//

#include "frontends/onnx/Importer.h"

#include <cstring>

using namespace mlir;
using namespace mlir::dpc::onnx_frontend::detail;

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
