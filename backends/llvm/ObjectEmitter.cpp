//===- ObjectEmitter.cpp - LLVM dialect to a linked rank executable -------===//

#include "backends/llvm/ObjectEmitter.h"

#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Export.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
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

LogicalResult mlir::dpc::emitObjectFile(ModuleOp module, llvm::StringRef path) {
  MLIRContext *context = module.getContext();
  DialectRegistry registry;
  registerBuiltinDialectTranslation(registry);
  registerLLVMDialectTranslation(registry);
  context->appendDialectRegistry(registry);

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

  llvm::LLVMContext llvmContext;
  std::unique_ptr<llvm::Module> llvmModule =
      translateModuleToLLVMIR(module, llvmContext, "dpc-rank");
  if (!llvmModule)
    return module.emitError("cannot translate the rank module to LLVM IR");
  llvmModule->setTargetTriple(triple);
  llvmModule->setDataLayout(machine->createDataLayout());

  std::error_code ec;
  llvm::raw_fd_ostream os(path, ec, llvm::sys::fs::OF_None);
  if (ec)
    return module.emitError("cannot write '") << path << "': " << ec.message();
  llvm::legacy::PassManager passes;
  if (machine->addPassesToEmitFile(passes, os, nullptr,
                                   llvm::CodeGenFileType::ObjectFile))
    return module.emitError("LLVM cannot emit objects for ") << triple;
  passes.run(*llvmModule);
  os.flush();
  if (os.has_error())
    return module.emitError("cannot write '") << path << "'";
  return success();
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

std::string mlir::dpc::checkRankRuntime(llvm::StringRef target) {
  std::string recipe = recipePath(target);
  if (llvm::sys::fs::exists(recipe))
    return "";
  if (target == "cuda")
    return "--target cuda: this dpc was built without the CUDA backend (" +
           recipe +
           " is missing); rebuild it with -DDPC_ENABLE_CUDA=ON where the "
           "CUDA toolkit is installed";
  return "no runtime for target '" + target.str() + "' in this build (" +
         recipe + " is missing)";
}

bool mlir::dpc::linkRankExecutable(llvm::StringRef object,
                                   llvm::StringRef output,
                                   llvm::StringRef target, std::string &error) {
  error = checkRankRuntime(target);
  if (!error.empty())
    return false;
  std::string recipe = recipePath(target);
  llvm::ErrorOr<std::string> driver = llvm::sys::findProgramByName("c++");
  if (!driver) {
    error = "cannot find the system linker driver 'c++' on PATH";
    return false;
  }
  std::string recipeArg = "@" + recipe;
  llvm::SmallVector<llvm::StringRef> args = {*driver, object, recipeArg, "-o",
                                             output};
  std::string message;
  int status = llvm::sys::ExecuteAndWait(*driver, args, std::nullopt, {}, 0, 0,
                                         &message);
  if (status != 0) {
    error = "linking '" + output.str() + "' failed" +
            (message.empty() ? "" : ": " + message);
    return false;
  }
  return true;
}
