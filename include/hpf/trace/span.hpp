// SPDX-License-Identifier: MIT
#ifndef HPF_TRACE_SPAN_HPP
#define HPF_TRACE_SPAN_HPP

#include <hpf/trace/event.hpp>
#include <hpf/trace/recorder.hpp>

#include <cstdint>
#include <string_view>
#include <utility>

namespace hpf::trace {

/// \brief RAII span on the active recorder. When nothing is traced it costs one load and one
/// branch: no clock read, no allocation.
class Span {
 public:
  Span(Track track, std::string_view name, const Tags& tags = {}) noexcept : Span(active(), track, name, tags) {}
  Span(const Span&) = delete;
  Span& operator=(const Span&) = delete;
  ~Span() {
    if (recorder_) recorder_->close(handle_);
  }

 protected:
  /// A span on `recorder`, or nothing when it is null.
  Span(Recorder* recorder, Track track, std::string_view name, const Tags& tags) noexcept : recorder_(recorder) {
    if (recorder_) handle_ = recorder_->open(track, name, tags);
  }

 private:
  Recorder* recorder_ = nullptr;
  std::uint32_t handle_ = Recorder::none;
};

/// \brief A blocking communication (a receive, a collective): one span on its communication
/// row and one on the wait row, over the same interval, because the rank can do nothing else.
class Blocking {
 public:
  Blocking(Track track, std::string_view name, const Tags& tags = {}) noexcept
      : communication_(track, name, tags), wait_(Track::wait, name, tags) {}

 private:
  Span communication_, wait_;
};

/// \brief A span closed by whoever sees the operation complete (hpf::comm::Request), not by a
/// scope: a non-blocking send from its post to its completion.
class Pending {
 public:
  Pending() = default;
  static Pending open(Track track, std::string_view name, const Tags& tags = {}) noexcept {
    Pending p;
    p.recorder_ = active();
    if (p.recorder_) p.handle_ = p.recorder_->open(track, name, tags);
    return p;
  }
  Pending(Pending&& other) noexcept
      : recorder_(std::exchange(other.recorder_, nullptr)), handle_(other.handle_) {}
  Pending& operator=(Pending&& other) noexcept {
    if (this != &other) {
      recorder_ = std::exchange(other.recorder_, nullptr);
      handle_ = other.handle_;
    }
    return *this;
  }
  void close() noexcept {
    if (recorder_) std::exchange(recorder_, nullptr)->close(handle_);
  }

 private:
  Recorder* recorder_ = nullptr;
  std::uint32_t handle_ = Recorder::none;
};

/// Waits for `request`, recording the time blocked as a wait span when it had not completed yet.
template <class Request>
void wait(Request& request, std::string_view name, const Tags& tags = {}) {
  if (request.done()) return;
  Span blocked(Track::wait, name, tags);
  request.wait();
}

/// A span for layer `layer` (a child of a chain) when per-layer detail is asked for.
class LayerSpan : public Span {
 public:
  LayerSpan(std::string_view kind, std::size_t layer) noexcept
      : Span(layer_spans() ? active() : nullptr, Track::compute, kind, Tags{.layer = static_cast<std::int32_t>(layer)}) {}
};

}  // namespace hpf::trace

#endif  // HPF_TRACE_SPAN_HPP
