// SPDX-License-Identifier: MIT
#ifndef HPF_ORACLE_TERMS_HPP
#define HPF_ORACLE_TERMS_HPP

#include <array>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>

namespace hpf::oracle {

/// \brief The refinements of `predict` beyond calibrated compute, played programs and fitted
/// transfers, each of which can be left out: what the ablation (docs/oracle.md) weighs on
/// measurements the oracle was not tuned on. All on is the oracle as it ships.
struct Terms {
  bool burst = true;      ///< a shaped link passes a rested burst at line rate (LinkQueue's token bucket)

  static constexpr std::array<std::string_view, 1> names{"burst"};

  bool& operator[](std::string_view name) {
    if (name == names[0]) return burst;
    std::string known;
    for (std::string_view n : names) known += (known.empty() ? "" : ", ") + std::string(n);
    throw std::invalid_argument("unknown oracle term '" + std::string(name) + "' (terms: " + known + ")");
  }
  bool all() const { return burst; }

  /// All terms but those in `list`, comma-separated names ("burst"); throws on an unknown name.
  static Terms without(const std::string& list) {
    Terms t;
    std::istringstream in(list);
    for (std::string name; std::getline(in, name, ',');) {
      if (!name.empty()) t[name] = false;
    }
    return t;
  }
};

}  // namespace hpf::oracle

#endif  // HPF_ORACLE_TERMS_HPP
