// An environment variable set (or unset) for one scope, for tests of code that reads it.
#ifndef HPF_TESTS_SUPPORT_SCOPED_ENV_HPP
#define HPF_TESTS_SUPPORT_SCOPED_ENV_HPP

#include <cstdlib>
#include <optional>
#include <string>

namespace hpf_test {

/// Sets `name` to `value` (nullptr: unsets it) while alive, then puts back what was there.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    set(value);
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;
  ~ScopedEnv() { set(old_ ? old_->c_str() : nullptr); }

 private:
  void set(const char* value) const {
    if (value != nullptr) {
      ::setenv(name_, value, 1);
    } else {
      ::unsetenv(name_);
    }
  }
  const char* name_;
  std::optional<std::string> old_;
};

}  // namespace hpf_test

#endif  // HPF_TESTS_SUPPORT_SCOPED_ENV_HPP
