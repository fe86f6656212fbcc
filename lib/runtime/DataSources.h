//===- DataSources.h - Shared pieces of the data sources --------*- C++ -*-===//
//
// Private to lib/runtime. The training data (dpc/runtime/Data.h) lives in
// files by concern: Data.cpp (the spec parser, loadDataset and what the
// sources share), Dataset.cpp (the in-memory dataset and its gathers), and
// one file a source kind: DataIdx.cpp (Fashion-MNIST and MNIST IDX files),
// DataNpy.cpp (.npy arrays, with or without lengths), DataText.cpp (a text's
// windows or documents), DataTokens.cpp (a binary file of token ids),
// DataImageFolder.cpp (a folder of JPEG and PNG images) and
// DataSynthetic.cpp. This header declares what
// more than one of them uses and each kind's loader, which loadDataset
// calls. Nothing outside lib/runtime includes it.
//
//===----------------------------------------------------------------------===//

#ifndef DPC_LIB_RUNTIME_DATASOURCES_H
#define DPC_LIB_RUNTIME_DATASOURCES_H

#include "dpc/runtime/Data.h"

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

//===----------------------------------------------------------------------===//
// The loaders of the source kinds, one a file
//===----------------------------------------------------------------------===//

/// fashion-mnist:DIR and mnist:DIR (DataIdx.cpp).
Dataset loadIdx(const DataSpec &spec, Split split, const ModelDataShape &model);
/// npy:INPUTS.npy[,LABELS.npy][,lengths=LENGTHS.npy] (DataNpy.cpp).
Dataset loadNpy(const DataSpec &spec, const ModelDataShape &model);
/// tokens:FILE (DataTokens.cpp).
Dataset loadTokens(const DataSpec &spec, Split split,
                   const ModelDataShape &model);
/// text:FILE (DataText.cpp).
Dataset loadText(const DataSpec &spec, Split split,
                 const ModelDataShape &model);
/// imagefolder:DIR (DataImageFolder.cpp). `readsInputs` false: labels
/// only, from the listing, nothing opened.
Dataset loadImageFolder(const DataSpec &spec, Split split,
                        const ModelDataShape &model, uint64_t seed,
                        bool readsInputs);
/// synthetic[:SAMPLES] (DataSynthetic.cpp).
Dataset makeSynthetic(const DataSpec &spec, Split split,
                      const ModelDataShape &model, uint64_t seed,
                      bool readsInputs);

} // namespace dpc::runtime::data_detail

#endif // DPC_LIB_RUNTIME_DATASOURCES_H
