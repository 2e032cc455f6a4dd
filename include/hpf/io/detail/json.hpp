// SPDX-License-Identifier: MIT
#ifndef HPF_IO_DETAIL_JSON_HPP
#define HPF_IO_DETAIL_JSON_HPP

#include <cstddef>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

/// A minimal JSON (RFC 8259) reader and string quoting, enough for file headers such as
/// safetensors': hpf gains no JSON dependency. Numbers are kept as the text written; callers
/// convert what they expect (json_unsigned). Strings are decoded to UTF-8 (backslash escapes,
/// including four-hex-digit \u escapes and their surrogate pairs); other bytes pass through unchecked.
namespace hpf::io::detail {

struct JsonMember;

struct JsonValue {
  enum class Kind { null, boolean, number, string, array, object };
  Kind kind = Kind::null;
  bool boolean = false;
  std::string text;                  // string contents, or number as written
  std::vector<JsonValue> items;      // array elements
  std::vector<JsonMember> members;  // object members, in file order
};

/// An object member: key and value. A struct of its own, not std::pair<std::string, JsonValue>:
/// that pair of a still-incomplete JsonValue inside JsonValue does not compile with clang and
/// libstdc++ 12 (C++20).
struct JsonMember {
  JsonMember(std::string key, JsonValue value) : first(std::move(key)), second(std::move(value)) {}
  std::string first;
  JsonValue second;
};

inline const char* json_kind_name(JsonValue::Kind kind) {
  switch (kind) {
    case JsonValue::Kind::null: return "null";
    case JsonValue::Kind::boolean: return "a boolean";
    case JsonValue::Kind::number: return "a number";
    case JsonValue::Kind::string: return "a string";
    case JsonValue::Kind::array: return "an array";
    case JsonValue::Kind::object: return "an object";
  }
  return "?";
}

/// Malformed JSON; `offset()` is the byte where parsing stopped.
class JsonError : public std::runtime_error {
 public:
  JsonError(const std::string& what, std::size_t offset)
      : std::runtime_error(what + " at byte " + std::to_string(offset)), offset_(offset) {}
  std::size_t offset() const noexcept { return offset_; }

 private:
  std::size_t offset_;
};

class JsonParser {
 public:
  /// Parses one JSON value that fills `text` (surrounding whitespace allowed).
  static JsonValue parse(std::string_view text) {
    JsonParser p(text);
    p.skip_space();
    JsonValue v = p.value(0);
    p.skip_space();
    if (p.at_ != text.size()) p.fail("unexpected '" + std::string(1, text[p.at_]) + "' after the JSON value");
    return v;
  }

 private:
  static constexpr int max_depth = 64;  // headers are shallow; deep nesting is malformed input

  explicit JsonParser(std::string_view text) : s_(text) {}

  [[noreturn]] void fail(const std::string& what) const { throw JsonError(what, at_); }
  bool done() const { return at_ >= s_.size(); }
  char peek() const { return done() ? '\0' : s_[at_]; }
  void skip_space() {
    while (!done() && (s_[at_] == ' ' || s_[at_] == '\t' || s_[at_] == '\n' || s_[at_] == '\r')) ++at_;
  }
  void expect(char c) {
    if (peek() != c) fail(done() ? std::string("unexpected end, expected '") + c + "'"
                                 : std::string("expected '") + c + "', found '" + s_[at_] + "'");
    ++at_;
  }
  void literal(std::string_view word) {
    if (s_.substr(at_, word.size()) != word) fail("invalid literal");
    at_ += word.size();
  }

  JsonValue value(int depth) {
    if (depth > max_depth) fail("nesting deeper than " + std::to_string(max_depth));
    JsonValue v;
    switch (peek()) {
      case '{': object(v, depth); break;
      case '[': array(v, depth); break;
      case '"':
        v.kind = JsonValue::Kind::string;
        v.text = string();
        break;
      case 't':
        literal("true");
        v.kind = JsonValue::Kind::boolean;
        v.boolean = true;
        break;
      case 'f':
        literal("false");
        v.kind = JsonValue::Kind::boolean;
        break;
      case 'n':
        literal("null");
        break;
      default:
        if (peek() == '-' || (peek() >= '0' && peek() <= '9')) {
          v.kind = JsonValue::Kind::number;
          v.text = number();
        } else {
          fail(done() ? std::string("unexpected end, expected a value") : "unexpected '" + std::string(1, peek()) + "'");
        }
    }
    return v;
  }

  void object(JsonValue& v, int depth) {
    v.kind = JsonValue::Kind::object;
    expect('{');
    skip_space();
    if (peek() == '}') {
      ++at_;
      return;
    }
    for (;;) {
      skip_space();
      if (peek() != '"') fail("expected a string key");
      std::string key = string();
      skip_space();
      expect(':');
      skip_space();
      v.members.emplace_back(std::move(key), value(depth + 1));
      skip_space();
      if (peek() == ',') {
        ++at_;
        continue;
      }
      expect('}');
      return;
    }
  }

  void array(JsonValue& v, int depth) {
    v.kind = JsonValue::Kind::array;
    expect('[');
    skip_space();
    if (peek() == ']') {
      ++at_;
      return;
    }
    for (;;) {
      skip_space();
      v.items.push_back(value(depth + 1));
      skip_space();
      if (peek() == ',') {
        ++at_;
        continue;
      }
      expect(']');
      return;
    }
  }

  std::string number() {
    const std::size_t begin = at_;
    auto digits = [&] {
      const std::size_t first = at_;
      while (!done() && s_[at_] >= '0' && s_[at_] <= '9') ++at_;
      if (at_ == first) fail("malformed number");
    };
    if (peek() == '-') ++at_;
    if (peek() == '0') {
      ++at_;
    } else {
      digits();
    }
    if (peek() == '.') {
      ++at_;
      digits();
    }
    if (peek() == 'e' || peek() == 'E') {
      ++at_;
      if (peek() == '+' || peek() == '-') ++at_;
      digits();
    }
    return std::string(s_.substr(begin, at_ - begin));
  }

  unsigned hex4() {
    if (at_ + 4 > s_.size()) fail("truncated \\u escape");
    unsigned code = 0;
    for (int k = 0; k < 4; ++k) {
      const char c = s_[at_++];
      code <<= 4;
      if (c >= '0' && c <= '9') {
        code |= static_cast<unsigned>(c - '0');
      } else if (c >= 'a' && c <= 'f') {
        code |= static_cast<unsigned>(c - 'a' + 10);
      } else if (c >= 'A' && c <= 'F') {
        code |= static_cast<unsigned>(c - 'A' + 10);
      } else {
        fail("bad hex digit in \\u escape");
      }
    }
    return code;
  }

  static void append_utf8(std::string& out, unsigned code) {
    if (code < 0x80) {
      out += static_cast<char>(code);
    } else if (code < 0x800) {
      out += static_cast<char>(0xC0 | (code >> 6));
      out += static_cast<char>(0x80 | (code & 0x3F));
    } else if (code < 0x10000) {
      out += static_cast<char>(0xE0 | (code >> 12));
      out += static_cast<char>(0x80 | ((code >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (code & 0x3F));
    } else {
      out += static_cast<char>(0xF0 | (code >> 18));
      out += static_cast<char>(0x80 | ((code >> 12) & 0x3F));
      out += static_cast<char>(0x80 | ((code >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (code & 0x3F));
    }
  }

  std::string string() {
    expect('"');
    std::string out;
    for (;;) {
      if (done()) fail("unterminated string");
      const char c = s_[at_++];
      if (c == '"') return out;
      if (static_cast<unsigned char>(c) < 0x20) {
        --at_;
        fail("control character in a string");
      }
      if (c != '\\') {
        out += c;
        continue;
      }
      if (done()) fail("unterminated string");
      switch (s_[at_++]) {
        case '"': out += '"'; break;
        case '\\': out += '\\'; break;
        case '/': out += '/'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'n': out += '\n'; break;
        case 'r': out += '\r'; break;
        case 't': out += '\t'; break;
        case 'u': {
          unsigned code = hex4();
          if (code >= 0xD800 && code < 0xDC00) {  // high surrogate: a low one must follow
            if (s_.substr(at_, 2) != "\\u") fail("unpaired surrogate in \\u escape");
            at_ += 2;
            const unsigned low = hex4();
            if (low < 0xDC00 || low >= 0xE000) fail("unpaired surrogate in \\u escape");
            code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00);
          } else if (code >= 0xDC00 && code < 0xE000) {
            fail("unpaired surrogate in \\u escape");
          }
          append_utf8(out, code);
          break;
        }
        default:
          --at_;
          fail("bad escape '\\" + std::string(1, s_[at_]) + "'");
      }
    }
  }

  std::string_view s_;
  std::size_t at_ = 0;
};

/// `text` as a JSON string literal: quotes, backslashes and control characters escaped, other
/// bytes (UTF-8) as they are.
inline std::string json_quote(std::string_view text) {
  std::string out = "\"";
  for (const char c : text) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          const char* hex = "0123456789abcdef";
          out += "\\u00";
          out += hex[(c >> 4) & 0xF];
          out += hex[c & 0xF];
        } else {
          out += c;
        }
    }
  }
  out += '"';
  return out;
}

/// The value of a JSON number that is a non-negative integer below 2^64 (written without
/// fraction or exponent); false for anything else.
inline bool json_unsigned(const JsonValue& v, std::uint64_t& out) {
  if (v.kind != JsonValue::Kind::number || v.text.empty()) return false;
  std::uint64_t value = 0;
  for (const char c : v.text) {
    if (c < '0' || c > '9') return false;
    const auto digit = static_cast<std::uint64_t>(c - '0');
    if (value > (std::numeric_limits<std::uint64_t>::max() - digit) / 10) return false;
    value = value * 10 + digit;
  }
  out = value;
  return true;
}

}  // namespace hpf::io::detail

#endif  // HPF_IO_DETAIL_JSON_HPP
