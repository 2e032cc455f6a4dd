#include <hpf/data/text.hpp>

#include <doctest/doctest.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace {
std::filesystem::path write_text(const std::string& name, const std::string& text) {
  const auto path = std::filesystem::temp_directory_path() / ("hpf_test_text_" + name);
  std::ofstream(path, std::ios::binary) << text;
  return path;
}
}  // namespace

TEST_CASE("Text windows: context bytes in, each one's next byte as its label, windows one byte apart at the seams") {
  const std::string text = "abcdefghij";  // 10 bytes: windows of 3 + 1 at 0, 3, 6
  const std::span<const std::uint8_t> bytes(reinterpret_cast<const std::uint8_t*>(text.data()), text.size());
  const auto d = hpf::data::text_windows(bytes, 3, {});
  REQUIRE(d.size() == 3);
  CHECK(d.labels_per_sample() == 3);
  CHECK(d.classes() == 256);
  std::vector<std::int32_t> labels(9);
  const std::vector<std::size_t> all{0, 1, 2};
  d.gather_labels(all, labels.data());
  CHECK(labels == std::vector<std::int32_t>{'b', 'c', 'd', 'e', 'f', 'g', 'h', 'i', 'j'});
  std::vector<float> inputs(9);  // [T][n]
  d.gather(all, inputs.data());
  CHECK(inputs == std::vector<float>{'a', 'd', 'g', 'b', 'e', 'h', 'c', 'f', 'i'});
}

TEST_CASE("Text windows: each shard holds its windows and reads them as the whole set has them") {
  std::string text;
  for (int i = 0; i < 200; ++i) text.push_back(static_cast<char>(i * 37 % 251));
  const std::span<const std::uint8_t> bytes(reinterpret_cast<const std::uint8_t*>(text.data()), text.size());
  const auto whole = hpf::data::text_windows(bytes, 8, {});
  for (std::size_t count : {1, 2, 4}) {
    for (std::size_t index = 0; index < count; ++index) {
      const auto part = hpf::data::text_windows(bytes, 8, {.index = index, .count = count});
      CHECK(part.size() == whole.size());
      for (std::size_t i = index; i < whole.size(); i += count) {
        const std::vector<std::size_t> one{i};
        std::vector<float> a(8), b(8);
        std::vector<std::int32_t> la(8), lb(8);
        part.gather(one, a.data());
        whole.gather(one, b.data());
        part.gather_labels(one, la.data());
        whole.gather_labels(one, lb.data());
        CHECK(a == b);
        CHECK(la == lb);
      }
    }
  }
}

TEST_CASE("load_text: the last fraction of the bytes is the test set; bad input is named") {
  const auto a = write_text("a.txt", std::string(90, 'x')), b = write_text("b.txt", std::string(10, 'y'));
  const std::vector<std::filesystem::path> files{a, b};
  const auto d = hpf::data::load_text(files, 4, 0.1);
  CHECK(d.train.size() == (90 - 1) / 4);  // the first 90 bytes
  CHECK(d.test.size() == (10 - 1) / 4);   // "yyyyyyyyyy"
  std::vector<std::int32_t> labels(4);
  const std::vector<std::size_t> first{0};
  d.test.gather_labels(first, labels.data());
  CHECK(labels == std::vector<std::int32_t>(4, 'y'));

  const std::vector<std::filesystem::path> missing{a, "/nonexistent/hpf.txt"};
  CHECK_THROWS_WITH_AS(hpf::data::load_text(missing, 4, 0.1), "hpf::data: /nonexistent/hpf.txt: no such text file",
                       hpf::data::DataError);
  const auto empty = write_text("empty.txt", "");
  const std::vector<std::filesystem::path> nothing{empty};
  CHECK_THROWS_WITH_AS(hpf::data::load_text(nothing, 4, 0.1), "hpf::data: the text files hold no bytes",
                       hpf::data::DataError);
  CHECK_THROWS_AS(hpf::data::load_text(files, 4, 1.0), std::invalid_argument);
  CHECK_THROWS_AS(hpf::data::load_text(files, 0, 0.1), std::invalid_argument);
}
