#include <hpf/data/error.hpp>

#include <doctest/doctest.h>

#include <filesystem>
#include <string>

TEST_CASE("DataError: names the full path and the problem") {
  const hpf::data::DataError error("some/dir/../file.idx", "bad magic number");
  const std::string expected =
      "hpf::data: " + (std::filesystem::current_path() / "some/file.idx").string() + ": bad magic number";
  CHECK(std::string(error.what()) == expected);
  const std::runtime_error& base = error;
  CHECK(std::string(base.what()) == expected);
  CHECK(std::string(hpf::data::DataError("two files disagree").what()) == "hpf::data: two files disagree");
}
