//===- Svg.h - Text in SVG pictures -----------------------------*- C++ -*-===//
//
// What the SVG writers (schedule timelines, training curves) share. Plain
// C++.
//
//===----------------------------------------------------------------------===//

#ifndef DPC_SUPPORT_SVG_H
#define DPC_SUPPORT_SVG_H

#include <string>

namespace dpc::support {

/// `text` with &, < and > written as XML entities, for an SVG element's
/// content.
std::string svgEscaped(const std::string &text);

} // namespace dpc::support

#endif // DPC_SUPPORT_SVG_H
