// SPDX-License-Identifier: MIT
#ifndef HPF_ZOO_COSMOFLOW_HPP
#define HPF_ZOO_COSMOFLOW_HPP

#include <hpf/layers/conv3d.hpp>
#include <hpf/layers/dense.hpp>
#include <hpf/layers/flatten.hpp>
#include <hpf/layers/max_pool3d.hpp>
#include <hpf/layers/mean_squared_error.hpp>
#include <hpf/layers/options.hpp>
#include <hpf/layers/relu.hpp>
#include <hpf/model/sequential.hpp>

#include <cstddef>

namespace hpf::zoo {

/// \brief CosmoFlow's 3-D CNN (Mathuriya et al., SC'18; the MLPerf HPC benchmark, ParaDL's 3-D
/// workload), scaled down: a regression from a `Channels x Size^3` volume to `Targets` values.
/// Three blocks of a 3x3x3 convolution (padding 1; 16, 32, 64 channels), ReLU and 2x2x2 max
/// pooling, then Flatten and dense layers of 128, 64 and `Targets`, trained with mean squared
/// error. Differences from the MLPerf reference (mlcommons/hpc cosmoflow/models/cosmoflow.py):
/// five convolutions of kernel 2 on 128^3 there, three here; ReLU for its LeakyReLU; no dropout
/// and a linear output for its `1.2 tanh`. Like that reference, no BatchNorm (LBANN's version makes
/// it optional, off by default); hpf::BatchNorm after a Conv3D is PyTorch's BatchNorm3d.
/// \tparam Size depth, height and width of the input volume (at least 8; a smaller one is a
/// compile error at the pooling that finds it too small)
/// \tparam Channels input channels (4 in CosmoFlow: the redshifts of the dark-matter density)
/// \tparam Targets regression outputs (4 cosmological parameters)
template <std::size_t Size = 32, std::size_t Channels = 4, std::size_t Targets = 4>
using CosmoFlow = Sequential<Input<Channels, Size, Size, Size>,          //
                             Conv3D<16, 3, Pad<1>>, ReLU, MaxPool3D<2>,  //
                             Conv3D<32, 3, Pad<1>>, ReLU, MaxPool3D<2>,  //
                             Conv3D<64, 3, Pad<1>>, ReLU, MaxPool3D<2>,  //
                             Flatten, Dense<128>, ReLU, Dense<64>, ReLU, Dense<Targets>, MeanSquaredError>;

}  // namespace hpf::zoo

#endif  // HPF_ZOO_COSMOFLOW_HPP
