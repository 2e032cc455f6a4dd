#include <hpf/model/summary.hpp>
#include <hpf/zoo/models.hpp>

#include <doctest/doctest.h>

TEST_CASE("summary: one row per top-level layer with its leaf range, shapes and totals") {
  const std::string table = hpf::summary<hpf::zoo::Cnn>(64);
  MESSAGE("\n", table);
  CHECK(table.find("Conv2D(1 -> 32, 3x3, pad 1)") != std::string::npos);
  CHECK(table.find("32x28x28") != std::string::npos);
  CHECK(table.find("421,642 parameters") != std::string::npos);
  CHECK(table.find("1.629 GFLOP per training step of 64") != std::string::npos);  // reference.md: 1.629 @64
  const std::string resnet = hpf::summary<hpf::zoo::PreActResNet1001>(8);
  CHECK(resnet.find("110 x Residual") != std::string::npos);
  CHECK(resnet.find("10,327,706 parameters") != std::string::npos);
  CHECK(resnet.find("71.568 GFLOP per training step of 8") != std::string::npos);  // reference.md: 71.57 @8
}
