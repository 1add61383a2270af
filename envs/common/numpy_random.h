#pragma once
// Random number generators that reproduce numpy (1.24) and CPython bit for bit, so that a
// seed gives the same level as in the original Python environments.
#include <array>
#include <cstdint>
#include <vector>

namespace turnrl::envs {

/** numpy's SeedSequence(seed).generate_state(n_words) for a non-negative integer seed. */
std::vector<uint32_t> seed_sequence_words(uint64_t seed, int n_words);

/**
 * numpy `Generator(PCG64(SeedSequence(seed)))`, as gymnasium's `np_random(seed)` builds it.
 * Only the calls the ports need: raw draws and scalar `integers(low, high)` (int64 dtype).
 * Not thread-safe.
 */
class Pcg64Generator {
 public:
  explicit Pcg64Generator(uint64_t seed = 0) { seed_with(seed); }
  void seed_with(uint64_t seed);
  uint64_t next64();
  /** numpy's buffered 32-bit draw: low half of a 64-bit draw first, then its high half. */
  uint32_t next32();
  /** `Generator.integers(low, high)`: uniform in [low, high); draws nothing when the range is 1. */
  int64_t integers(int64_t low, int64_t high);

 private:
  unsigned __int128 state_ = 0;
  unsigned __int128 inc_ = 0;
  bool has_half_ = false;
  uint32_t half_ = 0;
};

/**
 * numpy's legacy `RandomState` (MT19937), as `np.random.seed(s)` sets it up.
 * Counts the 32-bit outputs consumed so ports can locate a divergence from golden traces.
 * Not thread-safe.
 */
class RandomState {
 public:
  static constexpr int kStateWords = 624;

  explicit RandomState(uint32_t seed = 0) { seed_with(seed); }
  void seed_with(uint32_t seed);
  uint32_t next32();
  /** Advances the stream by n outputs without tempering them (cheaper than n next32 calls). */
  void skip32(uint64_t n);
  /** `uniform()` in [0, 1) with 53 random bits; `uniform(low, high)` scales it. */
  double uniform();
  double uniform(double low, double high) { return low + (high - low) * uniform(); }
  /** `randint(low, high)`: masked rejection sampling; draws nothing when the range is 1. */
  int64_t randint(int64_t low, int64_t high);
  /** `choice(n)` with replacement. */
  int64_t choice(int64_t n) { return randint(0, n); }
  /** `choice(n, size=k, replace=...)`. */
  std::vector<int64_t> choice(int64_t n, int64_t size, bool replace);
  /** `permutation(n)`: Fisher-Yates from the end, as numpy's legacy shuffle. */
  std::vector<int64_t> permutation(int64_t n);
  /** `shuffle(values)` in place, consuming draws exactly as numpy's legacy shuffle. */
  template <typename T>
  void shuffle(std::vector<T>& values) {
    for (int64_t i = static_cast<int64_t>(values.size()) - 1; i > 0; --i) {
      std::swap(values[i], values[masked(static_cast<uint64_t>(i))]);
    }
  }

  uint64_t draws() const { return draws_; }
  /** numpy's `pos` in `get_state()` (624 right after seeding). */
  int position() const { return pos_; }

 private:
  uint64_t masked(uint64_t max_value);
  void twist();

  std::array<uint32_t, kStateWords> key_{};
  int pos_ = kStateWords;
  uint64_t draws_ = 0;
};

/** CPython's `hash(tuple_of_ints)` (64-bit build) for non-negative ints below 2**61 - 1. */
int64_t python_tuple_hash(const std::vector<uint64_t>& items);

/** Python's `a % m` for m > 0: the result takes the sign of m. */
int64_t python_mod(int64_t a, int64_t m);

}  // namespace turnrl::envs
