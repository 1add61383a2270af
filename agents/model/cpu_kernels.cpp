#include "agents/model/cpu_kernels.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <condition_variable>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <limits>
#include <mutex>
#include <stdexcept>
#include <string>
#include <system_error>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <ATen/core/grad_mode.h>  // at::GradMode: ATen.h no longer brings it in libtorch 2.x

// GCC vector extensions: each kernel is written once over a vector width and compiled for every
// instruction set (AVX-512 with 16 lanes, AVX2 with 8, the baseline with 4); the widest the CPU
// supports is picked at the first call. The helpers are always inlined into those per-target
// functions, so no vector value crosses a call and GCC's note on wide-vector ABIs does not apply.
#pragma GCC diagnostic ignored "-Wpsabi"

namespace turnrl::agents::cpu_kernels {
namespace {

template <int Lanes>
struct Simd {
  typedef float Vec __attribute__((vector_size(Lanes * sizeof(float))));
  typedef int32_t Mask __attribute__((vector_size(Lanes * sizeof(int32_t))));
  typedef uint32_t Bits __attribute__((vector_size(Lanes * sizeof(uint32_t))));
};
template <int Lanes>
using Vec = typename Simd<Lanes>::Vec;
template <int Lanes>
using Mask = typename Simd<Lanes>::Mask;

constexpr float kInf = std::numeric_limits<float>::infinity();

template <int Lanes>
[[gnu::always_inline]] inline Vec<Lanes> load(const float* p) {
  Vec<Lanes> v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
template <int Lanes>
[[gnu::always_inline]] inline void store(float* p, const Vec<Lanes>& v) {
  std::memcpy(p, &v, sizeof v);
}
template <int Lanes>
[[gnu::always_inline]] inline Vec<Lanes> splat(float x) {
  return Vec<Lanes>{} + x;
}
template <int Lanes>
[[gnu::always_inline]] inline Vec<Lanes> select(const Mask<Lanes>& mask, const Vec<Lanes>& yes, const Vec<Lanes>& no) {
  return mask ? yes : no;
}

template <int Lanes, size_t... I>
[[gnu::always_inline]] inline Vec<Lanes / 2> lower_half(const Vec<Lanes>& v, std::index_sequence<I...>) {
  return __builtin_shufflevector(v, v, I...);
}
template <int Lanes, size_t... I>
[[gnu::always_inline]] inline Vec<Lanes / 2> upper_half(const Vec<Lanes>& v, std::index_sequence<I...>) {
  return __builtin_shufflevector(v, v, (I + Lanes / 2)...);
}
template <int Lanes>
[[gnu::always_inline]] inline float hsum(const Vec<Lanes>& v) {
  if constexpr (Lanes == 4) {
    return (v[0] + v[1]) + (v[2] + v[3]);
  } else {
    constexpr auto half = std::make_index_sequence<Lanes / 2>();
    return hsum<Lanes / 2>(lower_half<Lanes>(v, half) + upper_half<Lanes>(v, half));
  }
}
template <int Lanes>
[[gnu::always_inline]] inline float hmax(const Vec<Lanes>& v) {
  if constexpr (Lanes == 4) {
    return std::max(std::max(v[0], v[1]), std::max(v[2], v[3]));
  } else {
    constexpr auto half = std::make_index_sequence<Lanes / 2>();
    const Vec<Lanes / 2> low = lower_half<Lanes>(v, half), high = upper_half<Lanes>(v, half);
    return hmax<Lanes / 2>(low > high ? low : high);
  }
}

constexpr float kLog2e = 1.44269504088896341f;

/** 2^x for x in [-126, 127] (clamped there): x = n + r with n an integer and |r| <= 1/2, 2^r by
 *  its degree-6 Taylor polynomial (relative error ~1.2e-7), 2^n added to the exponent bits.
 *  Base 2 saves the two-step ln 2 range reduction of e^x; callers fold log2(e) into a scale. */
template <int Lanes>
[[gnu::always_inline]] inline Vec<Lanes> exp2_approx(const Vec<Lanes>& argument) {
  using V = Vec<Lanes>;
  using Bits = typename Simd<Lanes>::Bits;
  V x = argument < -126.0f ? splat<Lanes>(-126.0f) : argument;
  x = x > 127.0f ? splat<Lanes>(127.0f) : x;
  constexpr float kRound = 12582912.0f;  // 1.5 * 2^23: x + kRound holds round(x) in its low mantissa bits
  const V shifted = x + kRound;
  const V r = x - (shifted - kRound);
  V p = splat<Lanes>(1.5403530393381606e-4f);
  p = p * r + 1.3333558146428443e-3f;
  p = p * r + 9.6181291076284772e-3f;
  p = p * r + 5.5504108664821580e-2f;
  p = p * r + 2.4022650695910071e-1f;
  p = p * r + 6.9314718055994531e-1f;
  p = p * r + 1.0f;
  // The low bits of `shifted` are round(x) in two's complement; shifted left by 23 they are 2^n's
  // exponent field, and the bits above (1.5 * 2^23's) leave the word.
  const Bits exponent = __builtin_bit_cast(Bits, shifted) << 23;
  return __builtin_bit_cast(V, __builtin_bit_cast(Bits, p) + exponent);  // the builtin: a library call would cross the vector ABI at -O0
}

template <int Lanes>
[[gnu::always_inline]] inline void rms_norm_rows(const float* x, const float* weight, float* out, int64_t rows,
                                                 int64_t dim, float eps) {
  for (int64_t row = 0; row < rows; ++row, x += dim, out += dim) {
    Vec<Lanes> squares{};
    int64_t d = 0;
    for (; d + Lanes <= dim; d += Lanes) squares += load<Lanes>(x + d) * load<Lanes>(x + d);
    float sum = hsum<Lanes>(squares);
    for (; d < dim; ++d) sum += x[d] * x[d];
    const float inverse = 1.0f / std::sqrt(sum / static_cast<float>(dim) + eps);
    for (d = 0; d + Lanes <= dim; d += Lanes) store<Lanes>(out + d, load<Lanes>(x + d) * inverse * load<Lanes>(weight + d));
    for (; d < dim; ++d) out[d] = x[d] * inverse * weight[d];
  }
}

template <int Lanes>
[[gnu::always_inline]] inline void silu_gate_span(const float* gate, const float* up, float* out, int64_t n) {
  int64_t i = 0;
  for (; i + Lanes <= n; i += Lanes) {
    const Vec<Lanes> g = load<Lanes>(gate + i);
    store<Lanes>(out + i, g / (1.0f + exp2_approx<Lanes>(g * -kLog2e)) * load<Lanes>(up + i));
  }
  for (; i < n; ++i) out[i] = gate[i] / (1.0f + std::exp(-gate[i])) * up[i];
}

// Per row, with r = rsqrt(mean(x^2) + eps): grad_x = r g w - x r^3 mean(g w x), and the row's
// g x r added to grad_weight.
template <int Lanes>
[[gnu::always_inline]] inline void rms_norm_backward_rows(const float* x, const float* weight, const float* grad, float* grad_x,
                                                          float* grad_weight, int64_t rows, int64_t dim, float eps) {
  using V = Vec<Lanes>;
  for (int64_t row = 0; row < rows; ++row, x += dim, grad += dim, grad_x += dim) {
    V squares{}, dots{};
    int64_t d = 0;
    for (; d + Lanes <= dim; d += Lanes) {
      const V xv = load<Lanes>(x + d);
      squares += xv * xv;
      dots += load<Lanes>(grad + d) * load<Lanes>(weight + d) * xv;
    }
    float sum = hsum<Lanes>(squares), dot = hsum<Lanes>(dots);
    for (; d < dim; ++d) {
      sum += x[d] * x[d];
      dot += grad[d] * weight[d] * x[d];
    }
    const float inverse = 1.0f / std::sqrt(sum / static_cast<float>(dim) + eps);
    const float correction = inverse * inverse * inverse * dot / static_cast<float>(dim);
    for (d = 0; d + Lanes <= dim; d += Lanes) {
      const V xv = load<Lanes>(x + d), gv = load<Lanes>(grad + d);
      store<Lanes>(grad_x + d, gv * load<Lanes>(weight + d) * inverse - xv * correction);
      store<Lanes>(grad_weight + d, load<Lanes>(grad_weight + d) + gv * xv * inverse);
    }
    for (; d < dim; ++d) {
      grad_x[d] = grad[d] * weight[d] * inverse - x[d] * correction;
      grad_weight[d] += grad[d] * x[d] * inverse;
    }
  }
}

// With s = sigmoid(gate): d gate = g up s (1 + gate (1 - s)), d up = g gate s.
template <int Lanes>
[[gnu::always_inline]] inline void silu_gate_backward_span(const float* gate, const float* up, const float* grad, float* grad_gate,
                                                           float* grad_up, int64_t n) {
  using V = Vec<Lanes>;
  int64_t i = 0;
  for (; i + Lanes <= n; i += Lanes) {
    const V a = load<Lanes>(gate + i), g = load<Lanes>(grad + i);
    const V s = 1.0f / (1.0f + exp2_approx<Lanes>(a * -kLog2e));
    store<Lanes>(grad_gate + i, g * load<Lanes>(up + i) * s * (1.0f + a * (1.0f - s)));
    store<Lanes>(grad_up + i, g * a * s);
  }
  for (; i < n; ++i) {
    const float s = 1.0f / (1.0f + std::exp(-gate[i]));
    grad_gate[i] = grad[i] * up[i] * s * (1.0f + gate[i] * (1.0f - s));
    grad_up[i] = grad[i] * gate[i] * s;
  }
}

// x[d] = x[d] cos[d] - x[d + half] sin[d], x[d + half] = x[d + half] cos[d + half] + x[d] sin[d + half]
// for each head of each row, Width values of d at a time.
template <int Width>
[[gnu::always_inline]] inline void rotate_rows_by(float* x, const float* cos, const float* sin, int64_t rows,
                                                  int64_t row_stride, int64_t heads, int64_t dim) {
  const int64_t half = dim / 2;
  for (int64_t row = 0; row < rows; ++row, cos += dim, sin += dim) {
    float* head = x + row * row_stride;
    for (int64_t h = 0; h < heads; ++h, head += dim) {
      for (int64_t d = 0; d < half; d += Width) {
        const Vec<Width> first = load<Width>(head + d), second = load<Width>(head + d + half);
        store<Width>(head + d, first * load<Width>(cos + d) - second * load<Width>(sin + d));
        store<Width>(head + d + half, second * load<Width>(cos + d + half) + first * load<Width>(sin + d + half));
      }
    }
  }
}

template <int Lanes>
[[gnu::always_inline]] inline void rotate_rows(float* x, const float* cos, const float* sin, int64_t rows,
                                               int64_t row_stride, int64_t heads, int64_t dim) {
  const int64_t half = dim / 2;
  if constexpr (Lanes > 4) {
    if (half % Lanes == 0) return rotate_rows_by<Lanes>(x, cos, sin, rows, row_stride, heads, dim);
    if (half % (Lanes / 2) == 0) return rotate_rows_by<Lanes / 2>(x, cos, sin, rows, row_stride, heads, dim);
  }
  if (half % 4 == 0) return rotate_rows_by<4>(x, cos, sin, rows, row_stride, heads, dim);
  rotate_rows_by<1>(x, cos, sin, rows, row_stride, heads, dim);
}

/** One batch row and KV head: the query heads that share its keys, every query position. */
struct Group {
  const float* q;  // query i of head h at q + i * q_row_stride + h * dim
  float* out;      // its output at out + i * out_row_stride + h * dim
  int64_t q_row_stride, out_row_stride;
  const float* k;  // key t at k + t * k_row_stride (likewise v)
  const float* v;
  int64_t k_row_stride, v_row_stride;
  const bool* key_mask;
  int64_t length, total, heads, dim;
};

constexpr int64_t kMaxLanes = 16;  // scratch rows are padded to this, whatever the width in use

int64_t round_up(int64_t n, int64_t m) { return (n + m - 1) / m * m; }

/** Scratch for one group: its gathered keys transposed [dim][keys], their values [keys][dim
 *  padded], a key bias, the keys each query position sees, and the scores of up to kMaxTileRows rows. */
constexpr int64_t kMaxTileRows = 8;
int64_t scratch_floats(int64_t dim, int64_t total) {
  const int64_t keys = round_up(total, kMaxLanes);
  return keys * (dim + round_up(dim, kMaxLanes) + 2 + kMaxTileRows);
}

struct GroupScratch {
  const float* keys_t;   // [dim][keys]
  const float* values;   // [keys][value_stride], zero beyond dim
  const float* bias;     // [keys]: 0 for a real key, -inf for a masked one and beyond the last
  const float* visible;  // [length]: query i sees the first visible[i] gathered keys
  float* scores;         // [rows][keys]
  int64_t keys, value_stride;
};

// out[r][column ..] = normaliser[r] * sum_j scores[r][j] * values[j][column ..], Columns vectors wide.
template <int Lanes, int Rows, int Columns>
[[gnu::always_inline]] inline void accumulate_values(const GroupScratch& s, int64_t keys_seen, int64_t column,
                                                     float* const* out, const float* normaliser, int64_t dim) {
  using V = Vec<Lanes>;
  V acc[Rows][Columns] = {};
  for (int64_t j = 0; j < keys_seen; ++j) {
    const float* value_row = s.values + j * s.value_stride + column;
    V value[Columns];
    for (int c = 0; c < Columns; ++c) value[c] = load<Lanes>(value_row + c * Lanes);
    for (int r = 0; r < Rows; ++r) {
      const float p = s.scores[r * s.keys + j];
      for (int c = 0; c < Columns; ++c) acc[r][c] += p * value[c];
    }
  }
  for (int r = 0; r < Rows; ++r) {
    for (int c = 0; c < Columns && column + c * Lanes < dim; ++c) {
      const V result = acc[r][c] * normaliser[r];
      const int64_t width = std::min<int64_t>(Lanes, dim - column - c * Lanes);
      std::memcpy(out[r] + column + c * Lanes, &result, width * sizeof(float));
    }
  }
}

// Rows (head, position) first .. first + Rows - 1 of a group: scores along the keys against the
// transposed keys, masked softmax in place, then probabilities times value rows. Rows independent
// accumulators hide the multiply-add latency.
template <int Lanes, int Rows>
[[gnu::always_inline]] inline void attend_tile(const Group& g, const GroupScratch& s, int64_t first) {
  using V = Vec<Lanes>;
  const int64_t dim = g.dim;
  const float* q[Rows];
  float* out[Rows];
  float visible[Rows];  // the row sees keys [0, visible)
  int64_t blocks = 0;
  for (int r = 0; r < Rows; ++r) {
    const int64_t head = (first + r) / g.length, i = (first + r) % g.length;
    q[r] = g.q + i * g.q_row_stride + head * dim;
    out[r] = g.out + i * g.out_row_stride + head * dim;
    visible[r] = s.visible[i];
    blocks = std::max(blocks, (static_cast<int64_t>(visible[r]) + Lanes - 1) / Lanes);
  }
  const float scale = kLog2e / std::sqrt(static_cast<float>(dim));  // scores in base 2: softmax is the same
  V lane_index;
  for (int l = 0; l < Lanes; ++l) lane_index[l] = static_cast<float>(l);
  V row_max[Rows];
  for (auto& m : row_max) m = splat<Lanes>(-kInf);
  for (int64_t block = 0; block < blocks; ++block) {
    const int64_t at = block * Lanes;
    V dot[Rows] = {};
    for (int64_t d = 0; d < dim; ++d) {
      const V key = load<Lanes>(s.keys_t + d * s.keys + at);
      for (int r = 0; r < Rows; ++r) dot[r] += q[r][d] * key;
    }
    const V index = lane_index + static_cast<float>(at), key_bias = load<Lanes>(s.bias + at);
    for (int r = 0; r < Rows; ++r) {
      const V score = select<Lanes>(index < visible[r], dot[r] * scale + key_bias, splat<Lanes>(-kInf));
      store<Lanes>(s.scores + r * s.keys + at, score);
      row_max[r] = select<Lanes>(score > row_max[r], score, row_max[r]);
    }
  }
  float normaliser[Rows];
  for (int r = 0; r < Rows; ++r) {
    const float highest = hmax<Lanes>(row_max[r]);
    const V max = splat<Lanes>(highest == -kInf ? 0.0f : highest);  // no visible key: every score stays -inf
    V sum{};
    for (int64_t block = 0; block < blocks; ++block) {
      float* p = s.scores + r * s.keys + block * Lanes;
      const V score = load<Lanes>(p);
      const V prob = select<Lanes>(score > -kInf, exp2_approx<Lanes>(score - max), V{});
      store<Lanes>(p, prob);
      sum += prob;
    }
    const float total = hsum<Lanes>(sum);
    normaliser[r] = total > 0.0f ? 1.0f / total : 0.0f;  // no visible key: zeros
  }
  // Value vectors per pass: Rows x Columns accumulators must fit the vector registers.
  constexpr int kColumns = Lanes == 16 || Rows <= 4 ? 2 : 1;
  const int64_t keys_seen = blocks * Lanes;
  int64_t column = 0;
  for (; column + kColumns * Lanes <= s.value_stride; column += kColumns * Lanes) {
    accumulate_values<Lanes, Rows, kColumns>(s, keys_seen, column, out, normaliser, dim);
  }
  for (; column < s.value_stride; column += Lanes) accumulate_values<Lanes, Rows, 1>(s, keys_seen, column, out, normaliser, dim);
}

// Row t of a [total, dim] matrix (at src + t * row_stride) into column t of dst [dim][keys].
inline void transpose_rows(const float* src, int64_t row_stride, int64_t total, int64_t dim, int64_t keys, float* dst) {
  for (int64_t t = 0; t < total; ++t) {
    for (int64_t d = 0; d < dim; ++d) dst[d * keys + t] = src[t * row_stride + d];
  }
}

// bias[t]: 0 for a real key, -inf for padding and for the columns t >= total up to keys.
inline void key_bias(const bool* key_mask, int64_t total, int64_t keys, float* bias) {
  for (int64_t t = 0; t < total; ++t) bias[t] = key_mask[t] ? 0.0f : -kInf;
  std::fill(bias + total, bias + keys, -kInf);
}

/** Runs `tile.operator()<Rows>(first)` over `rows` query rows: wide tiles where the registers allow,
 *  single rows for the rest (a decoding step has few rows). Both scratch layouts hold kMaxTileRows.
 *  A `tile` lambda must be always_inline: otherwise its operator() is a function of its own, built
 *  for the baseline target, and the wide vectors go through SSE registers (8x slower). */
template <int Lanes, class Tile>
[[gnu::always_inline]] inline void for_each_tile(int64_t rows, Tile&& tile) {
  constexpr int kWide = Lanes == 16 ? 8 : 4;
  static_assert(kWide <= kMaxTileRows, "scratch_floats and backward_scratch_floats size kMaxTileRows rows");
  int64_t first = 0;
  for (; first + kWide <= rows; first += kWide) tile.template operator()<kWide>(first);
  for (; first < rows; ++first) tile.template operator()<1>(first);
}

// Blocks of Lanes keys none of which is real are left out, so masked runs cost next to nothing: a
// batch's left padding, the gap before a shorter slot's prefill, a decoding row's keys beyond its
// length. Gathered keys keep their lane and order, and a left-out block only ever added zeros, so
// the output is bit for bit the full pass's. Query i (key index past + i) sees the gathered keys
// up to that one.
template <int Lanes>
[[gnu::always_inline]] inline void attend(const Group& g, float* scratch) {
  const int64_t dim = g.dim, keys = round_up(g.total, kMaxLanes), value_stride = round_up(dim, Lanes), past = g.total - g.length;
  float* const keys_t = scratch;
  float* const values = keys_t + dim * keys;
  float* const bias = values + keys * value_stride;
  float* const visible = bias + keys;
  std::fill(keys_t, bias, 0.0f);
  int64_t gathered = 0;  // keys gathered so far: a multiple of Lanes before the last block
  for (int64_t start = 0; start < g.total; start += Lanes) {
    const int64_t end = std::min(start + Lanes, g.total);
    const bool any_real = std::find(g.key_mask + start, g.key_mask + end, true) != g.key_mask + end;
    for (int64_t t = std::max(start, past); t < end; ++t) {
      visible[t - past] = static_cast<float>(any_real ? gathered + (t - start) + 1 : gathered);
    }
    if (!any_real) continue;
    transpose_rows(g.k + start * g.k_row_stride, g.k_row_stride, end - start, dim, keys, keys_t + gathered);
    for (int64_t t = start; t < end; ++t) {
      std::memcpy(values + (gathered + t - start) * value_stride, g.v + t * g.v_row_stride, dim * sizeof(float));
    }
    key_bias(g.key_mask + start, end - start, end - start, bias + gathered);
    gathered += end - start;
  }
  std::fill(bias + gathered, bias + keys, -kInf);
  const GroupScratch s{keys_t, values, bias, visible, visible + keys, keys, value_stride};
  for_each_tile<Lanes>(g.heads * g.length, [&]<int Rows>(int64_t first) __attribute__((always_inline)) { attend_tile<Lanes, Rows>(g, s, first); });
}

/** The gradients of one group's attention: as Group, plus the output's gradient in and the q, k and v
 *  gradients out (k and v rows contiguous: key t at k + t * dim). */
struct GradGroup {
  const float* q;  // query i of head h at q + i * q_row_stride + h * dim (grad_q likewise)
  float* grad_q;
  int64_t q_row_stride;
  const float* grad_out;  // at grad_out + i * out_row_stride + h * dim
  int64_t out_row_stride;
  const float* k;  // key t at k + t * k_row_stride (grad_k likewise; v and grad_v with v_row_stride)
  const float* v;
  float* grad_k;
  float* grad_v;
  int64_t k_row_stride, v_row_stride;
  const bool* key_mask;
  int64_t length, total, heads, dim;
};

/** Scratch for one backward group: keys, values and their gradients transposed [dim][keys] each,
 *  a key bias, and the probability and gradient rows of up to kMaxTileRows rows. */
int64_t backward_scratch_floats(int64_t dim, int64_t total) {
  return round_up(total, kMaxLanes) * (4 * dim + 1 + 2 * kMaxTileRows);
}

struct GradScratch {
  const float* keys_t;    // [dim][keys]
  const float* values_t;  // [dim][keys]
  float* grad_keys_t;     // [dim][keys]
  float* grad_values_t;   // [dim][keys]
  const float* bias;      // [keys]: 0 for a real key, -inf for padding and beyond total
  float* probs;           // [rows][keys]
  float* grad_probs;      // [rows][keys]: dp, then ds
  int64_t keys;
};

// One row's probabilities again from its scores (in place), then its dp becomes
// ds = p (dp - p . dp) / sqrt(dim). A row that sees no key gets zeros for both.
template <int Lanes>
[[gnu::always_inline]] inline void softmax_backward_row(float* probs, float* grad_probs, int64_t seen, float highest, float scale) {
  using V = Vec<Lanes>;
  const V max = splat<Lanes>(highest == -kInf ? 0.0f : highest);
  V sum{};
  for (int64_t at = 0; at < seen; at += Lanes) {
    const V score = load<Lanes>(probs + at);
    const V prob = select<Lanes>(score > -kInf, exp2_approx<Lanes>(score - max), V{});
    store<Lanes>(probs + at, prob);
    sum += prob;
  }
  const float total = hsum<Lanes>(sum);
  const float normaliser = total > 0.0f ? 1.0f / total : 0.0f;
  V expected_grad{};
  for (int64_t at = 0; at < seen; at += Lanes) {
    const V prob = load<Lanes>(probs + at) * normaliser;
    store<Lanes>(probs + at, prob);
    expected_grad += prob * load<Lanes>(grad_probs + at);
  }
  const float mean_grad = hsum<Lanes>(expected_grad);
  for (int64_t at = 0; at < seen; at += Lanes) {
    store<Lanes>(grad_probs + at, load<Lanes>(probs + at) * (load<Lanes>(grad_probs + at) - mean_grad) * scale);
  }
}

// Rows first .. first + Rows - 1 of a group, position-major (row = position * heads + head) so that
// a tile's rows see nearly the same keys. Along the keys: scores and dp_j = dout . v_j with the
// rows' accumulators in registers, each row's softmax backward, dq = sum_j ds_j k_j, and the
// group's dk_j += ds_j q, dv_j += p_j dout, each key block loaded once for all the tile's rows.
template <int Lanes, int Rows>
[[gnu::always_inline]] inline void attend_backward_tile(const GradGroup& g, const GradScratch& s, int64_t first) {
  using V = Vec<Lanes>;
  const int64_t dim = g.dim, keys = s.keys, past = g.total - g.length;
  const float* q[Rows];
  const float* grad_out[Rows];
  float* grad_q[Rows];
  float visible[Rows];  // the row sees keys [0, visible)
  int64_t blocks = 0;
  for (int r = 0; r < Rows; ++r) {
    const int64_t i = (first + r) / g.heads, head_offset = (first + r) % g.heads * dim;
    q[r] = g.q + i * g.q_row_stride + head_offset;
    grad_q[r] = g.grad_q + i * g.q_row_stride + head_offset;
    grad_out[r] = g.grad_out + i * g.out_row_stride + head_offset;
    visible[r] = static_cast<float>(past + i + 1);
    blocks = std::max(blocks, (past + i + Lanes) / Lanes);
  }
  const int64_t seen = blocks * Lanes;
  const float scale = 1.0f / std::sqrt(static_cast<float>(dim)), scale2 = kLog2e * scale;  // as the forward: base 2
  V lane_index;
  for (int l = 0; l < Lanes; ++l) lane_index[l] = static_cast<float>(l);
  V row_max[Rows];
  for (auto& m : row_max) m = splat<Lanes>(-kInf);
  for (int64_t at = 0; at < seen; at += Lanes) {
    V dot[Rows] = {}, grad_prob[Rows] = {};
    for (int64_t d = 0; d < dim; ++d) {
      const V key = load<Lanes>(s.keys_t + d * keys + at), value = load<Lanes>(s.values_t + d * keys + at);
      for (int r = 0; r < Rows; ++r) {
        dot[r] += q[r][d] * key;
        grad_prob[r] += grad_out[r][d] * value;
      }
    }
    const V index = lane_index + static_cast<float>(at), key_bias = load<Lanes>(s.bias + at);
    for (int r = 0; r < Rows; ++r) {
      const V score = select<Lanes>(index < visible[r], dot[r] * scale2 + key_bias, splat<Lanes>(-kInf));
      store<Lanes>(s.probs + r * keys + at, score);
      store<Lanes>(s.grad_probs + r * keys + at, grad_prob[r]);
      row_max[r] = select<Lanes>(score > row_max[r], score, row_max[r]);
    }
  }
  for (int r = 0; r < Rows; ++r) {
    softmax_backward_row<Lanes>(s.probs + r * keys, s.grad_probs + r * keys, seen, hmax<Lanes>(row_max[r]), scale);
  }
  for (int64_t d = 0; d < dim; ++d) {
    V dot[Rows] = {};
    for (int64_t at = 0; at < seen; at += Lanes) {
      const V key = load<Lanes>(s.keys_t + d * keys + at);
      for (int r = 0; r < Rows; ++r) dot[r] += load<Lanes>(s.grad_probs + r * keys + at) * key;
    }
    for (int r = 0; r < Rows; ++r) grad_q[r][d] = hsum<Lanes>(dot[r]);
  }
  for (int64_t at = 0; at < seen; at += Lanes) {
    V ds[Rows], prob[Rows];
    for (int r = 0; r < Rows; ++r) {
      ds[r] = load<Lanes>(s.grad_probs + r * keys + at);
      prob[r] = load<Lanes>(s.probs + r * keys + at);
    }
    for (int64_t d = 0; d < dim; ++d) {
      V grad_key = load<Lanes>(s.grad_keys_t + d * keys + at), grad_value = load<Lanes>(s.grad_values_t + d * keys + at);
      for (int r = 0; r < Rows; ++r) {
        grad_key += q[r][d] * ds[r];
        grad_value += grad_out[r][d] * prob[r];
      }
      store<Lanes>(s.grad_keys_t + d * keys + at, grad_key);
      store<Lanes>(s.grad_values_t + d * keys + at, grad_value);
    }
  }
}

// A group's gradients, tile by tile.
template <int Lanes>
[[gnu::always_inline]] inline void attend_backward(const GradGroup& g, float* scratch) {
  const int64_t dim = g.dim, keys = round_up(g.total, kMaxLanes);
  float* const keys_t = scratch;
  float* const values_t = keys_t + dim * keys;
  float* const grad_keys_t = values_t + dim * keys;
  float* const grad_values_t = grad_keys_t + dim * keys;
  float* const bias = grad_values_t + dim * keys;
  float* const probs = bias + keys;
  std::fill(keys_t, bias, 0.0f);
  transpose_rows(g.k, g.k_row_stride, g.total, dim, keys, keys_t);
  transpose_rows(g.v, g.v_row_stride, g.total, dim, keys, values_t);
  key_bias(g.key_mask, g.total, keys, bias);
  const GradScratch s{keys_t, values_t, grad_keys_t, grad_values_t, bias, probs, probs + kMaxTileRows * keys, keys};
  for_each_tile<Lanes>(g.heads * g.length, [&]<int Rows>(int64_t first) __attribute__((always_inline)) { attend_backward_tile<Lanes, Rows>(g, s, first); });
  for (int64_t t = 0; t < g.total; ++t) {
    for (int64_t d = 0; d < dim; ++d) {
      g.grad_k[t * g.k_row_stride + d] = grad_keys_t[d * keys + t];
      g.grad_v[t * g.v_row_stride + d] = grad_values_t[d * keys + t];
    }
  }
}

/** The vector kernels compiled for one instruction set. */
struct KernelSet {
  const char* name;
  void (*rms_norm_rows)(const float*, const float*, float*, int64_t, int64_t, float);
  void (*rms_norm_backward_rows)(const float*, const float*, const float*, float*, float*, int64_t, int64_t, float);
  void (*silu_gate_span)(const float*, const float*, float*, int64_t);
  void (*silu_gate_backward_span)(const float*, const float*, const float*, float*, float*, int64_t);
  void (*rotate_rows)(float*, const float*, const float*, int64_t, int64_t, int64_t, int64_t);
  void (*attend)(const Group&, float*);
  void (*attend_backward)(const GradGroup&, float*);
};

#define TURNRL_KERNEL_SET(NAME, TARGET, LANES)                                                                    \
  TARGET void NAME##_rms_norm_rows(const float* x, const float* w, float* out, int64_t rows, int64_t dim, float eps) { \
    rms_norm_rows<LANES>(x, w, out, rows, dim, eps);                                                             \
  }                                                                                                               \
  TARGET void NAME##_rms_norm_backward_rows(const float* x, const float* w, const float* g, float* gx, float* gw,    \
                                            int64_t rows, int64_t dim, float eps) {                               \
    rms_norm_backward_rows<LANES>(x, w, g, gx, gw, rows, dim, eps);                                               \
  }                                                                                                               \
  TARGET void NAME##_silu_gate_span(const float* gate, const float* up, float* out, int64_t n) {                  \
    silu_gate_span<LANES>(gate, up, out, n);                                                                      \
  }                                                                                                               \
  TARGET void NAME##_silu_gate_backward_span(const float* gate, const float* up, const float* g, float* gg, float* gu, \
                                             int64_t n) {                                                          \
    silu_gate_backward_span<LANES>(gate, up, g, gg, gu, n);                                                       \
  }                                                                                                               \
  TARGET void NAME##_rotate_rows(float* x, const float* cos, const float* sin, int64_t rows, int64_t row_stride,    \
                                 int64_t heads, int64_t dim) {                                                    \
    rotate_rows<LANES>(x, cos, sin, rows, row_stride, heads, dim);                                                \
  }                                                                                                               \
  TARGET void NAME##_attend(const Group& g, float* scratch) { attend<LANES>(g, scratch); }                         \
  TARGET void NAME##_attend_backward(const GradGroup& g, float* scratch) { attend_backward<LANES>(g, scratch); }    \
  constexpr KernelSet NAME{#NAME,                    NAME##_rms_norm_rows,   NAME##_rms_norm_backward_rows,     \
                           NAME##_silu_gate_span,    NAME##_silu_gate_backward_span, NAME##_rotate_rows,         \
                           NAME##_attend,            NAME##_attend_backward};

TURNRL_KERNEL_SET(baseline, , 4)
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define TURNRL_X86_KERNELS 1
TURNRL_KERNEL_SET(avx2, [[gnu::target("arch=x86-64-v3")]], 8)
TURNRL_KERNEL_SET(avx512, [[gnu::target("arch=x86-64-v4")]], 16)
#endif
#undef TURNRL_KERNEL_SET

// The widest set the CPU supports; TURNRL_CPU_KERNELS caps it (avx512, avx2, baseline) so that the
// narrower sets can be tested and compared on a wide CPU.
const KernelSet& choose_kernels() {
  const char* cap = std::getenv("TURNRL_CPU_KERNELS");
  const std::string widest = cap ? cap : "avx512";
  if (widest != "avx512" && widest != "avx2" && widest != "baseline") {
    throw std::invalid_argument("TURNRL_CPU_KERNELS must be avx512, avx2 or baseline, not '" + widest + "'");
  }
#ifdef TURNRL_X86_KERNELS
  if (widest == "avx512" && __builtin_cpu_supports("x86-64-v4")) return avx512;
  if (widest != "baseline" && __builtin_cpu_supports("x86-64-v3")) return avx2;
#endif
  return baseline;
}

const KernelSet& kernels() {
  static const KernelSet& chosen = choose_kernels();
  return chosen;
}

// Rows of [B, L, heads, D] views: heads contiguous, the B * L position rows equally spaced.
// Each position's heads side by side (rows may be spaced as they like); a size-1 dimension's stride
// is arbitrary, so it is not checked.
bool heads_contiguous(const at::Tensor& x) {
  return x.dim() == 4 && (x.size(3) == 1 || x.stride(3) == 1) && (x.size(2) == 1 || x.stride(2) == x.size(3));
}

bool equally_spaced_rows(const at::Tensor& x) {
  return x.dim() == 4 && x.stride(3) == 1 && x.stride(2) == x.size(3) && x.stride(0) == x.size(1) * x.stride(1);
}

std::atomic<int>& thread_count() {
  static std::atomic<int> threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  return threads;
}

// Below this many query-key-dimension products a call runs on the calling thread: handing a part to a
// helper (a wake-up, tens of microseconds) would cost more than it saves, as in a decoding step.
constexpr double kMinWorkPerThread = 1 << 22;

/** Threads kept asleep between calls (started on first use, never stopped) that run the parts of a
 *  split call beside the calling thread: a call costs a wake-up, not a thread start, and nothing
 *  spins between calls to take a core from the BLAS's own threads. */
class Helpers {
 public:
  /** Runs work(part) for parts 0 .. parts - 1, part 0 on the calling thread; work must not throw.
   *  While another call holds the helpers, or where no thread can be started, the calling thread
   *  runs every part. */
  void run(int parts, const std::function<void(int)>& work) {
    if (parts == 1) return work(0);  // a decoding step: no locks, no wake-ups
    std::unique_lock busy(busy_, std::try_to_lock);
    if (!busy || !start(parts - 1)) {
      for (int part = 0; part < parts; ++part) work(part);
      return;
    }
    {
      const std::lock_guard lock(mutex_);
      work_ = &work;
      parts_ = parts;
      next_part_ = 1;
      running_ = parts - 1;
      ++round_;
    }
    wake_.notify_all();
    work(0);
    std::unique_lock lock(mutex_);
    done_.wait(lock, [&] { return running_ == 0; });
    work_ = nullptr;
  }

 private:
  bool start(int wanted) {
    try {
      for (; started_ < wanted; ++started_) std::thread([this] { serve(); }).detach();
    } catch (const std::system_error&) {
      return false;
    }
    return true;
  }

  void serve() {
    uint64_t seen = 0;
    std::unique_lock lock(mutex_);
    for (;;) {
      wake_.wait(lock, [&] { return round_ != seen && next_part_ < parts_; });
      seen = round_;
      const int part = next_part_++;
      const std::function<void(int)>& work = *work_;
      lock.unlock();
      work(part);
      lock.lock();
      if (--running_ == 0) done_.notify_one();
    }
  }

  std::mutex busy_;  // one split call at a time
  std::mutex mutex_;
  std::condition_variable wake_, done_;
  int started_ = 0;  // helper threads, each serving until the process ends
  const std::function<void(int)>* work_ = nullptr;
  int parts_ = 0, next_part_ = 0, running_ = 0;
  uint64_t round_ = 0;
};

Helpers& helpers() {
  static Helpers* const shared = new Helpers;  // never destroyed: its threads sleep until the process ends
  return *shared;
}

/** Runs work(group, scratch) for groups 0 .. groups - 1, split over as many threads as `work_per_group`
 *  (query-key-dimension products) makes worth a wake-up; each part has its own `scratch_size` floats,
 *  allocated here so that the parts only compute (work must not throw). */
void run_groups(int64_t groups, double work_per_group, int64_t scratch_size, const std::function<void(int64_t, float*)>& work) {
  if (groups == 0) return;
  const int parts = static_cast<int>(
      std::clamp<double>(groups * work_per_group / kMinWorkPerThread, 1.0, std::min<int64_t>(thread_count().load(), groups)));
  std::vector<float> scratch(scratch_size * parts);
  helpers().run(parts, [&](int part) {
    for (int64_t index = groups * part / parts; index < groups * (part + 1) / parts; ++index) work(index, scratch.data() + part * scratch_size);
  });
}

}  // namespace

void set_threads(int threads) {
  if (threads <= 0) throw std::invalid_argument("cpu_kernels::set_threads: threads must be > 0");
  thread_count() = threads;
}

const char* instruction_set() { return kernels().name; }

bool supports(const at::Tensor& x) { return x.defined() && x.device().is_cpu() && x.scalar_type() == at::kFloat; }


at::Tensor rms_norm(const at::Tensor& x, const at::Tensor& weight, double eps) {
  TORCH_CHECK(supports(x) && weight.is_contiguous() && weight.numel() == x.size(-1), "rms_norm: float32 CPU input and weight");
  const at::Tensor in = x.contiguous();
  at::Tensor out = at::empty_like(in);
  const int64_t dim = x.size(-1), rows = in.numel() / dim;
  at::parallel_for(0, rows, 256, [&](int64_t begin, int64_t end) {
    kernels().rms_norm_rows(in.data_ptr<float>() + begin * dim, weight.data_ptr<float>(), out.data_ptr<float>() + begin * dim,
                  end - begin, dim, static_cast<float>(eps));
  });
  return out;
}

std::pair<at::Tensor, at::Tensor> rms_norm_backward(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& grad_out,
                                                    double eps) {
  TORCH_CHECK(supports(x) && weight.is_contiguous() && weight.numel() == x.size(-1) && grad_out.sizes() == x.sizes(),
              "rms_norm_backward: float32 CPU input, weight and output gradient");
  const at::Tensor in = x.contiguous(), grad = grad_out.contiguous();
  at::Tensor grad_x = at::empty_like(in);
  const int64_t dim = x.size(-1), rows = in.numel() / dim;
  // Each chunk of rows sums its own share of grad_weight: the sum is the same whatever the threads.
  constexpr int64_t kChunkRows = 256;
  const int64_t chunks = (rows + kChunkRows - 1) / kChunkRows;
  at::Tensor partial = at::zeros({std::max<int64_t>(chunks, 1), dim}, in.options());
  at::parallel_for(0, chunks, 1, [&](int64_t begin, int64_t end) {
    for (int64_t chunk = begin; chunk < end; ++chunk) {
      const int64_t first = chunk * kChunkRows, n = std::min(kChunkRows, rows - first);
      kernels().rms_norm_backward_rows(in.data_ptr<float>() + first * dim, weight.data_ptr<float>(), grad.data_ptr<float>() + first * dim,
                                       grad_x.data_ptr<float>() + first * dim, partial.data_ptr<float>() + chunk * dim, n, dim,
                                       static_cast<float>(eps));
    }
  });
  return {grad_x, partial.sum(0)};
}

void rotate_(const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin) {
  TORCH_CHECK(equally_spaced_rows(x) && cos.is_contiguous() && sin.is_contiguous() &&
                  cos.numel() == x.size(0) * x.size(1) * x.size(3) && x.size(3) % 2 == 0,
              "rotate_: x [B, L, heads, D] with equally spaced rows and cos, sin [B, 1, L, D] contiguous");
  const int64_t rows = x.size(0) * x.size(1), row_stride = x.stride(1), heads = x.size(2), dim = x.size(3);
  at::parallel_for(0, rows, 64, [&](int64_t begin, int64_t end) {
    kernels().rotate_rows(x.data_ptr<float>() + begin * row_stride, cos.data_ptr<float>() + begin * dim,
                sin.data_ptr<float>() + begin * dim, end - begin, row_stride, heads, dim);
  });
}

at::Tensor attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, const at::Tensor& key_mask) {
  const int64_t batch = q.size(0), length = q.size(1), heads = q.size(2), dim = q.size(3);
  const int64_t kv_heads = k.size(1), total = k.size(2);
  TORCH_CHECK(heads_contiguous(q) && k.sizes() == v.sizes() && k.size(0) == batch && k.size(3) == dim && heads % kv_heads == 0 &&
                  total >= length,
              "attention: q [B, L, H, D] with contiguous heads, k and v [B, KV, T, D]");
  TORCH_CHECK(key_mask.scalar_type() == at::kBool && key_mask.sizes() == at::IntArrayRef({batch, total}),
              "attention: key_mask [B, T] bool");
  // Keys and values are read in place (views of the q/k/v product, or the cache), a row at a time.
  TORCH_CHECK(k.stride(3) == 1 && v.stride(3) == 1, "attention: k and v rows must be contiguous");
  const at::Tensor mask = key_mask.contiguous();
  at::Tensor out = at::empty({batch, length, heads * dim}, q.options());
  const int64_t group_heads = heads / kv_heads;
  const KernelSet& chosen = kernels();
  const float* const q_data = q.data_ptr<float>();
  const float* const k_data = k.data_ptr<float>();
  const float* const v_data = v.data_ptr<float>();
  const bool* const mask_data = mask.data_ptr<bool>();
  float* const out_data = out.data_ptr<float>();
  run_groups(batch * kv_heads, static_cast<double>(group_heads) * length * total * dim, scratch_floats(dim, total),
             [&](int64_t index, float* scratch) {
               const int64_t b = index / kv_heads, kv_head = index % kv_heads, first_head = kv_head * group_heads;
               const Group group{q_data + b * q.stride(0) + first_head * dim,
                                 out_data + (b * length * heads + first_head) * dim,
                                 q.stride(1),
                                 heads * dim,
                                 k_data + b * k.stride(0) + kv_head * k.stride(1),
                                 v_data + b * v.stride(0) + kv_head * v.stride(1),
                                 k.stride(2),
                                 v.stride(2),
                                 mask_data + b * total,
                                 length,
                                 total,
                                 group_heads,
                                 dim};
               chosen.attend(group, scratch);
             });
  return out;
}

void attention_backward(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, const at::Tensor& key_mask,
                        const at::Tensor& grad_out, const at::Tensor& grad_q, const at::Tensor& grad_k, const at::Tensor& grad_v) {
  const int64_t batch = q.size(0), length = q.size(1), heads = q.size(2), dim = q.size(3);
  const int64_t kv_heads = k.size(1), total = k.size(2);
  TORCH_CHECK(heads_contiguous(q) && k.sizes() == v.sizes() && k.size(0) == batch && k.size(3) == dim && k.stride(3) == 1 &&
                  v.stride(3) == 1 && heads % kv_heads == 0 && total >= length,
              "attention_backward: q [B, L, H, D] with contiguous heads, k and v [B, KV, T, D] with contiguous rows");
  TORCH_CHECK(grad_q.sizes() == q.sizes() && grad_q.strides() == q.strides() && grad_k.sizes() == k.sizes() &&
                  grad_k.strides() == k.strides() && grad_v.sizes() == v.sizes() && grad_v.strides() == v.strides(),
              "attention_backward: the gradients shaped and laid out as q, k and v");
  TORCH_CHECK(key_mask.scalar_type() == at::kBool && key_mask.sizes() == at::IntArrayRef({batch, total}),
              "attention_backward: key_mask [B, T] bool");
  TORCH_CHECK(grad_out.is_contiguous() && grad_out.sizes() == at::IntArrayRef({batch, length, heads * dim}),
              "attention_backward: grad_out [B, L, H * D] contiguous");
  const at::Tensor mask = key_mask.contiguous();
  const int64_t group_heads = heads / kv_heads;
  const KernelSet& chosen = kernels();
  run_groups(batch * kv_heads, 2.5 * group_heads * length * total * dim, backward_scratch_floats(dim, total),
             [&](int64_t index, float* scratch) {
               const int64_t b = index / kv_heads, kv_head = index % kv_heads, first_head = kv_head * group_heads;
               const int64_t query_at = b * q.stride(0) + first_head * dim, key_at = b * k.stride(0) + kv_head * k.stride(1),
                             value_at = b * v.stride(0) + kv_head * v.stride(1);
               const GradGroup group{q.data_ptr<float>() + query_at,
                                     grad_q.data_ptr<float>() + query_at,
                                     q.stride(1),
                                     grad_out.data_ptr<float>() + (b * length * heads + first_head) * dim,
                                     heads * dim,
                                     k.data_ptr<float>() + key_at,
                                     v.data_ptr<float>() + value_at,
                                     grad_k.data_ptr<float>() + key_at,
                                     grad_v.data_ptr<float>() + value_at,
                                     k.stride(2),
                                     v.stride(2),
                                     mask.data_ptr<bool>() + b * total,
                                     length,
                                     total,
                                     group_heads,
                                     dim};
               chosen.attend_backward(group, scratch);
             });
}

at::Tensor silu_gate(const at::Tensor& gate_up) {
  TORCH_CHECK(supports(gate_up) && gate_up.size(-1) % 2 == 0, "silu_gate: float32 CPU [..., 2m]");
  const at::Tensor in = gate_up.contiguous();
  const int64_t width = in.size(-1) / 2, rows = in.numel() / (2 * width);
  std::vector<int64_t> shape = in.sizes().vec();
  shape.back() = width;
  at::Tensor out = at::empty(shape, in.options());
  at::parallel_for(0, rows, std::max<int64_t>(1, (1 << 14) / width), [&](int64_t begin, int64_t end) {
    for (int64_t row = begin; row < end; ++row) {
      const float* gate = in.data_ptr<float>() + row * 2 * width;
      kernels().silu_gate_span(gate, gate + width, out.data_ptr<float>() + row * width, width);
    }
  });
  return out;
}

at::Tensor silu_gate_backward(const at::Tensor& gate_up, const at::Tensor& grad_out) {
  TORCH_CHECK(supports(gate_up) && gate_up.size(-1) % 2 == 0 && grad_out.numel() * 2 == gate_up.numel(),
              "silu_gate_backward: float32 CPU [..., 2m] and its output's gradient [..., m]");
  const at::Tensor in = gate_up.contiguous(), grad = grad_out.contiguous();
  const int64_t width = in.size(-1) / 2, rows = in.numel() / (2 * width);
  at::Tensor out = at::empty_like(in);
  at::parallel_for(0, rows, std::max<int64_t>(1, (1 << 14) / width), [&](int64_t begin, int64_t end) {
    for (int64_t row = begin; row < end; ++row) {
      const float* gate = in.data_ptr<float>() + row * 2 * width;
      float* grad_gate = out.data_ptr<float>() + row * 2 * width;
      kernels().silu_gate_backward_span(gate, gate + width, grad.data_ptr<float>() + row * width, grad_gate, grad_gate + width, width);
    }
  });
  return out;
}

}  // namespace turnrl::agents::cpu_kernels
