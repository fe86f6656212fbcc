//===- ObjectEmitter.cpp - LLVM dialect to a linked rank executable -------===//

#include "backends/llvm/ObjectEmitter.h"

#include "dpc/support/Error.h"

#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Export.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/IR/Verifier.h"
#include "llvm/Linker/Linker.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/Target/TargetOptions.h"
#include "llvm/TargetParser/Host.h"

using namespace mlir;

// Registers the translations of the LLVM dialect on `context`.
static void registerTranslations(MLIRContext *context) {
  DialectRegistry registry;
  registerBuiltinDialectTranslation(registry);
  registerLLVMDialectTranslation(registry);
  context->appendDialectRegistry(registry);
}

// Compiles `llvmModule` for the host into a native object at `path`.
static LogicalResult emitNativeObject(ModuleOp module, llvm::Module &llvmModule,
                                      llvm::StringRef path) {
  llvm::InitializeNativeTarget();
  llvm::InitializeNativeTargetAsmPrinter();
  std::string triple = llvm::sys::getDefaultTargetTriple();
  std::string lookupError;
  const llvm::Target *target =
      llvm::TargetRegistry::lookupTarget(triple, lookupError);
  if (!target)
    return module.emitError("no LLVM target for ")
           << triple << ": " << lookupError;
  // Position independent, as the host's linker produces PIE by default.
  std::unique_ptr<llvm::TargetMachine> machine(target->createTargetMachine(
      triple, "generic", "", llvm::TargetOptions(), llvm::Reloc::PIC_));
  llvmModule.setTargetTriple(triple);
  llvmModule.setDataLayout(machine->createDataLayout());

  std::error_code ec;
  llvm::raw_fd_ostream os(path, ec, llvm::sys::fs::OF_None);
  if (ec)
    return module.emitError("cannot write '") << path << "': " << ec.message();
  llvm::legacy::PassManager passes;
  if (machine->addPassesToEmitFile(passes, os, nullptr,
                                   llvm::CodeGenFileType::ObjectFile))
    return module.emitError("LLVM cannot emit objects for ") << triple;
  passes.run(llvmModule);
  os.flush();
  if (os.has_error())
    return module.emitError("cannot write '") << path << "'";
  return success();
}

LogicalResult mlir::dpc::emitObjectFile(ModuleOp module, llvm::StringRef path) {
  registerTranslations(module.getContext());
  llvm::LLVMContext llvmContext;
  std::unique_ptr<llvm::Module> llvmModule =
      translateModuleToLLVMIR(module, llvmContext, "dpc-rank");
  if (!llvmModule)
    return module.emitError("cannot translate the rank module to LLVM IR");
  return emitNativeObject(module, *llvmModule, path);
}

// Each bucket's module is translated on its own; its ABI segment functions
// are renamed dpc_bucketK_<segment> and everything is linked into the
// first. The linker renames the buckets' internal helpers (chunk dispatch,
// constant arrays) where their names collide, and the new dpc_segment_*
// functions switch on dpc_bucket(ctx). The optimizer segment touches only
// parameters, which every bucket shares, so `primary`'s serves all.
LogicalResult mlir::dpc::emitBucketedObjectFile(ArrayRef<ModuleOp> buckets,
                                                size_t primary,
                                                llvm::StringRef manifest,
                                                llvm::StringRef path,
                                                llvm::StringRef irPath) {
  assert(!buckets.empty() && primary < buckets.size() && "no buckets");
  ModuleOp first = buckets.front();
  registerTranslations(first.getContext());
  static constexpr const char *kSegments[] = {
      "forward", "backward", "backward_input", "backward_weight", "optimizer"};
  llvm::LLVMContext llvmContext;
  std::unique_ptr<llvm::Module> linked;
  for (size_t index = 0; index < buckets.size(); ++index) {
    ModuleOp bucket = buckets[index];
    std::unique_ptr<llvm::Module> llvmModule =
        translateModuleToLLVMIR(bucket, llvmContext, "dpc-rank");
    if (!llvmModule)
      return bucket.emitError("cannot translate bucket ")
             << index << "'s rank module to LLVM IR";
    for (const char *segment : kSegments) {
      llvm::Function *function =
          llvmModule->getFunction(std::string("dpc_segment_") + segment);
      if (!function)
        return bucket.emitError("expects the lowered dpc_segment_")
               << segment << " in bucket " << index;
      if (llvm::StringRef(segment) == "optimizer") {
        if (index != primary)
          function->eraseFromParent();
        continue;
      }
      // External until every bucket is linked: the linker moves internal
      // functions only where something it links refers to them.
      function->setName("dpc_bucket" + std::to_string(index) + "_" + segment);
    }
    if (llvm::GlobalVariable *global =
            llvmModule->getGlobalVariable("dpc_rank_manifest"))
      global->eraseFromParent();
    if (!linked) {
      linked = std::move(llvmModule);
      continue;
    }
    if (llvm::Linker::linkModules(*linked, std::move(llvmModule)))
      return bucket.emitError("cannot link bucket ")
             << index << "'s rank module with the others";
  }

  llvm::IRBuilder<> builder(llvmContext);
  llvm::Type *i64 = builder.getInt64Ty();
  llvm::PointerType *ptr = builder.getPtrTy();
  llvm::FunctionType *segmentType =
      llvm::FunctionType::get(builder.getVoidTy(), {ptr}, false);
  llvm::FunctionCallee bucketOf = linked->getOrInsertFunction(
      "dpc_bucket", llvm::FunctionType::get(i64, {ptr}, false));
  for (const char *segment : kSegments) {
    if (llvm::StringRef(segment) == "optimizer")
      continue;
    auto *dispatch =
        llvm::Function::Create(segmentType, llvm::GlobalValue::ExternalLinkage,
                               std::string("dpc_segment_") + segment, *linked);
    llvm::Value *context = dispatch->getArg(0);
    auto *entry = llvm::BasicBlock::Create(llvmContext, "entry", dispatch);
    auto *done = llvm::BasicBlock::Create(llvmContext, "done", dispatch);
    builder.SetInsertPoint(entry);
    llvm::SwitchInst *which = builder.CreateSwitch(
        builder.CreateCall(bucketOf, {context}), done, buckets.size());
    for (size_t index = 0; index < buckets.size(); ++index) {
      llvm::Function *callee = linked->getFunction(
          "dpc_bucket" + std::to_string(index) + "_" + segment);
      callee->setLinkage(llvm::GlobalValue::InternalLinkage);
      auto *block = llvm::BasicBlock::Create(
          llvmContext, "bucket" + std::to_string(index), dispatch, done);
      builder.SetInsertPoint(block);
      builder.CreateCall(callee, {context});
      builder.CreateBr(done);
      which->addCase(builder.getInt64(index), block);
    }
    builder.SetInsertPoint(done);
    builder.CreateRetVoid();
  }
  llvm::Constant *text =
      llvm::ConstantDataArray::getString(llvmContext, manifest, true);
  new llvm::GlobalVariable(*linked, text->getType(), /*isConstant=*/true,
                           llvm::GlobalValue::ExternalLinkage, text,
                           "dpc_rank_manifest");
  if (llvm::verifyModule(*linked, &llvm::errs()))
    return first.emitError("the linked rank module of the buckets is invalid");
  if (!irPath.empty()) {
    std::error_code ec;
    llvm::raw_fd_ostream os(irPath, ec, llvm::sys::fs::OF_None);
    if (ec)
      return first.emitError("cannot write '")
             << irPath << "': " << ec.message();
    linked->print(os, nullptr);
  }
  return emitNativeObject(first, *linked, path);
}

// The link recipe lives at <prefix>/lib/ beside <prefix>/bin/dpc.
static std::string recipePath(llvm::StringRef target) {
  std::string exe = llvm::sys::fs::getMainExecutable(
      nullptr, reinterpret_cast<void *>(&recipePath));
  llvm::SmallString<256> path(
      llvm::sys::path::parent_path(llvm::sys::path::parent_path(exe)));
  llvm::sys::path::append(path, "lib", "dpc-link-" + target.str() + ".rsp");
  return std::string(path);
}

void mlir::dpc::checkRankRuntime(llvm::StringRef target) {
  std::string recipe = recipePath(target);
  if (llvm::sys::fs::exists(recipe))
    return;
  if (target == "cuda")
    throw ::dpc::Error(
        "--target cuda: this dpc was built without the CUDA backend (" +
        recipe +
        " is missing); rebuild it with -DDPC_ENABLE_CUDA=ON where the "
        "CUDA toolkit is installed");
  throw ::dpc::Error("no runtime for target '" + target.str() +
                     "' in this build (" + recipe + " is missing)");
}

void mlir::dpc::linkRankExecutable(llvm::StringRef object,
                                   llvm::StringRef output,
                                   llvm::StringRef target) {
  checkRankRuntime(target);
  std::string recipe = recipePath(target);
  llvm::ErrorOr<std::string> driver = llvm::sys::findProgramByName("c++");
  if (!driver)
    throw ::dpc::Error("cannot find the system linker driver 'c++' on PATH");
  std::string recipeArg = "@" + recipe;
  llvm::SmallVector<llvm::StringRef> args = {*driver, object, recipeArg, "-o",
                                             output};
  std::string message;
  int status = llvm::sys::ExecuteAndWait(*driver, args, std::nullopt, {}, 0, 0,
                                         &message);
  if (status != 0)
    throw ::dpc::Error("linking '" + output.str() + "' failed" +
                       (message.empty() ? "" : ": " + message));
}
