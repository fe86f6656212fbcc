//===- OutputDirectory.h - Output that never loses data ---------*- C++ -*-===//
//
// `dpc compile -o DIR` writes a whole directory. It is built in a staging
// directory beside DIR and swapped into place only when everything
// succeeded, and it may replace only what dpc itself wrote before: a missing
// DIR, an empty one, or a previous output that carries the marker file
// listing its entries. Anything else (a user's directory, a file, a link, a
// previous output that has gained files since, the working directory or a
// directory holding the input) is refused before any work is done.
//
//===----------------------------------------------------------------------===//

#ifndef DPC_SUPPORT_OUTPUTDIRECTORY_H
#define DPC_SUPPORT_OUTPUTDIRECTORY_H

#include <filesystem>
#include <string>
#include <vector>

namespace dpc::support {

/// The file in every dpc output directory that marks it as one and lists the
/// entries dpc wrote into it, one name per line after a header line.
inline constexpr const char *kOutputMarker = ".dpc-output";

/// Throws dpc::InputError saying why `target` may not become (or be replaced
/// by) an output directory. It may when it is missing, an empty directory,
/// or a marked dpc output holding only the entries its marker lists.
/// `inputs` are files the command reads; a target that contains one of them
/// is refused, as is a target that contains the working directory.
void checkOutputTarget(const std::filesystem::path &target,
                       const std::vector<std::filesystem::path> &inputs);

/// A directory that appears at its final path only on commit() and is
/// removed otherwise, so a failed command leaves nothing behind.
class OutputDirectory {
public:
  explicit OutputDirectory(std::filesystem::path target);
  ~OutputDirectory();
  OutputDirectory(const OutputDirectory &) = delete;
  OutputDirectory &operator=(const OutputDirectory &) = delete;

  /// Checks the target (as checkOutputTarget) and creates a staging
  /// directory of a name no other process uses, beside it. Throws
  /// dpc::Error saying why it cannot.
  void open(const std::vector<std::filesystem::path> &inputs);

  /// Where to write until commit().
  const std::filesystem::path &path() const { return staging; }

  /// Writes the marker and swaps the staging directory into place in one
  /// rename (the previous output, if any, is removed after the swap). The
  /// target is checked again first, so an output that changed meanwhile is
  /// never replaced. Throws dpc::Error saying why it cannot.
  void commit();

private:
  std::filesystem::path target, staging;
  bool committed = false;
};

} // namespace dpc::support

#endif // DPC_SUPPORT_OUTPUTDIRECTORY_H
