//===- Values.cpp - Operands, results and host values ---------------------===//
//
// How a handler reads its operands and defines its results. An input is an
// SSA value (a graph input or an op's result), a float initializer (a
// trainable nn.param, created on first use), or a host value known at import
// time (a constant or a folded shape computation), which tensor arithmetic
// reads as a frozen parameter. define and defineHost record a node's first
// output as either.
//
//===----------------------------------------------------------------------===//

#include "frontends/onnx/Importer.h"

using namespace mlir;
using namespace mlir::dpc::onnx_frontend;
using namespace mlir::dpc::onnx_frontend::detail;

bool Importer::hasInput(const onnx::NodeProto &node, int index) const {
  return index < node.input_size() && !node.input(index).empty();
}

bool Importer::isHost(const std::string &name) const {
  return hostValues.count(name) ||
         (initializers.count(name) &&
          !isFloatInitializer(*initializers.lookup(name)));
}

FailureOr<Value> Importer::getValue(const onnx::NodeProto &node, int index) {
  if (!hasInput(node, index))
    return nodeError(node) << "expects input " << index;
  const std::string &name = node.input(index);
  if (Value value = values.lookup(name))
    return value;
  if (const onnx::TensorProto *init = initializers.lookup(name)) {
    // A float initializer used by compute is a trainable parameter; its
    // data goes to the weights file and the IR reads it by name.
    if (!isFloatInitializer(*init)) {
      FailureOr<HostTensor> data = readTensor(*init, locOf(node));
      if (failed(data))
        return failure();
      return materializeConstant(node, name, *data);
    }
    FailureOr<ImportedParam> data = readParam(*init, locOf(node));
    if (failed(data))
      return failure();
    auto type = tensorType(data->shape, builder.getF32Type());
    Value param = builder.create<nn::ParamOp>(
        NameLoc::get(builder.getStringAttr(name)), type, name);
    model->params.push_back(std::move(*data));
    values[name] = param;
    return param;
  }
  if (auto host = hostValues.find(name); host != hostValues.end()) {
    // A float constant in tensor arithmetic is read like a parameter, from
    // the weights file, but never trained.
    if (!host->second.isFloat)
      return materializeConstant(node, name, host->second);
    auto type = tensorType(host->second.shape, builder.getF32Type());
    auto param = builder.create<nn::ParamOp>(
        NameLoc::get(builder.getStringAttr(name)), type, StringRef(name),
        /*frozen=*/true);
    model->params.push_back(ImportedParam::fromFloats(name, host->second.shape,
                                                      host->second.floats));
    values[name] = param;
    return Value(param);
  }
  if (auto it = unreadable.find(name); it != unreadable.end())
    return nodeError(node) << "reads '" << name << "', " << it->second;
  return nodeError(node) << "input '" << name << "' is not defined";
}

FailureOr<Value> Importer::materializeConstant(const onnx::NodeProto &node,
                                               const std::string &name,
                                               const HostTensor &tensor) {
  // The weights file holds float32, exact for integers up to 2^24.
  constexpr int64_t kExact = int64_t(1) << 24;
  std::vector<float> floats;
  for (int64_t v : tensor.ints) {
    if (v > kExact || v < -kExact)
      return nodeError(node)
             << "input '" << name << "' holds the integer " << v
             << ", beyond the 2^24 that a constant in tensor arithmetic can "
                "hold exactly";
    floats.push_back(float(v));
  }
  auto param = builder.create<nn::ParamOp>(
      NameLoc::get(builder.getStringAttr(name)),
      tensorType(tensor.shape, builder.getF32Type()), StringRef(name),
      /*frozen=*/true);
  model->params.push_back(
      ImportedParam::fromFloats(name, tensor.shape, floats));
  Type elementType =
      tensor.isBool ? builder.getI1Type() : Type(builder.getI64Type());
  Value value = builder.create<nn::CastOp>(
      locOf(node), tensorType(tensor.shape, elementType), param);
  values[name] = value;
  return value;
}

FailureOr<HostTensor> Importer::getHost(const onnx::NodeProto &node,
                                        int index) {
  if (!hasInput(node, index))
    return nodeError(node) << "expects input " << index;
  const std::string &name = node.input(index);
  auto it = hostValues.find(name);
  if (it != hostValues.end())
    return it->second;
  if (const onnx::TensorProto *init = initializers.lookup(name))
    return readTensor(*init, locOf(node));
  return nodeError(node) << "input '" << name
                         << "' must be known at import time (a constant or "
                            "a shape computation)";
}

FailureOr<std::vector<int64_t>>
Importer::getHostInts(const onnx::NodeProto &node, int index) {
  FailureOr<HostTensor> t = getHost(node, index);
  if (failed(t))
    return failure();
  if (t->isFloat || t->shape.size() > 1)
    return nodeError(node) << "expects input '" << node.input(index)
                           << "' to be an integer scalar or vector";
  return t->ints;
}

LogicalResult Importer::define(const onnx::NodeProto &node, Value value) {
  if (node.output_size() < 1 || node.output(0).empty())
    return nodeError(node) << "has no output";
  values[node.output(0)] = value;
  return success();
}

LogicalResult Importer::defineHost(const onnx::NodeProto &node,
                                   HostTensor tensor) {
  if (node.output_size() < 1 || node.output(0).empty())
    return nodeError(node) << "has no output";
  hostValues[node.output(0)] = std::move(tensor);
  return success();
}

LogicalResult Importer::checkNoOutputsBeyond(const onnx::NodeProto &node,
                                             int count) {
  for (int i = count; i < node.output_size(); ++i)
    if (!node.output(i).empty())
      return nodeError(node) << "output " << i << " ('" << node.output(i)
                             << "') is not supported";
  return success();
}
