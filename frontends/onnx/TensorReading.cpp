//===- TensorReading.cpp - ONNX tensors and attributes --------------------===//
//
// What the importer reads out of the protobuf: the MLIR element type of an
// ONNX data type, the data of a TensorProto (an initializer or a Constant's
// value) as a HostTensor, and node attributes with their defaults.
//
//===----------------------------------------------------------------------===//

#include "frontends/onnx/Importer.h"

#include "dpc/support/HalfFloat.h"
#include "dpc/support/MappedFile.h"

#include <cstring>

using namespace mlir;
using namespace mlir::dpc::onnx_frontend;
using namespace mlir::dpc::onnx_frontend::detail;

FailureOr<Type> Importer::elementType(int32_t onnxType, Location loc,
                                      StringRef what) {
  switch (onnxType) {
  // The training dtype: float16, bfloat16 and float64 graph values are
  // read as float32, as their initializers are (ImportedParam).
  case onnx::TensorProto::FLOAT:
  case onnx::TensorProto::FLOAT16:
  case onnx::TensorProto::BFLOAT16:
  case onnx::TensorProto::DOUBLE:
    return builder.getF32Type();
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

namespace {

// Float16 and bfloat16 without raw data keep one 16-bit value in each
// int32_data entry; their little-endian bytes.
std::string sixteenBitBytes(const onnx::TensorProto &tensor) {
  std::string raw(size_t(tensor.int32_data_size()) * 2, '\0');
  for (int i = 0; i < tensor.int32_data_size(); ++i) {
    auto bits = uint16_t(tensor.int32_data(i));
    std::memcpy(raw.data() + 2 * i, &bits, 2);
  }
  return raw;
}

} // namespace

namespace mlir::dpc::onnx_frontend {

ImportedParam ImportedParam::fromFloats(std::string name,
                                        std::vector<int64_t> shape,
                                        const std::vector<float> &values) {
  ImportedParam param;
  param.name = std::move(name);
  param.shape = std::move(shape);
  param.bytes.resize(values.size() * sizeof(float));
  if (!values.empty())
    std::memcpy(param.bytes.data(), values.data(), param.bytes.size());
  return param;
}

std::vector<float> ImportedParam::toFloats() const {
  std::vector<float> out(size_t(nn::getNumElements(shape)));
  ::dpc::support::widenToFloat(dtype,
                               file ? file->data() + offset : bytes.data(),
                               out.size(), out.data());
  return out;
}

} // namespace mlir::dpc::onnx_frontend

bool Importer::isFloatInitializer(const onnx::TensorProto &tensor) {
  return isOnnxFloatType(tensor.data_type());
}

FailureOr<ExternalSpan> Importer::externalSpan(const onnx::TensorProto &tensor,
                                               Location loc) {
  if (!external)
    return emitError(loc) << "tensor '" << tensor.name()
                          << "' keeps its data in an external file, but the "
                             "model was not read from a file";
  return external->span(tensor, loc);
}

FailureOr<StringRef> Importer::tensorBytes(const onnx::TensorProto &tensor,
                                           Location loc) {
  if (tensor.data_location() != onnx::TensorProto::EXTERNAL)
    return StringRef(tensor.raw_data());
  FailureOr<ExternalSpan> span = externalSpan(tensor, loc);
  if (failed(span))
    return failure();
  return StringRef(reinterpret_cast<const char *>(span->data()),
                   size_t(span->length));
}

FailureOr<ImportedParam> Importer::readParam(const onnx::TensorProto &tensor,
                                             Location loc) {
  ImportedParam param;
  param.name = tensor.name();
  param.shape.assign(tensor.dims().begin(), tensor.dims().end());
  switch (tensor.data_type()) {
  case onnx::TensorProto::FLOAT16:
    param.dtype = ParamDType::F16;
    break;
  case onnx::TensorProto::BFLOAT16:
    param.dtype = ParamDType::BF16;
    break;
  case onnx::TensorProto::DOUBLE:
    param.dtype = ParamDType::F64;
    break;
  default:
    param.dtype = ParamDType::F32;
  }
  uint64_t need = onnxByteCount(tensor);
  if (tensor.data_location() == onnx::TensorProto::EXTERNAL) {
    FailureOr<ExternalSpan> span = externalSpan(tensor, loc);
    if (failed(span))
      return failure();
    param.file = span->file;
    param.offset = span->offset;
    return param;
  }
  std::string converted;
  StringRef raw = tensor.raw_data();
  if (raw.empty()) {
    // The typed fields, whatever the exporter used.
    switch (tensor.data_type()) {
    case onnx::TensorProto::FLOAT:
      raw =
          StringRef(reinterpret_cast<const char *>(tensor.float_data().data()),
                    size_t(tensor.float_data_size()) * sizeof(float));
      break;
    case onnx::TensorProto::DOUBLE:
      raw =
          StringRef(reinterpret_cast<const char *>(tensor.double_data().data()),
                    size_t(tensor.double_data_size()) * sizeof(double));
      break;
    default:
      converted = sixteenBitBytes(tensor);
      raw = converted;
    }
  }
  if (raw.size() != need)
    return emitError(loc) << "tensor '" << tensor.name() << "' has "
                          << raw.size() << " bytes of data, its shape needs "
                          << need;
  param.bytes.assign(raw.bytes_begin(), raw.bytes_end());
  return param;
}

FailureOr<HostTensor> Importer::readTensor(const onnx::TensorProto &tensor,
                                           Location loc) {
  HostTensor t;
  t.shape.assign(tensor.dims().begin(), tensor.dims().end());
  int64_t count = nn::getNumElements(t.shape);
  if (isOnnxFloatType(tensor.data_type())) {
    // Read as a parameter's data would be, then widened to float.
    FailureOr<ImportedParam> param = readParam(tensor, loc);
    if (failed(param))
      return failure();
    t.isFloat = true;
    t.floats = param->toFloats();
    return t;
  }
  FailureOr<StringRef> bytes = tensorBytes(tensor, loc);
  if (failed(bytes))
    return failure();
  StringRef raw = *bytes;
  auto readRaw = [&](auto &out, size_t elementSize) -> LogicalResult {
    if (raw.size() != static_cast<size_t>(count) * elementSize)
      return emitError(loc)
             << "tensor '" << tensor.name() << "' has " << raw.size()
             << " bytes of data for " << count << " elements";
    out.resize(count);
    std::memcpy(out.data(), raw.data(), raw.size());
    return success();
  };
  switch (tensor.data_type()) {
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
                          << "' has an element type dpc cannot read (only "
                             "float32, float16, bfloat16, float64, int64, "
                             "int32 and bool)";
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
