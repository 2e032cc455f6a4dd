// SPDX-License-Identifier: MIT
#ifndef HPF_DATA_ERROR_HPP
#define HPF_DATA_ERROR_HPP

#include <filesystem>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>

namespace hpf::data {

/// \brief A dataset file is missing, unreadable or malformed, or its contents are inconsistent.
/// The message names the file(s) by full path and says what was wrong, so that a failed run on
/// a remote rank can be diagnosed from its log alone.
class DataError : public std::runtime_error {
 public:
  /// "hpf::data: <absolute path of file>: <problem>".
  DataError(const std::filesystem::path& file, std::string_view problem)
      : std::runtime_error("hpf::data: " + full_path(file) + ": " + std::string(problem)) {}
  /// A message that names its files itself (e.g. a mismatch between two files).
  explicit DataError(const std::string& message) : std::runtime_error("hpf::data: " + message) {}

  /// `file` made absolute (left as given when that fails), as error messages show it.
  static std::string full_path(const std::filesystem::path& file) {
    std::error_code ec;
    const std::filesystem::path absolute = std::filesystem::absolute(file, ec);
    return (ec ? file : absolute).lexically_normal().string();
  }
};

}  // namespace hpf::data

#endif  // HPF_DATA_ERROR_HPP
