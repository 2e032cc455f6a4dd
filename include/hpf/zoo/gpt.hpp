// SPDX-License-Identifier: MIT
#ifndef HPF_ZOO_GPT_HPP
#define HPF_ZOO_GPT_HPP

#include <hpf/layers/dense.hpp>
#include <hpf/layers/dropout.hpp>
#include <hpf/layers/embedding.hpp>
#include <hpf/layers/gelu.hpp>
#include <hpf/layers/layer_norm.hpp>
#include <hpf/layers/multi_head_attention.hpp>
#include <hpf/layers/options.hpp>
#include <hpf/layers/position_embedding.hpp>
#include <hpf/layers/softmax_cross_entropy.hpp>
#include <hpf/model/chain.hpp>
#include <hpf/model/repeat.hpp>
#include <hpf/model/residual.hpp>
#include <hpf/model/sequential.hpp>

#include <cstddef>

namespace hpf::zoo {

namespace detail {
/// Chain<Layers...>, followed by Dropout<Percent> unless Percent is 0.
template <std::size_t Percent, class... Layers>
struct chain_then_dropout {
  using type = Chain<Layers..., Dropout<Percent>>;
};
template <class... Layers>
struct chain_then_dropout<0, Layers...> {
  using type = Chain<Layers...>;
};
template <std::size_t Percent, class... Layers>
using chain_then_dropout_t = typename chain_then_dropout<Percent, Layers...>::type;
}  // namespace detail

/// \brief A pre-LayerNorm transformer block (GPT-2): x + attention(ln(x)), then
/// x + mlp(ln(x)) with a 4D-wide GELU (tanh form, as GPT-2) hidden layer; with DropoutPercent,
/// each branch ends in Dropout (GPT-2's residual dropout). Keeps `Shape<T, D>`.
template <std::size_t D, std::size_t Heads, std::size_t DropoutPercent = 0>
using GptBlock = Chain<Residual<detail::chain_then_dropout_t<DropoutPercent, LayerNorm, MultiHeadAttention<Heads, Causal>>>,
                       Residual<detail::chain_then_dropout_t<DropoutPercent, LayerNorm, Dense<4 * D>, GELUTanh, Dense<D>>>>;

namespace detail {
template <std::size_t Blocks, std::size_t D, std::size_t Heads, std::size_t Context, std::size_t Vocabulary,
          std::size_t DropoutPercent>
struct gpt {
  using type = Sequential<Input<Context>, Embedding<Vocabulary, D>, PositionEmbedding,
                          Repeat<Blocks, GptBlock<D, Heads, DropoutPercent>>, LayerNorm, Dense<Vocabulary>,
                          SoftmaxCrossEntropy>;
};
template <std::size_t Blocks, std::size_t D, std::size_t Heads, std::size_t Context, std::size_t Vocabulary,
          std::size_t DropoutPercent>
  requires(DropoutPercent > 0)
struct gpt<Blocks, D, Heads, Context, Vocabulary, DropoutPercent> {
  using type = Sequential<Input<Context>, Embedding<Vocabulary, D>, PositionEmbedding, Dropout<DropoutPercent>,
                          Repeat<Blocks, GptBlock<D, Heads, DropoutPercent>>, LayerNorm, Dense<Vocabulary>,
                          SoftmaxCrossEntropy>;
};
}  // namespace detail

/// \brief A GPT language model: token and learned position embeddings, `Blocks` GptBlocks (one
/// `Repeat`, so 48 blocks compile as fast as one), a final LayerNorm and a Dense head giving the
/// next token's logits at every position, trained with a per-position SoftmaxCrossEntropy. With
/// DropoutPercent, GPT-2's embedding and residual dropout.
/// \tparam Blocks transformer blocks
/// \tparam D features per position
/// \tparam Heads attention heads (D must be a multiple)
/// \tparam Context tokens per sample
/// \tparam Vocabulary token ids (256 for bytes)
/// \tparam DropoutPercent dropout probability in percent (0: no Dropout layers)
template <std::size_t Blocks, std::size_t D, std::size_t Heads, std::size_t Context, std::size_t Vocabulary,
          std::size_t DropoutPercent = 0>
using Gpt = typename detail::gpt<Blocks, D, Heads, Context, Vocabulary, DropoutPercent>::type;

}  // namespace hpf::zoo

#endif  // HPF_ZOO_GPT_HPP
