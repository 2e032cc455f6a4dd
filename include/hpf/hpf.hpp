// SPDX-License-Identifier: MIT
// Umbrella header: everything hpf offers. Projects that care about compile time include only the
// headers they use (each header is self-contained).
#ifndef HPF_HPF_HPP
#define HPF_HPF_HPP

#include <hpf/config.hpp>

#include <hpf/data/dataset.hpp>
#include <hpf/data/error.hpp>
#include <hpf/data/fashion_mnist.hpp>
#include <hpf/data/idx.hpp>
#include <hpf/data/npy.hpp>
#include <hpf/data/npy_dataset.hpp>
#include <hpf/data/sampler.hpp>
#include <hpf/data/shard.hpp>
#include <hpf/data/synthetic.hpp>
#include <hpf/data/train_test.hpp>
#include <hpf/io/network_tensors.hpp>
#include <hpf/io/safetensors.hpp>
#include <hpf/layers/avg_pool.hpp>
#include <hpf/layers/batch_norm.hpp>
#include <hpf/layers/bind.hpp>
#include <hpf/layers/context.hpp>
#include <hpf/layers/conv2d.hpp>
#include <hpf/layers/cost.hpp>
#include <hpf/layers/dense.hpp>
#include <hpf/layers/flatten.hpp>
#include <hpf/layers/gelu.hpp>
#include <hpf/layers/global_avg_pool.hpp>
#include <hpf/layers/identity.hpp>
#include <hpf/layers/kernel_options.hpp>
#include <hpf/layers/layer_norm.hpp>
#include <hpf/layers/loss.hpp>
#include <hpf/layers/max_pool.hpp>
#include <hpf/layers/mean_squared_error.hpp>
#include <hpf/layers/options.hpp>
#include <hpf/layers/parameters.hpp>
#include <hpf/layers/relu.hpp>
#include <hpf/layers/softmax_cross_entropy.hpp>
#include <hpf/layers/subsample_zero_pad.hpp>
#include <hpf/meta/hash.hpp>
#include <hpf/meta/type_list.hpp>
#include <hpf/meta/type_name.hpp>
#include <hpf/model/chain.hpp>
#include <hpf/model/network.hpp>
#include <hpf/model/repeat.hpp>
#include <hpf/model/residual.hpp>
#include <hpf/model/sequential.hpp>
#include <hpf/model/summary.hpp>
#include <hpf/optim/adam.hpp>
#include <hpf/optim/optimizer.hpp>
#include <hpf/optim/sgd.hpp>
#include <hpf/oracle/calibrate.hpp>
#include <hpf/oracle/memory.hpp>
#include <hpf/oracle/model_facts.hpp>
#include <hpf/oracle/model_view.hpp>
#include <hpf/oracle/predict.hpp>
#include <hpf/oracle/profile.hpp>
#include <hpf/oracle/recommend.hpp>
#include <hpf/parallel/batch_loader.hpp>
#include <hpf/parallel/gradient_reduction.hpp>
#include <hpf/parallel/local_links.hpp>
#include <hpf/parallel/partition.hpp>
#include <hpf/parallel/schedule.hpp>
#include <hpf/parallel/stage_engine.hpp>
#include <hpf/parallel/step_options.hpp>
#include <hpf/parallel/strategy.hpp>
#include <hpf/system/blas.hpp>
#include <hpf/system/runtime.hpp>
#include <hpf/tensor/math.hpp>
#include <hpf/tensor/ordered_sum.hpp>
#include <hpf/tensor/random.hpp>
#include <hpf/tensor/shape.hpp>
#include <hpf/tensor/views.hpp>
#include <hpf/trace/region.hpp>
#include <hpf/train/loop.hpp>
#include <hpf/train/options.hpp>
#include <hpf/train/progress.hpp>
#include <hpf/train/trainer.hpp>
#include <hpf/zoo/blocks.hpp>
#include <hpf/zoo/models.hpp>

#if HPF_ENABLE_MPI
#include <hpf/comm/agreement.hpp>
#include <hpf/comm/communicator.hpp>
#include <hpf/comm/environment.hpp>
#include <hpf/comm/error.hpp>
#include <hpf/comm/mpi.hpp>
#include <hpf/comm/request.hpp>
#include <hpf/comm/transfer.hpp>
#include <hpf/parallel/gradient_buckets.hpp>
#include <hpf/parallel/grid.hpp>
#include <hpf/parallel/mpi_links.hpp>
#include <hpf/train/fit.hpp>
#endif

#endif  // HPF_HPF_HPP
