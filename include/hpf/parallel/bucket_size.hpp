// SPDX-License-Identifier: MIT
#ifndef HPF_PARALLEL_BUCKET_SIZE_HPP
#define HPF_PARALLEL_BUCKET_SIZE_HPP

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdio>
#include <string>

namespace hpf {

/// StepOptions::bucket_bytes that asks hpf to choose the size per stage (choose_bucket_bytes).
inline constexpr std::size_t automatic_bucket_bytes = 0;

/// \brief What one gradient bucket's exchange among the replicas costs, alpha + beta x bytes, as
/// the machine profile predicts it (hpf::fit fills it from TrainOptions::oracle_profile or
/// HPF_ORACLE_PROFILE). Zero: unknown.
struct ExchangeCost {
  double alpha_s = 0;
  double beta_s_per_byte = 0;
  bool known() const { return alpha_s > 0 && beta_s_per_byte > 0; }
};

/// Bounds of an automatic bucket. Below the floor a bucket's fixed costs (a collective's set-up,
/// posting and summing its pieces) are no longer small beside its bytes on any fabric measured
/// here; above the ceiling the exposed last bucket is long even on shared memory.
inline constexpr std::size_t smallest_automatic_bucket = std::size_t{32} << 10;
inline constexpr std::size_t largest_automatic_bucket = std::size_t{4} << 20;
/// Buckets an automatic size aims at when the exchange's cost is unknown.
inline constexpr std::size_t automatic_bucket_count = 8;

/// \brief The bucket size a stage with `gradient_bytes` of gradients reduces in.
///
/// A size the user gave is kept. Otherwise the size balances the two costs buckets trade: each
/// bucket pays the exchange's latency alpha once, and the last bucket, ready only when backward
/// ends, is exposed whole (alpha + beta x its bytes). B buckets cost about B alpha + beta G / B,
/// least at B = sqrt(beta G / alpha), that is buckets of sqrt(G alpha / beta) bytes. Without a
/// cost the gradient goes in automatic_bucket_count buckets. Both within
/// [smallest_automatic_bucket, largest_automatic_bucket], and never larger than the gradient.
inline std::size_t choose_bucket_bytes(std::size_t requested, std::size_t gradient_bytes, const ExchangeCost& cost = {}) {
  if (requested != automatic_bucket_bytes) return requested;
  const double gradient = static_cast<double>(gradient_bytes);
  const double balanced = cost.known() ? std::sqrt(gradient * cost.alpha_s / cost.beta_s_per_byte)
                                       : std::ceil(gradient / static_cast<double>(automatic_bucket_count));
  const double bounded = std::clamp(balanced, static_cast<double>(smallest_automatic_bucket),
                                    static_cast<double>(largest_automatic_bucket));
  return std::max<std::size_t>(1, std::min(gradient_bytes, static_cast<std::size_t>(bounded)));
}

/// A bucket size and how it was chosen, for the training log: "96 KiB (automatic: 1.1 MiB of
/// gradients, exchange 33 us + 7.8 us/MiB)".
inline std::string describe_bucket_bytes(std::size_t requested, std::size_t gradient_bytes, const ExchangeCost& cost,
                                         std::size_t bucket_bytes) {
  const auto readable = [](double bytes) {
    char text[32];
    if (bytes >= (1 << 20)) {
      std::snprintf(text, sizeof text, "%.1f MiB", bytes / (1 << 20));
    } else {
      std::snprintf(text, sizeof text, "%.0f KiB", bytes / 1024);
    }
    return std::string(text);
  };
  std::string text = readable(static_cast<double>(bucket_bytes));
  if (requested != automatic_bucket_bytes) return text + " (bucket_bytes as given)";
  text += " (automatic: " + readable(static_cast<double>(gradient_bytes)) + " of gradients";
  if (!cost.known()) return text + ", no exchange cost known)";
  char line[112];
  std::snprintf(line, sizeof line, ", exchange %.3g us + %.3g us/MiB)", cost.alpha_s * 1e6,
                cost.beta_s_per_byte * (1 << 20) * 1e6);
  return text + line;
}

}  // namespace hpf

#endif  // HPF_PARALLEL_BUCKET_SIZE_HPP
