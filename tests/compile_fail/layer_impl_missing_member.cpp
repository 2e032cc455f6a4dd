// A user's layer whose implementation forgets one member of the run-time protocol (workspace):
// the error names the member and the layer, not a failed call deep inside the chain.
// expect-message: must define std::size_t workspace
// expect-early: MyScale
#include <hpf/layers/bind.hpp>
#include <hpf/layers/dense.hpp>
#include <hpf/layers/flatten.hpp>
#include <hpf/layers/softmax_cross_entropy.hpp>
#include <hpf/model/network.hpp>
#include <hpf/model/sequential.hpp>

struct MyScale {
  template <class In>
  struct bind {
    using input_shape = In;
    using output_shape = In;
    static constexpr hpf::LayerCost cost{};
    static constexpr std::size_t leaves = 1;
    static constexpr bool in_place = false;
    static constexpr bool backward_reads_output = false;
    static std::string describe() { return "MyScale"; }
    template <class T, class Space>
    struct impl {
      using tape_type = hpf::NoTape;
      template <class Binder>
      void bind(Binder&) {}
      void reserve(tape_type&, std::size_t) {}
      void forward(const hpf::Context<T, Space>&, hpf::ConstActivation<T, Space>, hpf::Activation<T, Space>,
                   tape_type&) const {}
      void backward(const hpf::Context<T, Space>&, hpf::ConstActivation<T, Space>, hpf::ConstActivation<T, Space>,
                    hpf::ConstActivation<T, Space>, hpf::Activation<T, Space>, tape_type&) const {}
    };
  };
};

using Model = hpf::Sequential<hpf::Input<1, 28, 28>, hpf::Flatten, MyScale, hpf::Dense<10>, hpf::SoftmaxCrossEntropy>;

int main() { hpf::Network<Model> net; }
