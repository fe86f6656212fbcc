//===- Autodiff.cpp - Loss, backward pass and optimizer -------------------===//
//
// Reverse-mode differentiation of @main. A forward sweep marks the values
// that depend on a parameter; a reverse sweep over the forward ops asks each
// op's GradientOpInterface for the gradients of its marked operands, summing
// gradients of values used more than once. Every parameter then gets its
// optimizer update.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "dialects/nn/IR/NNOps.h"
#include "dialects/nn/IR/ShapeInference.h"
#include "dialects/pipe/IR/PipeOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/TypeUtilities.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/MapVector.h"

#include <fnmatch.h>

#include <sstream>

namespace mlir::dpc {
#define GEN_PASS_DEF_AUTODIFFPASS
#include "passes/Passes.h.inc"
} // namespace mlir::dpc

using namespace mlir;
using namespace mlir::dpc;

namespace {

/// `no-decay`'s comma-separated glob patterns.
std::vector<std::string> splitPatterns(const std::string &text) {
  std::vector<std::string> patterns;
  std::string pattern;
  std::istringstream in(text);
  while (std::getline(in, pattern, ','))
    if (!pattern.empty())
      patterns.push_back(pattern);
  return patterns;
}

bool matchesAny(StringRef name, const std::vector<std::string> &patterns) {
  std::string text = name.str();
  for (const std::string &pattern : patterns)
    if (fnmatch(pattern.c_str(), text.c_str(), 0) == 0)
      return true;
  return false;
}

// When the forward pass is already partitioned, every op autodiff creates
// runs on the stage of the forward op it belongs to: gradient ops on the
// stage of the op they differentiate, gradient sums on the stage of the value,
// updates on the stage of the parameter.
// Likewise each op autodiff creates belongs to the model node (`nn.node`) of
// that forward op, so that costs, profiles and traces charge it there.
class StageTagger : public OpBuilder::Listener {
public:
  void notifyOperationInserted(Operation *op, OpBuilder::InsertPoint) override {
    if (stage)
      pipe::setStage(op, *stage);
    if (node)
      op->setAttr("nn.node", node);
  }
  // Sets the stage and node of the ops created next to those of `anchor`.
  void follow(Operation *anchor) {
    stage = anchor ? pipe::getStage(anchor) : std::nullopt;
    node = anchor ? anchor->getAttrOfType<StringAttr>("nn.node") : nullptr;
  }
  void follow(Value value) { follow(value.getDefiningOp()); }

private:
  std::optional<int64_t> stage;
  StringAttr node;
};

// Gradients of forward values, summed over their uses.
class GradientMap {
public:
  GradientMap(OpBuilder &builder, StageTagger &tagger)
      : builder(builder), tagger(tagger) {}

  void add(Value value, Value grad, Location loc) {
    Value &slot = grads[value];
    if (!slot) {
      slot = grad;
      return;
    }
    tagger.follow(value);
    slot = builder.create<nn::AddOp>(loc, slot.getType(), slot, grad);
  }
  Value lookup(Value value) const { return grads.lookup(value); }

private:
  OpBuilder &builder;
  StageTagger &tagger;
  llvm::DenseMap<Value, Value> grads;
};

struct AutodiffPass : public mlir::dpc::impl::AutodiffPassBase<AutodiffPass> {
  using AutodiffPassBase::AutodiffPassBase;

  void runOnOperation() override {
    if (failed(checkOptions()))
      return signalPassFailure();
    ModuleOp module = getOperation();
    auto main = module.lookupSymbol<func::FuncOp>("main");
    if (!main || main.isExternal()) {
      module.emitError("expects a function @main holding the forward pass");
      return signalPassFailure();
    }
    if (!main.getBody().hasOneBlock()) {
      main.emitError("expects @main to be a single block");
      return signalPassFailure();
    }
    if (failed(differentiate(main)))
      return signalPassFailure();
  }

  LogicalResult checkOptions() {
    ModuleOp module = getOperation();
    if (loss == "none")
      return module.emitError("loss 'none' (a model that outputs its own "
                              "loss) is not supported yet; use "
                              "softmax-cross-entropy or mse");
    if (loss != "softmax-cross-entropy" && loss != "mse")
      return module.emitError("unknown loss '")
             << loss << "'; expected softmax-cross-entropy or mse";
    if (loss == "mse" && hasIgnoreIndex)
      return module.emitError("ignore-index applies to the "
                              "softmax-cross-entropy loss, not mse");
    if (loss == "mse" && classAxis != -1)
      return module.emitError("class-axis applies to the "
                              "softmax-cross-entropy loss, not mse");
    if (!(labelSmoothing >= 0 && labelSmoothing < 1))
      return module.emitError("expects label-smoothing in [0, 1)");
    if (loss == "mse" && labelSmoothing != 0)
      return module.emitError("label-smoothing applies to the "
                              "softmax-cross-entropy loss, not mse");
    if (optimizer != "sgd" && optimizer != "adam" && optimizer != "adamw")
      return module.emitError("unknown optimizer '")
             << optimizer << "'; expected sgd, adam or adamw";
    if (microbatches < 1)
      return module.emitError("expects microbatches >= 1");
    if (!(lr > 0) || !(momentum >= 0 && momentum < 1) || !(weightDecay >= 0))
      return module.emitError("expects lr > 0, momentum in [0, 1) and "
                              "weight-decay >= 0");
    if (!(beta1 >= 0 && beta1 < 1) || !(beta2 >= 0 && beta2 < 1) || !(eps > 0))
      return module.emitError("expects beta1 and beta2 in [0, 1) and eps > 0");
    return success();
  }

  // `logits` with the class-axis dimension moved last, or `logits` itself
  // when it is last already.
  FailureOr<Value> classesLast(OpBuilder &builder, StageTagger &tagger,
                               func::FuncOp main, Value logits) {
    auto type = cast<RankedTensorType>(logits.getType());
    int64_t rank = type.getRank();
    int64_t axis = classAxis < 0 ? classAxis + rank : classAxis;
    if (axis < 1 || axis >= rank)
      return main.emitError("class-axis ")
             << int64_t(classAxis) << " is not a dimension after the batch of "
             << "the logits " << type;
    if (axis == rank - 1)
      return logits;
    SmallVector<int64_t> perm, shape;
    for (int64_t d = 0; d < rank; ++d)
      if (d != axis)
        perm.push_back(d);
    perm.push_back(axis);
    for (int64_t d : perm)
      shape.push_back(type.getDimSize(d));
    tagger.follow(logits);
    return builder
        .create<nn::TransposeOp>(
            logits.getLoc(),
            RankedTensorType::get(shape, type.getElementType()), logits,
            builder.getDenseI64ArrayAttr(perm))
        .getResult();
  }

  // The loss appended to @main's `logits`, the step's output (the logits
  // with their classes moved last, or themselves) and the loss's gradient
  // with respect to `logits`, and the labels argument it adds.
  struct AppendedLoss {
    Value output, value, grad, labels;
  };
  FailureOr<AppendedLoss> appendLoss(OpBuilder &builder, StageTagger &tagger,
                                     func::FuncOp main, Value logits,
                                     Location loc) {
    Block &body = main.getBody().front();
    bool mse = loss == "mse";
    auto logitsType = cast<RankedTensorType>(logits.getType());
    MLIRContext *ctx = &getContext();
    // Logits whose classes are not last (per-pixel [N, C, H, W]) are
    // transposed to put them last; that tensor is the loss's logits and
    // the step's output, and its gradient goes back through the transpose.
    Value original = logits;
    if (!mse) {
      FailureOr<Value> moved = classesLast(builder, tagger, main, logits);
      if (failed(moved))
        return failure();
      logits = *moved;
      logitsType = cast<RankedTensorType>(logits.getType());
    }
    // Cross-entropy takes a class per row of the logits: per sample for a
    // classifier, per position for a token-level loss, whose mean runs over
    // every position. MSE takes a float target per element of the output,
    // its mean running over every element.
    ArrayRef<int64_t> rows =
        mse ? logitsType.getShape() : logitsType.getShape().drop_back();
    auto labelsType =
        mse ? logitsType : RankedTensorType::get(rows, builder.getI64Type());
    Value labels = body.addArgument(
        labelsType, NameLoc::get(StringAttr::get(ctx, "labels"), loc));
    // Ignored rows make the mean's count a property of the step's labels:
    // the run time scales then, and the constant stays 1.
    float scale = hasIgnoreIndex
                      ? 1.0f
                      : 1.0f / static_cast<float>(microbatches *
                                                  nn::getNumElements(rows));
    auto scaleAttr = builder.getF32FloatAttr(scale);
    IntegerAttr ignoreAttr =
        hasIgnoreIndex ? builder.getI64IntegerAttr(ignoreIndex) : nullptr;
    auto lossType = RankedTensorType::get({}, logitsType.getElementType());
    tagger.follow(logits);
    Value lossValue, lossGrad;
    if (mse) {
      lossValue = builder.create<nn::MseLossOp>(loc, lossType, logits, labels,
                                                scaleAttr);
      lossGrad = builder.create<nn::MseLossGradOp>(loc, logitsType, logits,
                                                   labels, scaleAttr);
    } else {
      auto smoothing = builder.getF32FloatAttr(labelSmoothing);
      lossValue = builder.create<nn::SoftmaxCrossEntropyOp>(
          loc, lossType, logits, labels, scaleAttr, ignoreAttr, smoothing);
      lossGrad = builder.create<nn::SoftmaxCrossEntropyGradOp>(
          loc, logitsType, logits, labels, scaleAttr, ignoreAttr, smoothing);
    }

    if (original != logits) {
      SmallVector<Value, 1> outputGrad;
      tagger.follow(logits);
      cast<nn::GradientOpInterface>(logits.getDefiningOp())
          .buildGradients(builder, {lossGrad}, {true}, outputGrad);
      lossGrad = outputGrad[0];
    }
    return AppendedLoss{logits, lossValue, lossGrad, labels};
  }

  LogicalResult differentiate(func::FuncOp main) {
    Block &body = main.getBody().front();
    auto ret = cast<func::ReturnOp>(body.getTerminator());
    if (ret.getNumOperands() != 1)
      return main.emitError("expects @main to return the logits alone, got ")
             << ret.getNumOperands() << " results";
    Value logits = ret.getOperand(0);
    auto logitsType = dyn_cast<RankedTensorType>(logits.getType());
    bool mse = loss == "mse";
    if (mse && (!logitsType || logitsType.getRank() < 1 ||
                !isa<FloatType>(logitsType.getElementType())))
      return main.emitError("expects a float output with a batch dimension "
                            "for mse, got ")
             << logits.getType();
    if (!mse && (!logitsType || logitsType.getRank() < 2))
      return main.emitError("expects logits of rank >= 2 (batch, "
                            "positions..., classes) for "
                            "softmax-cross-entropy, got ")
             << logits.getType();

    // Float values that depend on a parameter need gradients; integer ids
    // and boolean masks get none, whatever they were computed from.
    SmallVector<Operation *> forward;
    llvm::DenseSet<Value> needsGrad;
    for (Operation &op : body.without_terminator()) {
      forward.push_back(&op);
      auto param = dyn_cast<nn::ParamOp>(op);
      bool fromParam = (param && !param.getFrozen()) ||
                       llvm::any_of(op.getOperands(), [&](Value v) {
                         return needsGrad.contains(v);
                       });
      if (fromParam)
        for (Value result : op.getResults())
          if (isa<FloatType>(getElementTypeOrSelf(result.getType())))
            needsGrad.insert(result);
    }
    if (!needsGrad.contains(logits))
      return main.emitError("the output does not depend on any parameter: "
                            "nothing to train");

    OpBuilder builder(ret);
    StageTagger tagger;
    builder.setListener(&tagger);
    Location loc = ret.getLoc();
    FailureOr<AppendedLoss> appended =
        appendLoss(builder, tagger, main, logits, loc);
    if (failed(appended))
      return failure();
    GradientMap grads(builder, tagger);
    grads.add(logits, appended->grad, loc);

    for (Operation *op : llvm::reverse(forward)) {
      SmallVector<Value> resultGrads;
      bool anyGrad = false;
      for (Value result : op->getResults()) {
        resultGrads.push_back(grads.lookup(result));
        anyGrad |= static_cast<bool>(resultGrads.back());
      }
      if (!anyGrad || isa<nn::ParamOp>(op))
        continue;
      auto rule = dyn_cast<nn::GradientOpInterface>(op);
      if (!rule)
        return op->emitError("'") << op->getName() << "' has no gradient rule";
      // Rules take a gradient for every result; a result nothing used
      // downstream has none and would need zeros, which no model has needed.
      if (llvm::is_contained(resultGrads, Value()))
        return op->emitError("has results without gradients");
      SmallVector<bool> needed;
      for (Value operand : op->getOperands())
        needed.push_back(needsGrad.contains(operand));
      SmallVector<Value> operandGrads;
      tagger.follow(op);
      rule.buildGradients(builder, resultGrads, needed, operandGrads);
      for (auto [operand, grad] : llvm::zip(op->getOperands(), operandGrads))
        if (grad)
          grads.add(operand, grad, op->getLoc());
    }

    // One update per parameter name, with the gradient summed over reads.
    llvm::MapVector<StringRef, std::pair<nn::ParamOp, Value>> updates;
    for (Operation *op : forward) {
      auto param = dyn_cast<nn::ParamOp>(op);
      Value grad = param ? grads.lookup(param.getResult()) : Value();
      if (!grad)
        continue;
      auto [it, inserted] = updates.insert({param.getName(), {param, grad}});
      tagger.follow(param.getOperation());
      if (!inserted)
        it->second.second = builder.create<nn::AddOp>(
            param.getLoc(), grad.getType(), it->second.second, grad);
    }
    auto f32 = [&](double value) { return builder.getF32FloatAttr(value); };
    std::vector<std::string> undecayed = splitPatterns(noDecay);
    for (auto &[name, update] : updates) {
      auto [param, grad] = update;
      tagger.follow(param.getOperation());
      double decay = matchesAny(name, undecayed) ? 0.0 : double(weightDecay);
      if (optimizer == "adam" || optimizer == "adamw") {
        UnitAttr decoupled =
            optimizer == "adamw" ? builder.getUnitAttr() : nullptr;
        builder.create<nn::AdamUpdateOp>(param.getLoc(), param.getResult(),
                                         grad, f32(lr), f32(beta1), f32(beta2),
                                         f32(eps), f32(decay), decoupled);
      } else {
        builder.create<nn::SgdUpdateOp>(param.getLoc(), param.getResult(), grad,
                                        f32(lr), f32(momentum), f32(decay));
      }
    }

    ret->setOperands({appended->value, appended->output});
    main.setFunctionType(builder.getFunctionType(body.getArgumentTypes(),
                                                 ret.getOperandTypes()));
    main.setArgAttr(cast<BlockArgument>(appended->labels).getArgNumber(),
                    pipe::PipeDialect::kLabelsAttrName, builder.getUnitAttr());
    return success();
  }
};

} // namespace
