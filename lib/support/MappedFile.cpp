//===- MappedFile.cpp - A file mapped read-only into memory ---------------===//

#include "dpc/support/MappedFile.h"

#include "dpc/support/Error.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace dpc::support {

MappedFile::MappedFile(const std::string &path) : name(path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    throw Error(path + ": " + std::strerror(errno));
  struct stat info;
  if (::fstat(fd, &info) != 0 || !S_ISREG(info.st_mode)) {
    ::close(fd);
    throw Error(path + ": not a regular file");
  }
  length = size_t(info.st_size);
  if (length > 0) {
    void *mapped = ::mmap(nullptr, length, PROT_READ, MAP_SHARED, fd, 0);
    if (mapped == MAP_FAILED) {
      int code = errno;
      ::close(fd);
      throw Error(path + ": cannot map: " + std::strerror(code));
    }
    bytes = static_cast<const uint8_t *>(mapped);
  }
  ::close(fd);
}

void MappedFile::release(size_t offset, size_t size) const {
  if (!bytes || offset >= length)
    return;
  size_t end = offset + std::min(size, length - offset);
  size_t page = size_t(::sysconf(_SC_PAGESIZE));
  size_t first = (offset + page - 1) / page * page;
  size_t last =
      end == length ? (end + page - 1) / page * page : end / page * page;
  if (last > first)
    ::madvise(const_cast<uint8_t *>(bytes) + first, last - first,
              MADV_DONTNEED);
}

void MappedFile::advise(Access access) const {
  if (!bytes)
    return;
  int advice = access == Access::Random       ? MADV_RANDOM
               : access == Access::Sequential ? MADV_SEQUENTIAL
                                              : MADV_NORMAL;
  ::madvise(const_cast<uint8_t *>(bytes), length, advice);
}

MappedFile::~MappedFile() {
  if (bytes)
    ::munmap(const_cast<uint8_t *>(bytes), length);
}

} // namespace dpc::support
