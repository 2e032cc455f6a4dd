// SPDX-License-Identifier: MIT
#ifndef HPF_DATA_TRAIN_TEST_HPP
#define HPF_DATA_TRAIN_TEST_HPP

#include <hpf/data/dataset.hpp>

namespace hpf::data {

/// A training set and a test set, sharded alike.
struct TrainTest {
  Dataset train;
  Dataset test;
};

}  // namespace hpf::data

#endif  // HPF_DATA_TRAIN_TEST_HPP
