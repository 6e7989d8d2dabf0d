import numpy as np
import pytest

from ntkcond import datasets


def test_digits_default_preprocessing():
    ds = datasets.load("digits")
    assert ds.x.shape == (1797, 64) and ds.x.dtype == np.float64
    assert ds.image_shape == (8, 8)
    # pixels 0..16 → [0, 1] → (x − 0.5)/0.5 ∈ [−1, 1], both ends attained
    assert ds.x.min() == -1.0 and ds.x.max() == 1.0
    assert ds.preprocessing["mean"] == [0.5] and ds.preprocessing["std"] == [0.5]


def test_gaussian_and_unit_normalisation():
    ds = datasets.load("gaussian", n=20, dim=7, seed=3, normalize="unit")
    assert ds.x.shape == (20, 7)
    assert np.allclose(np.linalg.norm(ds.x, axis=1), 1.0, rtol=1e-15)
    again = datasets.load("gaussian", n=20, dim=7, seed=3, normalize="unit")
    np.testing.assert_array_equal(ds.x, again.x)


def test_npz_images_per_channel(tmp_path):
    x = np.random.default_rng(0).integers(0, 256, size=(6, 4, 4, 3), dtype=np.uint8)
    path = tmp_path / "imgs.npz"
    np.savez(path, x=x, y=np.arange(6))
    ds = datasets.load(str(path), mean=[0.1, 0.2, 0.3], std=[0.5, 0.5, 0.25])
    expected = ((x / 255.0 - [0.1, 0.2, 0.3]) / [0.5, 0.5, 0.25]).reshape(6, -1)
    # x·(1/255) vs x/255 and the subtraction of the mean: a few ulps of values ≤ 8 in size
    np.testing.assert_allclose(ds.x, expected, rtol=0, atol=1e-14)
    assert ds.image_shape == (4, 4, 3)
    raw = datasets.load(str(path), normalize="none")
    np.testing.assert_array_equal(raw.x, x.reshape(6, -1).astype(np.float64))


def test_batches():
    ds = datasets.load("gaussian", n=10, dim=3)
    b = datasets.batches(ds, 4, seed=1)
    assert [len(i) for i in b] == [4, 4, 2]
    assert sorted(np.concatenate(b).tolist()) == list(range(10))
    assert [len(i) for i in datasets.batches(ds, 4, drop_last=True)] == [4, 4]
    assert len(datasets.batches(ds, 3, max_batches=2)) == 2
    np.testing.assert_array_equal(datasets.batches(ds, 5, shuffle=False)[0], np.arange(5))


def test_bad_inputs(tmp_path):
    with pytest.raises(ValueError, match="unknown data set 'nope'"):
        datasets.load("nope")
    bad = tmp_path / "bad.npz"
    np.savez(bad, images=np.zeros((2, 3)))
    with pytest.raises(ValueError, match=r"arrays 'x' and 'y'.*got \['images'\]"):
        datasets.load(str(bad))
    nan = tmp_path / "nan.npz"
    np.savez(nan, x=np.full((2, 3, 3), np.nan), y=np.zeros(2))
    with pytest.raises(ValueError, match="finite pixels"):
        datasets.load(str(nan))
    garbage = tmp_path / "garbage.npz"
    garbage.write_bytes(b"not a zip")
    with pytest.raises(ValueError, match="cannot read"):
        datasets.load(str(garbage))
    with pytest.raises(ValueError, match="batch <= n = 10"):
        datasets.batches(datasets.load("gaussian", n=10, dim=2), 11)


@pytest.mark.parametrize("name, shape, mean", [("mnist", (6, 784), [0.5]),
                                               ("cifar10", (6, 3072), [125.3 / 255, 123.0 / 255, 113.9 / 255])])
def test_tfds_path_with_mock_data(name, shape, mean, tmp_path):
    tfds = pytest.importorskip("tensorflow_datasets")
    with tfds.testing.mock_data(num_examples=6):
        ds = datasets.load(name, "test", data_dir=str(tmp_path))
    assert ds.x.shape == shape and ds.x.dtype == np.float64
    # the preset's float64 constants, returned as they are (one rounding at most)
    assert ds.preprocessing["mean"] == pytest.approx(mean, rel=1e-15, abs=0)
    assert ds.preprocessing["source"].startswith(f"tfds:{name}:test:")
    # mocked pixels are uint8 in [0, 255]: after (x/255 − mean)/std they stay in range
    lo = (0 - max(mean)) / min(ds.preprocessing["std"])
    assert ds.x.min() >= lo - 1e-12


def test_tfds_offline_gives_one_clear_line(tmp_path, monkeypatch):
    pytest.importorskip("tensorflow_datasets")
    monkeypatch.setattr(datasets, "_download_reachable", lambda timeout=3.0: False)
    with pytest.raises(datasets.DataUnavailableError) as info:
        datasets.load("cifar10", "train", data_dir=str(tmp_path))
    message = str(info.value)
    assert "\n" not in message
    for part in ("cifar10", str(tmp_path), "--data-dir", "--dataset path/to/file.npz", "no network"):
        assert part in message


def test_tfds_missing_package(monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "tensorflow_datasets", None)  # import raises ImportError
    with pytest.raises(datasets.DataUnavailableError, match=r"ntkcond\[tfds\].*--data-dir"):
        datasets.load("mnist")


def test_npz_preset_uses_the_papers_statistics(tmp_path):
    x = np.full((2, 2, 2, 3), 255, dtype=np.uint8)
    np.savez(tmp_path / "c.npz", x=x, y=np.zeros(2))
    ds = datasets.load(str(tmp_path / "c.npz"), preset="cifar10")
    mean, std = datasets.TFDS_NAMES["cifar10"]
    np.testing.assert_allclose(ds.x[0, :3], (1 - np.array(mean)) / np.array(std), rtol=1e-15)
    with pytest.raises(ValueError, match="preset"):
        datasets.load(str(tmp_path / "c.npz"), preset="imagenet")
