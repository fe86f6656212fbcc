//===- CommandLine.cpp - Subcommand option parsing for dpc ----------------===//

#include "dpc/support/CommandLine.h"

#include <cerrno>
#include <cmath>
#include <algorithm>
#include <cstdlib>
#include <iostream>
#include <sstream>

namespace dpc::cli {

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
        errno = 0;
        char *end = nullptr;
        long long parsed = std::strtoll(value.c_str(), &end, 10);
        if (value.empty() || *end != '\0' || errno == ERANGE)
          return "expects an integer, got '" + value + "'";
        *out = parsed;
        return "";
      },
      metavar, help);
}

void ArgParser::addOption(const std::string &name, double *out,
                          const std::string &metavar, const std::string &help) {
  addOption(
      name,
      [out](const std::string &value) -> std::string {
        errno = 0;
        char *end = nullptr;
        double parsed = std::strtod(value.c_str(), &end);
        if (value.empty() || *end != '\0' || errno == ERANGE ||
            !std::isfinite(parsed))
          return "expects a number, got '" + value + "'";
        *out = parsed;
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
          errno = 0;
          char *stop = nullptr;
          long long parsed = std::strtoll(item.c_str(), &stop, 10);
          if (item.empty() || *stop != '\0' || errno == ERANGE || parsed < 1)
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

bool parseByteCount(const std::string &text, double &bytes) {
  errno = 0;
  char *end = nullptr;
  double value = std::strtod(text.c_str(), &end);
  if (text.empty() || end == text.c_str() || errno == ERANGE ||
      !std::isfinite(value) || value < 0)
    return false;
  std::string suffix(end);
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
      bytes = value * unit.scale;
      return true;
    }
  }
  return false;
}

} // namespace dpc::cli
