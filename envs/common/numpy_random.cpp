#include "envs/common/numpy_random.h"

#include <numeric>
#include <stdexcept>

namespace turnrl::envs {
namespace {

constexpr uint32_t kInitA = 0x43b0d7e5, kMultA = 0x931e8875;
constexpr uint32_t kInitB = 0x8b51f9dd, kMultB = 0x58f38ded;
constexpr uint32_t kMixMultL = 0xca01f9dd, kMixMultR = 0x4973f715;
constexpr int kPoolSize = 4;

unsigned __int128 pcg_multiplier() {
  return (static_cast<unsigned __int128>(0x2360ED051FC65DA4ULL) << 64) | 0x4385DF649FCCF645ULL;
}

}  // namespace

std::vector<uint32_t> seed_sequence_words(uint64_t seed, int n_words) {
  std::vector<uint32_t> entropy;
  do {
    entropy.push_back(static_cast<uint32_t>(seed));
    seed >>= 32;
  } while (seed != 0);

  uint32_t hash_const = kInitA;
  auto hashmix = [&hash_const](uint32_t v) {
    v ^= hash_const;
    hash_const *= kMultA;
    v *= hash_const;
    return v ^ (v >> 16);
  };
  auto mix = [](uint32_t x, uint32_t y) {
    uint32_t r = kMixMultL * x - kMixMultR * y;
    return r ^ (r >> 16);
  };

  std::array<uint32_t, kPoolSize> pool{};
  for (int i = 0; i < kPoolSize; ++i) {
    pool[i] = hashmix(i < static_cast<int>(entropy.size()) ? entropy[i] : 0);
  }
  for (int src = 0; src < kPoolSize; ++src) {
    for (int dst = 0; dst < kPoolSize; ++dst) {
      if (src != dst) pool[dst] = mix(pool[dst], hashmix(pool[src]));
    }
  }
  for (size_t src = kPoolSize; src < entropy.size(); ++src) {
    for (int dst = 0; dst < kPoolSize; ++dst) pool[dst] = mix(pool[dst], hashmix(entropy[src]));
  }

  std::vector<uint32_t> out(n_words);
  uint32_t out_const = kInitB;
  for (int i = 0; i < n_words; ++i) {
    uint32_t v = pool[i % kPoolSize] ^ out_const;
    out_const *= kMultB;
    v *= out_const;
    out[i] = v ^ (v >> 16);
  }
  return out;
}

void Pcg64Generator::seed_with(uint64_t seed) {
  const std::vector<uint32_t> w = seed_sequence_words(seed, 8);
  uint64_t u[4];
  for (int k = 0; k < 4; ++k) u[k] = w[2 * k] | (static_cast<uint64_t>(w[2 * k + 1]) << 32);
  const unsigned __int128 init_state = (static_cast<unsigned __int128>(u[0]) << 64) | u[1];
  const unsigned __int128 init_seq = (static_cast<unsigned __int128>(u[2]) << 64) | u[3];
  inc_ = (init_seq << 1) | 1;
  state_ = 0;
  state_ = state_ * pcg_multiplier() + inc_;
  state_ += init_state;
  state_ = state_ * pcg_multiplier() + inc_;
  has_half_ = false;
  half_ = 0;
}

uint64_t Pcg64Generator::next64() {
  state_ = state_ * pcg_multiplier() + inc_;
  const uint64_t x = static_cast<uint64_t>(state_ >> 64) ^ static_cast<uint64_t>(state_);
  const unsigned rot = static_cast<unsigned>(state_ >> 122);
  return (x >> rot) | (x << ((64 - rot) & 63));
}

uint32_t Pcg64Generator::next32() {
  if (has_half_) {
    has_half_ = false;
    return half_;
  }
  const uint64_t v = next64();
  has_half_ = true;
  half_ = static_cast<uint32_t>(v >> 32);
  return static_cast<uint32_t>(v);
}

int64_t Pcg64Generator::integers(int64_t low, int64_t high) {
  if (high <= low) throw std::invalid_argument("integers: high must be greater than low");
  const uint64_t range = static_cast<uint64_t>(high) - 1 - static_cast<uint64_t>(low);
  if (range == 0) return low;
  if (range < 0xFFFFFFFFULL) {
    // Lemire's multiply-shift with rejection on 32-bit draws.
    const uint64_t bound = range + 1;
    uint64_t m = static_cast<uint64_t>(next32()) * bound;
    uint32_t leftover = static_cast<uint32_t>(m);
    if (leftover < bound) {
      const uint32_t threshold = static_cast<uint32_t>((0xFFFFFFFFULL - range) % bound);
      while (leftover < threshold) {
        m = static_cast<uint64_t>(next32()) * bound;
        leftover = static_cast<uint32_t>(m);
      }
    }
    return low + static_cast<int64_t>(m >> 32);
  }
  if (range == 0xFFFFFFFFULL) return low + next32();
  const unsigned __int128 bound = static_cast<unsigned __int128>(range) + 1;
  unsigned __int128 m = static_cast<unsigned __int128>(next64()) * bound;
  uint64_t leftover = static_cast<uint64_t>(m);
  if (leftover < bound) {
    const uint64_t threshold = static_cast<uint64_t>((~0ULL - range) % static_cast<uint64_t>(bound));
    while (leftover < threshold) {
      m = static_cast<unsigned __int128>(next64()) * bound;
      leftover = static_cast<uint64_t>(m);
    }
  }
  return low + static_cast<int64_t>(m >> 64);
}

void RandomState::seed_with(uint32_t seed) {
  uint32_t s = seed;
  for (int i = 0; i < kStateWords; ++i) {
    key_[i] = s;
    s = 1812433253U * (s ^ (s >> 30)) + static_cast<uint32_t>(i) + 1;
  }
  pos_ = kStateWords;
  draws_ = 0;
}

void RandomState::twist() {
  // The standard MT19937 recurrence, split so that no index needs a modulo (skip32 calls this
  // ~10 times per night-time Crafter step).
  constexpr int kShift = 397;
  constexpr int kSplit = kStateWords - kShift;
  auto mix = [](uint32_t upper, uint32_t lower, uint32_t far) {
    const uint32_t y = (upper & 0x80000000U) | (lower & 0x7fffffffU);
    return far ^ (y >> 1) ^ ((y & 1U) ? 0x9908b0dfU : 0U);
  };
  int i = 0;
  for (; i < kSplit; ++i) key_[i] = mix(key_[i], key_[i + 1], key_[i + kShift]);
  for (; i < kStateWords - 1; ++i) key_[i] = mix(key_[i], key_[i + 1], key_[i - kSplit]);
  key_[i] = mix(key_[i], key_[0], key_[i - kSplit]);
  pos_ = 0;
}

uint32_t RandomState::next32() {
  if (pos_ >= kStateWords) twist();
  uint32_t y = key_[pos_++];
  ++draws_;
  y ^= y >> 11;
  y ^= (y << 7) & 0x9d2c5680U;
  y ^= (y << 15) & 0xefc60000U;
  y ^= y >> 18;
  return y;
}

void RandomState::skip32(uint64_t n) {
  draws_ += n;
  while (n > 0) {
    if (pos_ >= kStateWords) twist();
    const uint64_t take = std::min<uint64_t>(n, kStateWords - pos_);
    pos_ += static_cast<int>(take);
    n -= take;
  }
}

double RandomState::uniform() {
  const uint32_t a = next32() >> 5;
  const uint32_t b = next32() >> 6;
  return (a * 67108864.0 + b) / 9007199254740992.0;
}

uint64_t RandomState::masked(uint64_t max_value) {
  uint64_t mask = max_value;
  for (int shift = 1; shift <= 32; shift *= 2) mask |= mask >> shift;
  if (max_value <= 0xFFFFFFFFULL) {
    for (;;) {
      const uint64_t v = next32() & mask;
      if (v <= max_value) return v;
    }
  }
  for (;;) {
    const uint64_t hi = next32();
    const uint64_t v = ((hi << 32) | next32()) & mask;
    if (v <= max_value) return v;
  }
}

int64_t RandomState::randint(int64_t low, int64_t high) {
  if (high <= low) throw std::invalid_argument("randint: high must be greater than low");
  const uint64_t range = static_cast<uint64_t>(high) - 1 - static_cast<uint64_t>(low);
  if (range == 0) return low;
  return low + static_cast<int64_t>(masked(range));
}

std::vector<int64_t> RandomState::permutation(int64_t n) {
  std::vector<int64_t> values(n);
  std::iota(values.begin(), values.end(), 0);
  shuffle(values);
  return values;
}

std::vector<int64_t> RandomState::choice(int64_t n, int64_t size, bool replace) {
  if (n <= 0) throw std::invalid_argument("choice: n must be positive");
  if (!replace && size > n) throw std::invalid_argument("choice: size larger than n without replacement");
  if (replace) {
    std::vector<int64_t> out(size);
    for (auto& v : out) v = randint(0, n);
    return out;
  }
  std::vector<int64_t> out = permutation(n);
  out.resize(size);
  return out;
}

int64_t python_tuple_hash(const std::vector<uint64_t>& items) {
  constexpr uint64_t kPrime1 = 11400714785074694791ULL;
  constexpr uint64_t kPrime2 = 14029467366897019727ULL;
  constexpr uint64_t kPrime5 = 2870177450012600261ULL;
  constexpr uint64_t kModulus = (1ULL << 61) - 1;  // CPython hashes ints modulo this prime
  uint64_t acc = kPrime5;
  for (uint64_t item : items) {
    acc += (item % kModulus) * kPrime2;
    acc = (acc << 31) | (acc >> 33);
    acc *= kPrime1;
  }
  acc += items.size() ^ (kPrime5 ^ 3527539ULL);
  if (acc == ~0ULL) return 1546275796;
  return static_cast<int64_t>(acc);
}

int64_t python_mod(int64_t a, int64_t m) {
  const int64_t r = a % m;
  return (r != 0 && ((r < 0) != (m < 0))) ? r + m : r;
}

}  // namespace turnrl::envs
