//===- OnnxImporter.cpp - ONNX to nn dialect ------------------------------===//
//
// The import runs in three steps:
//   1. the onnx library parses and checks the model, converts one older than
//      kMinOpset to kMinOpset, and infers shapes (after the batch size is
//      specialised, if asked);
//   2. the importer walks the (topologically sorted) nodes and dispatches
//      each through the handler rows of the op families, keyed by op type
//      and by the since-version of the op's schema at the model's opset;
//   3. nodes whose inputs are all known at import time (Shape of a statically
//      shaped tensor, and the Gather/Unsqueeze/Concat/... arithmetic that
//      exporters build on it) are evaluated on the host, so that, for
//      example, Reshape receives its target shape as a constant.
//
// This file holds the entry points, the checks and re-shaping of the model
// before shape inference, the graph walk and the dispatch. The Importer
// class (Importer.h) has its other members in TensorReading.cpp (tensors
// and attributes) and Values.cpp (operands and results); the handlers are
// free functions by op family in NN.cpp, RNN.cpp, Math.cpp, Tensor.cpp and
// GatherSlice.cpp, each file listing its own rows of the handler table.
//
//===----------------------------------------------------------------------===//

#include "frontends/onnx/OnnxImporter.h"
#include "frontends/onnx/Importer.h"
#include "frontends/onnx/Opset18.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Verifier.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringSet.h"

#include "onnx/checker.h"
#include "onnx/defs/schema.h"
#include "onnx/shape_inference/implementation.h"
#include "onnx/version_converter/convert.h"

#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <optional>

using namespace mlir;
using namespace mlir::dpc;
using namespace mlir::dpc::onnx_frontend;
using namespace mlir::dpc::onnx_frontend::detail;

//===----------------------------------------------------------------------===//
// Diagnostics
//===----------------------------------------------------------------------===//

std::string Importer::nodeName(const onnx::NodeProto &node) const {
  return node.name().empty() ? "<unnamed " + node.op_type() + ">" : node.name();
}

Location Importer::locOf(const onnx::NodeProto &node) {
  Location file = FileLineColLoc::get(context, fileName, 0, 0);
  return NameLoc::get(StringAttr::get(context, nodeName(node)), file);
}

InFlightDiagnostic Importer::nodeError(const onnx::NodeProto &node) {
  InFlightDiagnostic diag = emitError(locOf(node));
  diag << "ONNX node '" << nodeName(node) << "' (" << node.op_type()
       << ", opset " << opset << "): ";
  return diag;
}

// Upsample and Resize before opset 11 sample at x_out / scale, floored for
// nearest; the version converter's Resize-11 omits the modes, which then
// default to half_pixel and round_prefer_floor. Writes them out.
static void keepAsymmetricResizes(onnx::GraphProto &graph) {
  for (onnx::NodeProto &node : *graph.mutable_node()) {
    if (node.op_type() != "Resize")
      continue;
    bool hasModes = false;
    for (const onnx::AttributeProto &attr : node.attribute())
      hasModes |= attr.name() == "coordinate_transformation_mode";
    if (hasModes)
      continue;
    for (auto [name, value] :
         {std::pair{"coordinate_transformation_mode", "asymmetric"},
          std::pair{"nearest_mode", "floor"}}) {
      onnx::AttributeProto *attr = node.add_attribute();
      attr->set_name(name);
      attr->set_type(onnx::AttributeProto::STRING);
      attr->set_s(value);
    }
  }
}

//===----------------------------------------------------------------------===//
// Graph
//===----------------------------------------------------------------------===//

LogicalResult Importer::importNode(const onnx::NodeProto &node) {
  currentNode = &node;
  if (!node.domain().empty() && node.domain() != "ai.onnx")
    return nodeError(node) << "op domain '" << node.domain()
                           << "' is not supported";
  const onnx::OpSchema *schema =
      onnx::OpSchemaRegistry::Schema(node.op_type(), opset);
  if (!schema)
    return nodeError(node) << "unknown ONNX op";
  int since = schema->SinceVersion();
  bool knownType = false;
  for (ArrayRef<HandlerEntry> family :
       {nnHandlers(), rnnHandlers(), mathHandlers(), tensorHandlers(),
        gatherSliceHandlers(), shapeFoldHandlers()}) {
    for (const HandlerEntry &entry : family) {
      if (node.op_type() != entry.opType)
        continue;
      knownType = true;
      if (entry.sinceVersion == since)
        return entry.handler(*this, node);
    }
  }
  if (knownType)
    return nodeError(node) << "version " << since << " of " << node.op_type()
                           << " is not supported";
  return nodeError(node) << "unsupported op " << node.op_type();
}

LogicalResult Importer::importGraph(const onnx::GraphProto &graph,
                                    ImportedModel &out) {
  model = &out;
  for (const onnx::TensorProto &init : graph.initializer())
    initializers[init.name()] = &init;

  Location fileLoc = FileLineColLoc::get(context, fileName, 0, 0);
  SmallVector<Type> argTypes;
  SmallVector<Location> argLocs;
  for (const onnx::ValueInfoProto &input : graph.input()) {
    if (initializers.count(input.name()))
      continue; // older exporters list initializers as inputs too
    Location loc = NameLoc::get(builder.getStringAttr(input.name()), fileLoc);
    if (!input.type().has_tensor_type())
      return emitError(loc)
             << "graph input '" << input.name() << "' is not a tensor";
    const onnx::TypeProto::Tensor &tensor = input.type().tensor_type();
    FailureOr<Type> element = elementType(tensor.elem_type(), loc,
                                          "graph input '" + input.name() + "'");
    if (failed(element))
      return failure();
    // Integer inputs are token ids; the runtime reads them as int64.
    if (element->isInteger(32))
      element = builder.getI64Type();
    if (!tensor.has_shape())
      return emitError(loc) << "graph input '" << input.name()
                            << "' has no shape; dpc needs static shapes";
    SmallVector<int64_t> shape;
    for (auto [i, dim] : llvm::enumerate(tensor.shape().dim())) {
      if (!dim.has_dim_value() || dim.dim_value() <= 0)
        return emitError(loc)
               << "graph input '" << input.name() << "' has no static size "
               << "for dimension " << i
               << (dim.has_dim_param() ? " ('" + dim.dim_param() + "')" : "")
               << (i == 1 ? "; give the sequence lengths with --seq-buckets"
                          : "; give the batch size with --microbatch-size");
      shape.push_back(dim.dim_value());
    }
    argTypes.push_back(tensorType(shape, *element));
    argLocs.push_back(loc);
    out.inputNames.push_back(input.name());
  }

  auto module = ModuleOp::create(fileLoc);
  builder.setInsertionPointToEnd(module.getBody());
  auto func = builder.create<func::FuncOp>(
      fileLoc, "main", builder.getFunctionType(argTypes, {}));
  Block *entry = func.addEntryBlock();
  for (auto [arg, loc] : llvm::zip(entry->getArguments(), argLocs))
    arg.setLoc(loc);
  for (auto [name, arg] : llvm::zip(out.inputNames, entry->getArguments()))
    values[name] = arg;
  out.module = OwningOpRef<ModuleOp>(module);

  builder.setInsertionPointToEnd(entry);
  for (const onnx::NodeProto &node : graph.node())
    if (failed(importNode(node)))
      return failure();

  SmallVector<Value> results;
  for (const onnx::ValueInfoProto &output : graph.output()) {
    Value value = values.lookup(output.name());
    if (auto it = unreadable.find(output.name());
        !value && it != unreadable.end())
      return emitError(fileLoc)
             << "graph output '" << output.name() << "' is " << it->second;
    if (!value)
      return emitError(fileLoc)
             << "graph output '" << output.name()
             << "' is not computed from the inputs (a constant output)";
    results.push_back(value);
    out.outputNames.push_back(output.name());
  }
  builder.create<func::ReturnOp>(fileLoc, results);
  func.setFunctionType(
      builder.getFunctionType(argTypes, ValueRange(results).getTypes()));
  return verify(module);
}

namespace {

// Parses `bytes`, the contents of `name`; fails after reporting what is
// wrong.
LogicalResult parseModel(StringRef bytes, StringRef name, MLIRContext *context,
                         onnx::ModelProto &model) {
  Location loc = FileLineColLoc::get(context, name, 0, 0);
  // protobuf's limit for one message.
  if (bytes.size() > size_t(std::numeric_limits<int>::max()))
    return emitError(loc) << "'" << name
                          << "' is larger than the 2 GiB a protobuf "
                             "message can hold; save the model with its "
                             "tensors in external data (torch.onnx does "
                             "past 2 GiB; onnx.save_model(..., "
                             "save_as_external_data=True))";
  if (!model.ParseFromArray(bytes.data(), int(bytes.size())))
    return emitError(loc) << "'" << name
                          << "' is not a valid ONNX protobuf file";
  return success();
}

// Exporters bake a fixed batch size into Reshape targets (x.view(16, -1)
// exports the constant [16, -1]). When the batch is re-specialised, a
// constant target whose leading entry is the model's old batch size is
// rewritten to the new one; anything else is left for shape inference to
// judge.
// The batch size the model was exported at: the first dimension of its
// first graph input with a static one; 0 when none has.
int64_t exportedBatchSize(const onnx::GraphProto &graph) {
  for (const onnx::ValueInfoProto &input : graph.input()) {
    const auto &shape = input.type().tensor_type().shape();
    if (shape.dim_size() > 0 && shape.dim(0).has_dim_value())
      return shape.dim(0).dim_value();
  }
  return 0;
}

void respecialiseReshapeTargets(onnx::GraphProto &graph, int64_t batch) {
  int64_t oldBatch = exportedBatchSize(graph);
  if (oldBatch <= 1 || oldBatch == batch)
    return;
  auto rewrite = [&](onnx::TensorProto &tensor) {
    if (tensor.data_type() != onnx::TensorProto::INT64 ||
        tensor.dims_size() != 1 || tensor.dims(0) < 1)
      return;
    if (!tensor.raw_data().empty()) {
      int64_t first;
      std::memcpy(&first, tensor.raw_data().data(), sizeof(first));
      if (first == oldBatch)
        std::memcpy(tensor.mutable_raw_data()->data(), &batch, sizeof(batch));
    } else if (tensor.int64_data_size() > 0 &&
               tensor.int64_data(0) == oldBatch) {
      tensor.set_int64_data(0, batch);
    }
  };
  for (const onnx::NodeProto &node : graph.node()) {
    if (node.op_type() != "Reshape" || node.input_size() < 2)
      continue;
    const std::string &target = node.input(1);
    for (onnx::TensorProto &init : *graph.mutable_initializer())
      if (init.name() == target)
        rewrite(init);
    for (onnx::NodeProto &producer : *graph.mutable_node())
      if (producer.op_type() == "Constant" && producer.output_size() == 1 &&
          producer.output(0) == target)
        for (onnx::AttributeProto &attr : *producer.mutable_attribute())
          if (attr.name() == "value")
            rewrite(*attr.mutable_t());
  }
}

// Whether `name` is an initializer (which ONNX may also list as an input).
bool isInitializer(const onnx::GraphProto &graph, const std::string &name) {
  return llvm::any_of(graph.initializer(), [&](const onnx::TensorProto &init) {
    return init.name() == name;
  });
}

// The graph output no node, input or initializer produces, or "". The onnx
// checker lets such a graph through, and the version converter crashes on
// it, so it is refused before conversion.
std::string unproducedOutput(const onnx::GraphProto &graph) {
  llvm::StringSet<> produced;
  for (const onnx::ValueInfoProto &input : graph.input())
    produced.insert(input.name());
  for (const onnx::TensorProto &init : graph.initializer())
    produced.insert(init.name());
  for (const onnx::NodeProto &node : graph.node())
    for (const std::string &output : node.output())
      produced.insert(output);
  for (const onnx::ValueInfoProto &output : graph.output())
    if (!produced.contains(output.name()))
      return output.name();
  return "";
}

// A node attribute the onnx library's shape inference (and the version
// converter's) uses without checking: strides and dilations divide (0 stops
// convPoolShapeInference with SIGFPE) and kernel sizes size the output. The
// first non-positive entry of one, in the graph or any subgraph, which
// shape inference enters too.
struct BadAttribute {
  const onnx::NodeProto *node = nullptr;
  std::string name;
  int64_t value = 0;
};

std::optional<BadAttribute> nonPositiveWindow(const onnx::GraphProto &graph) {
  for (const onnx::NodeProto &node : graph.node()) {
    for (const onnx::AttributeProto &attr : node.attribute()) {
      if (attr.name() == "strides" || attr.name() == "dilations" ||
          attr.name() == "kernel_shape")
        for (int64_t value : attr.ints())
          if (value <= 0)
            return BadAttribute{&node, attr.name(), value};
      if (attr.has_g())
        if (std::optional<BadAttribute> bad = nonPositiveWindow(attr.g()))
          return bad;
      for (const onnx::GraphProto &subgraph : attr.graphs())
        if (std::optional<BadAttribute> bad = nonPositiveWindow(subgraph))
          return bad;
    }
  }
  return std::nullopt;
}

// The default-domain opset the model imports.
int64_t modelOpset(const onnx::ModelProto &model) {
  for (const onnx::OperatorSetIdProto &set : model.opset_import())
    if (set.domain().empty() || set.domain() == "ai.onnx")
      return set.version();
  return 0;
}

} // namespace

FailureOr<ImportedModel>
mlir::dpc::onnx_frontend::importOnnxFile(StringRef path, MLIRContext *context,
                                         const ImportOptions &options) {
  std::ifstream in(path.str(), std::ios::binary);
  if (!in)
    return emitError(FileLineColLoc::get(context, path, 0, 0))
           << "cannot open ONNX model '" << path << "'";
  std::string bytes((std::istreambuf_iterator<char>(in)),
                    std::istreambuf_iterator<char>());
  return importOnnxBytes(bytes, path, context, options);
}

FailureOr<ImportedModel>
mlir::dpc::onnx_frontend::importOnnxBytes(StringRef bytes, StringRef path,
                                          MLIRContext *context,
                                          const ImportOptions &options) {
  context->loadDialect<nn::NNDialect, func::FuncDialect>();
  Location loc = FileLineColLoc::get(context, path, 0, 0);
  onnx::ModelProto model;
  if (failed(parseModel(bytes, path, context, model)))
    return failure();

  int64_t newest = onnx::OpSchemaRegistry::DomainToVersionRange::Instance()
                       .Map()
                       .at(onnx::ONNX_DOMAIN)
                       .second;
  // GroupNormalization's opset 18, one newer than the library's newest.
  if (failed(lowerOpset18(model, modelOpset(model), newest, loc)))
    return failure();
  ImportedModel imported;
  imported.fileOpset = modelOpset(model);
  // External files lie beside the model file, wherever dpc was started.
  ExternalData external(std::filesystem::path(path.str()).parent_path());
  if (failed(external.resolve(*model.mutable_graph(), loc)))
    return failure();
  try {
    onnx::checker::check_model(model);
  } catch (const std::exception &e) {
    return emitError(loc) << "the ONNX checker rejects the model: " << e.what();
  }
  if (std::string output = unproducedOutput(model.graph()); !output.empty())
    return emitError(loc) << "graph output '" << output
                          << "' is produced by no node, input or initializer";
  if (std::optional<BadAttribute> bad = nonPositiveWindow(model.graph())) {
    const onnx::NodeProto &node = *bad->node;
    std::string name =
        node.name().empty() ? "<unnamed " + node.op_type() + ">" : node.name();
    return emitError(NameLoc::get(StringAttr::get(context, name), loc))
           << "ONNX node '" << name << "' (" << node.op_type() << ", opset "
           << imported.fileOpset << "): attribute '" << bad->name << "' holds "
           << bad->value << "; strides, dilations and kernel "
           << "sizes must be positive";
  }
  if (imported.fileOpset > newest)
    return emitError(loc) << "the model's opset " << imported.fileOpset
                          << " is newer than opset " << newest
                          << ", the newest this build's onnx library knows";
  int64_t opset = std::max(imported.fileOpset, kMinOpset);
  if (imported.fileOpset < kMinOpset) {
    std::vector<onnx::TensorProto> refs = externalReferences(model.graph());
    try {
      model = onnx::version_conversion::ConvertVersion(model, kMinOpset);
      restoreExternalReferences(*model.mutable_graph(), refs);
    } catch (const std::exception &e) {
      return emitError(loc)
             << "cannot convert the model from opset " << imported.fileOpset
             << " to opset " << kMinOpset << ": " << e.what();
    }
    if (imported.fileOpset < 11)
      keepAsymmetricResizes(*model.mutable_graph());
  }
  int64_t exportedBatch = exportedBatchSize(model.graph());
  // The sizes to bind, by dimension of the data inputs and the outputs.
  SmallVector<int64_t, 2> bind = {options.batchSize, options.sequenceLength};
  if (options.sequenceLength > 0) {
    // Only token ids have a length to bind. A length the model fixed can
    // shrink (where nothing else depends on it) but never grow.
    for (const onnx::ValueInfoProto &input : model.graph().input()) {
      if (isInitializer(model.graph(), input.name()))
        continue;
      const auto &tensor = input.type().tensor_type();
      int32_t type = tensor.elem_type();
      if (tensor.shape().dim_size() != 2 || (type != onnx::TensorProto::INT64 &&
                                             type != onnx::TensorProto::INT32))
        return emitError(loc)
               << "graph input '" << input.name() << "' is not token ids "
               << "(int64 or int32 [batch, length]), so it has no sequence "
               << "length to bind to " << options.sequenceLength;
      const auto &shape = tensor.shape();
      if (!shape.dim(1).has_dim_value() ||
          shape.dim(1).dim_value() >= options.sequenceLength)
        continue;
      return emitError(loc)
             << "graph input '" << input.name() << "' has a static length of "
             << shape.dim(1).dim_value() << " in dimension 1, shorter than "
             << options.sequenceLength;
    }
  }
  if (llvm::any_of(bind, [](int64_t size) { return size > 0; })) {
    // Re-specialise the batch (and sequence) dimensions before shape
    // inference so that every inferred shape follows them; shapes recorded
    // for the old sizes would contradict them, so they are dropped and
    // inferred again.
    onnx::GraphProto *graph = model.mutable_graph();
    if (options.batchSize > 0)
      respecialiseReshapeTargets(*graph, options.batchSize);
    graph->clear_value_info();
    for (auto *list : {graph->mutable_input(), graph->mutable_output()}) {
      for (onnx::ValueInfoProto &value : *list) {
        if (list == graph->mutable_input() &&
            isInitializer(*graph, value.name()))
          continue;
        auto *shape =
            value.mutable_type()->mutable_tensor_type()->mutable_shape();
        for (auto [dim, size] : llvm::enumerate(bind))
          if (size > 0 && shape->dim_size() > int(dim))
            shape->mutable_dim(dim)->set_dim_value(size);
      }
    }
  }
  try {
    onnx::ShapeInferenceOptions inferenceOptions{/*check_type=*/true,
                                                 /*error_mode=*/1};
    onnx::shape_inference::InferShapes(
        model, onnx::OpSchemaRegistry::Instance(), inferenceOptions);
  } catch (const std::exception &e) {
    return emitError(loc) << "ONNX shape inference fails: " << e.what();
  }

  Importer importer(context, path, opset);
  importer.external = &external;
  if (options.batchSize > 0 && exportedBatch > 0 &&
      exportedBatch != options.batchSize)
    importer.setRebatch(exportedBatch, options.batchSize);
  if (options.sequenceLength > 0)
    importer.setSliceFloatConstants();
  if (failed(importer.importGraph(model.graph(), imported)))
    return failure();
  return imported;
}
