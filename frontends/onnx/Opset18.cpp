//===- Opset18.cpp - Opset-18 models on an opset-17 onnx library ----------===//
//
// GroupNormalization (opset 18) normalizes each sample's channels in
// `num_groups` groups over the group's channels and spatial elements, then
// scales and shifts each group by its own scale and bias (opset 18 gives
// them one value a group; opset 21 changed them to one a channel). That is
// InstanceNormalization of the input reshaped to [N, groups, -1] with the
// same scale and bias, reshaped back: the nodes torch.onnx writes for
// nn.GroupNorm at opset 17, whose import (NN.cpp's InstanceNormalization,
// an nn.layer_norm) dpc already trains. Rewriting the proto before the
// checker lets the onnx library, which knows opset 17 at most, check and
// infer the model as the opset-17 model it then is.
//
//===----------------------------------------------------------------------===//

#include "frontends/onnx/Opset18.h"

#include "mlir/IR/Diagnostics.h"

#include "llvm/ADT/StringSet.h"

#include <string>

using namespace mlir;

namespace {

// Ops that opset 18 added or changed, other than GroupNormalization: the
// library would read them by their opset-17 schemas (ReduceMean's axes as
// an attribute, Split without num_outputs, ...), so they are refused.
const llvm::StringSet<> &changedInOpset18() {
  static const llvm::StringSet<> ops = {"BitwiseAnd",
                                        "BitwiseNot",
                                        "BitwiseOr",
                                        "BitwiseXor",
                                        "CenterCropPad",
                                        "Col2Im",
                                        "LpPool",
                                        "Mish",
                                        "OptionalGetElement",
                                        "OptionalHasElement",
                                        "Pad",
                                        "ReduceL1",
                                        "ReduceL2",
                                        "ReduceLogSum",
                                        "ReduceLogSumExp",
                                        "ReduceMax",
                                        "ReduceMean",
                                        "ReduceMin",
                                        "ReduceProd",
                                        "ReduceSumSquare",
                                        "Resize",
                                        "ScatterElements",
                                        "ScatterND",
                                        "Split"};
  return ops;
}

std::string nameOf(const onnx::NodeProto &node, int index) {
  return node.name().empty()
             ? "<unnamed " + node.op_type() + " " + std::to_string(index) + ">"
             : node.name();
}

const onnx::AttributeProto *attribute(const onnx::NodeProto &node,
                                      const char *name) {
  for (const onnx::AttributeProto &a : node.attribute())
    if (a.name() == name)
      return &a;
  return nullptr;
}

onnx::NodeProto makeNode(const std::string &name, const char *opType,
                         std::initializer_list<std::string> inputs,
                         const std::string &output) {
  onnx::NodeProto node;
  node.set_name(name);
  node.set_op_type(opType);
  for (const std::string &input : inputs)
    node.add_input(input);
  node.add_output(output);
  return node;
}

// The five opset-17 nodes of one GroupNormalization of `groups` groups.
void appendGroupNorm(const onnx::NodeProto &node, const std::string &name,
                     int64_t groups, float epsilon,
                     google::protobuf::RepeatedPtrField<onnx::NodeProto> &out) {
  std::string grouped = name + "/grouped", target = name + "/groups_shape",
              normalized = name + "/normalized", shape = name + "/shape";
  onnx::NodeProto constant = makeNode(target, "Constant", {}, target);
  onnx::AttributeProto *value = constant.add_attribute();
  value->set_name("value");
  value->set_type(onnx::AttributeProto::TENSOR);
  onnx::TensorProto *tensor = value->mutable_t();
  tensor->set_data_type(onnx::TensorProto::INT64);
  tensor->add_dims(3);
  for (int64_t v : {int64_t(0), groups, int64_t(-1)})
    tensor->add_int64_data(v);
  *out.Add() = constant;
  *out.Add() =
      makeNode(name + "/group", "Reshape", {node.input(0), target}, grouped);
  onnx::NodeProto norm =
      makeNode(name + "/normalize", "InstanceNormalization",
               {grouped, node.input(1), node.input(2)}, normalized);
  onnx::AttributeProto *eps = norm.add_attribute();
  eps->set_name("epsilon");
  eps->set_type(onnx::AttributeProto::FLOAT);
  eps->set_f(epsilon);
  *out.Add() = norm;
  *out.Add() = makeNode(name + "/shape", "Shape", {node.input(0)}, shape);
  *out.Add() = makeNode(name + "/ungroup", "Reshape", {normalized, shape},
                        node.output(0));
}

} // namespace

LogicalResult mlir::dpc::onnx_frontend::lowerOpset18(onnx::ModelProto &model,
                                                     int64_t opset,
                                                     int64_t newest,
                                                     Location loc) {
  if (opset != 18 || newest != 17)
    return success();
  onnx::GraphProto &graph = *model.mutable_graph();
  google::protobuf::RepeatedPtrField<onnx::NodeProto> nodes;
  for (int i = 0; i < graph.node_size(); ++i) {
    const onnx::NodeProto &node = graph.node(i);
    std::string name = nameOf(node, i);
    auto refuse = [&](const std::string &why) {
      return emitError(loc) << "ONNX node '" << name << "' (" << node.op_type()
                            << ", opset 18): " << why;
    };
    bool defaultDomain = node.domain().empty() || node.domain() == "ai.onnx";
    if (defaultDomain && changedInOpset18().contains(node.op_type()))
      return refuse("this op's opset-18 version is newer than this build's "
                    "onnx library (opset 17); export the model at opset 17");
    if (!defaultDomain || node.op_type() != "GroupNormalization") {
      *nodes.Add() = node;
      continue;
    }
    const onnx::AttributeProto *groups = attribute(node, "num_groups");
    if (!groups || groups->i() < 1)
      return refuse("expects a positive num_groups attribute");
    if (node.input_size() != 3 || node.output_size() != 1)
      return refuse("expects inputs X, scale and bias and one output");
    const onnx::AttributeProto *epsilon = attribute(node, "epsilon");
    appendGroupNorm(node, name, groups->i(), epsilon ? epsilon->f() : 1e-5f,
                    nodes);
  }
  graph.mutable_node()->Swap(&nodes);
  for (onnx::OperatorSetIdProto &set : *model.mutable_opset_import())
    if (set.domain().empty() || set.domain() == "ai.onnx")
      set.set_version(17);
  return success();
}
