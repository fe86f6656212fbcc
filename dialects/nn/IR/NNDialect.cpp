//===- NNDialect.cpp - nn dialect -----------------------------------------===//

#include "dialects/nn/IR/NNDialect.h"
#include "dialects/nn/IR/NNOps.h"

#include "mlir/IR/BuiltinAttributes.h"

using namespace mlir;
using namespace mlir::dpc::nn;

#include "dialects/nn/IR/NNDialect.cpp.inc"

void NNDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "dialects/nn/IR/NNOps.cpp.inc"
      >();
}

// `nn.cost`, written by annotate-costs, is a dictionary of non-negative
// numbers; the planner trusts it, so malformed costs are rejected here.
LogicalResult NNDialect::verifyOperationAttribute(Operation *op,
                                                  NamedAttribute attr) {
  if (attr.getName() == "nn.node") {
    auto name = dyn_cast<StringAttr>(attr.getValue());
    if (!name || name.getValue().empty())
      return op->emitError("expects 'nn.node' to be a non-empty string");
    return success();
  }
  if (attr.getName() == kLayoutAttrName) {
    auto name = dyn_cast<StringAttr>(attr.getValue());
    if (!name || name.getValue() != kChannelBlocked)
      return op->emitError("expects '")
             << kLayoutAttrName << "' to be \"" << kChannelBlocked << "\"";
    if (op->getNumResults() != 1 ||
        !canBeChannelBlocked(op->getResult(0).getType()))
      return op->emitError("expects '")
             << kLayoutAttrName
             << "' on an op of one 4-D f32 result whose channels are a "
                "multiple of "
             << kChannelBlock;
    return success();
  }
  if (attr.getName() != "nn.cost")
    return op->emitError("unknown nn dialect attribute '")
           << attr.getName().getValue() << "'";
  auto dict = dyn_cast<DictionaryAttr>(attr.getValue());
  if (!dict)
    return op->emitError("expects 'nn.cost' to be a dictionary");
  for (NamedAttribute field : dict) {
    double value;
    if (auto f = dyn_cast<FloatAttr>(field.getValue()))
      value = f.getValueAsDouble();
    else if (auto i = dyn_cast<IntegerAttr>(field.getValue()))
      value = static_cast<double>(i.getInt());
    else
      return op->emitError("expects 'nn.cost' field '")
             << field.getName().getValue() << "' to be a number";
    if (!(value >= 0))
      return op->emitError("expects 'nn.cost' field '")
             << field.getName().getValue() << "' to be non-negative";
  }
  return success();
}
