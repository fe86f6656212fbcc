//===- OnnxImporterFuzzer.cpp - libFuzzer target for the ONNX importer ----===//
//
// What `dpc compile model.onnx` does with the file's bytes before any pass:
// parse them as an ONNX ModelProto, run the onnx library's checker, version
// converter and shape inference, and import the graph into the nn dialect,
// verified. A bad model must fail with an error diagnostic; a crash, an
// uncaught exception, a sanitizer report, a failure without a diagnostic or
// an imported module that does not verify is a bug.
//
//===----------------------------------------------------------------------===//

#include "frontends/onnx/OnnxImporter.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  // A fresh context per input: nothing one model interns can change how
  // the next one imports.
  mlir::MLIRContext context(mlir::MLIRContext::Threading::DISABLED);
  bool reported = false;
  mlir::ScopedDiagnosticHandler handler(
      &context, [&](mlir::Diagnostic &diagnostic) {
        if (diagnostic.getSeverity() == mlir::DiagnosticSeverity::Error)
          reported = true;
        return mlir::success();
      });
  llvm::StringRef bytes(reinterpret_cast<const char *>(data), size);
  mlir::FailureOr<mlir::dpc::onnx_frontend::ImportedModel> imported =
      mlir::dpc::onnx_frontend::importOnnxBytes(bytes, "fuzz.onnx", &context,
                                                {});
  if (mlir::failed(imported)) {
    if (!reported) {
      std::fprintf(stderr, "import failed without an error diagnostic\n");
      std::abort();
    }
    return 0;
  }
  if (reported || mlir::failed(mlir::verify(*imported->module))) {
    std::fprintf(stderr, "import succeeded with an error or an invalid "
                         "module\n");
    std::abort();
  }
  return 0;
}
