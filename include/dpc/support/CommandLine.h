//===- CommandLine.h - Subcommand option parsing for dpc --------*- C++ -*-===//
//
// A small option parser shared by the dpc subcommands. It has no LLVM
// dependency so that runtime-only tools can use it too. Options are
// `--name value` or `--name=value`; flags are `--name` and `--no-name` where
// declared negatable. Anything unknown is an error: the caller prints the
// message and exits 2.
//
//===----------------------------------------------------------------------===//

#ifndef DPC_SUPPORT_COMMANDLINE_H
#define DPC_SUPPORT_COMMANDLINE_H

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace dpc::cli {

/// Exit code for a usage error (bad flag, missing argument, bad value).
constexpr int kUsageError = 2;

/// A value check for ArgParser::addOption: the option must take one of
/// `choices`, which it then stores in `out`.
std::function<std::string(const std::string &)>
oneOf(std::string *out, std::vector<std::string> choices);

class ArgParser {
public:
  /// `command` is what the user typed ("dpc plan"); `summary` one line on what
  /// it does; `usage` the synopsis printed by --help.
  ArgParser(std::string command, std::string summary, std::string usage);

  void addFlag(const std::string &name, bool *out, const std::string &help,
               bool negatable = false);
  void addOption(const std::string &name, std::string *out,
                 const std::string &metavar, const std::string &help);
  void addOption(const std::string &name, int64_t *out,
                 const std::string &metavar, const std::string &help);
  void addOption(const std::string &name, double *out,
                 const std::string &metavar, const std::string &help);
  /// An option whose value is checked by `parse`, which returns an error
  /// message or "" when the value is accepted.
  void addOption(const std::string &name,
                 std::function<std::string(const std::string &)> parse,
                 const std::string &metavar, const std::string &help);
  /// Positive integers separated by commas, such as "2,1,1".
  void addCountListOption(const std::string &name, std::vector<int64_t> *out,
                          const std::string &metavar, const std::string &help);
  /// A positive byte count such as "8e9", "512MiB" or "16GiB".
  void addByteCountOption(const std::string &name, double *out,
                          const std::string &help);
  /// Positional arguments are filled in order.
  void addPositional(const std::string &name, std::string *out,
                     const std::string &help, bool required = true);

  enum class Result { Ok, Help, Error };
  /// Parses `args` (without the program and subcommand names). On Error the
  /// message is in `error()`; on Help the caller prints `help()` and exits 0.
  Result parse(const std::vector<std::string> &args);

  /// Parses `args` the way every subcommand does: on --help prints help()
  /// to stdout and returns 0, on a usage error prints error() to stderr and
  /// returns kUsageError; returns nullopt when the command should go on.
  std::optional<int> parseOrExit(const std::vector<std::string> &args);

  const std::string &error() const { return errorMessage; }
  std::string help() const;
  /// Whether the option or flag was given on the command line.
  bool given(const std::string &name) const;

private:
  struct Option {
    std::string name;
    std::string metavar; // empty for flags
    std::string help;
    std::function<std::string(const std::string &)> parse; // options
    bool *flag = nullptr;                                  // flags
    bool negatable = false;
    bool seen = false;
  };
  struct Positional {
    std::string name;
    std::string *out;
    std::string help;
    bool required;
  };

  Option *find(const std::string &name);
  Result fail(std::string message);

  std::string command, summary, usage;
  std::vector<Option> options;
  std::vector<Positional> positionals;
  std::string errorMessage;
};

/// Parses a byte count such as "8e9", "512MiB", "16GB" or "1073741824".
/// Returns false when `text` is not one, or when it overflows a double.
bool parseByteCount(const std::string &text, double &bytes);

/// A byte count for people: "512 B", "1.50 MiB", "2.00 GiB" (binary units
/// up to TiB, two decimals above bytes).
std::string formatByteCount(double bytes);

/// Parses a finite decimal number ("0.01", "-3", "1e-3", ".5"). Refuses
/// what strtod would also take: hex ("0x10", "0x1p3"), "inf", "nan",
/// blanks, trailing text, and values that overflow or underflow a double.
bool parseDecimal(const std::string &text, double &value);

/// Parses a decimal integer ("42", "-7", "+3") that fits in int64_t;
/// refuses blanks, hex, trailing text and overflow.
bool parseInteger(const std::string &text, int64_t &value);

} // namespace dpc::cli

#endif // DPC_SUPPORT_COMMANDLINE_H
