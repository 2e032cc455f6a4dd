// A CIFAR ResNet depth that is not 6n + 2.
// expect-message: hpf::zoo::CifarResNet: depth must be 6n \+ 2 with n >= 2
// expect-early: cifar_resnet<21
#include <hpf/model/network.hpp>
#include <hpf/zoo/models.hpp>

int main() {
  hpf::Network<hpf::zoo::CifarResNet<21>> net;
  (void)net;
}
