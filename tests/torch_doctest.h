#pragma once
// libtorch pulls in glog, whose CHECK macros would silently replace doctest's: include torch
// first, drop glog's names, then doctest.
#include <torch/torch.h>

#undef CHECK
#undef CHECK_EQ
#undef CHECK_NE
#undef CHECK_LT
#undef CHECK_LE
#undef CHECK_GT
#undef CHECK_GE
#undef CHECK_THROWS
#include <doctest/doctest.h>
