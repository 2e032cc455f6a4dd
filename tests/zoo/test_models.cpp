#include <hpf/model/network.hpp>
#include <hpf/zoo/models.hpp>

#include <doctest/doctest.h>

// Parameter and forward-MAC counts of the reference models (shared/docs/reference.md, counted
// there from the PyTorch definitions): the compile-time facts must agree exactly.
static_assert(hpf::zoo::Mlp::cost.parameters == 669'706);
static_assert(hpf::zoo::Mlp::cost.macs == 668'672);
static_assert(hpf::zoo::Cnn::cost.parameters == 421'642);
static_assert(hpf::zoo::Cnn::cost.macs == 4'241'152);
static_assert(hpf::zoo::ResNet20::cost.parameters == 269'722);
static_assert(hpf::zoo::ResNet20::cost.macs == 40'551'040);
static_assert(hpf::zoo::CifarResNet<20, 10, hpf::zoo::Shortcut::projection>::cost.parameters == 272'474);
static_assert(hpf::zoo::CifarResNet<20, 10, hpf::zoo::Shortcut::projection>::cost.macs == 40'813'184);
static_assert(hpf::zoo::ResNet56::cost.parameters == 853'018);
static_assert(hpf::zoo::ResNet56::cost.macs == 125'485'696);
static_assert(hpf::zoo::PreActResNet164::cost.parameters == 1'703'258);
static_assert(hpf::zoo::PreActResNet164::cost.macs == 247'646'720);
static_assert(hpf::zoo::PreActResNet1001::cost.parameters == 10'327'706);
static_assert(hpf::zoo::PreActResNet1001::cost.macs == 1'490'995'712);
static_assert(hpf::zoo::Mlp::trainable && hpf::zoo::PreActResNet1001::trainable);
static_assert(std::is_same_v<hpf::zoo::ResNet56::output_shape, hpf::Shape<10>>);

TEST_CASE("zoo: run-time parameter counts equal the compile-time ones") {
  CHECK(hpf::Network<hpf::zoo::Mlp>().parameter_count() == hpf::zoo::Mlp::cost.parameters);
  CHECK(hpf::Network<hpf::zoo::Cnn>().parameter_count() == hpf::zoo::Cnn::cost.parameters);
  CHECK(hpf::Network<hpf::zoo::ResNet20>().parameter_count() == hpf::zoo::ResNet20::cost.parameters);
  CHECK(hpf::Network<hpf::zoo::PreActResNet164>().parameter_count() == hpf::zoo::PreActResNet164::cost.parameters);
}
