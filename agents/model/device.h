#pragma once
// Where a model runs: `model.device`, `--device` ("cpu", "cuda", "cuda:1", ...) checked against
// what this libtorch and machine offer, and a data-parallel rank's own GPU.
#include <string>

#include <torch/torch.h>

namespace turnrl::agents {

/** The device `name` names; "cuda" without an index is GPU `rank` mod the GPUs visible (rank R on
 *  GPU R; more ranks than GPUs share them). std::invalid_argument, saying why, when `name` is not a
 *  device or asks for CUDA that this libtorch or machine lacks. */
torch::Device resolve_device(const std::string& name, int rank = 0);

}  // namespace turnrl::agents
