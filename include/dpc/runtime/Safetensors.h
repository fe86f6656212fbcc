//===- Safetensors.h - Weights and checkpoints ------------------*- C++ -*-===//
//
// dpc keeps parameters out of the IR: `dpc compile` writes each stage's
// initial weights to out/weights/ and a run writes checkpoints to
// --checkpoint-dir, both in the safetensors format, so that PyTorch and
// other tools read them directly. A file is an 8-byte little-endian header
// length, a JSON header {"name": {"dtype", "shape", "data_offsets": [b, e]},
// "__metadata__": {string: string}}, then the raw little-endian data, offsets
// relative to its start.
//
//===----------------------------------------------------------------------===//

#ifndef DPC_RUNTIME_SAFETENSORS_H
#define DPC_RUNTIME_SAFETENSORS_H

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace dpc::support {
class MappedFile;
} // namespace dpc::support

namespace dpc::runtime {

enum class DType { F16, BF16, F32, F64, I8, I32, I64, U8, Bool };

/// The safetensors name of `dtype` ("F32") and its size in bytes.
const char *dtypeName(DType dtype);
size_t dtypeSize(DType dtype);
/// Parses a safetensors dtype name; returns false for an unknown one.
bool parseDType(const std::string &name, DType &dtype);

struct Tensor {
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  /// The data, little-endian, C order: held in `bytes`, or, for a tensor
  /// that lies in a mapped file (readSafetensors' tensors, an ONNX model's
  /// external data as the compiler streams it), the size() bytes at
  /// `offset` of `file`, with `bytes` empty. Readers use data() and size(),
  /// which serve both.
  std::vector<uint8_t> bytes;
  std::shared_ptr<const support::MappedFile> file;
  uint64_t offset = 0;

  int64_t numElements() const;
  const uint8_t *data() const;
  size_t size() const;
  /// The tensor of `dtype` and `shape` at `offset` of `file`; throws Error
  /// naming `name` and the file when the file ends before its last byte.
  static Tensor mapped(DType dtype, std::vector<int64_t> shape,
                       std::shared_ptr<const support::MappedFile> file,
                       uint64_t offset, const std::string &name);
  static Tensor fromF32(std::vector<int64_t> shape, const float *data);
  static Tensor fromI64(std::vector<int64_t> shape, const int64_t *data);
  /// Copies the elements out as float: F32 as is, F16 and BF16 widened
  /// exactly, F64 rounded to nearest; throws Error for the other dtypes.
  std::vector<float> toF32() const;
  /// Elements [first, first + count) as toF32 gives them, into `out`.
  void readF32(float *out, size_t first, size_t count) const;
  /// Copies the elements out; throws Error when the dtype is not I64.
  std::vector<int64_t> toI64() const;
  /// For a mapped tensor, gives its pages back (MappedFile::release): for a
  /// reader that is done with it. Nothing for a tensor in `bytes`.
  void release() const;
};

/// Whether toF32 reads `dtype` (F32, F16, BF16, F64).
bool isFloatDType(DType dtype);

struct TensorFile {
  std::map<std::string, Tensor> tensors; // ordered, so files are reproducible
  std::map<std::string, std::string> metadata;
};

/// Parses a safetensors image; `name` is used in error messages. Rejects
/// headers that overrun the file, unknown dtypes, offsets outside the data or
/// overlapping, and sizes that do not match dtype and shape. A file with
/// per-tensor checksums (the "crc32c:NAME" metadata dpc writes) must match
/// each of them, or the Error names the file and the tensor; the checksum
/// keys are not put into `metadata`. A file without them loads unchecked.
TensorFile parseSafetensors(const std::vector<uint8_t> &bytes,
                            const std::string &name);
/// Maps the file at `path` and parses it as parseSafetensors does; the
/// tensors are views into the mapping (Tensor::file), which stays mapped
/// while any of them is alive, so that loading a stage's weights copies
/// each tensor once, from the page cache into its parameter.
TensorFile readSafetensors(const std::string &path);

/// The file image, with each tensor's CRC-32C in the metadata.
std::vector<uint8_t> serializeSafetensors(const TensorFile &file);
/// Writes the same bytes as serializeSafetensors, streamed: tensor by
/// tensor in pieces, each mapped piece given back once written, so that
/// writing a stage's weights from a model's mapped external data never
/// holds them in memory. Through a temporary file and rename, so that a
/// rank killed while checkpointing never leaves a truncated file under the
/// final name.
void writeSafetensors(const std::string &path, const TensorFile &file);

/// The metadata of the safetensors file at `path` (its checksums left out),
/// read from its header alone: no tensor is read or checked.
std::map<std::string, std::string>
readSafetensorsMetadata(const std::string &path);

/// The checkpoint file of pipeline stage `stage` in a checkpoint directory.
std::string checkpointPath(const std::string &dir, int stage);
/// The stage's checkpoint before the newest one, beside it
/// ("stage1.previous.safetensors").
std::string previousCheckpointPath(const std::string &dir, int stage);

/// Writes `file` as the checkpoint at `path` (checkpointPath's) and keeps
/// the one it replaces as previousCheckpointPath's: written whole beside
/// it first, then the old file renamed to the previous one and the new one
/// into place. A rank killed at any point leaves its newest complete
/// checkpoint under one of the two names.
void writeCheckpointFile(const std::string &path, const TensorFile &file);

/// Every stage's checkpoint in `dir` (stage0 up to the stage count the
/// files record), merged by tensor name: the model's parameters, and with
/// `optimizerState` their optimizer state too. Tensors are saved under their
/// model names, so a build with another stage split or replica layout (or an
/// inference build) loads what it needs from the result. Each stage's
/// newest file is read, or, where the stages' newest files disagree on the
/// step (a job that died while its stages wrote), the newest step every
/// stage has among its newest and previous files. Throws Error naming a
/// missing or duplicated file or tensor, and files that disagree on the
/// step, optimizer or update count with no step common to all. Where an
/// older step than the newest files' is read, `olderStep` (if given) is set
/// to a line that says so.
TensorFile readCheckpoint(const std::string &dir, bool optimizerState,
                          std::string *olderStep = nullptr);

/// The step readCheckpoint(`dir`) reads, from the files' headers alone.
/// Throws Error when stage0 has no checkpoint with a step.
int64_t readCheckpointStep(const std::string &dir);

} // namespace dpc::runtime

#endif // DPC_RUNTIME_SAFETENSORS_H
