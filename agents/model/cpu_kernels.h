#pragma once
// Fused float32 kernels for the Qwen2 decoder on CPU: sampling, scoring and, each with its backward
// kernel, training. Each does in one pass over memory what the torch expression in qwen2_model.cpp
// does in several: for a model with 16-wide heads those passes, not the weight products, were most
// of the forward's and the update's time. The torch expressions remain the path for other devices
// and dtypes. The kernels are not autograd functions themselves: qwen2_model.cpp wraps them.
#include <tuple>
#include <utility>

#include <ATen/core/Tensor.h>

namespace turnrl::agents::cpu_kernels {

/** The instruction set the kernels run with: "avx512", "avx2" or "baseline" (the widest the CPU
 *  supports, capped by the environment variable TURNRL_CPU_KERNELS). */
const char* instruction_set();

/** Threads a large attention call is split over: by default the hardware's cores, as the BLAS uses
 *  (torch's own intra-op pool stays at its default, which spins against the BLAS's threads). */
void set_threads(int threads);

/** True when `x` is a float32 CPU tensor: the kernels below apply. */
bool supports(const at::Tensor& x);

/** x * rsqrt(mean(x^2, -1) + eps) * weight over the last dimension. */
at::Tensor rms_norm(const at::Tensor& x, const at::Tensor& weight, double eps);

/** The gradients of rms_norm's x and weight given its output's gradient (autograd may be on). */
std::pair<at::Tensor, at::Tensor> rms_norm_backward(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& grad_out,
                                                    double eps);

/** Rotary embedding in place: x [B, L, heads, D] with contiguous heads, position rows equally
 *  spaced (a column slice of a wider matrix will do); cos, sin [B, 1, L, D] contiguous. */
void rotate_(const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin);

/**
 * Softmax attention with grouped-query heads. q [B, L, H, D] with each position's heads contiguous
 * (already rotated, not scaled), k, v [B, KV, T, D] with contiguous rows, H a multiple of KV:
 * views of one q/k/v product will do. key_mask [B, T] bool. Query i (cache index T - L + i) sees
 * key j when j <= T - L + i and key_mask[b, j]; a query that sees no key gets zeros.
 * Returns [B, L, H * D].
 */
at::Tensor attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, const at::Tensor& key_mask);

/**
 * The gradients of attention()'s q, k and v given its output's gradient grad_out [B, L, H * D]
 * (contiguous), written into grad_q, grad_k and grad_v, each shaped and laid out as its input
 * (views of one tensor shaped like the q/k/v product will do). Nothing of the forward is kept:
 * each row's probabilities are computed again, so no [B, H, L, T] tensor is ever made.
 */
void attention_backward(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, const at::Tensor& key_mask,
                        const at::Tensor& grad_out, const at::Tensor& grad_q, const at::Tensor& grad_k, const at::Tensor& grad_v);

/** silu(gate) * up for gate_up [..., 2m] holding gate then up: returns [..., m]. */
at::Tensor silu_gate(const at::Tensor& gate_up);

/** The gradient of silu_gate's input [..., 2m] given its output's gradient [..., m]. */
at::Tensor silu_gate_backward(const at::Tensor& gate_up, const at::Tensor& grad_out);

}  // namespace turnrl::agents::cpu_kernels
