// A pre-activation ResNet depth that is not 9n + 2.
// expect-message: hpf::zoo::PreActResNet: depth must be 9n \+ 2 with n >= 2
// expect-early: preact_resnet<100
#include <hpf/model/network.hpp>
#include <hpf/zoo/models.hpp>

int main() {
  hpf::Network<hpf::zoo::PreActResNet<100>> net;
  (void)net;
}
