#include <hpf/data/synthetic.hpp>
#include <hpf/train/trainer.hpp>
#include <hpf/zoo/models.hpp>

#include <doctest/doctest.h>

#include <cmath>

TEST_CASE("PreAct ResNet-1001: one training step at batch 8 on one process") {
  using Model = hpf::zoo::PreActResNet1001;
  static_assert(Model::leaves == 3006);
  const auto train = hpf::data::synthetic_dataset(8, 3, 32, 32, 10, 1);
  hpf::TrainOptions o;
  o.batch = 8;
  o.optimizer = hpf::SgdOptions{.learning_rate = 0.1, .momentum = 0.9, .weight_decay = 5e-4};
  o.network.init = hpf::InitScheme::kaiming_normal_fan_out;
  hpf::Trainer<Model> trainer(o, train);
  auto& net = trainer.network();
  CHECK(net.parameter_count() == 10'327'706);
  const auto& last = net.tensors().back();  // the classifier's bias, updated by the step
  const auto before = net.read(net.tensor("2.0.body.2.weight"));
  const auto step = trainer.step(0, 0);
  CHECK(step.samples == 8);
  const double loss = step.loss_sum / 8;
  MESSAGE("loss after one step of ResNet-1001: ", loss);
  CHECK(std::isfinite(loss));
  CHECK(loss > 0.5);  // ten classes at the start: about ln(10)
  const auto after = net.read(net.tensor("2.0.body.2.weight"));
  CHECK(before != after);
  for (double v : net.read(last, /*gradient=*/true)) CHECK(std::isfinite(v));
}
