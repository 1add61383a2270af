// Expected values come from ../shared/ref/numpy_rng_model.py and rng_check.py, which assert
// themselves bit for bit against numpy 1.24 and CPython 3.11.
#include <doctest/doctest.h>

#include <stdexcept>
#include <vector>

#include "envs/common/numpy_random.h"

using namespace turnrl::envs;

TEST_CASE("SeedSequence words match numpy") {
  CHECK(seed_sequence_words(0, 8) == std::vector<uint32_t>{2968811710u, 3677149159u, 745650761u, 2884920346u,
                                                           2642120001u, 549907821u, 574372308u, 742431198u});
  // A seed wider than 32 bits is split into little-endian words.
  CHECK(seed_sequence_words((1ULL << 40) + 5, 8) ==
        std::vector<uint32_t>{3767146251u, 3672381269u, 2127416108u, 2216012776u, 1267800272u, 623232436u,
                              865255123u, 1120041279u});
}

TEST_CASE("PCG64 Generator.integers matches numpy, including the 32-bit buffer") {
  const std::vector<int64_t> highs = {2, 3, 4, 5, 6, 7, 8, 100, 1000, 1LL << 31};
  auto draw = [&](uint64_t seed) {
    Pcg64Generator g(seed);
    std::vector<int64_t> out;
    for (int64_t high : highs) out.push_back(g.integers(0, high));
    return out;
  };
  CHECK(draw(0) == std::vector<int64_t>{1, 1, 2, 1, 1, 0, 0, 1, 175, 1746484540});
  CHECK(draw(3) == std::vector<int64_t>{1, 0, 0, 1, 1, 5, 6, 58, 39, 202139720});
  CHECK(draw((1ULL << 32) + 7) == std::vector<int64_t>{1, 2, 3, 0, 1, 1, 1, 15, 536, 927645981});

  Pcg64Generator raw(1);
  CHECK(raw.next64() == 9441442522235856127ULL);
  CHECK(raw.next64() == 17532960557476522086ULL);
  CHECK(raw.next64() == 2659275481604167885ULL);
}

TEST_CASE("a range of one draws nothing") {
  Pcg64Generator a(5), b(5);
  CHECK(a.integers(7, 8) == 7);
  CHECK(a.integers(0, 1000) == b.integers(0, 1000));
  RandomState c(5), d(5);
  CHECK(c.randint(3, 4) == 3);
  CHECK(c.draws() == 0);
  CHECK(c.randint(0, 100) == d.randint(0, 100));
}

TEST_CASE("bad ranges throw") {
  Pcg64Generator g(0);
  CHECK_THROWS_AS(g.integers(3, 3), std::invalid_argument);
  RandomState r(0);
  CHECK_THROWS_AS(r.randint(5, 2), std::invalid_argument);
  CHECK_THROWS_AS(r.choice(3, 4, false), std::invalid_argument);
}

TEST_CASE("legacy RandomState randint, choice and permutation match numpy") {
  auto run = [](uint32_t seed) {
    RandomState r(seed);
    std::vector<int64_t> out;
    for (int64_t high : {1LL, 2LL, 3LL, 5LL, 17LL, 100LL, (1LL << 31) - 1}) out.push_back(r.randint(0, high));
    for (auto v : r.choice(5, 3, false)) out.push_back(v);
    for (auto v : r.choice(4, 3, true)) out.push_back(v);
    for (auto v : r.permutation(6)) out.push_back(v);
    return out;
  };
  CHECK(run(0) == std::vector<int64_t>{0, 0, 1, 0, 3, 67, 1491434855, 2, 0, 4, 0, 3, 2, 3, 1, 2, 4, 5, 0});
  CHECK(run(42) == std::vector<int64_t>{0, 0, 0, 2, 7, 60, 415968276, 4, 0, 3, 2, 3, 0, 4, 5, 0, 1, 2, 3});
}

TEST_CASE("legacy uniform matches numpy and skip32 advances like draws") {
  RandomState r(5489);
  CHECK(r.uniform() == 0.8147236863931789);
  CHECK(r.uniform() == 0.9057919370756192);
  CHECK(r.uniform() == 0.12698681629350606);
  CHECK(r.uniform(32, 127) == 118.77070633320685);
  CHECK(r.draws() == 8);

  RandomState drawn(7), skipped(7);
  for (int i = 0; i < 3087 * 2 + 5; ++i) drawn.next32();
  skipped.skip32(3087 * 2 + 5);
  CHECK(skipped.draws() == drawn.draws());
  CHECK(skipped.position() == drawn.position());
  CHECK(skipped.next32() == drawn.next32());
}

TEST_CASE("CPython tuple hash and modulo") {
  CHECK(python_tuple_hash({0, 1}) == -1950498447580522560LL);
  CHECK(python_tuple_hash({42, 3}) == -8684333065875421337LL);
  CHECK(python_tuple_hash({(1ULL << 31) - 2, 2}) == 6785493816439661499LL);
  // Crafter's world seed for (seed 0, episode 1), as in the golden data.
  CHECK(python_mod(python_tuple_hash({0, 1}), (1LL << 31) - 1) == 1256191933);
  CHECK(python_mod(-7, 3) == 2);
}
