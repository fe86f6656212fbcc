//===- DataKinds.h - The table of data source kinds -------------*- C++ -*-===//
//
// Every kind of --data spec (fashion-mnist:, npy:, text:, ...) is one row of
// this table, which its own file lib/runtime/Data<Kind>.cpp fills: the
// prefixes it takes before the ':', its option parser and loader, its line
// in --data's help and in the "unknown kind" message, and what the checks
// every kind shares need to know of it. parseDataSpec and loadDataset
// (Data.h) dispatch through the table, and the help and the message are
// written from it, so that a new kind is its one file. The build lists the
// files (lib/runtime/CMakeLists.txt globs Data<Kind>.cpp into DataKinds.inc),
// so no row can be dropped by the linker as self-registering objects in a
// static library would be.
//
//===----------------------------------------------------------------------===//

#ifndef DPC_RUNTIME_DATAKINDS_H
#define DPC_RUNTIME_DATAKINDS_H

#include "dpc/runtime/Data.h"

#include <cstdint>
#include <string>
#include <vector>

namespace dpc::runtime {

/// A --data spec cut for its kind's parser: "npy:a.npy,b.npy" has prefix
/// "npy", rest "a.npy,b.npy" and options {"a.npy", "b.npy"}.
struct DataSpecParts {
  std::string prefix;
  /// Whether the spec has a ':' ("synthetic:" has, with an empty rest).
  bool hasColon = false;
  std::string rest;
  /// `rest` cut at every ',' (one empty option for an empty rest).
  std::vector<std::string> options;
};

/// One kind of data source: a row of the table.
struct DataSourceKind {
  /// DataSpec::kind of its specs ("npy").
  std::string name;
  /// What its specs start with, before the ':' ("fashion-mnist", "mnist").
  std::vector<std::string> prefixes;
  /// Its place in --data's help and the "unknown kind" message (lower
  /// first; synthetic, which needs no files, is last).
  int order = 0;
  /// Its specs in the "unknown kind" message ("npy:INPUTS.npy[,LABELS.npy]").
  std::string usage;
  /// Its specs in --data's help, with their options.
  std::string help;
  /// Whether its labels are always class ids, which a model whose loss
  /// takes float targets (--loss mse) refuses before loading.
  bool classLabels = false;
  /// Sets the kind's options in `spec` (whose text and kind are set), or
  /// throws Error or InputError naming the spec.
  void (*parse)(const DataSpecParts &parts, DataSpec &spec) = nullptr;
  /// Loads split `split` of `spec` (loadDataset's contract, before the
  /// checks against the model every kind shares).
  Dataset (*load)(const DataSpec &spec, Split split,
                  const ModelDataShape &model, uint64_t seed,
                  bool readsInputs) = nullptr;
};

/// Every kind, in `order`.
const std::vector<DataSourceKind> &dataSourceKinds();

/// The kinds' usages for the "unknown kind" message: "fashion-mnist:DIR,
/// mnist:DIR, npy:... or synthetic[:SAMPLES]".
std::string dataKindsUsage();

/// The kinds' help lines for --data's help, joined as dataKindsUsage.
std::string dataKindsHelp();

} // namespace dpc::runtime

#endif // DPC_RUNTIME_DATAKINDS_H
