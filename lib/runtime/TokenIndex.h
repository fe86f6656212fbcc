//===- TokenIndex.h - The saved document index of a token file --*- C++ -*-===//
//
// Private to lib/runtime. `tokens:FILE,eot=ID` cuts a token file into
// documents at the end-of-text id; finding them means reading every id of
// the file, about 30 s for a 20 GB corpus on each rank. The first load
// saves what the scan found, the index, in a file of its own, and later
// loads map that file instead: a start independent of the corpus' size.
//
// The index file (`FILE.eot<ID>.uint<16|32>.dpcidx` beside FILE, or, where
// FILE's folder is not writable, a name keyed by FILE's absolute path
// under $XDG_CACHE_HOME/dpc/token-index, ~/.cache/dpc/token-index without
// it) is a 96-byte header, then each document's first token (int64), then
// its token count less one (uint32, saturated), native little-endian. The
// header holds what the index depends on: the id width and the end-of-text
// id, and the token file's size, inode and modification and change times
// (ns; a write that restores the modification time still changes the
// change time), so that a changed file is never read through a stale
// index; and a checksum of the arrays. A saved index is used only when all of
// that matches and every document lies inside the file in order; any other
// index is rebuilt by a scan, never trusted. It is written to a temporary file
// and renamed into place, so a rank never maps a half-written index while
// another writes it (ranks that scan at once each write a whole one; the last
// rename wins). A token file modified in the last 2 s gets no saved index, as
// its modification time may not yet tell a later write from this one (Linux
// stamps files with a clock of a few ms).
//
//===----------------------------------------------------------------------===//

#ifndef DPC_LIB_RUNTIME_TOKENINDEX_H
#define DPC_LIB_RUNTIME_TOKENINDEX_H

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace dpc::support {
class MappedFile;
} // namespace dpc::support

namespace dpc::runtime {

/// Token `index` of the ids of `tokenBytes` (2 or 4) bytes at `data`.
int64_t tokenAt(const uint8_t *data, int tokenBytes, int64_t index);

/// The documents of a token file cut at an end-of-text id, those of at least
/// 2 tokens: where each starts and its span, its tokens less one (the next-
/// token labels it gives). Read from a mapped index file, or held in memory
/// when none could be saved.
class DocumentIndex {
public:
  DocumentIndex(std::vector<int64_t> begins, std::vector<uint32_t> spans,
                int64_t maxId);
  DocumentIndex(std::unique_ptr<support::MappedFile> file, int64_t count,
                int64_t maxId);
  ~DocumentIndex();

  int64_t size() const { return count; }
  int64_t begin(int64_t doc) const { return beginData[doc]; }
  int64_t span(int64_t doc) const { return spanData[doc]; }
  /// The largest id in the file other than the end-of-text id; -1 if none.
  int64_t maxId() const { return largest; }
  /// The index file it was read from, written to, or "" (memory only).
  const std::string &savedPath() const;
  /// Whether this load scanned the token file (no valid index was saved).
  bool scanned = false;

private:
  std::unique_ptr<support::MappedFile> file;
  std::vector<int64_t> begins;
  std::vector<uint32_t> spans;
  const int64_t *beginData = nullptr;
  const uint32_t *spanData = nullptr;
  int64_t count = 0;
  int64_t largest = -1;
};

/// Where an index is looked for and saved: beside the token file when
/// `beside`, else (or when that folder is not writable) under `cacheDir`
/// when it is not empty.
struct TokenIndexPlaces {
  bool beside = true;
  std::string cacheDir;
};

/// Beside the file, else $XDG_CACHE_HOME/dpc/token-index (or
/// $HOME/.cache/dpc/token-index).
TokenIndexPlaces defaultTokenIndexPlaces();

/// The index of `tokens` (ids of `tokenBytes` bytes) cut at `eot`: a valid
/// saved one mapped, else scanned and saved where `places` allow.
std::shared_ptr<const DocumentIndex>
loadDocumentIndex(const support::MappedFile &tokens, int tokenBytes,
                  int64_t eot, const TokenIndexPlaces &places);

/// The first id at or past `vocab` that is not `eot`: its token, its id and
/// the number of documents (of 2 tokens or more) that end before it.
struct IdOutside {
  int64_t token = 0, id = 0, documentsBefore = 0;
};
std::optional<IdOutside> firstIdOutside(const support::MappedFile &tokens,
                                        int tokenBytes, int64_t eot,
                                        int64_t vocab);

} // namespace dpc::runtime

#endif // DPC_LIB_RUNTIME_TOKENINDEX_H
