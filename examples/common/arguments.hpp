// Command-line options of hpf's examples and benchmarks: `--name value` pairs with defaults, a
// --help text, and a clear error for anything unknown or malformed.
#ifndef HPF_EXAMPLES_COMMON_ARGUMENTS_HPP
#define HPF_EXAMPLES_COMMON_ARGUMENTS_HPP

#include <hpf/comm/error.hpp>

#include <cstdlib>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

namespace hpf_examples {

class Arguments {
 public:
  Arguments(int argc, char** argv, std::string description) : description_(std::move(description)) {
    for (int i = 1; i < argc; ++i) {
      std::string key = argv[i];
      if (key == "--help" || key == "-h") {
        help_ = true;
        continue;
      }
      if (key.rfind("--kokkos", 0) == 0) continue;  // Kokkos' own flags
      if (key.rfind("--", 0) != 0 || i + 1 >= argc) {
        throw hpf::comm::UsageError("unexpected argument '" + key + "' (options are --name value; see --help)");
      }
      values_[key.substr(2)] = argv[++i];
    }
  }

  /// The value of --name, or `fallback`; records the option for --help.
  template <class T>
  T get(const std::string& name, T fallback, const std::string& what) {
    std::ostringstream def;
    def << fallback;
    options_.push_back("  --" + name + " (default " + def.str() + "): " + what);
    const auto it = values_.find(name);
    if (it == values_.end()) return fallback;
    used_.push_back(name);
    std::istringstream in(it->second);
    T value{};
    in >> value;
    if (!in || !in.eof()) {
      throw hpf::comm::UsageError("--" + name + " expects " + kind<T>() + ", got '" + it->second + "'");
    }
    return value;
  }

  /// After all get() calls: prints --help and says whether to stop; rejects unknown options.
  bool finish(bool print) {
    if (help_) {
      if (print) {
        std::cout << description_ << "\n\noptions:\n";
        for (const auto& o : options_) std::cout << o << "\n";
      }
      return false;
    }
    for (const auto& [name, value] : values_) {
      bool known = false;
      for (const auto& u : used_) known = known || u == name;
      if (!known) throw hpf::comm::UsageError("unknown option --" + name + " (see --help)");
    }
    return true;
  }

 private:
  template <class T>
  static std::string kind() {
    if constexpr (std::is_same_v<T, std::string>) return "a word";
    else if constexpr (std::is_floating_point_v<T>) return "a number";
    else return "a whole number";
  }
  std::string description_;
  std::map<std::string, std::string> values_;
  std::vector<std::string> options_, used_;
  bool help_ = false;
};

}  // namespace hpf_examples

#endif  // HPF_EXAMPLES_COMMON_ARGUMENTS_HPP
