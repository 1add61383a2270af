"""Action spaces: gymnasium's Discrete where gymnasium is importable, else a stand-in with the same
basics (n, sample, seed, contains), so code written against Gymnasium runs without it."""
import operator
import random

try:
    import gymnasium
except ImportError:
    gymnasium = None


class Discrete:
    """Actions 0..n-1."""

    def __init__(self, n, seed=None):
        if n < 1:
            raise ValueError(f"a Discrete space needs n >= 1, got {n}")
        self.n = n
        self._rng = random.Random(seed)

    def seed(self, seed=None):
        self._rng.seed(seed)
        return [seed]

    def sample(self):
        return self._rng.randrange(self.n)

    def contains(self, x):
        try:
            return not isinstance(x, bool) and 0 <= operator.index(x) < self.n
        except TypeError:
            return False

    __contains__ = contains

    def __repr__(self):
        return f"Discrete({self.n})"

    def __eq__(self, other):
        return isinstance(other, Discrete) and other.n == self.n


def discrete(n):
    return gymnasium.spaces.Discrete(n) if gymnasium else Discrete(n)


def text_observation_space():
    """{"long_term", "short_term"} text (None without gymnasium: nothing would check it)."""
    if not gymnasium:
        return None
    import string
    text = gymnasium.spaces.Text(min_length=0, max_length=1 << 20, charset=string.printable)
    return gymnasium.spaces.Dict({"long_term": text, "short_term": text})
