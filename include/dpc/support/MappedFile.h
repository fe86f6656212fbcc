//===- MappedFile.h - A file mapped read-only into memory -------*- C++ -*-===//
//
// Large files are mapped instead of read: the data sources (npy:, tokens:),
// the weights a rank loads from its safetensors file, and an ONNX model's
// external data as the compiler streams it into each stage's weights. Pages
// come in from the page cache as they are touched, one copy shared by every
// process on the host, and a process's own memory does not grow with the
// file. A reader that passes through a file once gives its pages back with
// release(), so that its resident set stays bounded too.
//
//===----------------------------------------------------------------------===//

#ifndef DPC_SUPPORT_MAPPEDFILE_H
#define DPC_SUPPORT_MAPPEDFILE_H

#include <cstddef>
#include <cstdint>
#include <string>

namespace dpc::support {

class MappedFile {
public:
  /// Maps `path` read-only; throws dpc::Error naming the path when it is
  /// missing, not a regular file or cannot be mapped. An empty file maps to
  /// no bytes.
  explicit MappedFile(const std::string &path);
  ~MappedFile();
  MappedFile(const MappedFile &) = delete;
  MappedFile &operator=(const MappedFile &) = delete;

  const uint8_t *data() const { return bytes; }
  size_t size() const { return length; }
  const std::string &path() const { return name; }

  /// Drops the whole pages inside [offset, offset + size) from this
  /// process's resident set (the page cache keeps them; a later read maps
  /// them in again). For a reader done with that part of the file.
  void release(size_t offset, size_t size) const;

  /// How the process will read the mapping (madvise): Random makes a fault
  /// read its page only, not the read-ahead around it (shuffled samples);
  /// Sequential reads ahead aggressively (a scan); Normal is the default.
  enum class Access { Normal, Random, Sequential };
  void advise(Access access) const;

private:
  std::string name;
  const uint8_t *bytes = nullptr;
  size_t length = 0;
};

} // namespace dpc::support

#endif // DPC_SUPPORT_MAPPEDFILE_H
