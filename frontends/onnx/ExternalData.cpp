//===- ExternalData.cpp - ONNX tensors kept beside the model --------------===//

#include "frontends/onnx/ExternalData.h"

#include "dpc/support/Error.h"

#include <filesystem>

using namespace mlir;
using namespace mlir::dpc::onnx_frontend::detail;

namespace fs = std::filesystem;

size_t mlir::dpc::onnx_frontend::detail::onnxElementSize(int32_t type) {
  switch (type) {
  case onnx::TensorProto::FLOAT:
  case onnx::TensorProto::INT32:
    return 4;
  case onnx::TensorProto::FLOAT16:
  case onnx::TensorProto::BFLOAT16:
    return 2;
  case onnx::TensorProto::DOUBLE:
  case onnx::TensorProto::INT64:
    return 8;
  case onnx::TensorProto::BOOL:
    return 1;
  default:
    return 0;
  }
}

uint64_t mlir::dpc::onnx_frontend::detail::onnxByteCount(
    const onnx::TensorProto &tensor) {
  uint64_t count = 1;
  for (int64_t dim : tensor.dims())
    count *= uint64_t(dim);
  return count * onnxElementSize(tensor.data_type());
}

bool mlir::dpc::onnx_frontend::detail::isOnnxFloatType(int32_t type) {
  return type == onnx::TensorProto::FLOAT ||
         type == onnx::TensorProto::FLOAT16 ||
         type == onnx::TensorProto::BFLOAT16 ||
         type == onnx::TensorProto::DOUBLE;
}

ExternalEntries mlir::dpc::onnx_frontend::detail::externalEntries(
    const onnx::TensorProto &tensor) {
  ExternalEntries entries;
  for (const onnx::StringStringEntryProto &entry : tensor.external_data()) {
    if (entry.key() == "location")
      entries.location = entry.value();
    else if (entry.key() == "offset")
      entries.offset = entry.value();
    else if (entry.key() == "length")
      entries.length = entry.value();
  }
  return entries;
}

std::optional<uint64_t>
mlir::dpc::onnx_frontend::detail::parseByteCount(const std::string &text) {
  if (text.empty() || text.size() > 19)
    return std::nullopt;
  uint64_t value = 0;
  for (char c : text) {
    if (c < '0' || c > '9')
      return std::nullopt;
    value = value * 10 + uint64_t(c - '0');
  }
  return value;
}

namespace {

// External tensors up to this size, and every integer or boolean one, are
// read into the proto at once.
constexpr uint64_t kInlineBytes = 64 << 10;

std::string shapeText(const onnx::TensorProto &tensor) {
  std::string text = "[";
  for (int i = 0; i < tensor.dims_size(); ++i)
    text += (i ? ", " : "") + std::to_string(tensor.dims(i));
  return text + "]";
}

} // namespace

LogicalResult ExternalData::resolveTensor(onnx::TensorProto &tensor,
                                          Location loc) {
  std::string what = "tensor '" + tensor.name() + "'";
  ExternalEntries entries = externalEntries(tensor);
  if (entries.location.empty())
    return emitError(loc) << what << " keeps its data in an external file "
                          << "but names no location";
  fs::path path =
      fs::path(entries.location).is_absolute()
          ? fs::path(entries.location)
          : fs::absolute(fs::path(dir.empty() ? "." : dir)) / entries.location;
  path = path.lexically_normal();
  std::string key = path.string();
  auto found = files.find(key);
  if (found == files.end()) {
    std::error_code error;
    if (!fs::is_regular_file(path, error))
      return emitError(loc)
             << what << ": its external data file '" << entries.location
             << "' is not in " << path.parent_path().string()
             << " (external files are found beside the model file)";
    try {
      found =
          files
              .try_emplace(
                  key, std::make_shared<const ::dpc::support::MappedFile>(key))
              .first;
    } catch (const ::dpc::Error &e) {
      return emitError(loc) << what << ": " << e.what();
    }
  }
  uint64_t fileSize = found->second->size();
  std::optional<uint64_t> offset = parseByteCount(entries.offset.value_or("0"));
  if (!offset)
    return emitError(loc) << what << " has the external data offset '"
                          << *entries.offset << "', not a byte count";
  if (*offset > fileSize)
    return emitError(loc) << what << ": its external data offset " << *offset
                          << " is past the end of " << key << " (" << fileSize
                          << " bytes)";
  size_t elementSize = onnxElementSize(tensor.data_type());
  uint64_t need = onnxByteCount(tensor);
  std::optional<uint64_t> length =
      entries.length ? parseByteCount(*entries.length) : std::optional(need);
  if (!length)
    return emitError(loc) << what << " has the external data length '"
                          << *entries.length << "', not a byte count";
  if (elementSize && *length != need)
    return emitError(loc) << what << " has " << *length
                          << " bytes of external data, but its shape "
                          << shapeText(tensor) << " of "
                          << onnx::TensorProto::DataType_Name(
                                 onnx::TensorProto::DataType(
                                     tensor.data_type()))
                          << " needs " << need;
  if (*length > fileSize - *offset)
    return emitError(loc) << what << ": " << key << " ends at byte " << fileSize
                          << ", before the tensor's " << *length
                          << " bytes from offset " << *offset
                          << " (a short or truncated file)";
  if (!isOnnxFloatType(tensor.data_type()) || *length <= kInlineBytes) {
    // Shape inference and the version converter read the data of shape
    // constants (Reshape's target, Resize's scales) from the proto itself.
    tensor.set_raw_data(found->second->data() + *offset, *length);
    tensor.clear_external_data();
    tensor.set_data_location(onnx::TensorProto::DEFAULT);
    return success();
  }
  for (onnx::StringStringEntryProto &entry : *tensor.mutable_external_data())
    if (entry.key() == "location")
      entry.set_value(key);
  return success();
}

LogicalResult ExternalData::resolve(onnx::GraphProto &graph, Location loc) {
  for (onnx::TensorProto &init : *graph.mutable_initializer())
    if (init.data_location() == onnx::TensorProto::EXTERNAL &&
        failed(resolveTensor(init, loc)))
      return failure();
  for (onnx::NodeProto &node : *graph.mutable_node()) {
    for (onnx::AttributeProto &attr : *node.mutable_attribute()) {
      if (attr.has_t() &&
          attr.t().data_location() == onnx::TensorProto::EXTERNAL &&
          failed(resolveTensor(*attr.mutable_t(), loc)))
        return failure();
      if (attr.has_g() && failed(resolve(*attr.mutable_g(), loc)))
        return failure();
      for (onnx::GraphProto &subgraph : *attr.mutable_graphs())
        if (failed(resolve(subgraph, loc)))
          return failure();
    }
  }
  return success();
}

FailureOr<ExternalSpan> ExternalData::span(const onnx::TensorProto &tensor,
                                           Location loc) {
  ExternalEntries entries = externalEntries(tensor);
  auto found = files.find(entries.location);
  if (found == files.end())
    return emitError(loc) << "tensor '" << tensor.name()
                          << "' keeps its data in '" << entries.location
                          << "', which the import did not check";
  // resolve() checked both against the file and the shape.
  ExternalSpan span;
  span.file = found->second;
  span.offset = parseByteCount(entries.offset.value_or("0")).value_or(0);
  span.length = entries.length ? parseByteCount(*entries.length).value_or(0)
                               : onnxByteCount(tensor);
  return span;
}

std::vector<onnx::TensorProto>
mlir::dpc::onnx_frontend::detail::externalReferences(
    const onnx::GraphProto &graph) {
  std::vector<onnx::TensorProto> refs;
  for (const onnx::TensorProto &init : graph.initializer())
    if (init.data_location() == onnx::TensorProto::EXTERNAL)
      refs.push_back(init);
  return refs;
}

void mlir::dpc::onnx_frontend::detail::restoreExternalReferences(
    onnx::GraphProto &graph, const std::vector<onnx::TensorProto> &refs) {
  llvm::StringMap<const onnx::TensorProto *> byName;
  for (const onnx::TensorProto &ref : refs)
    byName[ref.name()] = &ref;
  for (onnx::TensorProto &init : *graph.mutable_initializer()) {
    const onnx::TensorProto *ref = byName.lookup(init.name());
    if (!ref || !init.raw_data().empty())
      continue;
    init.set_data_location(onnx::TensorProto::EXTERNAL);
    *init.mutable_external_data() = ref->external_data();
  }
}
