// Tests of hpf/io/safetensors.hpp: round trips, a file written by Python's struct/json, and every
// kind of malformed file, each reported with the file's name.
#include <hpf/io/safetensors.hpp>

#include <data/idx_files.hpp>  // hpf_test::TempDir

#include <doctest/doctest.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <span>
#include <string>
#include <vector>

namespace {

namespace fs = std::filesystem;
using hpf::io::Dtype;
using hpf::io::FormatError;
using hpf::io::Safetensors;

std::vector<std::byte> bytes_of(const std::string& s) {
  std::vector<std::byte> out(s.size());
  if (!s.empty()) std::memcpy(out.data(), s.data(), s.size());  // memcpy from/to null is UB even for 0 bytes
  return out;
}

// A file of header length + `header` + `data` (the length may be overridden to lie).
std::vector<std::byte> file_bytes(const std::string& header, const std::string& data,
                                  std::uint64_t length = std::numeric_limits<std::uint64_t>::max()) {
  if (length == std::numeric_limits<std::uint64_t>::max()) length = header.size();
  std::string raw(8, '\0');
  std::memcpy(raw.data(), &length, 8);
  return bytes_of(raw + header + data);
}

// The message of the FormatError `f` throws ("" if it throws none).
template <class F>
std::string format_error(F&& f) {
  try {
    f();
  } catch (const FormatError& e) {
    return e.what();
  }
  return "";
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// Parsing `bytes` as "bad.safetensors" fails with a message naming the file and saying `problem`.
void check_rejected(const std::vector<std::byte>& bytes, const std::string& problem) {
  const std::string message = format_error([&] { (void)Safetensors::parse(bytes, "bad.safetensors"); });
  CHECK_MESSAGE(contains(message, "bad.safetensors: "), "message: '", message, "'");
  CHECK_MESSAGE(contains(message, problem), "message: '", message, "', expected '", problem, "'");
}

const std::string ok_entry = R"({"dtype":"F32","shape":[2],"data_offsets":[0,8]})";

}  // namespace

TEST_CASE("safetensors: dtype names and sizes") {
  CHECK(hpf::io::dtype_name(Dtype::F32) == "F32");
  CHECK(hpf::io::dtype_name(Dtype::BF16) == "BF16");
  CHECK(hpf::io::dtype_size(Dtype::F64) == 8);
  CHECK(hpf::io::dtype_size(Dtype::BOOL) == 1);
  CHECK(hpf::io::parse_dtype("I64") == Dtype::I64);
  CHECK_FALSE(hpf::io::parse_dtype("F128").has_value());
  static_assert(hpf::io::dtype_v<float> == Dtype::F32);
  static_assert(hpf::io::dtype_v<const double> == Dtype::F64);
  static_assert(hpf::io::dtype_v<std::int64_t> == Dtype::I64);
  static_assert(hpf::io::dtype_v<std::uint8_t> == Dtype::U8);
}

TEST_CASE("safetensors: round trip in memory and through a file") {
  Safetensors out;
  out.add<float>("conv.weight", {2, 1, 2, 2}, std::vector<float>{1, -2, 3.5f, 0, -0.0f, 1e-30f, 3e38f, 7});
  out.add<double>("bn.running_var", {3}, std::vector<double>{0.1, 1.0 / 3.0, -2.5e-300});
  out.add<std::int64_t>("bn.num_batches_tracked", {}, std::vector<std::int64_t>{42});
  out.add<std::int32_t>("labels", {4}, std::vector<std::int32_t>{-1, 0, 9, std::numeric_limits<std::int32_t>::min()});
  out.add<std::uint8_t>("pixels", {1, 3}, std::vector<std::uint8_t>{0, 128, 255});
  out.add<float>("empty", {0, 3}, std::vector<float>{});
  const bool mask[] = {true, false, true};
  out.add<bool>("mask", {3}, std::span<const bool>(mask));
  out.add<double>("name with \"quotes\", \\ and \xc3\xa9", {1}, std::vector<double>{2});
  out.metadata()["format"] = "pt";
  out.metadata()["note"] = "line\nbreak \"quoted\" \x01";

  auto check = [](const Safetensors& in) {
    CHECK(in.size() == 8);
    CHECK(in.names() == std::vector<std::string>{"conv.weight", "bn.running_var", "bn.num_batches_tracked", "labels",
                                                 "pixels", "empty", "mask", "name with \"quotes\", \\ and \xc3\xa9"});
    CHECK(in.get<float>("conv.weight") == std::vector<float>{1, -2, 3.5f, 0, -0.0f, 1e-30f, 3e38f, 7});
    CHECK(std::signbit(in.get<float>("conv.weight")[4]));
    CHECK(in.at("conv.weight").shape == std::vector<std::size_t>{2, 1, 2, 2});
    CHECK(in.get<double>("bn.running_var") == std::vector<double>{0.1, 1.0 / 3.0, -2.5e-300});
    CHECK(in.at("bn.num_batches_tracked").shape.empty());
    CHECK(in.at("bn.num_batches_tracked").dtype == Dtype::I64);
    CHECK(in.get<std::int64_t>("bn.num_batches_tracked") == std::vector<std::int64_t>{42});
    CHECK(in.get<std::int32_t>("labels")[3] == std::numeric_limits<std::int32_t>::min());
    CHECK(in.get<std::uint8_t>("pixels") == std::vector<std::uint8_t>{0, 128, 255});
    CHECK(in.get<float>("empty").empty());
    CHECK(in.at("empty").shape == std::vector<std::size_t>{0, 3});
    CHECK(in.at("mask").dtype == Dtype::BOOL);
    CHECK(in.get<bool>("mask") == std::vector<bool>{true, false, true});
    CHECK(in.get<double>("name with \"quotes\", \\ and \xc3\xa9") == std::vector<double>{2});
    CHECK(in.metadata().at("format") == "pt");
    CHECK(in.metadata().at("note") == "line\nbreak \"quoted\" \x01");
  };

  const std::vector<std::byte> bytes = out.serialize();
  std::uint64_t length = 0;
  std::memcpy(&length, bytes.data(), 8);
  CHECK(length % 8 == 0);  // padded with spaces to a multiple of 8
  CHECK(static_cast<char>(bytes[8]) == '{');
  CHECK(static_cast<char>(bytes[8 + length - 1]) != '\0');
  check(Safetensors::parse(bytes));

  hpf_test::TempDir dir;
  const fs::path file = dir / "round_trip.safetensors";
  out.save(file);
  CHECK_FALSE(fs::exists(dir / "round_trip.safetensors.tmp"));
  CHECK(fs::file_size(file) == bytes.size());
  const Safetensors loaded = Safetensors::load(file);
  CHECK(loaded.source() == file);
  check(loaded);

  SUBCASE("conversions") {
    CHECK(loaded.get_converted<double>("conv.weight")[2] == 3.5);
    CHECK(loaded.get_converted<float>("bn.num_batches_tracked") == std::vector<float>{42});
    CHECK(loaded.get_converted<int>("pixels") == std::vector<int>{0, 128, 255});
    CHECK(loaded.get_converted<float>("bn.running_var")[1] == static_cast<float>(1.0 / 3.0));
  }
}

TEST_CASE("safetensors: a file written by Python's struct and json modules") {
  // Written by (json.dumps' default ", "/": " separators, \u escapes, metadata between tensors,
  // header order unlike data order):
  //   data = [("layer.bias", "F64", [2], struct.pack("<2d", 0.1, -0.2)),
  //           ("layer.weight", "F32", [2, 2], struct.pack("<4f", 1.5, -2.0, 0.25, 3.0)),
  //           ("counter", "I64", [], struct.pack("<q", 7)),
  //           ("w\u00e9ight\u2603\U0001F600", "U8", [3], bytes([1, 2, 255])),
  //           ("labels", "I32", [2], struct.pack("<2i", -1, 5))]
  //   (offsets in this order) header = {"layer.weight": ..., "__metadata__": {"format": "pt",
  //     "note": "quote \" backslash \\ tab\t"}, "labels": ..., "layer.bias": ..., "counter": ..., ...}
  //   text = json.dumps(header).encode(); text += b" " * (-len(text) % 8)
  //   blob = struct.pack("<Q", len(text)) + text + b"".join(raw for *_, raw in data)
  static const unsigned char python_file[] = {
    0xc0, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x7b, 0x22, 0x6c, 0x61, 0x79, 0x65, 0x72, 0x2e,
    0x77, 0x65, 0x69, 0x67, 0x68, 0x74, 0x22, 0x3a, 0x20, 0x7b, 0x22, 0x64, 0x74, 0x79, 0x70, 0x65,
    0x22, 0x3a, 0x20, 0x22, 0x46, 0x33, 0x32, 0x22, 0x2c, 0x20, 0x22, 0x73, 0x68, 0x61, 0x70, 0x65,
    0x22, 0x3a, 0x20, 0x5b, 0x32, 0x2c, 0x20, 0x32, 0x5d, 0x2c, 0x20, 0x22, 0x64, 0x61, 0x74, 0x61,
    0x5f, 0x6f, 0x66, 0x66, 0x73, 0x65, 0x74, 0x73, 0x22, 0x3a, 0x20, 0x5b, 0x31, 0x36, 0x2c, 0x20,
    0x33, 0x32, 0x5d, 0x7d, 0x2c, 0x20, 0x22, 0x5f, 0x5f, 0x6d, 0x65, 0x74, 0x61, 0x64, 0x61, 0x74,
    0x61, 0x5f, 0x5f, 0x22, 0x3a, 0x20, 0x7b, 0x22, 0x66, 0x6f, 0x72, 0x6d, 0x61, 0x74, 0x22, 0x3a,
    0x20, 0x22, 0x70, 0x74, 0x22, 0x2c, 0x20, 0x22, 0x6e, 0x6f, 0x74, 0x65, 0x22, 0x3a, 0x20, 0x22,
    0x71, 0x75, 0x6f, 0x74, 0x65, 0x20, 0x5c, 0x22, 0x20, 0x62, 0x61, 0x63, 0x6b, 0x73, 0x6c, 0x61,
    0x73, 0x68, 0x20, 0x5c, 0x5c, 0x20, 0x74, 0x61, 0x62, 0x5c, 0x74, 0x22, 0x7d, 0x2c, 0x20, 0x22,
    0x6c, 0x61, 0x62, 0x65, 0x6c, 0x73, 0x22, 0x3a, 0x20, 0x7b, 0x22, 0x64, 0x74, 0x79, 0x70, 0x65,
    0x22, 0x3a, 0x20, 0x22, 0x49, 0x33, 0x32, 0x22, 0x2c, 0x20, 0x22, 0x73, 0x68, 0x61, 0x70, 0x65,
    0x22, 0x3a, 0x20, 0x5b, 0x32, 0x5d, 0x2c, 0x20, 0x22, 0x64, 0x61, 0x74, 0x61, 0x5f, 0x6f, 0x66,
    0x66, 0x73, 0x65, 0x74, 0x73, 0x22, 0x3a, 0x20, 0x5b, 0x34, 0x33, 0x2c, 0x20, 0x35, 0x31, 0x5d,
    0x7d, 0x2c, 0x20, 0x22, 0x6c, 0x61, 0x79, 0x65, 0x72, 0x2e, 0x62, 0x69, 0x61, 0x73, 0x22, 0x3a,
    0x20, 0x7b, 0x22, 0x64, 0x74, 0x79, 0x70, 0x65, 0x22, 0x3a, 0x20, 0x22, 0x46, 0x36, 0x34, 0x22,
    0x2c, 0x20, 0x22, 0x73, 0x68, 0x61, 0x70, 0x65, 0x22, 0x3a, 0x20, 0x5b, 0x32, 0x5d, 0x2c, 0x20,
    0x22, 0x64, 0x61, 0x74, 0x61, 0x5f, 0x6f, 0x66, 0x66, 0x73, 0x65, 0x74, 0x73, 0x22, 0x3a, 0x20,
    0x5b, 0x30, 0x2c, 0x20, 0x31, 0x36, 0x5d, 0x7d, 0x2c, 0x20, 0x22, 0x63, 0x6f, 0x75, 0x6e, 0x74,
    0x65, 0x72, 0x22, 0x3a, 0x20, 0x7b, 0x22, 0x64, 0x74, 0x79, 0x70, 0x65, 0x22, 0x3a, 0x20, 0x22,
    0x49, 0x36, 0x34, 0x22, 0x2c, 0x20, 0x22, 0x73, 0x68, 0x61, 0x70, 0x65, 0x22, 0x3a, 0x20, 0x5b,
    0x5d, 0x2c, 0x20, 0x22, 0x64, 0x61, 0x74, 0x61, 0x5f, 0x6f, 0x66, 0x66, 0x73, 0x65, 0x74, 0x73,
    0x22, 0x3a, 0x20, 0x5b, 0x33, 0x32, 0x2c, 0x20, 0x34, 0x30, 0x5d, 0x7d, 0x2c, 0x20, 0x22, 0x77,
    0x5c, 0x75, 0x30, 0x30, 0x65, 0x39, 0x69, 0x67, 0x68, 0x74, 0x5c, 0x75, 0x32, 0x36, 0x30, 0x33,
    0x5c, 0x75, 0x64, 0x38, 0x33, 0x64, 0x5c, 0x75, 0x64, 0x65, 0x30, 0x30, 0x22, 0x3a, 0x20, 0x7b,
    0x22, 0x64, 0x74, 0x79, 0x70, 0x65, 0x22, 0x3a, 0x20, 0x22, 0x55, 0x38, 0x22, 0x2c, 0x20, 0x22,
    0x73, 0x68, 0x61, 0x70, 0x65, 0x22, 0x3a, 0x20, 0x5b, 0x33, 0x5d, 0x2c, 0x20, 0x22, 0x64, 0x61,
    0x74, 0x61, 0x5f, 0x6f, 0x66, 0x66, 0x73, 0x65, 0x74, 0x73, 0x22, 0x3a, 0x20, 0x5b, 0x34, 0x30,
    0x2c, 0x20, 0x34, 0x33, 0x5d, 0x7d, 0x7d, 0x20, 0x9a, 0x99, 0x99, 0x99, 0x99, 0x99, 0xb9, 0x3f,
    0x9a, 0x99, 0x99, 0x99, 0x99, 0x99, 0xc9, 0xbf, 0x00, 0x00, 0xc0, 0x3f, 0x00, 0x00, 0x00, 0xc0,
    0x00, 0x00, 0x80, 0x3e, 0x00, 0x00, 0x40, 0x40, 0x07, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x01, 0x02, 0xff, 0xff, 0xff, 0xff, 0xff, 0x05, 0x00, 0x00, 0x00,
  };
  std::vector<std::byte> bytes(sizeof python_file);
  std::memcpy(bytes.data(), python_file, sizeof python_file);
  hpf_test::TempDir dir;
  const fs::path file = dir / "python.safetensors";
  {
    std::ofstream(file, std::ios::binary).write(reinterpret_cast<const char*>(python_file), sizeof python_file);
  }
  const Safetensors in = Safetensors::load(file);
  const std::string unicode = "w\xc3\xa9ight\xe2\x98\x83\xf0\x9f\x98\x80";
  CHECK(in.names() == std::vector<std::string>{"layer.bias", "layer.weight", "counter", unicode, "labels"});
  CHECK(in.get<double>("layer.bias") == std::vector<double>{0.1, -0.2});
  CHECK(in.get<float>("layer.weight") == std::vector<float>{1.5f, -2.0f, 0.25f, 3.0f});
  CHECK(in.at("layer.weight").shape == std::vector<std::size_t>{2, 2});
  CHECK(in.get<std::int64_t>("counter") == std::vector<std::int64_t>{7});
  CHECK(in.at("counter").shape.empty());
  CHECK(in.get<std::uint8_t>(unicode) == std::vector<std::uint8_t>{1, 2, 255});
  CHECK(in.get<std::int32_t>("labels") == std::vector<std::int32_t>{-1, 5});
  CHECK(in.metadata().size() == 2);
  CHECK(in.metadata().at("format") == "pt");
  CHECK(in.metadata().at("note") == "quote \" backslash \\ tab\t");
  // Written back by hpf, it reads the same (the data in the same order).
  const Safetensors again = Safetensors::parse(in.serialize());
  CHECK(again.names() == in.names());
  CHECK(again.get<std::int32_t>("labels") == std::vector<std::int32_t>{-1, 5});
}

TEST_CASE("safetensors: truncated files") {
  check_rejected(bytes_of(""), "truncated: 0 bytes, too short for the 8-byte header length");
  check_rejected(bytes_of(std::string("\x10\0\0", 3)), "truncated: 3 bytes");
  check_rejected(file_bytes("{}", "", 100), "truncated: the header length says 100 bytes but only 2 follow");
  check_rejected(file_bytes("{\"a\":" + ok_entry + "}", "1234"), "offsets out of range: tensor 'a' has data_offsets [0, 8] but the data holds 4 bytes");

  hpf_test::TempDir dir;
  const fs::path file = dir / "cut.safetensors";
  Safetensors t;
  t.add<double>("x", {4}, std::vector<double>{1, 2, 3, 4});
  t.save(file);
  fs::resize_file(file, fs::file_size(file) - 1);
  const std::string message = format_error([&] { (void)Safetensors::load(file); });
  CHECK_MESSAGE(contains(message, "cut.safetensors: offsets out of range: tensor 'x'"), message);
  const std::string missing = format_error([&] { (void)Safetensors::load(dir / "missing.safetensors"); });
  CHECK_MESSAGE(contains(missing, "missing.safetensors: cannot open"), missing);
}

TEST_CASE("safetensors: bad headers") {
  struct Case {
    std::string header, data, problem;
  };
  const Case cases[] = {
      {"", "", "bad header: it must be a JSON object"},
      {"[1]", "", "bad header: it must be a JSON object"},
      {"{\"a\":", "", "bad header: unexpected end"},
      {"{\"a\" 1}", "", "bad header: expected ':'"},
      {"{} x", "", "bad header: unexpected 'x' after the JSON value"},
      {"{\"a\\q\":1}", "", "bad header: bad escape"},
      {"{\"\\ud800\":1}", "", "bad header: unpaired surrogate"},
      {"{\"a\":01}", "", "bad header: expected '}'"},
      {"{\"a\":" + std::string(100, '[') + std::string(100, ']') + "}", "", "nesting deeper than 64"},
      {"{\"__metadata__\":{\"k\":1}}", "", "metadata 'k' must be a string"},
      {"{\"__metadata__\":[]}", "", "'__metadata__' must be an object"},
      {"{\"a\":1}", "", "tensor 'a' must be an object"},
      {R"({"a":{"shape":[2],"data_offsets":[0,8]}})", "12345678", "tensor 'a' lacks 'dtype'"},
      {R"({"a":{"dtype":"F32","data_offsets":[0,8]}})", "12345678", "tensor 'a' lacks 'shape'"},
      {R"({"a":{"dtype":"F32","shape":[2]}})", "12345678", "tensor 'a' lacks 'data_offsets'"},
      {R"({"a":{"dtype":"F17","shape":[2],"data_offsets":[0,8]}})", "12345678", "tensor 'a' has unknown dtype 'F17'"},
      {R"({"a":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}})",
       "12345678", "shape must hold non-negative integers, found '-2'"},
      {R"({"a":{"dtype":"F32","shape":[2.0],"data_offsets":[0,8]}})",
       "12345678", "shape must hold non-negative integers"},
      {R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[8,0]}})", "12345678", "data_offsets must be [begin, end]"},
      {R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0]}})", "12345678", "data_offsets must be [begin, end]"},
      {R"({"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})",
       "12345678", "tensor 'a' (F32 [3]) needs 12 bytes but data_offsets [0, 8] hold 8"},
      {R"({"a":{"dtype":"F64","shape":[4294967296,4294967296],"data_offsets":[0,8]}})",
       "12345678", "needs too many bytes"},
      {"{\"a\":" + ok_entry + ",\"a\":" + ok_entry + "}", "12345678", "tensor 'a' appears twice"},
      {R"({"a":{"dtype":"F32","dtype":"F32","shape":[2],"data_offsets":[0,8]}})", "12345678", "'dtype' appears twice"},
      // The data must be covered exactly.
      {R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})",
       "123456789abc", "hole in the data: tensor 'a' starts at byte 4"},
      {"{\"a\":" + ok_entry + R"(,"b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
       "12345678", "overlapping data: tensor 'b'"},
      {"{\"a\":" + ok_entry + "}",
       "123456789", "offsets do not cover the data: the tensors end at byte 8 but the data holds 9 bytes"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.header);
    check_rejected(file_bytes(c.header, c.data), c.problem);
  }
  // Unknown keys are ignored; padding after the JSON is allowed.
  const Safetensors ok = Safetensors::parse(file_bytes(
      R"({"a":{"future":[1,{"x":null}],"dtype":"F32","shape":[2],"data_offsets":[0,8]}}   )" "\t\n", "12345678"));
  CHECK(ok.at("a").bytes.size() == 8);
}

TEST_CASE("safetensors: asking for what the file does not hold") {
  Safetensors t;
  t.add<double>("x", {2}, std::vector<double>{1, 2});
  t.add<std::uint16_t>("h", {1}, std::vector<std::uint16_t>{1});
  hpf::io::TensorData half{Dtype::F16, {1}, std::vector<std::byte>(2)};
  t.add("half", half);
  hpf_test::TempDir dir;
  const fs::path file = dir / "typed.safetensors";
  t.save(file);
  const Safetensors in = Safetensors::load(file);
  std::string message = format_error([&] { (void)in.get<float>("x"); });
  CHECK_MESSAGE(contains(message, "typed.safetensors: tensor 'x' is F64, expected F32"), message);
  message = format_error([&] { (void)in.get<double>("y"); });
  CHECK_MESSAGE(contains(message, "typed.safetensors: no tensor named 'y'"), message);
  message = format_error([&] { (void)in.get_converted<float>("half"); });
  CHECK_MESSAGE(contains(message, "tensor 'half' is F16, which hpf does not convert"), message);
  CHECK(in.get_converted<double>("h") == std::vector<double>{1});
  // Built in memory, errors say so.
  message = format_error([&] { (void)t.get<float>("x"); });
  CHECK_MESSAGE(contains(message, "hpf::io: <in memory>: tensor 'x' is F64"), message);
}

TEST_CASE("safetensors: add rejects inconsistent tensors") {
  Safetensors t;
  CHECK_THROWS_AS(t.add<float>("x", {2, 2}, std::vector<float>{1, 2, 3}), std::invalid_argument);
  CHECK_THROWS_AS(t.add<float>("__metadata__", {1}, std::vector<float>{1}), std::invalid_argument);
  t.add<float>("x", {1}, std::vector<float>{1});
  CHECK_THROWS_AS(t.add<float>("x", {1}, std::vector<float>{1}), std::invalid_argument);
  CHECK_THROWS_AS(t.add("y", hpf::io::TensorData{Dtype::F64, {2}, std::vector<std::byte>(8)}), std::invalid_argument);
  CHECK(t.size() == 1);
}

TEST_CASE("safetensors: saving where it cannot write names the file") {
  Safetensors t;
  t.add<float>("x", {1}, std::vector<float>{1});
  const std::string message = format_error([&] { t.save("/nonexistent-directory/out.safetensors"); });
  CHECK_MESSAGE(contains(message, "/nonexistent-directory/out.safetensors: cannot open"), message);
}
