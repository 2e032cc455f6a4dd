// SPDX-License-Identifier: MIT
#ifndef HPF_LAYERS_DETAIL_ONEDNN_CONVOLUTION_HPP
#define HPF_LAYERS_DETAIL_ONEDNN_CONVOLUTION_HPP

#include <hpf/config.hpp>

#if HPF_ENABLE_ONEDNN

#include <hpf/layers/detail/window.hpp>
#include <hpf/layers/kernel_options.hpp>

#include <dnnl.hpp>

#include <algorithm>
#include <cstddef>
#include <map>
#include <memory>
#include <unordered_map>
#include <utility>

namespace hpf::detail {

/// \brief A float convolution on the host through oneDNN, the vendor convolution library
/// (PyTorch's CPU convolutions run on it), as GEMMs go to the vendor BLAS.
///
/// hpf's activations `[C][N][H*W]` are handed over as strided NCHW tensors; oneDNN's fast kernels
/// want blocked layouts, so inputs are reordered into the format each primitive chose and results
/// back. Those blocked copies live in the layer's share of the network workspace (no per-layer
/// memory); primitives are built once per batch size. Weight and bias gradients are added to
/// hpf's (reorders with a sum post-op), since micro-batches accumulate.
class OneDnnConvolution {
 public:
  OneDnnConvolution(const WindowGeometry& g, std::size_t out_channels, bool bias, std::shared_ptr<OneDnnDevice> device)
      : g_(g), out_(out_channels), bias_(bias), device_(std::move(device)) {}

  /// Floats of workspace a batch of n needs (the blocked copies of the larger phase).
  std::size_t workspace(std::size_t n) const {
    return std::max(plan(n, n).workspace, plan(std::min(weight_gradient_chunk(n), n), n).workspace);
  }

  void forward(const float* x, const float* weight, const float* bias, float* y, std::size_t n, float* scratch) const {
    const Plan& p = plan(n, n);
    Slots slots(scratch);
    const auto src = in(p.src, p.forward.src_desc(), const_cast<float*>(x), slots);
    const auto wei = in(p.weights, p.forward.weights_desc(), const_cast<float*>(weight), slots);
    dnnl::memory user_dst(p.dst, engine(), y);
    auto dst = p.forward.dst_desc() == p.dst ? user_dst : dnnl::memory(p.forward.dst_desc(), engine(), slots.take(p.forward.dst_desc()));
    std::unordered_map<int, dnnl::memory> args{{DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, wei}, {DNNL_ARG_DST, dst}};
    if (bias_) args.insert({DNNL_ARG_BIAS, dnnl::memory(p.bias, engine(), const_cast<float*>(bias))});
    p.run_forward.execute(stream(), args);
    if (dst != user_dst) dnnl::reorder(dst, user_dst).execute(stream(), dst, user_dst);
    stream().wait();
  }

  /// Adds the weight (and bias) gradient of this batch to weight_grad (bias_grad); writes the input
  /// gradient to dx unless it is null.
  void backward(const float* x, const float* weight, const float* dy, float* dx, float* weight_grad, float* bias_grad,
                std::size_t n, float* scratch) const {
    // Weight and bias gradients, a few images at a time: each sub-batch's sum reaches hpf's
    // gradient separately, so no float accumulation chain runs over the whole batch (oneDNN's
    // kernels sum N*OH*OW products in one chain, which loses digits on large batches).
    const std::size_t chunk = weight_gradient_chunk(n);
    for (std::size_t first = 0; first < n; first += chunk) {
      const std::size_t images = std::min(chunk, n - first);
      const Plan& p = plan(images, n);
      Slots slots(scratch);
      const auto src = in(p.src, p.backward_weights.src_desc(), const_cast<float*>(x) + first * g_.in_spatial(), slots);
      const auto grad =
          in(p.dst, p.backward_weights.diff_dst_desc(), const_cast<float*>(dy) + first * g_.out_spatial(), slots);
      dnnl::memory dw(p.backward_weights.diff_weights_desc(), engine(), slots.take(p.backward_weights.diff_weights_desc()));
      std::unordered_map<int, dnnl::memory> args{{DNNL_ARG_SRC, src}, {DNNL_ARG_DIFF_DST, grad}, {DNNL_ARG_DIFF_WEIGHTS, dw}};
      dnnl::memory db;
      if (bias_) {
        db = dnnl::memory(p.backward_weights.diff_bias_desc(), engine(), slots.take(p.backward_weights.diff_bias_desc()));
        args.insert({DNNL_ARG_DIFF_BIAS, db});
      }
      p.run_backward_weights.execute(stream(), args);
      dnnl::memory own_dw(p.weights, engine(), weight_grad);
      p.add_weight_grad.execute(stream(), dw, own_dw);
      if (bias_) {
        dnnl::memory own_db(p.bias, engine(), bias_grad);
        p.add_bias_grad.execute(stream(), db, own_db);
      }
    }
    const Plan& p = plan(n, n);
    if (dx) {  // input gradient
      Slots slots(scratch);
      const auto grad = in(p.dst, p.backward_data.diff_dst_desc(), const_cast<float*>(dy), slots);
      const auto wei = in(p.weights, p.backward_data.weights_desc(), const_cast<float*>(weight), slots);
      dnnl::memory user_dx(p.src, engine(), dx);
      auto diff_src = p.backward_data.diff_src_desc() == p.src
                                ? user_dx
                                : dnnl::memory(p.backward_data.diff_src_desc(), engine(), slots.take(p.backward_data.diff_src_desc()));
      p.run_backward_data
          .execute(stream(), {{DNNL_ARG_DIFF_DST, grad}, {DNNL_ARG_WEIGHTS, wei}, {DNNL_ARG_DIFF_SRC, diff_src}});
      if (diff_src != user_dx) dnnl::reorder(diff_src, user_dx).execute(stream(), diff_src, user_dx);
    }
    stream().wait();
  }

 private:
  struct Plan {
    dnnl::memory::desc src, dst, weights, bias;  // hpf's own layouts
    dnnl::convolution_forward::primitive_desc forward;
    dnnl::convolution_backward_data::primitive_desc backward_data;
    dnnl::convolution_backward_weights::primitive_desc backward_weights;
    // Primitives made once (oneDNN generates their code when they are created).
    dnnl::convolution_forward run_forward;
    dnnl::convolution_backward_data run_backward_data;
    dnnl::convolution_backward_weights run_backward_weights;
    dnnl::reorder add_weight_grad, add_bias_grad;  // hpf's gradient += oneDNN's, in hpf's layout
    std::size_t workspace = 0;  // floats
  };

  /// Carves 64-byte aligned pieces off the workspace for blocked copies.
  class Slots {
   public:
    explicit Slots(float* base) : next_(base) {}
    float* take(const dnnl::memory::desc& d) {
      float* here = next_;
      next_ += floats(d);
      return here;
    }
    static std::size_t floats(const dnnl::memory::desc& d) { return (d.get_size() / sizeof(float) + 15) / 16 * 16; }

   private:
    float* next_;
  };

  dnnl::engine& engine() const { return device_->engine; }
  dnnl::stream& stream() const { return device_->stream; }

  /// `data` in the layout `wanted`: itself if hpf's layout already is, else a reordered copy (layout
  /// reorders are cheap to make: oneDNN's primitive cache keeps them).
  dnnl::memory in(const dnnl::memory::desc& own, const dnnl::memory::desc& wanted, float* data, Slots& slots) const {
    dnnl::memory user(own, engine(), data);
    if (wanted == own) return user;
    dnnl::memory copy(wanted, engine(), slots.take(wanted));
    dnnl::reorder(user, copy).execute(stream(), user, copy);
    return copy;
  }
  /// A reorder that adds `from` to `to` (a sum post-op): micro-batches accumulate gradients.
  dnnl::reorder adding_reorder(const dnnl::memory::desc& from, const dnnl::memory::desc& to) const {
    dnnl::post_ops add;
    add.append_sum(1.0f);
    dnnl::primitive_attr attr;
    attr.set_post_ops(add);
    return dnnl::reorder(dnnl::reorder::primitive_desc(engine(), from, engine(), to, attr));
  }


  /// Images per weight-gradient sub-batch: about 256 output pixels, chains as short as a blocked
  /// GEMM's. Measured on ResNet-20 (batch 64, float, against float64): one chain per batch gave a
  /// median update error of 1.4e-3, sub-batches of 1024 pixels 3.7e-4, of 256 pixels 2.8e-5
  /// (im2col + GEMM: 4.2e-5), at the same speed (336-338 images/s, 1 core).
  std::size_t weight_gradient_chunk(std::size_t n) const {
    constexpr std::size_t pixels = 256;
    return std::clamp<std::size_t>(pixels / g_.out_spatial(), 1, std::max<std::size_t>(n, 1));
  }

  /// Primitives for `n` images of a batch of `batch` (hpf's layout strides by the whole batch).
  const Plan& plan(std::size_t n, std::size_t batch) const {
    const auto found = plans_.find({n, batch});
    if (found != plans_.end()) return found->second;
    using dims = dnnl::memory::dims;
    using tag = dnnl::memory::format_tag;
    const auto f32 = dnnl::memory::data_type::f32;
    const auto N = static_cast<dnnl::memory::dim>(n), B = static_cast<dnnl::memory::dim>(batch);
    const auto C = static_cast<dnnl::memory::dim>(g_.channels);
    const auto H = static_cast<dnnl::memory::dim>(g_.height), W = static_cast<dnnl::memory::dim>(g_.width);
    const auto O = static_cast<dnnl::memory::dim>(out_), K = static_cast<dnnl::memory::dim>(g_.kernel);
    const auto OH = static_cast<dnnl::memory::dim>(g_.out_height), OW = static_cast<dnnl::memory::dim>(g_.out_width);
    const auto S = static_cast<dnnl::memory::dim>(g_.stride), P = static_cast<dnnl::memory::dim>(g_.pad);
    Plan p;
    // [C][B][H*W] is NCHW with strides (H*W, B*H*W, W, 1).
    p.src = dnnl::memory::desc({N, C, H, W}, f32, dims{H * W, B * H * W, W, 1});
    p.dst = dnnl::memory::desc({N, O, OH, OW}, f32, dims{OH * OW, B * OH * OW, OW, 1});
    p.weights = dnnl::memory::desc({O, C, K, K}, f32, tag::oihw);
    p.bias = bias_ ? dnnl::memory::desc({O}, f32, tag::x) : dnnl::memory::desc();
    const dims strides{S, S}, left{P, P};
    // Right padding that makes oneDNN's output size floor((H + 2P - K) / S) + 1, as hpf's.
    const dims right{(OH - 1) * S + K - H - P, (OW - 1) * S + K - W - P};
    const auto any = [&](dims d) { return dnnl::memory::desc(d, f32, tag::any); };
    const auto src_any = any({N, C, H, W}), dst_any = any({N, O, OH, OW}), wei_any = any({O, C, K, K});
    const auto bias_any = bias_ ? any({O}) : dnnl::memory::desc();
    p.forward = dnnl::convolution_forward::primitive_desc(
        dnnl::convolution_forward::desc(dnnl::prop_kind::forward_training, dnnl::algorithm::convolution_direct, src_any,
                                        wei_any, bias_any, dst_any, strides, left, right),
        engine());
    p.backward_data = dnnl::convolution_backward_data::primitive_desc(
        dnnl::convolution_backward_data::desc(dnnl::algorithm::convolution_direct, src_any, wei_any, dst_any, strides, left,
                                              right),
        engine(), p.forward);
    p.backward_weights = dnnl::convolution_backward_weights::primitive_desc(
        dnnl::convolution_backward_weights::desc(dnnl::algorithm::convolution_direct, src_any, wei_any, bias_any, dst_any,
                                                 strides, left, right),
        engine(), p.forward);
    p.run_forward = dnnl::convolution_forward(p.forward);
    p.run_backward_data = dnnl::convolution_backward_data(p.backward_data);
    p.run_backward_weights = dnnl::convolution_backward_weights(p.backward_weights);
    p.add_weight_grad = adding_reorder(p.backward_weights.diff_weights_desc(), p.weights);
    if (bias_) p.add_bias_grad = adding_reorder(p.backward_weights.diff_bias_desc(), p.bias);
    auto copy = [](const dnnl::memory::desc& own, const dnnl::memory::desc& wanted) {
      return wanted == own ? std::size_t{0} : Slots::floats(wanted);
    };
    const std::size_t forward = copy(p.src, p.forward.src_desc()) + copy(p.weights, p.forward.weights_desc()) +
                                copy(p.dst, p.forward.dst_desc());
    const std::size_t weights_phase = copy(p.src, p.backward_weights.src_desc()) +
                                      copy(p.dst, p.backward_weights.diff_dst_desc()) +
                                      Slots::floats(p.backward_weights.diff_weights_desc()) +
                                      (bias_ ? Slots::floats(p.backward_weights.diff_bias_desc()) : 0);
    const std::size_t data_phase = copy(p.dst, p.backward_data.diff_dst_desc()) +
                                   copy(p.weights, p.backward_data.weights_desc()) +
                                   copy(p.src, p.backward_data.diff_src_desc());
    p.workspace = std::max({forward, weights_phase, data_phase});
    return plans_.emplace(std::pair{n, batch}, std::move(p)).first->second;
  }

  WindowGeometry g_;
  std::size_t out_;
  bool bias_;
  std::shared_ptr<OneDnnDevice> device_;  // the network's engine and stream
  mutable std::map<std::pair<std::size_t, std::size_t>, Plan> plans_;  // per (images, batch)
};

}  // namespace hpf::detail

#endif  // HPF_ENABLE_ONEDNN

#endif  // HPF_LAYERS_DETAIL_ONEDNN_CONVOLUTION_HPP
