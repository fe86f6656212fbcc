//===- Svg.cpp - Text in SVG pictures -------------------------------------===//

#include "dpc/support/Svg.h"

namespace dpc::support {

std::string svgEscaped(const std::string &text) {
  std::string out;
  for (char c : text) {
    if (c == '<')
      out += "&lt;";
    else if (c == '>')
      out += "&gt;";
    else if (c == '&')
      out += "&amp;";
    else
      out += c;
  }
  return out;
}

} // namespace dpc::support
