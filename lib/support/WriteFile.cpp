//===- WriteFile.cpp - Whole-or-nothing file output -----------------------===//

#include "dpc/support/WriteFile.h"

#include "dpc/support/Error.h"

#include <cstdio>
#include <fstream>
#include <unistd.h>

namespace dpc::support {

void writeAtomically(const std::string &path, const std::string &text) {
  std::string temp = path + ".tmp." + std::to_string(::getpid());
  {
    std::ofstream out(temp, std::ios::binary | std::ios::trunc);
    if (out) {
      out << text;
      out.flush();
    }
    if (!out) {
      std::remove(temp.c_str());
      throw Error("cannot write '" + path + "'");
    }
  }
  if (std::rename(temp.c_str(), path.c_str()) != 0) {
    std::remove(temp.c_str());
    throw Error("cannot write '" + path + "'");
  }
}

std::string perRankPath(const std::string &path, int rank) {
  std::string suffix = ".rank" + std::to_string(rank);
  size_t slash = path.rfind('/');
  size_t dot = path.rfind('.');
  size_t nameStart = slash == std::string::npos ? 0 : slash + 1;
  // No extension, or a dot file's leading dot only.
  if (dot == std::string::npos || dot <= nameStart)
    return path + suffix;
  return path.substr(0, dot) + suffix + path.substr(dot);
}

} // namespace dpc::support
