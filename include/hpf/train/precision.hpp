// SPDX-License-Identifier: MIT
#ifndef HPF_TRAIN_PRECISION_HPP
#define HPF_TRAIN_PRECISION_HPP

#include <hpf/layers/kernel_options.hpp>
#include <hpf/train/options.hpp>

#include <type_traits>

namespace hpf {

/// bfloat16, the reduced type of hpf::Mixed (8 exponent bits as float, 8 significant bits).
struct bf16 {};

/// \brief Mixed-precision training, as PyTorch's autocast gives it: the products of Dense,
/// convolutions and attention read their inputs in `Low`, summed in float; master weights,
/// optimizer state, activations, loss, softmax, normalization statistics and reductions stay in
/// float. The precision policy of hpf::fit and hpf::Trainer, in place of a scalar type:
/// `fit<Model, Strategy, hpf::Mixed<hpf::bf16>>`.
template <class Low>
struct Mixed {};

/// \brief What a precision policy (float, double, or Mixed<Low>) trains with: the scalar type of
/// every tensor, and the inputs of the layers' products.
template <class Precision>
struct precision_traits {
  static_assert(std::is_floating_point_v<Precision>,
                "hpf: a precision is a floating-point scalar type (float, double) or hpf::Mixed<hpf::bf16>");
  using storage = Precision;
  static constexpr MatmulPrecision matmul = MatmulPrecision::full;
};
template <class Low>
struct precision_traits<Mixed<Low>> {
  static_assert(std::is_same_v<Low, bf16>, "hpf::Mixed: the reduced type must be hpf::bf16 (the one hpf has kernels for)");
  using storage = float;
  static constexpr MatmulPrecision matmul = MatmulPrecision::bf16;
};

/// The scalar type tensors are stored in under a precision policy.
template <class Precision>
using storage_t = typename precision_traits<Precision>::storage;

/// `options` with the policy's products: Mixed<bf16> sets NetworkOptions::matmul_precision (float
/// and double keep what the options say).
template <class Precision>
TrainOptions with_precision(TrainOptions options) {
  if constexpr (precision_traits<Precision>::matmul != MatmulPrecision::full)
    options.network.matmul_precision = precision_traits<Precision>::matmul;
  return options;
}

}  // namespace hpf

#endif  // HPF_TRAIN_PRECISION_HPP
