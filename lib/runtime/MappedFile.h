//===- MappedFile.h - A file mapped read-only into memory -------*- C++ -*-===//
//
// Private to lib/runtime. The data sources that read large files (npy:,
// tokens:) map them instead of reading them: pages come in from the page
// cache as samples are gathered, one copy shared by every rank on the
// host, and a rank's resident memory does not grow with the file.
//
//===----------------------------------------------------------------------===//

#ifndef DPC_LIB_RUNTIME_MAPPEDFILE_H
#define DPC_LIB_RUNTIME_MAPPEDFILE_H

#include <cstddef>
#include <cstdint>
#include <string>

namespace dpc::runtime {

class MappedFile {
public:
  /// Maps `path` read-only; throws Error naming the path when it is missing,
  /// not a regular file or cannot be mapped. An empty file maps to no bytes.
  explicit MappedFile(const std::string &path);
  ~MappedFile();
  MappedFile(const MappedFile &) = delete;
  MappedFile &operator=(const MappedFile &) = delete;

  const uint8_t *data() const { return bytes; }
  size_t size() const { return length; }
  const std::string &path() const { return name; }

private:
  std::string name;
  const uint8_t *bytes = nullptr;
  size_t length = 0;
};

} // namespace dpc::runtime

#endif // DPC_LIB_RUNTIME_MAPPEDFILE_H
