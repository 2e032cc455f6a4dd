// SPDX-License-Identifier: MIT
#ifndef HPF_LAYERS_OPTIONS_HPP
#define HPF_LAYERS_OPTIONS_HPP

#include <cstddef>
#include <type_traits>

namespace hpf {

/// Stride of a convolution or pooling window (`Conv2D<64, 3, Stride<2>>`).
template <std::size_t S>
struct Stride {
  // S > 0 is checked by the layer that takes the option, where the layer's position is known.
  static constexpr std::size_t value = S;
};
/// Zero padding on each side of the height and width (`Conv2D<32, 3, Pad<1>>`).
template <std::size_t P>
struct Pad {
  static constexpr std::size_t value = P;
};
/// Leaves out a layer's bias (convolutions followed by BatchNorm).
struct NoBias {};
/// Attention that lets position t attend to positions up to t only (a language model's mask).
struct Causal {};

namespace detail {
template <class Option>
struct is_stride : std::false_type {};
template <std::size_t S>
struct is_stride<Stride<S>> : std::true_type {};
template <class Option>
struct is_pad : std::false_type {};
template <std::size_t P>
struct is_pad<Pad<P>> : std::true_type {};
template <class Option>
inline constexpr bool is_known_option_v =
    is_stride<Option>::value || is_pad<Option>::value || std::is_same_v<Option, NoBias>;

/// Value of the first option matching Pred, or Default.
template <template <class> class Pred, std::size_t Default, class... Options>
constexpr std::size_t option_value() {
  std::size_t value = Default;
  bool found = false;
  auto take = [&]<class Option>() {
    if constexpr (Pred<Option>::value) {
      if (!found) value = Option::value;
      found = true;
    }
  };
  (take.template operator()<Options>(), ...);
  (void)take;  // unused when Options is empty
  return value;
}
template <template <class> class Pred, class... Options>
inline constexpr std::size_t option_count_v = (std::size_t{Pred<Options>::value} + ... + 0);
}  // namespace detail

/// Stride<S> among Options, or Default.
template <std::size_t Default, class... Options>
inline constexpr std::size_t stride_option_v =
    detail::option_value<detail::is_stride, Default, Options...>();
/// Pad<P> among Options, or Default.
template <std::size_t Default, class... Options>
inline constexpr std::size_t pad_option_v =
    detail::option_value<detail::is_pad, Default, Options...>();
/// True unless NoBias is among Options.
template <class... Options>
inline constexpr bool bias_option_v = !(std::is_same_v<Options, NoBias> || ...);

/// Checks a layer's option list: one static_assert per requirement, each naming the layer.
template <class... Options>
struct check_spatial_options {
  static_assert((detail::is_known_option_v<Options> && ...),
                "hpf: unknown layer option: expected hpf::Stride<S>, hpf::Pad<P> or hpf::NoBias");
  static_assert(detail::option_count_v<detail::is_stride, Options...> <= 1,
                "hpf: Stride<S> given more than once");
  static_assert(detail::option_count_v<detail::is_pad, Options...> <= 1,
                "hpf: Pad<P> given more than once");
  static constexpr bool value = true;
};

}  // namespace hpf

#endif  // HPF_LAYERS_OPTIONS_HPP
