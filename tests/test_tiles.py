"""The tiles of the n × n NTK (``ntkcond.scale.tiles``): the geometry and recursion of
``ntkcond.infinite`` cut into tiles and row chunks, without changing a bit."""
import numpy as np
import pytest

from ntkcond import datasets, infinite_ntk
from ntkcond.scale import tiles


@pytest.mark.parametrize("activation", ["relu", ("leaky_relu", 0.1), "linear"])
def test_a_whole_tile_in_many_chunks_is_infinite_ntk_bit_for_bit(activation, monkeypatch):
    x = datasets.load("digits").x[:90]
    x[7] = -x[3]  # an antipodal pair and a near-duplicate: the exact route inside chunks
    x[8] = x[4] * 1.5 + 1e-7
    monkeypatch.setattr(tiles, "CHUNK_ENTRIES", 500)  # 5 rows a chunk: 18 chunks
    _, xh, norms, d, act, depths, layers, _ = tiles.prepare(x, [0, 2, 5], activation, "all", 90,
                                                           "test")
    got = tiles.kernel_tile(xh, norms, d, 0, 90, 0, 90, act, depths, layers, x)
    for L in depths:
        assert np.array_equal(got[L], infinite_ntk(x, depth=L, activation=activation))
