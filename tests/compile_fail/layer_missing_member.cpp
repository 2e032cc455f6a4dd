// A user's layer that forgets one member of the layer protocol (backward_reads_output): the
// error names the member and the layer, instead of a defaulted guess or a deep template error.
// expect-message: must define static constexpr bool backward_reads_output
// expect-early: MyScale
#include <hpf/layers/bind.hpp>
#include <hpf/layers/dense.hpp>
#include <hpf/layers/flatten.hpp>
#include <hpf/layers/softmax_cross_entropy.hpp>
#include <hpf/model/sequential.hpp>

struct MyScale {
  template <class In>
  struct bind {
    using input_shape = In;
    using output_shape = In;
    static constexpr hpf::LayerCost cost{};
    static constexpr std::size_t leaves = 1;
    static constexpr bool in_place = false;
    static std::string describe() { return "MyScale"; }
    template <class T, class Space>
    using impl = hpf::InvalidBound::impl<T, Space>;
  };
};

using Model = hpf::Sequential<hpf::Input<1, 28, 28>, hpf::Flatten, MyScale, hpf::Dense<10>, hpf::SoftmaxCrossEntropy>;

static_assert(Model::valid);

int main() {}
