// SPDX-License-Identifier: MIT
#ifndef HPF_COMM_REQUEST_HPP
#define HPF_COMM_REQUEST_HPP

#include <hpf/comm/error.hpp>
#include <hpf/comm/mpi.hpp>
#include <hpf/comm/watchdog.hpp>
#include <hpf/trace/span.hpp>

#include <exception>
#include <functional>
#include <memory>
#include <utility>
#include <vector>

namespace hpf::comm {

/// \brief A non-blocking operation in flight. Owns what must outlive it (a host staging buffer)
/// and what must follow it (copying received data from the staging buffer to the device).
/// It says what it is for (WaitFor: the peer, the pipeline stage and micro-batch, the gradient
/// bucket), and waiting on it lasts at most hpf::comm::wait_limit(): a rank that waits longer
/// says what for and ends the job (hpf/comm/watchdog.hpp).
/// Move-only; waits on destruction unless an exception is unwinding (then the job aborts anyway
/// and waiting could hang).
class Request {
 public:
  Request() = default;
  Request(MPI_Request request, const WaitFor& waiting_for, std::shared_ptr<void> keep_alive = {},
          std::function<void()> on_complete = {})
      : request_(request), waiting_for_(waiting_for), keep_alive_(std::move(keep_alive)),
        on_complete_(std::move(on_complete)) {}
  Request(MPI_Request request, const char* operation, std::shared_ptr<void> keep_alive = {},
          std::function<void()> on_complete = {})
      : Request(request, WaitFor{.operation = operation}, std::move(keep_alive), std::move(on_complete)) {}
  /// One operation in pieces (a message sent as several): complete when every piece is.
  Request(std::vector<MPI_Request> pieces, const WaitFor& waiting_for, std::shared_ptr<void> keep_alive = {},
          std::function<void()> on_complete = {})
      : pieces_(std::move(pieces)), waiting_for_(waiting_for), keep_alive_(std::move(keep_alive)),
        on_complete_(std::move(on_complete)) {
    if (pieces_.size() == 1) request_ = pieces_.front();
    if (pieces_.size() <= 1) pieces_.clear();
  }
  Request(Request&& other) noexcept { *this = std::move(other); }
  Request& operator=(Request&& other) noexcept {
    if (this != &other) {
      finish_quietly();
      request_ = std::exchange(other.request_, MPI_REQUEST_NULL);
      pieces_ = std::exchange(other.pieces_, {});
      waiting_for_ = other.waiting_for_;
      keep_alive_ = std::move(other.keep_alive_);
      on_complete_ = std::move(other.on_complete_);
      span_ = std::move(other.span_);
    }
    return *this;
  }
  Request(const Request&) = delete;
  Request& operator=(const Request&) = delete;
  ~Request() { finish_quietly(); }

  /// Ends `span` (a trace span opened when the operation was posted) when the operation is seen
  /// to complete.
  void trace_until_complete(trace::Pending span) noexcept {
    if (done()) {
      span.close();
    } else {
      span_ = std::move(span);
    }
  }

  /// Keeps `keep_alive` until the operation completes and then runs `after`, behind what the
  /// request already does then (a staged receive's copy to the device). On a request that is done
  /// already, `after` runs now. Converting data on either side of the wire uses it: a bf16 send
  /// buffer lives until sent, a bf16 receive is decoded once arrived.
  void then(std::shared_ptr<void> keep_alive, std::function<void()> after = {}) {
    if (done()) {
      if (after) after();
      return;
    }
    keep_alive_ = keep_alive_ ? std::shared_ptr<void>(std::make_shared<std::pair<std::shared_ptr<void>, std::shared_ptr<void>>>(
                                    std::move(keep_alive_), std::move(keep_alive)))
                              : std::move(keep_alive);
    if (after) {
      on_complete_ = on_complete_ ? [first = std::move(on_complete_), second = std::move(after)] { first(); second(); }
                                  : std::move(after);
    }
  }

  /// What completing this request waits for (hpf::comm::describe says it in words).
  const WaitFor& waiting_for() const noexcept { return waiting_for_; }

  /// True when nothing is in flight any more.
  bool done() const noexcept { return request_ == MPI_REQUEST_NULL && pieces_.empty(); }

  /// Advances the operation (MPI makes progress only inside MPI calls); true when complete.
  bool test() {
    if (done()) return true;
    int flag = 0;
    if (pieces_.empty()) {
      check(MPI_Test(&request_, &flag, MPI_STATUS_IGNORE), waiting_for_.operation);
    } else {
      check(MPI_Testall(static_cast<int>(pieces_.size()), pieces_.data(), &flag, MPI_STATUSES_IGNORE),
            waiting_for_.operation);
    }
    if (flag) complete();
    return flag != 0;
  }

  /// Waits until complete, at most wait_limit() seconds: then the job ends (watched_wait).
  void wait() {
    if (done()) return;
    if (pieces_.empty()) {
      watched_wait(request_, waiting_for_);
    } else {
      watched_wait_all(pieces_, waiting_for_);
    }
    complete();
  }

 private:
  void complete() {
    request_ = MPI_REQUEST_NULL;
    pieces_.clear();
    span_.close();
    if (on_complete_) std::exchange(on_complete_, nullptr)();
    keep_alive_.reset();
  }
  void finish_quietly() noexcept {
    if (done() || std::uncaught_exceptions() > 0) return;
    try {
      wait();
    } catch (...) {
    }
  }

  MPI_Request request_ = MPI_REQUEST_NULL;
  std::vector<MPI_Request> pieces_;  // an operation in several pieces (request_ unused)
  WaitFor waiting_for_;
  std::shared_ptr<void> keep_alive_;
  std::function<void()> on_complete_;
  trace::Pending span_;
};

}  // namespace hpf::comm

#endif  // HPF_COMM_REQUEST_HPP
