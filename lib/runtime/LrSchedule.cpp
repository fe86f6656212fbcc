//===- LrSchedule.cpp - Learning rate by optimizer update -----------------===//

#include "dpc/runtime/LrSchedule.h"

#include "dpc/support/Error.h"

#include <cmath>
#include <cstdlib>
#include <map>
#include <sstream>

namespace dpc::runtime {
namespace {

using Kind = LrSchedule::Kind;
using Phase = LrSchedule::Phase;

const std::map<std::string, Kind> &kinds() {
  static const std::map<std::string, Kind> table = {
      {"constant", Kind::Constant}, {"linear", Kind::Linear},
      {"warmup", Kind::Linear},     {"cosine", Kind::Cosine},
      {"step", Kind::Step},         {"exponential", Kind::Exponential},
      {"onecycle", Kind::OneCycle}};
  return table;
}

/// The parameters each kind takes; "steps" is every kind's length.
const std::map<std::string, std::vector<std::string>> &parameters() {
  static const std::map<std::string, std::vector<std::string>> table = {
      {"constant", {"factor"}},
      {"linear", {"start", "end"}},
      {"warmup", {"start"}},
      {"cosine", {"min"}},
      {"step", {"every", "gamma"}},
      {"exponential", {"gamma"}},
      {"onecycle", {"max", "pct", "div", "final-div", "anneal"}}};
  return table;
}

std::vector<std::string> split(const std::string &text, char separator) {
  std::vector<std::string> parts;
  std::string part;
  std::istringstream in(text);
  while (std::getline(in, part, separator))
    parts.push_back(part);
  if (!text.empty() && text.back() == separator)
    parts.push_back("");
  return parts;
}

bool parseNumber(const std::string &text, double &value) {
  char *end = nullptr;
  value = std::strtod(text.c_str(), &end);
  return !text.empty() && end == text.c_str() + text.size() &&
         std::isfinite(value);
}

/// Where each real-valued parameter goes.
const std::map<std::string, double Phase::*> &realFields() {
  static const std::map<std::string, double Phase::*> table = {
      {"factor", &Phase::factor},     {"start", &Phase::start},
      {"end", &Phase::end},           {"min", &Phase::minimum},
      {"gamma", &Phase::gamma},       {"max", &Phase::maximum},
      {"pct", &Phase::pct},           {"div", &Phase::div},
      {"final-div", &Phase::finalDiv}};
  return table;
}

/// "NAME takes steps=T, KEY=..., ...".
std::string usage(const std::string &name) {
  std::string text = name + " takes steps=T";
  for (const std::string &key : parameters().at(name))
    text += ", " + key + "=...";
  return text;
}

/// Checks the parsed values of one phase: "" or what is wrong.
std::string checkPhase(const std::string &name, const Phase &p,
                       const std::map<std::string, double> &given) {
  auto has = [&](const char *key) { return given.count(key) > 0; };
  if ((p.kind == Kind::Linear || p.kind == Kind::Cosine ||
       p.kind == Kind::OneCycle) &&
      !has("steps"))
    return name + " needs steps=T";
  if (p.kind == Kind::Step && !has("every"))
    return "step needs every=N";
  if (p.kind == Kind::Exponential && !has("gamma"))
    return "exponential needs gamma=G";
  if (p.kind == Kind::OneCycle && !has("max"))
    return "onecycle needs max=LR";
  if (p.start < 0 || p.end < 0 || p.factor < 0 || p.minimum < 0)
    return name + "'s factors and minimum must not be negative";
  if (p.gamma <= 0)
    return name + "'s gamma must be positive";
  if (p.kind == Kind::OneCycle && (!(p.pct > 0 && p.pct < 1) || p.div <= 0 ||
                                   p.finalDiv <= 0 || p.maximum <= 0))
    return "onecycle needs max > 0, pct in (0, 1), div > 0 and final-div > 0";
  if (p.kind == Kind::OneCycle && p.pct * double(p.steps) < 2)
    return "onecycle's warm-up (pct * steps) must be at least 2 updates";
  return "";
}

/// One phase's text, KIND[:KEY=VALUE,...]; "" or what is wrong.
std::string parsePhase(const std::string &text, Phase &p) {
  size_t colon = text.find(':');
  std::string name = text.substr(0, colon);
  auto kind = kinds().find(name);
  if (kind == kinds().end())
    return "unknown schedule '" + name +
           "' (constant, linear, warmup, cosine, step, exponential or "
           "onecycle)";
  p.kind = kind->second;
  if (name == "warmup")
    p.start = 0;
  if (name == "linear")
    p.start = 1.0 / 3;
  std::map<std::string, double> given;
  std::string rest = colon == std::string::npos ? "" : text.substr(colon + 1);
  for (const std::string &item : split(rest, ',')) {
    size_t eq = item.find('=');
    std::string key = item.substr(0, eq);
    const std::vector<std::string> &known = parameters().at(name);
    bool allowed = key == "steps";
    for (const std::string &k : known)
      allowed = allowed || k == key;
    if (eq == std::string::npos || !allowed)
      return usage(name) + ", not '" + item + "'";
    std::string value = item.substr(eq + 1);
    if (key == "anneal") {
      if (value != "cos" && value != "linear")
        return "onecycle's anneal is cos or linear, not '" + value + "'";
      p.cosAnneal = value == "cos";
      given[key] = 1;
      continue;
    }
    double number = 0;
    if (!parseNumber(value, number))
      return name + "'s " + key + " expects a number, not '" + value + "'";
    given[key] = number;
    if (key == "steps" || key == "every") {
      if (number < 1 || number != std::floor(number))
        return name + "'s " + key + " expects a positive whole number";
      (key == "steps" ? p.steps : p.every) = int64_t(number);
    } else {
      p.*realFields().at(key) = number;
    }
  }
  return checkPhase(name, p, given);
}

double oneCycle(const Phase &p, int64_t t) {
  double initial = p.maximum / p.div, last = initial / p.finalDiv;
  // OneCycleLR's phase ends, as update numbers.
  double warmEnd = p.pct * double(p.steps) - 1, end = double(p.steps) - 1;
  double step = double(std::min<int64_t>(t, p.steps - 1));
  double from = initial, to = p.maximum, pct = step / warmEnd;
  if (step > warmEnd) {
    from = p.maximum;
    to = last;
    pct = (step - warmEnd) / (end - warmEnd);
  }
  if (p.cosAnneal)
    return to + (from - to) / 2 * (std::cos(M_PI * pct) + 1);
  return from + (to - from) * pct;
}

double phaseRate(const Phase &p, double base, int64_t t) {
  switch (p.kind) {
  case Kind::Constant:
    return base * p.factor;
  case Kind::Linear:
    return base * (p.start + (p.end - p.start) * double(std::min(t, p.steps)) /
                                 double(p.steps));
  case Kind::Cosine:
    return p.minimum + (base - p.minimum) *
                           (1 + std::cos(M_PI * double(t) / double(p.steps))) /
                           2;
  case Kind::Step:
    return base * std::pow(p.gamma, double(t / p.every));
  case Kind::Exponential:
    return base * std::pow(p.gamma, double(t));
  case Kind::OneCycle:
    return oneCycle(p, t);
  }
  return base;
}

} // namespace

LrSchedule LrSchedule::parse(const std::string &text) {
  LrSchedule out;
  if (text.empty())
    return out;
  std::vector<std::string> parts = split(text, '+');
  for (size_t i = 0; i < parts.size(); ++i) {
    Phase phase;
    std::string problem = parsePhase(parts[i], phase);
    if (problem.empty() && phase.steps == 0 && i + 1 < parts.size())
      problem = "every phase but the last needs steps=T";
    if (!problem.empty())
      throw InputError("--lr-schedule: phase " + std::to_string(i + 1) + " ('" +
                       parts[i] + "'): " + problem);
    out.phases.push_back(phase);
  }
  return out;
}

double LrSchedule::at(double base, int64_t t) const {
  for (size_t i = 0; i < phases.size(); ++i) {
    const Phase &p = phases[i];
    if (i + 1 == phases.size() || t < p.steps)
      return phaseRate(p, base, t);
    t -= p.steps;
  }
  return base;
}

} // namespace dpc::runtime
