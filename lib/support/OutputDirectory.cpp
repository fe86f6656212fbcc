//===- OutputDirectory.cpp - Output that never loses data -----------------===//

#include "dpc/support/OutputDirectory.h"

#include "dpc/support/Error.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <fstream>
#include <set>

namespace fs = std::filesystem;

namespace dpc::support {
namespace {

constexpr const char *kMarkerHeader = "dpc-output 1";

// An absolute path with symbolic links of its existing prefix resolved and no
// trailing separator, so that "out/", "./out" and "out" compare equal.
fs::path normalized(const fs::path &path) {
  std::error_code ec;
  fs::path result = fs::weakly_canonical(fs::absolute(path, ec), ec);
  if (ec)
    result = fs::absolute(path).lexically_normal();
  while (!result.has_filename() && result.has_relative_path())
    result = result.parent_path();
  return result;
}

// Whether `inner` is `outer` or lies below it (both normalized).
bool isWithin(const fs::path &inner, const fs::path &outer) {
  auto [o, i] =
      std::mismatch(outer.begin(), outer.end(), inner.begin(), inner.end());
  return o == outer.end();
}

// Reads the entries a marked output lists (relative paths) into `entries`;
// false when `dir` has no readable marker.
bool readMarker(const fs::path &dir, std::set<std::string> &entries) {
  std::ifstream in(dir / kOutputMarker);
  std::string line;
  if (!in || !std::getline(in, line) || line != kMarkerHeader)
    return false;
  while (std::getline(in, line))
    if (!line.empty())
      entries.insert(line);
  return true;
}

// Every entry below `dir` but the marker, as relative generic paths.
std::vector<std::string> listEntries(const fs::path &dir, std::error_code &ec) {
  std::vector<std::string> entries;
  for (fs::recursive_directory_iterator it(dir, ec), end; !ec && it != end;
       it.increment(ec)) {
    std::string name = it->path().lexically_relative(dir).generic_string();
    if (name != kOutputMarker)
      entries.push_back(name);
  }
  std::sort(entries.begin(), entries.end());
  return entries;
}

// A fresh directory named `prefix` plus a unique suffix.
fs::path makeUniqueDirectory(const fs::path &prefix) {
  std::string pattern = prefix.string() + "-XXXXXX";
  if (!::mkdtemp(pattern.data()))
    throw Error("cannot create a directory beside '" + prefix.string() +
                "': " + std::strerror(errno));
  return pattern;
}

// checkOutputTarget's reason, or "".
std::string targetProblem(const fs::path &target,
                          const std::vector<fs::path> &inputs) {
  std::string shown = "'" + target.string() + "'";
  fs::path absolute = normalized(target);
  std::error_code ec;
  if (isWithin(normalized(fs::current_path(ec)), absolute))
    return "output directory " + shown +
           " is or contains the working directory; give a new directory";
  for (const fs::path &input : inputs)
    if (!input.empty() && isWithin(normalized(input), absolute))
      return "output directory " + shown + " holds the input '" +
             input.string() + "', which the output would replace";

  fs::file_status status = fs::symlink_status(target, ec);
  if (status.type() == fs::file_type::not_found)
    return "";
  if (ec)
    return "cannot inspect output directory " + shown + ": " + ec.message();
  if (fs::is_symlink(status))
    return "output directory " + shown +
           " is a symbolic link; give the directory itself";
  if (!fs::is_directory(status))
    return "output directory " + shown + " exists and is not a directory";

  std::vector<std::string> present = listEntries(target, ec);
  if (ec)
    return "cannot read output directory " + shown + ": " + ec.message();
  bool marked = fs::exists(target / kOutputMarker);
  if (present.empty() && !marked)
    return "";
  std::set<std::string> written;
  if (!readMarker(target, written))
    return "output directory " + shown +
           " is not empty and was not written by dpc (it has no " +
           kOutputMarker +
           "); dpc replaces only its own output: remove it "
           "yourself or give another directory";
  // Entries below a foreign directory are not named apart from it.
  std::vector<std::string> foreign;
  for (const std::string &entry : present) {
    bool below = std::any_of(foreign.begin(), foreign.end(),
                             [&](const std::string &root) {
                               return entry.rfind(root + "/", 0) == 0;
                             });
    if (!written.count(entry) && !below)
      foreign.push_back(entry);
  }
  if (foreign.empty())
    return "";
  std::string names;
  for (size_t i = 0; i < foreign.size() && i < 3; ++i)
    names += (i ? ", " : "") + foreign[i];
  if (foreign.size() > 3)
    names += " and " + std::to_string(foreign.size() - 3) + " more";
  return "output directory " + shown +
         " holds files dpc did not write there (" + names +
         "); move them or give another directory";
}

} // namespace

void checkOutputTarget(const fs::path &target,
                       const std::vector<fs::path> &inputs) {
  if (std::string problem = targetProblem(target, inputs); !problem.empty())
    throw InputError(problem);
}

OutputDirectory::OutputDirectory(fs::path target)
    : target(normalized(target)) {}

OutputDirectory::~OutputDirectory() {
  std::error_code ec;
  if (!committed && !staging.empty())
    fs::remove_all(staging, ec);
}

void OutputDirectory::open(const std::vector<fs::path> &inputs) {
  if (std::string problem = targetProblem(target, inputs); !problem.empty())
    throw Error(problem);
  std::error_code ec;
  fs::create_directories(target.parent_path(), ec);
  if (ec)
    throw Error("cannot create '" + target.parent_path().string() +
                "': " + ec.message());
  staging = makeUniqueDirectory(target.string() + ".dpc-partial");
}

void OutputDirectory::commit() {
  std::error_code ec;
  std::vector<std::string> entries = listEntries(staging, ec);
  std::ofstream marker(staging / kOutputMarker, std::ios::trunc);
  marker << kMarkerHeader << "\n";
  for (const std::string &entry : entries)
    marker << entry << "\n";
  marker.close();
  if (ec || !marker)
    throw Error("cannot write '" + (staging / kOutputMarker).string() + "'");

  // The target may have changed since open(): check it again, then swap.
  if (std::string problem = targetProblem(target, {}); !problem.empty())
    throw Error(problem);
  std::string reason;
  bool exists =
      fs::symlink_status(target, ec).type() != fs::file_type::not_found;
  if (!exists) {
    if (::renameat2(AT_FDCWD, staging.c_str(), AT_FDCWD, target.c_str(),
                    RENAME_NOREPLACE) == 0 ||
        (errno == EINVAL &&
         std::rename(staging.c_str(), target.c_str()) == 0)) {
      committed = true;
      return;
    }
    reason = std::strerror(errno);
  } else if (::renameat2(AT_FDCWD, staging.c_str(), AT_FDCWD, target.c_str(),
                         RENAME_EXCHANGE) == 0) {
    // The previous output now lies at the staging path.
    committed = true;
    fs::remove_all(staging, ec);
    return;
  } else if (errno == EINVAL) {
    // A file system without exchange: move the previous output aside (it is
    // never missing), move the new one in, then remove the old one.
    fs::path aside = makeUniqueDirectory(target.string() + ".dpc-old");
    if (std::rename(target.c_str(), aside.c_str()) == 0) {
      if (std::rename(staging.c_str(), target.c_str()) == 0) {
        committed = true;
        fs::remove_all(aside, ec);
        return;
      }
      reason = std::strerror(errno);
      std::rename(aside.c_str(), target.c_str());
    } else {
      reason = std::strerror(errno);
      fs::remove(aside, ec);
    }
  } else {
    reason = std::strerror(errno);
  }
  throw Error("cannot move the output into '" + target.string() +
              "': " + reason);
}

} // namespace dpc::support
