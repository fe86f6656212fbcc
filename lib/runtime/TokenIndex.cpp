//===- TokenIndex.cpp - The saved document index of a token file ----------===//

#include "TokenIndex.h"

#include "dpc/support/Error.h"
#include "dpc/support/MappedFile.h"

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace dpc::runtime {

using support::MappedFile;

namespace {

constexpr char kMagic[8] = {'D', 'P', 'C', 'T', 'O', 'K', 'I', 'X'};
constexpr uint32_t kVersion = 2;
/// A scan gives back the pages it read every this many tokens.
constexpr int64_t kScanChunk = int64_t(1) << 22;
/// A file modified this recently gets no saved index (see TokenIndex.h).
constexpr int64_t kRacySeconds = 2;

struct Header {
  char magic[8];
  uint32_t version;
  uint32_t tokenBytes;
  int64_t eot;
  uint64_t fileSize;
  int64_t mtimeSec, mtimeNsec;
  int64_t ctimeSec, ctimeNsec;
  uint64_t inode;
  uint64_t documents;
  int64_t maxId;
  uint64_t checksum;
};
static_assert(sizeof(Header) == 96, "the index header is 96 bytes");

/// What an index depends on, from the token file's stat and the spec.
Header keyOf(const struct stat &info, int tokenBytes, int64_t eot) {
  Header h;
  std::memset(&h, 0, sizeof h);
  std::memcpy(h.magic, kMagic, sizeof kMagic);
  h.version = kVersion;
  h.tokenBytes = uint32_t(tokenBytes);
  h.eot = eot;
  h.fileSize = uint64_t(info.st_size);
  h.mtimeSec = int64_t(info.st_mtim.tv_sec);
  h.mtimeNsec = int64_t(info.st_mtim.tv_nsec);
  h.ctimeSec = int64_t(info.st_ctim.tv_sec);
  h.ctimeNsec = int64_t(info.st_ctim.tv_nsec);
  h.inode = uint64_t(info.st_ino);
  return h;
}

bool sameKey(const Header &a, const Header &b) {
  return std::memcmp(a.magic, b.magic, sizeof a.magic) == 0 &&
         a.version == b.version && a.tokenBytes == b.tokenBytes &&
         a.eot == b.eot && a.fileSize == b.fileSize &&
         a.mtimeSec == b.mtimeSec && a.mtimeNsec == b.mtimeNsec &&
         a.ctimeSec == b.ctimeSec && a.ctimeNsec == b.ctimeNsec &&
         a.inode == b.inode;
}

/// FNV-1a over 64-bit words: the checksum of the largest id and the arrays.
struct Checksum {
  uint64_t value = 0xcbf29ce484222325ULL;
  void add(uint64_t word) { value = (value ^ word) * 0x100000001b3ULL; }
};

uint64_t checksumOf(int64_t maxId, const int64_t *begins, const uint32_t *spans,
                    int64_t n) {
  Checksum sum;
  sum.add(uint64_t(maxId));
  for (int64_t d = 0; d < n; ++d) {
    sum.add(uint64_t(begins[d]));
    sum.add(spans[d]);
  }
  return sum.value;
}

/// Calls `visit(k, id)` for every token of the file in order, reading it
/// sequentially and giving back the pages behind the scan, so that the
/// resident set does not grow with the file.
template <typename Visit>
void scanTokens(const MappedFile &tokens, int tokenBytes, Visit visit) {
  const int64_t total = int64_t(tokens.size()) / tokenBytes;
  tokens.advise(MappedFile::Access::Sequential);
  for (int64_t k = 0; k < total; ++k) {
    if (k % kScanChunk == 0 && k > 0)
      tokens.release(size_t(k - kScanChunk) * size_t(tokenBytes),
                     size_t(kScanChunk) * size_t(tokenBytes));
    if (!visit(k, tokenAt(tokens.data(), tokenBytes, k)))
      break;
  }
  tokens.release(0, tokens.size());
  tokens.advise(MappedFile::Access::Random);
}

/// Every document of at least 2 tokens, and the largest id.
std::unique_ptr<DocumentIndex> scanDocuments(const MappedFile &tokens,
                                             int tokenBytes, int64_t eot) {
  std::vector<int64_t> begins;
  std::vector<uint32_t> spans;
  int64_t maxId = -1, begin = 0;
  auto add = [&](int64_t end) {
    if (end - begin >= 2) {
      begins.push_back(begin);
      spans.push_back(uint32_t(std::min<int64_t>(end - begin - 1, UINT32_MAX)));
    }
  };
  scanTokens(tokens, tokenBytes, [&](int64_t k, int64_t id) {
    if (id == eot) {
      add(k);
      begin = k + 1;
    } else {
      maxId = std::max(maxId, id);
    }
    return true;
  });
  add(int64_t(tokens.size()) / tokenBytes);
  begins.shrink_to_fit();
  spans.shrink_to_fit();
  auto index = std::make_unique<DocumentIndex>(std::move(begins),
                                               std::move(spans), maxId);
  index->scanned = true;
  return index;
}

/// The saved index at `path` if it is one of this key and its documents
/// lie inside the token file in order; null otherwise.
std::unique_ptr<DocumentIndex> readIndex(const std::string &path,
                                         const Header &key) {
  std::unique_ptr<MappedFile> file;
  try {
    file = std::make_unique<MappedFile>(path);
  } catch (const Error &) {
    return nullptr;
  }
  Header h;
  if (file->size() < sizeof h)
    return nullptr;
  std::memcpy(&h, file->data(), sizeof h);
  const uint64_t total = key.fileSize / key.tokenBytes;
  if (!sameKey(h, key) || h.documents > total ||
      file->size() != sizeof h + 12 * h.documents ||
      h.maxId >= (int64_t(1) << (8 * key.tokenBytes)))
    return nullptr;
  const int64_t n = int64_t(h.documents);
  const auto *begins =
      reinterpret_cast<const int64_t *>(file->data() + sizeof(Header));
  const auto *spans = reinterpret_cast<const uint32_t *>(begins + n);
  // Each document starts past the previous one and its end-of-text id.
  int64_t next = 0;
  for (int64_t d = 0; d < n; ++d) {
    if (begins[d] < next || spans[d] == 0 ||
        uint64_t(begins[d]) + spans[d] + 1 > total)
      return nullptr;
    next = begins[d] + spans[d] + 2;
  }
  const bool valid = checksumOf(h.maxId, begins, spans, n) == h.checksum;
  file->release(0, file->size());
  if (!valid)
    return nullptr;
  file->advise(MappedFile::Access::Random);
  return std::make_unique<DocumentIndex>(std::move(file), n, h.maxId);
}

bool writeAll(int fd, const void *data, size_t size) {
  const char *p = static_cast<const char *>(data);
  while (size > 0) {
    ssize_t n = ::write(fd, p, size);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return false;
    p += n;
    size -= size_t(n);
  }
  return true;
}

/// Writes `index` to `path` through a temporary file renamed into place;
/// false (and nothing left behind) when the folder is not writable.
bool writeIndex(const std::string &path, Header h, const DocumentIndex &index) {
  std::vector<int64_t> begins(size_t(index.size()));
  std::vector<uint32_t> spans(size_t(index.size()));
  for (int64_t d = 0; d < index.size(); ++d) {
    begins[size_t(d)] = index.begin(d);
    spans[size_t(d)] = uint32_t(index.span(d));
  }
  h.documents = uint64_t(index.size());
  h.maxId = index.maxId();
  h.checksum = checksumOf(h.maxId, begins.data(), spans.data(), index.size());
  timespec now;
  ::clock_gettime(CLOCK_REALTIME, &now);
  std::string temp = path + ".tmp." + std::to_string(::getpid()) + "." +
                     std::to_string(now.tv_nsec);
  int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0)
    return false;
  bool ok = writeAll(fd, &h, sizeof h) &&
            writeAll(fd, begins.data(), begins.size() * 8) &&
            writeAll(fd, spans.data(), spans.size() * 4);
  ok = ::close(fd) == 0 && ok;
  if (!ok || ::rename(temp.c_str(), path.c_str()) != 0) {
    ::unlink(temp.c_str());
    return false;
  }
  return true;
}

/// `dir` and the folders above it, as mkdir -p.
bool makeFolders(const std::string &dir) {
  size_t at = 0;
  do {
    at = dir.find('/', at + 1);
    std::string prefix = dir.substr(0, at);
    if (::mkdir(prefix.c_str(), 0755) != 0 && errno != EEXIST)
      return false;
  } while (at != std::string::npos);
  return true;
}

/// The index's names: beside the file, and in the cache folder.
std::vector<std::string> indexPaths(const std::string &path, int tokenBytes,
                                    int64_t eot,
                                    const TokenIndexPlaces &places) {
  const std::string suffix = ".eot" + std::to_string(eot) + ".uint" +
                             std::to_string(tokenBytes * 8) + ".dpcidx";
  std::vector<std::string> paths;
  if (places.beside)
    paths.push_back(path + suffix);
  if (!places.cacheDir.empty()) {
    char *real = ::realpath(path.c_str(), nullptr);
    std::string absolute = real ? real : path;
    std::free(real);
    Checksum key;
    for (char c : absolute)
      key.add(uint8_t(c));
    char hex[17];
    std::snprintf(hex, sizeof hex, "%016llx",
                  static_cast<unsigned long long>(key.value));
    std::string base = absolute.substr(absolute.rfind('/') + 1);
    paths.push_back(places.cacheDir + "/" + base + "-" + hex + suffix);
  }
  return paths;
}

} // namespace

int64_t tokenAt(const uint8_t *data, int tokenBytes, int64_t index) {
  const uint8_t *p = data + size_t(index) * size_t(tokenBytes);
  if (tokenBytes == 2) {
    uint16_t v;
    std::memcpy(&v, p, 2);
    return v;
  }
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

DocumentIndex::DocumentIndex(std::vector<int64_t> begins,
                             std::vector<uint32_t> spans, int64_t maxId)
    : begins(std::move(begins)), spans(std::move(spans)),
      beginData(this->begins.data()), spanData(this->spans.data()),
      count(int64_t(this->begins.size())), largest(maxId) {}

DocumentIndex::DocumentIndex(std::unique_ptr<MappedFile> mapped, int64_t n,
                             int64_t maxId)
    : file(std::move(mapped)), count(n), largest(maxId) {
  beginData = reinterpret_cast<const int64_t *>(file->data() + sizeof(Header));
  spanData = reinterpret_cast<const uint32_t *>(beginData + n);
}

DocumentIndex::~DocumentIndex() = default;

const std::string &DocumentIndex::savedPath() const {
  static const std::string none;
  return file ? file->path() : none;
}

TokenIndexPlaces defaultTokenIndexPlaces() {
  TokenIndexPlaces places;
  if (const char *cache = std::getenv("XDG_CACHE_HOME"); cache && *cache)
    places.cacheDir = std::string(cache) + "/dpc/token-index";
  else if (const char *home = std::getenv("HOME"); home && *home)
    places.cacheDir = std::string(home) + "/.cache/dpc/token-index";
  return places;
}

std::shared_ptr<const DocumentIndex>
loadDocumentIndex(const MappedFile &tokens, int tokenBytes, int64_t eot,
                  const TokenIndexPlaces &places) {
  struct stat info;
  if (::stat(tokens.path().c_str(), &info) != 0 ||
      uint64_t(info.st_size) != tokens.size())
    return scanDocuments(tokens, tokenBytes, eot); // replaced since mapped
  const Header key = keyOf(info, tokenBytes, eot);
  const std::vector<std::string> paths =
      indexPaths(tokens.path(), tokenBytes, eot, places);
  for (const std::string &path : paths)
    if (auto index = readIndex(path, key))
      return index;
  std::unique_ptr<DocumentIndex> scanned =
      scanDocuments(tokens, tokenBytes, eot);
  struct stat after;
  if (::stat(tokens.path().c_str(), &after) != 0 ||
      !sameKey(keyOf(after, tokenBytes, eot), key) ||
      key.mtimeSec > int64_t(std::time(nullptr)) - kRacySeconds)
    return scanned;
  for (const std::string &path : paths) {
    const bool inCache = !places.cacheDir.empty() && &path == &paths.back();
    if (inCache && !makeFolders(places.cacheDir))
      break;
    if (!writeIndex(path, key, *scanned))
      continue;
    // Map what was written, so that the scan's arrays are freed.
    if (auto saved = readIndex(path, key)) {
      saved->scanned = true;
      return saved;
    }
    break;
  }
  return scanned;
}

std::optional<IdOutside> firstIdOutside(const MappedFile &tokens,
                                        int tokenBytes, int64_t eot,
                                        int64_t vocab) {
  std::optional<IdOutside> found;
  int64_t begin = 0, documents = 0;
  scanTokens(tokens, tokenBytes, [&](int64_t k, int64_t id) {
    if (id == eot) {
      documents += k - begin >= 2;
      begin = k + 1;
    } else if (id >= vocab) {
      found = IdOutside{k, id, documents};
      return false;
    }
    return true;
  });
  return found;
}

} // namespace dpc::runtime
