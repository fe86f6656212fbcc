//===- DataSources.h - Shared pieces of the data sources --------*- C++ -*-===//
//
// Private to lib/runtime. The training data (dpc/runtime/Data.h) lives in
// files by concern: Data.cpp (the table of source kinds, the spec parser,
// loadDataset and what the sources share), Dataset.cpp (the in-memory
// dataset and its gathers), and one file a source kind, Data<Kind>.cpp:
// DataIdx.cpp (Fashion-MNIST and MNIST IDX files), DataNpy.cpp (.npy
// arrays, with or without lengths), DataText.cpp (a text's windows or
// documents), DataTokens.cpp (a binary file of token ids),
// DataImageFolder.cpp (a folder of JPEG and PNG images) and
// DataSynthetic.cpp. This header declares what more than one of them uses
// and each kind's row of the table. Nothing outside lib/runtime includes it.
//
//===----------------------------------------------------------------------===//

#ifndef DPC_LIB_RUNTIME_DATASOURCES_H
#define DPC_LIB_RUNTIME_DATASOURCES_H

#include "dpc/runtime/Data.h"
#include "dpc/runtime/DataKinds.h"

#include <cstdint>
#include <string>
#include <vector>

namespace dpc::runtime::data_detail {

/// strerror(errno).
std::string errnoText();
/// Whether `path` is a regular file.
bool fileExists(const std::string &path);
/// The elements of a tensor of `shape` (1 for a scalar).
int64_t product(const std::vector<int64_t> &shape);
/// "28x28".
std::string shapeText(const std::vector<int64_t> &shape);
/// Throws an InputError naming `what` unless the model reads [B, T] token
/// ids with a label per position and has an ignore index (Data.cpp).
void checkSequenceModel(const DataSpec &spec, const ModelDataShape &model,
                        const std::string &what);

/// A positive integer option's value ("stride=8", `nameLength` 7: 8);
/// throws Error `usage` with the option otherwise.
int64_t positiveOption(const std::string &option, size_t nameLength,
                       const std::string &usage);
/// "mean=0.5/0.25", `nameLength` 5: {0.5, 0.25}, finite numbers separated
/// by '/'; throws Error `usage` otherwise.
std::vector<double> numberList(const std::string &option, size_t nameLength,
                               const std::string &usage);

//===----------------------------------------------------------------------===//
// The source kinds, one a file
//===----------------------------------------------------------------------===//

// Each Data<Kind>.cpp defines dataSourceKind<Kind>(), its row of the table
// (DataKinds.h); the build lists the files in DataKinds.inc.
#define DPC_DATA_KIND(Kind) DataSourceKind dataSourceKind##Kind();
#include "DataKinds.inc"
#undef DPC_DATA_KIND

} // namespace dpc::runtime::data_detail

#endif // DPC_LIB_RUNTIME_DATASOURCES_H
