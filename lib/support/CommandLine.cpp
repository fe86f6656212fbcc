//===- CommandLine.cpp - Subcommand option parsing for dpc ----------------===//

#include "dpc/support/CommandLine.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <sstream>

namespace dpc::cli {

std::function<std::string(const std::string &)>
oneOf(std::string *out, std::vector<std::string> choices) {
  std::sort(choices.begin(), choices.end());
  return [out, choices](const std::string &value) -> std::string {
    if (std::find(choices.begin(), choices.end(), value) != choices.end()) {
      *out = value;
      return "";
    }
    std::string list;
    for (const std::string &choice : choices)
      list += (list.empty() ? "" : "|") + choice;
    return "expects one of " + list + ", got '" + value + "'";
  };
}

ArgParser::ArgParser(std::string command, std::string summary,
                     std::string usage)
    : command(std::move(command)), summary(std::move(summary)),
      usage(std::move(usage)) {}

void ArgParser::addFlag(const std::string &name, bool *out,
                        const std::string &help, bool negatable) {
  Option opt;
  opt.name = name;
  opt.help = help;
  opt.flag = out;
  opt.negatable = negatable;
  options.push_back(std::move(opt));
}

void ArgParser::addOption(const std::string &name,
                          std::function<std::string(const std::string &)> parse,
                          const std::string &metavar, const std::string &help) {
  Option opt;
  opt.name = name;
  opt.metavar = metavar;
  opt.help = help;
  opt.parse = std::move(parse);
  options.push_back(std::move(opt));
}

void ArgParser::addOption(const std::string &name, std::string *out,
                          const std::string &metavar, const std::string &help) {
  addOption(
      name,
      [out](const std::string &value) {
        *out = value;
        return std::string();
      },
      metavar, help);
}

void ArgParser::addOption(const std::string &name, int64_t *out,
                          const std::string &metavar, const std::string &help) {
  addOption(
      name,
      [out](const std::string &value) -> std::string {
        if (!parseInteger(value, *out))
          return "expects an integer, got '" + value + "'";
        return "";
      },
      metavar, help);
}

void ArgParser::addOption(const std::string &name, double *out,
                          const std::string &metavar, const std::string &help) {
  addOption(
      name,
      [out](const std::string &value) -> std::string {
        if (!parseDecimal(value, *out))
          return "expects a decimal number, got '" + value + "'";
        return "";
      },
      metavar, help);
}

void ArgParser::addCountListOption(const std::string &name,
                                   std::vector<int64_t> *out,
                                   const std::string &metavar,
                                   const std::string &help) {
  addOption(
      name,
      [out](const std::string &value) -> std::string {
        std::vector<int64_t> counts;
        size_t begin = 0;
        while (begin <= value.size()) {
          size_t end = std::min(value.find(',', begin), value.size());
          std::string item = value.substr(begin, end - begin);
          int64_t parsed = 0;
          if (!parseInteger(item, parsed) || parsed < 1)
            return "expects positive integers separated by commas, got '" +
                   value + "'";
          counts.push_back(parsed);
          begin = end + 1;
        }
        *out = std::move(counts);
        return "";
      },
      metavar, help);
}

void ArgParser::addByteCountOption(const std::string &name, double *out,
                                   const std::string &help) {
  addOption(
      name,
      [out](const std::string &value) -> std::string {
        double bytes = 0;
        if (!parseByteCount(value, bytes) || !(bytes > 0))
          return "expects a byte count such as 8e9 or 16GiB, got '" + value +
                 "'";
        *out = bytes;
        return "";
      },
      "BYTES", help);
}

void ArgParser::addPositional(const std::string &name, std::string *out,
                              const std::string &help, bool required) {
  positionals.push_back({name, out, help, required});
}

ArgParser::Option *ArgParser::find(const std::string &name) {
  for (Option &opt : options)
    if (opt.name == name)
      return &opt;
  return nullptr;
}

ArgParser::Result ArgParser::fail(std::string message) {
  errorMessage = command + ": " + message;
  return Result::Error;
}

bool ArgParser::given(const std::string &name) const {
  for (const Option &opt : options)
    if (opt.name == name)
      return opt.seen;
  return false;
}

ArgParser::Result ArgParser::parse(const std::vector<std::string> &args) {
  size_t nextPositional = 0;
  bool onlyPositionals = false;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string &arg = args[i];
    if (!onlyPositionals && (arg == "--help" || arg == "-h"))
      return Result::Help;
    if (!onlyPositionals && arg == "--") {
      onlyPositionals = true;
      continue;
    }
    bool isOption = !onlyPositionals && arg.size() > 1 && arg[0] == '-';
    if (!isOption) {
      if (nextPositional >= positionals.size())
        return fail("unexpected argument '" + arg + "'");
      *positionals[nextPositional++].out = arg;
      continue;
    }

    // "-o" is the one short spelling; every other option is "--name".
    std::string name, value;
    bool hasValue = false;
    if (arg == "-o") {
      name = "o";
    } else if (arg.rfind("--", 0) == 0) {
      name = arg.substr(2);
      size_t eq = name.find('=');
      if (eq != std::string::npos) {
        value = name.substr(eq + 1);
        name = name.substr(0, eq);
        hasValue = true;
      }
    } else {
      return fail("unknown option '" + arg + "'");
    }

    Option *opt = find(name);
    bool negated = false;
    if (!opt && name.rfind("no-", 0) == 0) {
      opt = find(name.substr(3));
      if (opt && !(opt->flag && opt->negatable))
        opt = nullptr;
      negated = opt != nullptr;
    }
    if (!opt)
      return fail("unknown option '" + arg + "'");
    if (opt->seen)
      return fail("option '--" + opt->name + "' given more than once");
    opt->seen = true;

    if (opt->flag) {
      if (hasValue)
        return fail("flag '--" + name + "' takes no value");
      *opt->flag = !negated;
      continue;
    }
    if (!hasValue) {
      if (i + 1 >= args.size())
        return fail("option '" + arg + "' expects a value (" + opt->metavar +
                    ")");
      value = args[++i];
    }
    std::string problem = opt->parse(value);
    if (!problem.empty())
      return fail("option '--" + opt->name + "' " + problem);
  }
  for (size_t i = nextPositional; i < positionals.size(); ++i)
    if (positionals[i].required)
      return fail("missing argument " + positionals[i].name);
  return Result::Ok;
}

std::optional<int>
ArgParser::parseOrExit(const std::vector<std::string> &args) {
  switch (parse(args)) {
  case Result::Help:
    std::cout << help();
    return 0;
  case Result::Error:
    std::cerr << error() << "\n";
    return kUsageError;
  case Result::Ok:
    break;
  }
  return std::nullopt;
}

std::string ArgParser::help() const {
  std::ostringstream os;
  os << command << " - " << summary << "\n\nUsage: " << usage << "\n";
  if (!positionals.empty()) {
    os << "\nArguments:\n";
    for (const Positional &p : positionals)
      os << "  " << p.name
         << std::string(p.name.size() < 26 ? 26 - p.name.size() : 1, ' ')
         << p.help << "\n";
  }
  os << "\nOptions:\n";
  for (const Option &opt : options) {
    std::string spelling = opt.name == "o" ? "-o" : "--" + opt.name;
    if (opt.negatable)
      spelling = "--[no-]" + opt.name;
    if (!opt.metavar.empty())
      spelling += " " + opt.metavar;
    os << "  " << spelling
       << std::string(spelling.size() < 26 ? 26 - spelling.size() : 1, ' ')
       << opt.help << "\n";
  }
  os << "  --help                    print this help\n";
  return os.str();
}

namespace {

/// Length of the longest prefix of `text` that is a decimal number:
/// [+-] digits [. digits] [(e|E) [+-] digits], with a digit before or after
/// the point. 0 when there is none. strtod alone would also take hex
/// ("0x10"), "inf", "nan" and leading blanks.
size_t decimalPrefix(const std::string &text) {
  size_t i = 0, n = text.size();
  auto digits = [&] {
    size_t start = i;
    while (i < n && text[i] >= '0' && text[i] <= '9')
      ++i;
    return i - start;
  };
  if (i < n && (text[i] == '+' || text[i] == '-'))
    ++i;
  size_t whole = digits(), fraction = 0;
  if (i < n && text[i] == '.') {
    ++i;
    fraction = digits();
  }
  if (whole + fraction == 0)
    return 0;
  size_t mantissaEnd = i;
  if (i < n && (text[i] == 'e' || text[i] == 'E')) {
    ++i;
    if (i < n && (text[i] == '+' || text[i] == '-'))
      ++i;
    if (digits() == 0)
      return mantissaEnd; // "2e" is 2 followed by a suffix starting with e
  }
  return i;
}

/// strtod over exactly `text[0, length)`, refusing overflow and underflow.
bool convertDecimal(const std::string &text, size_t length, double &out) {
  std::string number = text.substr(0, length);
  errno = 0;
  char *end = nullptr;
  double value = std::strtod(number.c_str(), &end);
  if (end != number.c_str() + number.size() || errno == ERANGE ||
      !std::isfinite(value))
    return false;
  out = value;
  return true;
}

} // namespace

bool parseDecimal(const std::string &text, double &value) {
  size_t length = decimalPrefix(text);
  return length > 0 && length == text.size() &&
         convertDecimal(text, length, value);
}

bool parseInteger(const std::string &text, int64_t &value) {
  size_t i = text.empty() || (text[0] != '-' && text[0] != '+') ? 0 : 1;
  if (i == text.size())
    return false;
  for (size_t k = i; k < text.size(); ++k)
    if (text[k] < '0' || text[k] > '9')
      return false;
  errno = 0;
  char *end = nullptr;
  long long parsed = std::strtoll(text.c_str(), &end, 10);
  if (errno == ERANGE || *end != '\0')
    return false;
  value = parsed;
  return true;
}

bool parseByteCount(const std::string &text, double &bytes) {
  size_t length = decimalPrefix(text);
  double value = 0;
  if (length == 0 || !convertDecimal(text, length, value) || value < 0)
    return false;
  std::string suffix = text.substr(length);
  static const struct {
    const char *name;
    double scale;
  } units[] = {{"", 1},
               {"B", 1},
               {"KB", 1e3},
               {"MB", 1e6},
               {"GB", 1e9},
               {"TB", 1e12},
               {"KiB", 1024.0},
               {"MiB", 1048576.0},
               {"GiB", 1073741824.0},
               {"TiB", 1099511627776.0}};
  for (const auto &unit : units) {
    if (suffix == unit.name) {
      // 1e300TiB is a finite number of tebibytes but not of bytes.
      if (!std::isfinite(value * unit.scale))
        return false;
      bytes = value * unit.scale;
      return true;
    }
  }
  return false;
}

std::string formatByteCount(double bytes) {
  const char *units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int unit = 0;
  while (bytes >= 1024 && unit < 4) {
    bytes /= 1024;
    ++unit;
  }
  char buf[32];
  std::snprintf(buf, sizeof(buf), unit == 0 ? "%.0f %s" : "%.2f %s", bytes,
                units[unit]);
  return buf;
}

} // namespace dpc::cli
