// SPDX-License-Identifier: MIT
#ifndef HPF_LAYERS_DETAIL_ONEDNN_CONVOLUTION_HPP
#define HPF_LAYERS_DETAIL_ONEDNN_CONVOLUTION_HPP

#include <hpf/config.hpp>

#if HPF_ENABLE_ONEDNN

#include <hpf/layers/detail/bf16_gemm.hpp>
#include <hpf/layers/detail/channel_blocks.hpp>
#include <hpf/layers/detail/volume_window.hpp>
#include <hpf/layers/detail/window.hpp>
#include <hpf/layers/kernel_options.hpp>
#include <hpf/system/blas_threads.hpp>

#include <Kokkos_Core.hpp>
#include <dlfcn.h>
#include <dnnl.hpp>

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <exception>
#include <functional>
#include <map>
#include <memory>
#include <numeric>
#include <optional>
#include <unordered_map>
#include <utility>
#include <vector>

namespace hpf::detail {

/// \brief Keeps oneDNN on the calling thread while it lives. oneDNN's OpenMP runtime reads the
/// calling thread's omp_get_max_threads(): primitives made under this split their work for one
/// thread, and primitives run under it stay on the thread that calls them. Found with dlsym (it
/// is the OpenMP runtime oneDNN loaded; hpf itself is not always compiled with OpenMP).
class OneDnnOnOneThread {
  using get_fn = int (*)();
  using set_fn = void (*)(int);

 public:
  OneDnnOnOneThread() {
    if (get_ && set_) set_(1);
  }
  ~OneDnnOnOneThread() {
    if (get_ && set_) set_(saved_);
  }
  /// The threads oneDNN's primitives made now would use.
  static int threads() { return get_ ? get_() : 1; }
  OneDnnOnOneThread(const OneDnnOnOneThread&) = delete;
  OneDnnOnOneThread& operator=(const OneDnnOnOneThread&) = delete;

 private:
  // Looked up once per process: a guard is made per lane of every convolution's backward.
  static inline const get_fn get_ = reinterpret_cast<get_fn>(dlsym(RTLD_DEFAULT, "omp_get_max_threads"));
  static inline const set_fn set_ = reinterpret_cast<set_fn>(dlsym(RTLD_DEFAULT, "omp_set_num_threads"));
  int saved_ = get_ ? get_() : 1;
};

/// A convolution's sizes as oneDNN's descriptors take them: over images (Conv2D's
/// WindowGeometry) or volumes (Conv3D's VolumeGeometry), the kernel and stride the same along
/// every spatial axis. The one place the number of spatial axes enters OneDnnConvolution.
struct ConvolutionShape {
  using dims = dnnl::memory::dims;
  std::size_t channels, kernel, stride;
  dims in, out;  // spatial extents, outermost first: {H, W} or {D, H, W}, and the output's
  dims left;     // padding before each axis (hpf's pad, but see depth_padded)

  // Implicit: the layers (and tests) hand OneDnnConvolution their own geometry.
  ConvolutionShape(const WindowGeometry& g)  // NOLINT(google-explicit-constructor)
      : channels(g.channels), kernel(g.kernel), stride(g.stride), in{dim(g.height), dim(g.width)},
        out{dim(g.out_height), dim(g.out_width)}, left(2, dim(g.pad)) {}
  ConvolutionShape(const VolumeGeometry& g)  // NOLINT(google-explicit-constructor)
      : channels(g.channels()), kernel(g.kernel()), stride(g.stride()),
        in{dim(g.depth), dim(g.plane.height), dim(g.plane.width)},
        out{dim(g.out_depth), dim(g.plane.out_height), dim(g.plane.out_width)}, left(3, dim(g.pad())) {}

  std::size_t rank() const { return in.size(); }
  std::size_t in_spatial() const { return volume(in); }
  std::size_t out_spatial() const { return volume(out); }

  /// Right padding that makes oneDNN's output extents floor((in + 2P - K) / S) + 1, as hpf's
  /// (negative where the window leaves input behind).
  dims right() const {
    dims r(rank());
    for (std::size_t a = 0; a < rank(); ++a) r[a] = (out[a] - 1) * dim(stride) + dim(kernel) - in[a] - left[a];
    return r;
  }
  /// Whether volumes are padded in depth. oneDNN's direct weight-gradient kernel for AVX2 takes no
  /// such padding, and oneDNN 2.6 falls back to its own im2col + GEMM, 1.4-1.8x slower on
  /// CosmoFlow's convolutions: the weight gradient sees volumes with the padding made part of them,
  /// as zeros (depth_padded), on every CPU (the zeros cost a pass over the copy it makes anyway).
  bool pads_depth() const { return rank() == 3 && (left[0] > 0 || right()[0] > 0); }
  ConvolutionShape depth_padded() const {
    ConvolutionShape padded = *this;
    padded.in[0] = (out[0] - 1) * dim(stride) + dim(kernel);
    padded.left[0] = 0;
    return padded;
  }

  /// {n, c, spatial...}: an activation's dims in oneDNN's order; those of n inputs and outputs.
  static dims tensor(std::size_t n, std::size_t c, const dims& spatial) {
    dims d{dim(n), dim(c)};
    d.insert(d.end(), spatial.begin(), spatial.end());
    return d;
  }
  dims src(std::size_t n) const { return tensor(n, channels, in); }
  dims dst(std::size_t n, std::size_t out_channels) const { return tensor(n, out_channels, out); }
  /// The strides of hpf's `[C][batch][spatial]` as an N, C, spatial... tensor: (S, batch*S, then
  /// the spatial axes row-major).
  static dims hpf_strides(std::size_t batch, const dims& spatial) {
    dims s(spatial.size() + 2, 1);
    for (std::size_t a = spatial.size(); a-- > 1;) s[a + 1] = s[a + 2] * spatial[a];
    s[0] = dim(volume(spatial));
    s[1] = dim(batch) * s[0];
    return s;
  }
  /// Weights {O, C, K, ...} and their plain layout, PyTorch's (oihw or oidhw).
  dims weights(std::size_t out_channels) const { return tensor(out_channels, channels, dims(rank(), dim(kernel))); }
  dnnl::memory::format_tag weights_tag() const {
    return rank() == 2 ? dnnl::memory::format_tag::oihw : dnnl::memory::format_tag::oidhw;
  }
  /// Activations in 16-channel blocks (oneDNN's AVX-512 kernels) and with channels last (its
  /// brgemm-based kernels), the layouts channel_blocks.hpp moves.
  dnnl::memory::format_tag channel_blocks_tag() const {
    return rank() == 2 ? dnnl::memory::format_tag::aBcd16b : dnnl::memory::format_tag::aBcde16b;
  }
  dnnl::memory::format_tag channels_last_tag() const {
    return rank() == 2 ? dnnl::memory::format_tag::acdb : dnnl::memory::format_tag::acdeb;
  }
  /// The layouts that keep each image (volume) in one piece, images outermost.
  std::vector<dnnl::memory::format_tag> whole_image_tags() const {
    using tag = dnnl::memory::format_tag;
    if (rank() == 2) return {tag::nChw16c, tag::nChw8c, tag::nChw4c, tag::nhwc, tag::nchw};
    return {tag::nCdhw16c, tag::nCdhw8c, tag::nCdhw4c, tag::ndhwc, tag::ncdhw};
  }

  static dnnl::memory::dim dim(std::size_t v) { return static_cast<dnnl::memory::dim>(v); }
  static std::size_t volume(const dims& d) {
    return static_cast<std::size_t>(std::accumulate(d.begin(), d.end(), dnnl::memory::dim{1}, std::multiplies<>()));
  }
};

/// \brief A float convolution on the host through oneDNN (its inputs in bf16 where
/// convolution_precision says so), the vendor convolution library
/// (PyTorch's CPU convolutions run on it), as GEMMs go to the vendor BLAS.
///
/// hpf's activations `[C][N][H*W]` (volumes: `[C][N][D*H*W]`) are handed over as strided NCHW
/// (NCDHW) tensors; oneDNN's fast kernels want blocked layouts, so inputs are reordered into the
/// format each primitive chose and results back. Those blocked copies live in the layer's share
/// of the network workspace (no per-layer memory); primitives are built once per batch size.
/// Weight and bias gradients are added to hpf's (reorders with a sum post-op), since
/// micro-batches accumulate.
class OneDnnConvolution {
 public:
  /// `lanes`: weight-gradient sub-batches computed side by side, one per thread of the layer's
  /// host execution space (1: one after another, each on all of oneDNN's threads). `winograd`:
  /// Winograd's algorithm for all three convolutions where it pays (winograd_available).
  /// `compute`: the type the convolutions read their inputs in (f32, or bf16 under
  /// MatmulPrecision::bf16: see available()); results and gradients are float.
  OneDnnConvolution(const ConvolutionShape& g, std::size_t out_channels, bool bias, std::shared_ptr<OneDnnDevice> device,
                    std::size_t lanes = 1, bool winograd = false, dnnl::memory::data_type compute = dnnl::memory::data_type::f32)
      : g_(g), out_(out_channels), bias_(bias), compute_(compute), device_(std::move(device)),
        lanes_(std::max<std::size_t>(lanes, 1)), winograd_(winograd && winograd_available(g, out_channels, bias, compute, engine())) {
    for (std::size_t lane = 0; lanes_ > 1 && lane < lanes_; ++lane) lane_streams_.emplace_back(engine());
  }

  /// Whether the forward pass and both gradients run Winograd's algorithm (see the constructor).
  bool winograd() const { return winograd_; }

  /// Whether oneDNN has this convolution's three kernels with inputs of type `compute` on this CPU
  /// (f32 always; bf16 where the CPU has AVX512-BF16 or AMX, or AVX-512 for oneDNN's emulation).
  static bool available(const ConvolutionShape& g, std::size_t out, bool bias, dnnl::memory::data_type compute,
                        const dnnl::engine& engine) {
    try {
      primitive_descriptors(g, out, bias, 1, dnnl::algorithm::convolution_direct, compute, engine);
      return true;
    } catch (const dnnl::error&) {  // "could not create a primitive descriptor"
      return false;
    }
  }

  /// Floats of workspace a batch of n needs: the forward's, or in the backward, dy's whole-batch
  /// copy (kept throughout) and the larger of the weight-gradient and input-gradient phases.
  std::size_t workspace(std::size_t n) const {
    const WeightSplit split = weight_split(n);
    const BatchCopies& copies = batch_copies(n);
    const std::size_t weight_phase =
        copies.src.floats() + split.groups * split.group_floats + split.lanes * split.lane_floats;
    return alignment_slack + copies.diff_dst.floats() + std::max(plan(n, n).workspace, weight_phase);
  }

  void forward(const float* x, const float* weight, const float* bias, float* y, std::size_t n, float* scratch) const {
    const Plan& p = plan(n, n);
    system::yield_blas_pool();
    Slots slots(scratch);
    const auto src = in(p.forward_src, const_cast<float*>(x), slots, stream());
    const auto wei = in(p.forward_weights, const_cast<float*>(weight), slots, stream());
    dnnl::memory user_dst(p.dst, engine(), y);
    auto dst = out(p.forward_dst, user_dst, slots);
    std::unordered_map<int, dnnl::memory> args{{DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, wei}, {DNNL_ARG_DST, dst}};
    if (bias_) args.insert({DNNL_ARG_BIAS, dnnl::memory(p.bias, engine(), const_cast<float*>(bias))});
    add_scratchpad(args, p.forward.scratchpad_desc(), slots);
    p.run_forward.execute(stream(), args);
    if (p.forward_dst.needed()) convert(p.forward_dst, dst, user_dst, slots, stream());
    stream().wait();
  }

  /// Adds the weight (and bias) gradient of this batch to weight_grad (bias_grad) unless it is
  /// null; writes the input gradient to dx unless it is null. `space` runs the weight-gradient lanes.
  template <class HostSpace>
  void backward(const HostSpace& space, const float* x, const float* weight, const float* dy, float* dx,
                float* weight_grad, float* bias_grad, std::size_t n, float* scratch) const {
    const Plan& p = plan(n, n);
    system::yield_blas_pool();
    const BatchCopies& copies = batch_copies(n);
    // dy converted once for the whole batch: the weight gradient's sub-batches read it at offsets,
    // and the input gradient too when its primitive chose the same layout.
    Slots kept(scratch);
    const dnnl::memory dy_copy = copies.diff_dst.make(const_cast<float*>(dy), kept, *this);
    if (weight_grad) weight_gradient(space, x, dy, dy_copy, copies, weight_grad, bias_grad, n, kept.rest());
    if (dx) {  // input gradient
      Slots slots(kept.rest());
      const bool shared = copies.diff_dst.usable && p.backward_data.diff_dst_desc() == dy_copy.get_desc();
      const auto grad = shared ? dy_copy : in(p.data_diff_dst, const_cast<float*>(dy), slots, stream());
      const auto wei = in(p.data_weights, const_cast<float*>(weight), slots, stream());
      dnnl::memory user_dx(p.src, engine(), dx);
      auto diff_src = out(p.data_diff_src, user_dx, slots);
      std::unordered_map<int, dnnl::memory> args{{DNNL_ARG_DIFF_DST, grad}, {DNNL_ARG_WEIGHTS, wei}, {DNNL_ARG_DIFF_SRC, diff_src}};
      add_scratchpad(args, p.backward_data.scratchpad_desc(), slots);
      p.run_backward_data.execute(stream(), args);
      if (p.data_diff_src.needed()) convert(p.data_diff_src, diff_src, user_dx, slots, stream());
    }
    stream().wait();
  }

 private:
  /// A layout change made once per plan: from hpf's layout to the one a primitive chose, or back;
  /// nothing when they agree. Reorders are quick to run but not to make (a primitive descriptor
  /// each time: on ResNet-20 making them per sub-batch cost more than running them). Activations
  /// into and out of channels-innermost layouts move by channel_blocks.hpp's transposes where it
  /// has them.
  struct Conversion {
    enum class Move { reorder, from_hpf, to_hpf };  // by channel_blocks.hpp
    dnnl::memory::desc from, to;
    Move move = Move::reorder;
    ChannelBlocks blocks;          // the activation, unless move is reorder
    dnnl::reorder run;             // made only when needed(); for a move too (moves_keep_up)
    dnnl::memory::desc scratchpad;  // its scratch memory (see own_scratchpad)
    dnnl::memory::desc inner;       // where in `to` the values go, zeros around them (padded_conversion)
    bool needed() const { return !(from == to); }
  };
  struct Plan {
    dnnl::memory::desc src, dst, weights, bias;  // hpf's own layouts
    dnnl::convolution_forward::primitive_desc forward;
    dnnl::convolution_backward_data::primitive_desc backward_data;
    dnnl::convolution_backward_weights::primitive_desc backward_weights;
    // Primitives made once (oneDNN generates their code when they are created).
    dnnl::convolution_forward run_forward;
    dnnl::convolution_backward_data run_backward_data;
    dnnl::convolution_backward_weights run_backward_weights;
    Conversion add_weight_grad, add_bias_grad;  // hpf's gradient += oneDNN's, in hpf's layout
    Conversion forward_src, forward_weights, forward_dst;    // forward_dst: back to hpf's layout
    Conversion data_diff_dst, data_weights, data_diff_src;   // data_diff_src: back to hpf's layout
    Conversion weights_src, weights_diff_dst;
    std::size_t workspace = 0;          // floats: forward and input-gradient phases
    std::size_t weights_workspace = 0;  // floats: the weight-gradient phase
  };

  /// Carves 64-byte aligned pieces off the workspace for blocked copies (Winograd's kernels read
  /// their scratch memory with aligned vector loads: a caller's buffer is aligned up first).
  class Slots {
   public:
    static constexpr std::size_t alignment = 64;
    explicit Slots(float* base)
        : next_(base + (alignment - reinterpret_cast<std::uintptr_t>(base) % alignment) % alignment / sizeof(float)) {}
    float* take(const dnnl::memory::desc& d) {
      float* here = next_;
      next_ += floats(d);
      return here;
    }
    float* rest() const { return next_; }  // where the next piece would start
    static std::size_t floats(const dnnl::memory::desc& d) { return (d.get_size() / sizeof(float) + 15) / 16 * 16; }

   private:
    float* next_;
  };

  /// Floats a caller's workspace may need to be aligned up by (Slots).
  static constexpr std::size_t alignment_slack = Slots::alignment / sizeof(float) - 1;

  /// A sum of weight (and bias) gradients in oneDNN's layout, in workspace.
  struct GradientSum {
    dnnl::memory weight, bias;
  };

  /// How the weight gradient of a batch is split: sub-batches of `chunk` images, whose sums are
  /// added in groups of `per_group` sub-batches, groups spread over `lanes`.
  struct WeightSplit {
    std::size_t chunk = 1, chunks = 0, per_group = 1, groups = 0, lanes = 1;
    std::size_t group_floats = 0;  // a group's sum
    std::size_t lane_floats = 0;   // a lane's blocked copies and one sub-batch's sum
  };

  /// A whole batch's input or output gradient, converted in one call into the layout the
  /// weight-gradient sub-batches want, when that layout keeps each image in one piece (images
  /// outermost): a sub-batch then reads its images at an offset. One conversion instead of one
  /// per sub-batch (a 32x32 layer of a ResNet at batch 64: 64), and for dy, one shared with the
  /// input gradient. Not `usable`: each sub-batch converts its own images, as it must for layouts
  /// that interleave images.
  struct BatchCopy {
    bool usable = false;
    dnnl::memory::format_tag tag{};
    dnnl::memory::data_type type{};  // the copy's (the sub-batches' inputs')
    dnnl::memory::dims image_dims;   // {channels, spatial...}
    Conversion convert;              // hpf's layout of the whole batch -> the copy
    std::size_t image_bytes = 0;     // between consecutive images of the copy
    std::size_t chunk = 0;          // images of a whole sub-batch, whose layout is chunk_desc
    dnnl::memory::desc chunk_desc;

    /// The copy's layout for `images` images.
    dnnl::memory::desc desc(std::size_t images) const {
      dnnl::memory::dims d{static_cast<dnnl::memory::dim>(images)};
      d.insert(d.end(), image_dims.begin(), image_dims.end());
      return dnnl::memory::desc(d, type, tag);
    }
    /// Whether a sub-batch of `images` wanting `wanted` can read its images from the copy.
    bool serves(const dnnl::memory::desc& wanted, std::size_t images) const {
      return usable && wanted == (images == chunk ? chunk_desc : desc(images));
    }
    std::size_t floats() const { return usable ? OneDnnConvolution::floats(convert, true) : 0; }
    /// The copy of `data` (itself when the layouts agree), taken from `slots`; empty if not usable.
    dnnl::memory make(float* data, Slots& slots, const OneDnnConvolution& conv) const {
      return usable ? conv.in(convert, data, slots, conv.stream()) : dnnl::memory();
    }
  };
  struct BatchCopies {
    BatchCopy src, diff_dst;
  };

  dnnl::engine& engine() const { return device_->engine; }
  dnnl::stream& stream() const { return device_->stream; }

  /// Every primitive here gets its scratch memory from hpf's workspace (oneDNN's own is one
  /// buffer shared by all primitives, which lanes running side by side would overwrite).
  static dnnl::primitive_attr own_scratchpad(dnnl::primitive_attr attr = {}) {
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    return attr;
  }
  void add_scratchpad(std::unordered_map<int, dnnl::memory>& args, const dnnl::memory::desc& scratchpad,
                      Slots& slots) const {
    if (scratchpad.get_size() > 0) args.insert({DNNL_ARG_SCRATCHPAD, dnnl::memory(scratchpad, engine(), slots.take(scratchpad))});
  }
  /// A copy from one layout to another, or with `add` a sum into `to` (a sum post-op: micro-batches
  /// accumulate gradients).
  Conversion conversion(const dnnl::memory::desc& from, const dnnl::memory::desc& to, bool add = false) const {
    Conversion c{from, to, Conversion::Move::reorder, {}, {}, {}, {}};
    if (!c.needed() && !add) return c;
    dnnl::primitive_attr attr;
    if (add) {
      dnnl::post_ops sum;
      sum.append_sum(1.0f);
      attr.set_post_ops(sum);
    }
    const dnnl::reorder::primitive_desc pd(engine(), from, engine(), to, own_scratchpad(attr));
    c.run = dnnl::reorder(pd);
    c.scratchpad = pd.scratchpad_desc();
    return c;
  }
  /// An activation's conversion between hpf's layout of a batch of `batch` and a primitive's:
  /// moved by channel_blocks.hpp where the primitive's is 16-channel blocks or channels last and
  /// this build has the move, else reordered.
  Conversion activation_conversion(const dnnl::memory::desc& from, const dnnl::memory::desc& to, std::size_t batch) const {
    using type = dnnl::memory::data_type;
    const dnnl::memory::dims dims = from.dims();
    const dnnl::memory::dims spatial(dims.begin() + 2, dims.end());
    const auto hpf_layout = [&](const dnnl::memory::desc& d) {
      return d == dnnl::memory::desc(dims, type::f32, ConvolutionShape::hpf_strides(batch, spatial));
    };
    // The layout channel_blocks.hpp moves `d` to or from, if any.
    const auto movable = [&](const dnnl::memory::desc& d) -> std::optional<ChannelBlocks::Layout> {
      const bool type_moves = d.data_type() == type::f32   ? channel_blocks_available<float>()
                              : d.data_type() == type::bf16 ? channel_blocks_available<bf16_bits>()
                                                            : false;
      if (!type_moves) return std::nullopt;
      if (d == dnnl::memory::desc(dims, d.data_type(), g_.channel_blocks_tag())) return ChannelBlocks::Layout::blocks;
      if (d == dnnl::memory::desc(dims, d.data_type(), g_.channels_last_tag())) return ChannelBlocks::Layout::channels_last;
      return std::nullopt;
    };
    Conversion c = conversion(from, to);  // its reorder runs where the move would not keep up
    std::optional<ChannelBlocks::Layout> layout;
    if (to.dims() != dims) return c;
    if (hpf_layout(from) && (layout = movable(to))) {
      c.move = Conversion::Move::from_hpf;
    } else if (from.data_type() == type::f32 && hpf_layout(to) && (layout = movable(from))) {
      c.move = Conversion::Move::to_hpf;
    } else {
      return c;
    }
    c.blocks = ChannelBlocks{*layout, static_cast<std::size_t>(dims[0]), static_cast<std::size_t>(dims[1]),
                             ConvolutionShape::volume(spatial), batch * ConvolutionShape::volume(spatial)};
    return c;
  }
  /// Whether channel_blocks.hpp's moves run on as many threads as oneDNN's reorders would: hpf
  /// has OpenMP (they share its threads), or oneDNN is on one thread (in a lane, or everywhere).
  /// On one thread they beat the reorders 1.3-4x; on two, a reorder beats one thread's move.
  static bool moves_keep_up() {
#if defined(_OPENMP)
    return true;
#else
    return OneDnnOnOneThread::threads() == 1;
#endif
  }
  void convert(const Conversion& c, dnnl::memory& from, dnnl::memory& to, Slots& slots, dnnl::stream& on) const {
#if HPF_CHANNEL_BLOCKS
    if (c.move != Conversion::Move::reorder && moves_keep_up()) {
      on.wait();  // what wrote `from` has run
      move(c, from, to);
      return;
    }
#endif
    std::unordered_map<int, dnnl::memory> args{{DNNL_ARG_FROM, from}, {DNNL_ARG_TO, to}};
    add_scratchpad(args, c.scratchpad, slots);
    c.run.execute(on, args);
  }
#if HPF_CHANNEL_BLOCKS
  static void move(const Conversion& c, const dnnl::memory& from, const dnnl::memory& to) {
    const auto* source = static_cast<const float*>(from.get_data_handle());
    if (c.move == Conversion::Move::to_hpf) return from_channel_blocks(c.blocks, source, static_cast<float*>(to.get_data_handle()));
#if HPF_CHANNEL_BLOCKS_BF16
    if (c.to.data_type() == dnnl::memory::data_type::bf16)
      return to_channel_blocks(c.blocks, source, static_cast<bf16_bits*>(to.get_data_handle()));
#endif
    to_channel_blocks(c.blocks, source, static_cast<float*>(to.get_data_handle()));
  }
#endif
  /// Floats of workspace a conversion takes: its target (if `copies`) and its scratch memory.
  static std::size_t floats(const Conversion& c, bool copies) {
    return (copies && c.needed() ? Slots::floats(c.to) : 0) + Slots::floats(c.scratchpad);
  }
  /// `data` (in hpf's layout) as the primitive wants it: itself, or a converted copy in workspace.
  dnnl::memory in(const Conversion& c, float* data, Slots& slots, dnnl::stream& on) const {
    dnnl::memory user(c.from, engine(), data);
    if (!c.needed()) return user;
    dnnl::memory copy(c.to, engine(), slots.take(c.to));
    if (c.inner.is_zero()) {
      convert(c, user, copy, slots, on);
    } else {
      on.wait();  // the workspace is free: what last read it has run
      std::memset(copy.get_data_handle(), 0, c.to.get_size());  // zero in float and in bf16
      dnnl::memory inner(c.inner, engine(), copy.get_data_handle());
      convert(c, user, inner, slots, on);
    }
    return copy;
  }
  /// hpf's volumes `from` into `to`, which has their depth padding too (ConvolutionShape::
  /// depth_padded): the input slices that windows reach, at depth left[0].
  Conversion padded_conversion(const dnnl::memory::desc& from, const dnnl::memory::desc& to) const {
    dnnl::memory::dims part = from.dims(), at(part.size(), 0);
    part[2] = std::min(part[2], to.dims()[2] - g_.left[0]);
    at[2] = g_.left[0];
    const dnnl::memory::desc inner = to.submemory_desc(part, at);
    Conversion c = conversion(from.submemory_desc(part, dnnl::memory::dims(part.size(), 0)), inner);
    c.to = to;
    c.inner = inner;
    return c;
  }
  /// Where a primitive writes a result that `c` converts to hpf's `user` memory: user itself, or
  /// workspace.
  dnnl::memory out(const Conversion& c, const dnnl::memory& user, Slots& slots) const {
    return c.needed() ? dnnl::memory(c.from, engine(), slots.take(c.from)) : user;
  }

  /// Weight and bias gradients, a few images at a time: each sub-batch's sum is computed
  /// separately, so no float accumulation chain runs over the whole batch (oneDNN's kernels sum
  /// N*OH*OW products in one chain, which loses digits on large batches). Sub-batch sums are added
  /// within groups of sub_batches_per_group(), and the groups' sums to hpf's gradient in order, so
  /// the order of additions does not depend on the threads: with several lanes, groups run side
  /// by side, oneDNN on one thread in each (a 1-image sub-batch leaves oneDNN's own threads little
  /// to share: ResNet-20 on 2 threads ran at 1031 images/s, against 1176 with whole-batch chains).
  template <class HostSpace>
  void weight_gradient(const HostSpace& space, const float* x, const float* dy, const dnnl::memory& dy_copy,
                       const BatchCopies& copies, float* weight_grad, float* bias_grad, std::size_t n,
                       float* scratch) const {
    const WeightSplit split = weight_split(n);  // also makes the plans before any lane runs
    Slots kept(scratch);
    const SubBatchInputs inputs{x, dy, copies.src.make(const_cast<float*>(x), kept, *this), dy_copy, &copies};
    stream().wait();  // the copies are complete before lanes read them on streams of their own
    float* const group_space = kept.rest();
    float* const lane_space = group_space + split.groups * split.group_floats;
    std::vector<GradientSum> sums(split.groups);
    // Each lane takes the next group not yet taken: a lane on a slower core (another process on
    // its core, a busier cache) takes fewer. Each group's sum has its own place, and the sums are
    // added in group order, so the bits do not depend on which lane ran which group.
    std::atomic<std::size_t> next_group{0};
    auto lane_work = [&](std::size_t lane) {
      for (std::size_t group = next_group++; group < split.groups; group = next_group++)
        sums[group] = group_gradient(inputs, group, split, n, group_space + group * split.group_floats,
                                     lane_space + lane * split.lane_floats, split.lanes > 1 ? lane_streams_[lane] : stream());
    };
    if (split.lanes == 1) {
      lane_work(0);
    } else {
      run_lanes(space, split.lanes, lane_work);
    }
    const Plan& whole = weight_plan(split.chunk, n);
    for (GradientSum& sum : sums) {  // in group order; the lanes' workspace is free again
      Slots slots(lane_space);
      dnnl::memory own_dw(whole.weights, engine(), weight_grad);
      convert(whole.add_weight_grad, sum.weight, own_dw, slots, stream());
      if (bias_) {
        dnnl::memory own_db(whole.bias, engine(), bias_grad);
        convert(whole.add_bias_grad, sum.bias, own_db, slots, stream());
      }
    }
  }

  /// What the weight-gradient sub-batches read: hpf's x and dy, and their whole-batch copies.
  struct SubBatchInputs {
    const float *x, *dy;
    dnnl::memory x_copy, dy_copy;
    const BatchCopies* copies;
  };

  /// A sub-batch's images [first, first + images) as `wanted`: read from the whole batch's copy
  /// when it serves, else converted from hpf's layout (`data` at the sub-batch's first image).
  dnnl::memory sub_batch(const BatchCopy& copy, const dnnl::memory& whole, const Conversion& c, const float* data,
                         std::size_t first, std::size_t images, Slots& slots, dnnl::stream& on) const {
    if (copy.serves(c.to, images))
      return dnnl::memory(c.to, engine(), static_cast<char*>(whole.get_data_handle()) + first * copy.image_bytes);
    return in(c, const_cast<float*>(data), slots, on);
  }

  /// The sum of one group's sub-batch gradients, in `sum_space` (in the layout of a whole
  /// sub-batch's plan); `lane_space` holds the blocked copies.
  GradientSum group_gradient(const SubBatchInputs& inputs, std::size_t group, const WeightSplit& split,
                             std::size_t n, float* sum_space, float* lane_space, dnnl::stream& on) const {
    const Plan& whole = weight_plan(split.chunk, n);
    const auto& sum_weight_desc = whole.backward_weights.diff_weights_desc();
    GradientSum sum;
    sum.weight = dnnl::memory(sum_weight_desc, engine(), sum_space);
    if (bias_)
      sum.bias = dnnl::memory(whole.backward_weights.diff_bias_desc(), engine(), sum_space + Slots::floats(sum_weight_desc));
    const std::size_t begin = group * split.per_group;
    const std::size_t end = std::min(begin + split.per_group, split.chunks);
    for (std::size_t c = begin; c < end; ++c) {
      const std::size_t first = c * split.chunk;
      const std::size_t images = std::min(split.chunk, n - first);
      const Plan& p = weight_plan(images, n);
      Slots slots(lane_space);
      const auto src = sub_batch(inputs.copies->src, inputs.x_copy, p.weights_src, inputs.x + first * g_.in_spatial(),
                                 first, images, slots, on);
      const auto grad = sub_batch(inputs.copies->diff_dst, inputs.dy_copy, p.weights_diff_dst,
                                  inputs.dy + first * g_.out_spatial(), first, images, slots, on);
      const bool same_layout = p.backward_weights.diff_weights_desc() == sum_weight_desc &&
                               (!bias_ || p.backward_weights.diff_bias_desc() == sum.bias.get_desc());
      const bool into_sum = c == begin && same_layout;  // the group's first sub-batch writes the sum itself
      GradientSum part = sum;
      if (!into_sum) {
        part.weight = dnnl::memory(p.backward_weights.diff_weights_desc(), engine(), slots.take(p.backward_weights.diff_weights_desc()));
        if (bias_) part.bias = dnnl::memory(p.backward_weights.diff_bias_desc(), engine(), slots.take(p.backward_weights.diff_bias_desc()));
      }
      std::unordered_map<int, dnnl::memory> args{{DNNL_ARG_SRC, src}, {DNNL_ARG_DIFF_DST, grad}, {DNNL_ARG_DIFF_WEIGHTS, part.weight}};
      if (bias_) args.insert({DNNL_ARG_DIFF_BIAS, part.bias});
      add_scratchpad(args, p.backward_weights.scratchpad_desc(), slots);
      p.run_backward_weights.execute(on, args);
      if (!into_sum) {
        add_into(part.weight, sum.weight, /*overwrite=*/c == begin, on);
        if (bias_) add_into(part.bias, sum.bias, c == begin, on);
      }
    }
    on.wait();
    return sum;
  }

  /// to += from (to = from when `overwrite`): one pass when both have the same layout (padding
  /// included), else a reorder.
  void add_into(dnnl::memory from, dnnl::memory to, bool overwrite, dnnl::stream& on) const {
    if (from.get_desc() == to.get_desc()) {
      on.wait();
      const auto* f = static_cast<const float*>(from.get_data_handle());
      auto* t = static_cast<float*>(to.get_data_handle());
      const std::size_t count = from.get_desc().get_size() / sizeof(float);
      for (std::size_t i = 0; i < count; ++i) t[i] = overwrite ? f[i] : t[i] + f[i];
      return;
    }
    // Layouts differ (a remainder sub-batch whose primitive chose another): a conversion made
    // here, with its scratch memory of its own.
    const Conversion c = conversion(from.get_desc(), to.get_desc(), /*add=*/!overwrite);
    std::vector<float> scratchpad(alignment_slack + Slots::floats(c.scratchpad));
    Slots slots(scratchpad.data());
    convert(c, from, to, slots, on);
  }

  /// Runs work(lane) for lane in [0, count) in parallel on `space`, oneDNN on one thread in each.
  template <class HostSpace, class Work>
  void run_lanes(const HostSpace& space, std::size_t count, const Work& work) const {
    std::vector<std::exception_ptr> failed(count);
    Kokkos::parallel_for(g_.rank() == 2 ? "hpf::Conv2D::weight_gradient_lanes" : "hpf::Conv3D::weight_gradient_lanes",
                         Kokkos::RangePolicy<HostSpace>(space, 0, count),
                         [&](const std::size_t lane) {
                           OneDnnOnOneThread one_thread;
                           try {
                             work(lane);
                           } catch (...) {
                             failed[lane] = std::current_exception();
                           }
                         });
    for (const auto& error : failed)
      if (error) std::rethrow_exception(error);
  }

  /// The split of a batch of n, with every plan it uses made.
  WeightSplit weight_split(std::size_t n) const {
    WeightSplit split;
    split.chunk = std::min(weight_gradient_chunk(n), std::max<std::size_t>(n, 1));
    split.chunks = (n + split.chunk - 1) / split.chunk;
    split.per_group = sub_batches_per_group();
    split.groups = (split.chunks + split.per_group - 1) / split.per_group;
    split.lanes = std::max<std::size_t>(std::min(lanes_, split.groups), 1);
    const Plan& whole = weight_plan(split.chunk, n);
    split.group_floats = Slots::floats(whole.backward_weights.diff_weights_desc()) +
                         (bias_ ? Slots::floats(whole.backward_weights.diff_bias_desc()) : 0);
    split.lane_floats = whole.weights_workspace;
    if (n % split.chunk) split.lane_floats = std::max(split.lane_floats, weight_plan(n % split.chunk, n).weights_workspace);
    return split;
  }

  /// The whole-batch copies of x and dy for a batch of n, made once per batch size.
  const BatchCopies& batch_copies(std::size_t n) const {
    const auto found = batch_copies_.find(n);
    if (found != batch_copies_.end()) return found->second;
    const WeightSplit split = weight_split(n);
    const Plan& sub = weight_plan(split.chunk, n);
    const Plan& whole = plan(n, n);
    // An image's dims: the activation's without the batch.
    const auto image = [](dnnl::memory::dims d) { return dnnl::memory::dims(d.begin() + 1, d.end()); };
    BatchCopies copies{batch_copy(whole.src, sub.weights_src, image(whole.src.dims()), split.chunk, n),
                       batch_copy(whole.dst, sub.weights_diff_dst, image(whole.dst.dims()), split.chunk, n)};
    return batch_copies_.emplace(n, std::move(copies)).first->second;
  }
  /// A copy of a batch of n in hpf's layout `user`, for sub-batches of `chunk` images converted
  /// by `sub_batch`: usable when they want one of the layouts that keep images whole, and no
  /// padding (volumes the weight gradient sees padded in depth are each sub-batch's own copies).
  BatchCopy batch_copy(const dnnl::memory::desc& user, const Conversion& sub_batch, dnnl::memory::dims image_dims,
                       std::size_t chunk, std::size_t n) const {
    BatchCopy copy;
    copy.image_dims = std::move(image_dims);
    if (n == 0 || !sub_batch.inner.is_zero()) return copy;
    const dnnl::memory::desc& wanted = sub_batch.to;
    copy.type = wanted.data_type();
    for (const dnnl::memory::format_tag t : g_.whole_image_tags()) {
      copy.tag = t;
      if (copy.desc(chunk) != wanted) continue;
      const dnnl::memory::desc whole = copy.desc(n);
      copy.usable = true;
      copy.chunk = chunk;
      copy.chunk_desc = wanted;
      copy.convert = activation_conversion(user, whole, n);
      copy.image_bytes = whole.get_size() / n;
      break;
    }
    return copy;
  }

  /// The plan of a weight-gradient sub-batch: with lanes, its primitives are made for one thread.
  const Plan& weight_plan(std::size_t images, std::size_t batch) const {
    if (lanes_ == 1) return plan(images, batch);
    const auto found = weight_plans_.find({images, batch});
    if (found != weight_plans_.end()) return found->second;
    OneDnnOnOneThread one_thread;
    return weight_plans_.emplace(std::pair{images, batch}, make_plan(images, batch)).first->second;
  }

  /// Images per weight-gradient sub-batch: about 256 output pixels, chains as short as a blocked
  /// GEMM's. Measured on ResNet-20 (batch 64, float, against float64): one chain per batch gave a
  /// median update error of 1.4e-3, sub-batches of 1024 pixels 3.7e-4, of 256 pixels 2.8e-5
  /// (im2col + GEMM: 4.2e-5), at the same speed (336-338 images/s, 1 core).
  /// With bf16 inputs, about 8192 pixels: rounding the inputs (2^-9 of each product) costs the
  /// sum far more digits than float chains of that length lose, while each sub-batch is a call
  /// whose fixed cost AMX's short kernels do not hide: on ResNet-20 (batch 64, bf16, one core of
  /// a Xeon with AMX, hand runs) sub-batches of 256 pixels ran a step in 104-105 ms, of 2048 in
  /// 96-104, of 8192 in 94-97, one sub-batch per batch in 93-97.
  std::size_t weight_gradient_chunk(std::size_t n) const {
    const std::size_t pixels = compute_ == dnnl::memory::data_type::bf16 ? 8192 : 256;
    return std::clamp<std::size_t>(pixels / g_.out_spatial(), 1, std::max<std::size_t>(n, 1));
  }
  /// Sub-batches whose sums a group adds before its sum joins the gradient: 8 in float (fewer
  /// group sums to keep); one with bf16's fewer, larger sub-batches, so that lanes still have
  /// groups to share (ResNet-20's 16x16 layers at batch 64: 2 sub-batches of 32 images).
  std::size_t sub_batches_per_group() const { return compute_ == dnnl::memory::data_type::bf16 ? 1 : 8; }

  /// Whether Winograd's algorithm runs this layer forward and for both gradients: oneDNN has it
  /// on this CPU (3x3, stride 1, AVX-512), and the layer has at least 32 channels in and out.
  /// Winograd saves multiplications in proportion to channels in x channels out, while its tile
  /// transforms cost in proportion to the channels alone: on a ResNet's 3x3 layers at batch 64
  /// (AMD Zen 4, one thread) it took 0.5-0.6x the direct convolution's time with 64 channels,
  /// 0.65-0.75x with 32, but 0.75-1.25x with 16; the weight gradient's sub-batches of 1 and 4
  /// images 0.88x and 0.6x. Decided once per layer, not per batch size, so that every batch size
  /// runs the same kernels. Their bits depend neither on the batch size (forward, input gradient:
  /// 1 to 64 images) nor on the threads (1 and 2; the weight gradient's sub-batches too), and
  /// their rounding errors are 1.5-7x the direct convolution's (all checked with oneDNN 2.6).
  /// Images only: oneDNN has no Winograd kernel for volumes.
  static bool winograd_available(const ConvolutionShape& g, std::size_t out, bool bias, dnnl::memory::data_type compute,
                                 const dnnl::engine& engine) {
    constexpr std::size_t min_channels = 32;
    if (g.rank() != 2 || g.kernel != 3 || g.stride != 1 || g.channels < min_channels || out < min_channels) return false;
    try {
      primitive_descriptors(g, out, bias, 1, dnnl::algorithm::convolution_winograd, compute, engine);
      return true;
    } catch (const dnnl::error&) {  // "could not create a primitive descriptor": no such kernel here
      return false;
    }
  }

  /// The three convolutions' descriptors for `n` images, in the layouts oneDNN chooses: inputs
  /// (src, weights, diff_dst) of type `compute`, results and bias in float.
  struct PrimitiveDescriptors {
    dnnl::convolution_forward::primitive_desc forward;
    dnnl::convolution_backward_data::primitive_desc backward_data;
    dnnl::convolution_backward_weights::primitive_desc backward_weights;
  };
  static PrimitiveDescriptors primitive_descriptors(const ConvolutionShape& g, std::size_t out, bool bias, std::size_t n,
                                                    dnnl::algorithm algorithm, dnnl::memory::data_type compute,
                                                    const dnnl::engine& engine) {
    using dims = dnnl::memory::dims;
    using forward_pd = dnnl::convolution_forward::primitive_desc;
    const auto f32 = dnnl::memory::data_type::f32;
    const auto any = [](dims d, dnnl::memory::data_type type) {
      return dnnl::memory::desc(d, type, dnnl::memory::format_tag::any);
    };
    const dims strides(g.rank(), ConvolutionShape::dim(g.stride));
    const auto dst = any(g.dst(n, out), f32), diff_dst = any(g.dst(n, out), compute);
    const auto wei = any(g.weights(out), compute), diff_wei = any(g.weights(out), f32);
    const auto bias_desc = bias ? any({ConvolutionShape::dim(out)}, f32) : dnnl::memory::desc();
    const auto forward = [&](const ConvolutionShape& s) {
      return forward_pd(dnnl::convolution_forward::desc(dnnl::prop_kind::forward_training, algorithm, any(s.src(n), compute),
                                                        wei, bias_desc, dst, strides, s.left, s.right()),
                        own_scratchpad(), engine);
    };
    // The backward descriptors take the forward one (of their shape) as their hint.
    const auto backward_weights = [&](const ConvolutionShape& s, const forward_pd& hint) {
      return dnnl::convolution_backward_weights::primitive_desc(
          dnnl::convolution_backward_weights::desc(algorithm, any(s.src(n), compute), diff_wei, bias_desc, diff_dst, strides,
                                                   s.left, s.right()),
          own_scratchpad(), engine, hint);
    };
    const forward_pd fwd = forward(g);
    return {fwd,
            dnnl::convolution_backward_data::primitive_desc(
                dnnl::convolution_backward_data::desc(algorithm, any(g.src(n), f32), wei, diff_dst, strides, g.left, g.right()),
                own_scratchpad(), engine, fwd),
            g.pads_depth() ? backward_weights(g.depth_padded(), forward(g.depth_padded())) : backward_weights(g, fwd)};
  }

  /// Primitives for `n` images of a batch of `batch` (hpf's layout strides by the whole batch).
  const Plan& plan(std::size_t n, std::size_t batch) const {
    const auto found = plans_.find({n, batch});
    if (found != plans_.end()) return found->second;
    return plans_.emplace(std::pair{n, batch}, make_plan(n, batch)).first->second;
  }
  Plan make_plan(std::size_t n, std::size_t batch) const {
    const auto f32 = dnnl::memory::data_type::f32;
    Plan p;
    // [C][B][H*W] is NCHW with strides (H*W, B*H*W, W, 1); [C][B][D*H*W] likewise NCDHW.
    p.src = dnnl::memory::desc(g_.src(n), f32, ConvolutionShape::hpf_strides(batch, g_.in));
    p.dst = dnnl::memory::desc(g_.dst(n, out_), f32, ConvolutionShape::hpf_strides(batch, g_.out));
    p.weights = dnnl::memory::desc(g_.weights(out_), f32, g_.weights_tag());
    p.bias = bias_ ? dnnl::memory::desc({ConvolutionShape::dim(out_)}, f32, dnnl::memory::format_tag::x) : dnnl::memory::desc();
    PrimitiveDescriptors d = primitive_descriptors(
        g_, out_, bias_, n, winograd_ ? dnnl::algorithm::convolution_winograd : dnnl::algorithm::convolution_direct, compute_,
        engine());
    p.forward = std::move(d.forward);
    p.backward_data = std::move(d.backward_data);
    p.backward_weights = std::move(d.backward_weights);
    p.run_forward = dnnl::convolution_forward(p.forward);
    p.run_backward_data = dnnl::convolution_backward_data(p.backward_data);
    p.run_backward_weights = dnnl::convolution_backward_weights(p.backward_weights);
    p.forward_src = activation_conversion(p.src, p.forward.src_desc(), batch);
    p.forward_weights = conversion(p.weights, p.forward.weights_desc());
    p.forward_dst = activation_conversion(p.forward.dst_desc(), p.dst, batch);
    p.data_diff_dst = activation_conversion(p.dst, p.backward_data.diff_dst_desc(), batch);
    p.data_weights = conversion(p.weights, p.backward_data.weights_desc());
    p.data_diff_src = activation_conversion(p.backward_data.diff_src_desc(), p.src, batch);
    p.weights_src = g_.pads_depth() ? padded_conversion(p.src, p.backward_weights.src_desc())
                                    : activation_conversion(p.src, p.backward_weights.src_desc(), batch);
    p.weights_diff_dst = activation_conversion(p.dst, p.backward_weights.diff_dst_desc(), batch);
    p.add_weight_grad = conversion(p.backward_weights.diff_weights_desc(), p.weights, /*add=*/true);
    if (bias_) p.add_bias_grad = conversion(p.backward_weights.diff_bias_desc(), p.bias, /*add=*/true);
    // What each phase takes from the workspace, in the order it takes it: converted inputs, the
    // primitive's result before it is converted back, every primitive's scratch memory.
    const auto result = [](const Conversion& back) { return back.needed() ? Slots::floats(back.from) : std::size_t{0}; };
    const std::size_t forward = floats(p.forward_src, true) + floats(p.forward_weights, true) + result(p.forward_dst) +
                                Slots::floats(p.forward.scratchpad_desc()) + floats(p.forward_dst, false);
    const std::size_t data_phase = floats(p.data_diff_dst, true) + floats(p.data_weights, true) + result(p.data_diff_src) +
                                   Slots::floats(p.backward_data.scratchpad_desc()) + floats(p.data_diff_src, false);
    // (The adds of group sums into hpf's gradient reuse a lane's workspace afterwards.)
    p.weights_workspace = floats(p.weights_src, true) + floats(p.weights_diff_dst, true) +
                          Slots::floats(p.backward_weights.diff_weights_desc()) +
                          (bias_ ? Slots::floats(p.backward_weights.diff_bias_desc()) : 0) +
                          Slots::floats(p.backward_weights.scratchpad_desc()) + floats(p.add_weight_grad, false) +
                          floats(p.add_bias_grad, false);
    p.workspace = std::max(forward, data_phase);
    return p;
  }

  ConvolutionShape g_;
  std::size_t out_;
  bool bias_;
  dnnl::memory::data_type compute_;
  std::shared_ptr<OneDnnDevice> device_;  // the network's engine and stream
  mutable std::map<std::pair<std::size_t, std::size_t>, Plan> plans_;         // per (images, batch)
  mutable std::map<std::pair<std::size_t, std::size_t>, Plan> weight_plans_;  // for one thread, with lanes
  mutable std::map<std::size_t, BatchCopies> batch_copies_;                     // per batch size
  std::size_t lanes_;
  bool winograd_;
  mutable std::vector<dnnl::stream> lane_streams_;  // one per lane (a stream is not shared by threads)
};

/// The vendor convolution of a float layer on the host under the network's kernel choices, in the
/// precision convolution_precision gives its channels, or none: under ConvolutionAlgorithm::gemm,
/// or with bf16 inputs oneDNN has no kernel for on this CPU (the layer's im2col + Gemm then,
/// emulated as Bf16Gemm says).
inline std::optional<OneDnnConvolution> vendor_convolution(const ConvolutionShape& g, std::size_t out, bool bias,
                                                           const KernelResources& kernels, std::size_t lanes) {
  if (kernels.convolution == ConvolutionAlgorithm::gemm) return std::nullopt;
  const bool bf16 = convolution_precision(kernels.matmul_precision, g.channels) == MatmulPrecision::bf16;
  const auto compute = bf16 ? dnnl::memory::data_type::bf16 : dnnl::memory::data_type::f32;
  if (bf16 && !OneDnnConvolution::available(g, out, bias, compute, kernels.onednn()->engine)) {
    note_bf16_emulated("oneDNN has no bf16 convolution on this CPU");
    return std::nullopt;
  }
  return std::optional<OneDnnConvolution>(std::in_place, g, out, bias, kernels.onednn(), lanes,
                                          /*winograd=*/kernels.convolution == ConvolutionAlgorithm::automatic, compute);
}

}  // namespace hpf::detail

#endif  // HPF_ENABLE_ONEDNN

#endif  // HPF_LAYERS_DETAIL_ONEDNN_CONVOLUTION_HPP
