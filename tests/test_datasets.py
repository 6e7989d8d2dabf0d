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
    assert ds.split == "all"  # sklearn's digits are one set (the UCI test part), not a "train" split


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
    assert ds.split == "imgs" and ds.preprocessing["pixel_scaling"] == "uint8 pixels divided by 255"
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
    for part in ("datasets.load:", "cifar10 (train)", str(tmp_path), "--data-dir", "no network",
                 "exported cifar10_train.npz", "--split SPLIT", "--dataset path/to/file.npz --preset cifar10"):
        assert part in message, (part, message)


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


# ------------------------------------------------------------------------------------------
# Issue 14: the offline path must not give a wrong number; bad input ends in one clear error.
import argparse  # noqa: E402
import gc  # noqa: E402
import pathlib  # noqa: E402
import warnings  # noqa: E402

MNIST_MEAN, MNIST_STD = datasets.TFDS_NAMES["mnist"]


def _save(path, x, y=None):
    np.savez(path, x=x, y=np.zeros(len(x)) if y is None else y)
    return str(path)


def _pixels(dtype=np.uint8, n=3, shape=(28, 28), seed=0):
    return np.random.default_rng(seed).integers(0, 256, size=(n,) + shape).astype(dtype)


def test_exported_named_file_is_found_in_data_dir_with_its_preset(tmp_path, monkeypatch):
    x = _pixels(shape=(32, 32, 3), n=4)
    path = _save(tmp_path / "cifar10_test.npz", x, np.arange(4))
    # the exported file is used before (and without) tensorflow-datasets
    monkeypatch.setattr(datasets, "_load_tfds", lambda *a: pytest.fail("tfds was asked"))
    ds = datasets.load("cifar10", "test", data_dir=str(tmp_path))
    ref = datasets.load(path, preset="cifar10")
    np.testing.assert_array_equal(ds.x, ref.x)  # same file, same arithmetic: identical
    mean, std = datasets.TFDS_NAMES["cifar10"]
    # (x/255 − mean)/std by hand: a few ulps of values of size ≤ 2.1, held to 1e-14
    np.testing.assert_allclose(ds.x, ((x / 255 - mean) / std).reshape(4, -1), rtol=0, atol=1e-14)
    assert (ds.name, ds.split, ds.image_shape) == ("cifar10", "test", (32, 32, 3))
    assert ds.preprocessing["source"] == path and ds.preprocessing["mean"] == list(mean)
    assert ds.preprocessing["pixel_scaling"] == "uint8 pixels divided by 255"
    np.testing.assert_array_equal(ds.y, np.arange(4))
    # mnist as exported by ../shared/data: (n, 28, 28), default split "train"
    _save(tmp_path / "mnist_train.npz", _pixels())
    assert datasets.load("mnist", data_dir=tmp_path).preprocessing["mean"] == [MNIST_MEAN]


def test_exported_file_of_the_wrong_set_is_refused(tmp_path):
    _save(tmp_path / "mnist_test.npz", _pixels(shape=(32, 32, 3)))
    with pytest.raises(ValueError) as info:
        datasets.load("mnist", "test", data_dir=str(tmp_path))
    for part in ("datasets.load:", "expected mnist images of shape (28, 28) or (28, 28, 1)",
                 "mnist_test.npz", "got (32, 32, 3)"):
        assert part in str(info.value)


def test_tfds_mock_records_the_default_split(tmp_path):
    tfds = pytest.importorskip("tensorflow_datasets")
    with tfds.testing.mock_data(num_examples=3):
        ds = datasets.load("mnist", data_dir=str(tmp_path))
    assert ds.split == "train" and ds.preprocessing["pixel_scaling"] == "uint8 pixels divided by 255"


# (label, stored x, expected pixel scale, words in pixel_scaling): scaling follows the values
SCALINGS = [
    ("uint8", _pixels(), 1 / 255, "uint8 pixels divided by 255"),
    ("float 0-255", _pixels(np.float64), 1 / 255, "float64 pixels in [0, 255] with max 255 > 1 divided by 255"),
    ("float32 0-255", _pixels(np.float32), 1 / 255, "float32 pixels in [0, 255] with max 255 > 1 divided by 255"),
    ("int64 0-255", _pixels(np.int64), 1 / 255, "int64 pixels in [0, 255] with max 255 > 1 divided by 255"),
    ("float in [0, 1]", _pixels(np.float64) / 255, 1.0, "float64 pixels within [0, 1] used as they are"),
    ("binary int", _pixels(np.int64) % 2, 1.0, "int64 pixels within [0, 1] used as they are"),
]


@pytest.mark.parametrize("label, x, scale, words", SCALINGS, ids=[c[0] for c in SCALINGS])
def test_pixel_scaling_follows_the_values(tmp_path, label, x, scale, words):
    ds = datasets.load(_save(tmp_path / "p.npz", x), preset="mnist")
    # x·scale − mean over std by hand, as the loader: equal to a few ulps (values ≤ 1), 1e-15
    expected = ((x.astype(np.float64) * scale - MNIST_MEAN) / MNIST_STD).reshape(len(x), -1)
    np.testing.assert_allclose(ds.x, expected, rtol=0, atol=1e-15)
    assert ds.preprocessing["pixel_scale"] == scale and ds.preprocessing["pixel_scaling"] == words
    assert ds.preprocessing["pixel_range"] == [float(x.min()), float(x.max())]


def test_float_pixels_0_255_give_the_uint8_result(tmp_path):
    # the --preset mnist case of issue 14: float pixels 0..255 were not divided by 255
    x = _pixels()
    as_uint8 = datasets.load(_save(tmp_path / "u.npz", x), preset="mnist")
    as_float = datasets.load(_save(tmp_path / "f.npz", x.astype(np.float64)), preset="mnist")
    np.testing.assert_array_equal(as_float.x, as_uint8.x)  # same float64 operations


# (label, stored x, the range named in the message)
BAD_PIXELS = [
    ("negative", _pixels(np.float64) / 255 - 0.5, "got float64 values in [-0.5"),
    ("above 255", _pixels(np.float64) + 300, "got float64 values in [300"),
    ("uint16", _pixels(np.uint16) * 4, "got uint16 values in [0, 1020]"),
    ("x_huge", np.full((3, 4, 4), 1e300), "got float64 values in [1e+300, 1e+300]"),
]


@pytest.mark.parametrize("label, x, got", BAD_PIXELS, ids=[c[0] for c in BAD_PIXELS])
def test_pixels_outside_both_ranges_are_refused_without_warnings(tmp_path, label, x, got):
    path = _save(tmp_path / "bad.npz", x)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no RuntimeWarning (overflow) before the error
        with pytest.raises(ValueError) as info:
            datasets.load(path, preset="mnist")
    message = str(info.value)
    for part in ("datasets.load:", "expected pixels in [0, 1] or [0, 255]", path, got,
                 "normalize='none'", "--normalize none"):
        assert part in message, (part, message)
    assert "\n" not in message
    raw = datasets.load(path, normalize="none")  # the way out: the values as they are
    np.testing.assert_array_equal(raw.x, x.reshape(len(x), -1).astype(np.float64))
    assert raw.preprocessing["pixel_scaling"] == "none (raw values)"


def test_npz_without_preprocessing_is_refused_in_one_line(tmp_path):
    path = _save(tmp_path / "cifar10_test.npz", _pixels(shape=(32, 32, 3)))
    with pytest.raises(ValueError) as info:
        datasets.load(path)
    message = str(info.value)
    assert "\n" not in message
    for part in ("datasets.load:", "expected the normalisation of", path, "got no mean and std",
                 "--preset", "--mean/--std", "normalize='none'", "--normalize none"):
        assert part in message, (part, message)
    with pytest.raises(ValueError, match=r"datasets.load: expected the normalisation .* got no std"):
        datasets.load(path, mean=0.5)
    with pytest.raises(ValueError, match=r"datasets.load: expected the normalisation .* got no mean"):
        datasets.load(path, std=0.5)
    ok = datasets.load(path, mean=0.5, std=0.25)  # both given: used
    assert ok.preprocessing["mean"] == [0.5] and ok.preprocessing["std"] == [0.25]


def test_split_records_what_it_is(tmp_path):
    path = _save(tmp_path / "cifar10_test.npz", _pixels(shape=(32, 32, 3)))
    assert datasets.load(path, preset="cifar10").split == "cifar10_test"  # the file's stem
    assert datasets.load(path, "test", preset="cifar10").split == "test"  # as given
    assert datasets.load(pathlib.Path(path), preset="cifar10").split == "cifar10_test"
    assert datasets.load("gaussian", n=3, dim=2).split == "all"
    assert datasets.load(_save(tmp_path / ".npz", _pixels()), preset="mnist").split == "file"


def test_data_flags_of_the_scripts(tmp_path):
    from ntkcond.runs.cli import add_data_arguments, load_data

    _save(tmp_path / "cifar10_test.npz", _pixels(shape=(32, 32, 3)))
    parser = argparse.ArgumentParser()
    add_data_arguments(parser, split="test")
    # --dataset cifar10 --data-dir DIR: the script's default split (test here) finds the file
    ds = load_data(parser.parse_args(["--dataset", "cifar10", "--data-dir", str(tmp_path)]))
    assert (ds.name, ds.split) == ("cifar10", "test")
    assert ds.preprocessing["mean"] == list(datasets.TFDS_NAMES["cifar10"][0])
    # a file: its stem, never the script's default
    path = str(tmp_path / "cifar10_test.npz")
    ds = load_data(parser.parse_args(["--dataset", path, "--preset", "cifar10"]))
    assert ds.split == "cifar10_test"
    with pytest.raises(ValueError, match="--preset"):
        load_data(parser.parse_args(["--dataset", path]))
    assert load_data(parser.parse_args([])).split == "all"  # digits


def _write(path, data: bytes):
    path.write_bytes(data)
    return str(path)


def _npz_bytes(tmp_path, **arrays):
    np.savez(tmp_path / "src.npz", **arrays)
    return (tmp_path / "src.npz").read_bytes()


def _corrupt(tmp_path) -> bytes:
    """A compressed .npz whose zip directory is intact but whose x data is overwritten."""
    np.savez_compressed(tmp_path / "src.npz", x=_pixels(n=20), y=np.zeros(20))
    data = bytearray((tmp_path / "src.npz").read_bytes())
    data[200:1200] = bytes(1000)
    return bytes(data)


# (label, make the file in tmp_path -> path, words of the message)
BAD_FILES = [
    ("missing", lambda t: str(t / "nope.npz"), ["cannot read", "nope.npz", "No such file"]),
    ("folder", lambda t: str(t), ["expected an .npz file, got the folder"]),
    ("empty", lambda t: _write(t / "empty.npz", b""), ["expected a zip archive of arrays", "got an empty file"]),
    ("not a zip", lambda t: _write(t / "text.npz", b"hello world"),
     ["expected a zip archive of arrays", "got a file starting with b'hello '"]),
    ("a .npy", lambda t: (np.save(t / "one.npy", np.zeros(3)), _write(t / "one.npz", (t / "one.npy").read_bytes()))[1],
     ["expected a zip archive with arrays x and y", "got a single .npy array"]),
    ("truncated", lambda t: _write(t / "cut.npz", _npz_bytes(t, x=_pixels(), y=np.zeros(3))[:600]),
     ["cannot read", "cut.npz", "a truncated or corrupt .npz file", "BadZipFile"]),
    ("corrupt", lambda t: _write(t / "flip.npz", _corrupt(t)), ["cannot read", "flip.npz", "a truncated or corrupt .npz file"]),
    ("object array", lambda t: (np.savez(t / "obj.npz", x=np.array([None, 1], dtype=object), y=np.zeros(2)),
                                str(t / "obj.npz"))[1], ["expected numeric arrays x and y", "got an object array"]),
    ("no y", lambda t: _save(t / "noy.npz", _pixels(), y=np.zeros(2)), ["expected y of shape (3,)", "got (2,)"]),
    ("1-D x", lambda t: _save(t / "flat.npz", np.zeros(3)), ["expected x of shape (n, ...) with n >= 1", "got (3,)"]),
    ("bool x", lambda t: _save(t / "bool.npz", np.ones((2, 3), bool)), ["expected numeric x", "got dtype bool"]),
    ("complex x", lambda t: _save(t / "cx.npz", np.ones((2, 3), complex)), ["expected numeric x", "got dtype complex128"]),
    ("Inf x", lambda t: _save(t / "inf.npz", np.where(np.arange(6).reshape(3, 2) == 3, np.inf, 0.5)),
     ["expected finite pixels", "got NaN or Inf in row 1"]),
]


@pytest.mark.parametrize("label, make, parts", BAD_FILES, ids=[c[0] for c in BAD_FILES])
def test_bad_files_give_one_clear_error_and_no_warnings(tmp_path, label, make, parts):
    path = make(tmp_path)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # RuntimeWarning, and ResourceWarning of a leaked file
        with pytest.raises(ValueError) as info:
            datasets.load(path, preset="mnist")
        gc.collect()  # a file object numpy left open would warn here
    assert type(info.value) is ValueError
    message = str(info.value)
    assert message.startswith("datasets.load: ") and "\n" not in message and "pickle" not in message
    for part in parts:
        assert part in message, (part, message)


# (label, call, error type, words of the message): wrong types and values of the arguments
BAD_ARGUMENTS = [
    ("name None", lambda p: datasets.load(None), TypeError,
     ["datasets.load:", "expected name as a str", "got NoneType None"]),
    ("name int", lambda p: datasets.load(3), TypeError, ["expected name as a str", "got int 3"]),
    ("split int", lambda p: datasets.load("digits", 1), TypeError, ["expected split as a str", "got int 1"]),
    ("data_dir int", lambda p: datasets.load("mnist", data_dir=5), TypeError,
     ["expected data_dir as a str", "got int 5"]),
    ("normalize None", lambda p: datasets.load("digits", normalize=None), TypeError,
     ["expected normalize as one of", "got NoneType None"]),
    ("normalize 'z'", lambda p: datasets.load("digits", normalize="z"), ValueError,
     ["expected normalize 'default', 'unit' or 'none'", "got 'z'"]),
    ("preset list", lambda p: datasets.load(p, preset=["mnist"]), TypeError,
     ["expected preset as a str", "got list ['mnist']"]),
    ("preset unknown", lambda p: datasets.load(p, preset="imagenet"), ValueError,
     ["expected preset in", "got 'imagenet'"]),
    ("mean str", lambda p: datasets.load(p, mean="a", std=1), TypeError,
     ["expected mean as a number or a sequence of numbers", "got 'a'"]),
    ("mean nested", lambda p: datasets.load(p, mean=[[0.5]], std=1), TypeError,
     ["expected mean as a number or a sequence", "got [[0.5]]"]),
    ("std zero", lambda p: datasets.load(p, mean=0, std=[0.5, 0]), ValueError,
     ["expected std with finite values > 0", "got [0.5, 0.0]"]),
    ("std NaN", lambda p: datasets.load(p, mean=0, std=float("nan")), ValueError,
     ["expected std with finite values > 0", "got [nan]"]),
    ("mean Inf", lambda p: datasets.load(p, mean=float("inf"), std=1), ValueError,
     ["expected mean with finite values", "got [inf]"]),
    ("mean channels", lambda p: datasets.load(p, mean=[0, 0, 0], std=1), ValueError,
     ["expected mean with 1 value (the images have one channel)", "got 3"]),
    ("std overflows", lambda p: datasets.load(_save(pathlib.Path(p).with_name("white.npz"),
                                                    np.full((2, 3, 3), 255, np.uint8)), mean=0, std=1e-320), ValueError,
     ["expected finite inputs after normalisation", "got an overflow", "std [1e-320]"]),
    ("none with preset", lambda p: datasets.load(p, preset="mnist", normalize="none"), ValueError,
     ["expected no preset with normalize='none'", "got preset"]),
    ("preset for a named set", lambda p: datasets.load("cifar10", preset="svhn_cropped"), ValueError,
     ["expected preset only for an .npz path", "got preset='svhn_cropped' for the named set 'cifar10'"]),
    ("preset for digits", lambda p: datasets.load("digits", preset="mnist"), ValueError,
     ["expected preset only for an .npz path", "'digits'"]),
    ("mean for gaussian", lambda p: datasets.load("gaussian", mean=0.5), ValueError,
     ["expected no mean for the gaussian set", "got mean"]),
    ("gaussian n bool", lambda p: datasets.load("gaussian", n=True), TypeError,
     ["expected gaussian n as an integer >= 1", "got bool True"]),
    ("gaussian dim 0", lambda p: datasets.load("gaussian", dim=0), ValueError,
     ["expected gaussian dim as an integer >= 1", "got 0"]),
    ("gaussian seed -1", lambda p: datasets.load("gaussian", seed=-1), ValueError,
     ["expected seed as an integer >= 0", "got -1"]),
    ("unit zero row", lambda p: datasets.load(p, mean=0, std=1, normalize="unit"), ValueError,
     ["expected nonzero inputs to project onto the unit sphere", "got a zero row 0"]),
    ("unknown name", lambda p: datasets.load("nope"), ValueError, ["unknown data set 'nope'", "expected one of"]),
    ("batches 2.5", lambda p: datasets.batches(datasets.load("gaussian", n=10, dim=2), 2.5), TypeError,
     ["batches:", "expected batch as an integer >= 1", "got float 2.5"]),
    ("batches '64'", lambda p: datasets.batches(datasets.load("gaussian", n=10, dim=2), "64"), TypeError,
     ["batches:", "expected batch as an integer >= 1", "got str '64'"]),
    ("batches True", lambda p: datasets.batches(datasets.load("gaussian", n=10, dim=2), True), TypeError,
     ["batches:", "expected batch", "got bool True"]),
    ("batches 0", lambda p: datasets.batches(datasets.load("gaussian", n=10, dim=2), 0), ValueError,
     ["batches:", "expected batch as an integer >= 1", "got 0"]),
    ("batches > n", lambda p: datasets.batches(datasets.load("gaussian", n=10, dim=2), 11), ValueError,
     ["batches:", "expected 1 <= batch <= n = 10", "got batch = 11"]),
    ("batches seed -1", lambda p: datasets.batches(datasets.load("gaussian", n=10, dim=2), 2, seed=-1),
     ValueError, ["batches:", "expected seed as an integer >= 0", "got -1"]),
    ("batches seed 1.5", lambda p: datasets.batches(datasets.load("gaussian", n=10, dim=2), 2, seed=1.5),
     TypeError, ["batches:", "expected seed as an integer >= 0", "got float 1.5"]),
    ("batches max 0", lambda p: datasets.batches(datasets.load("gaussian", n=10, dim=2), 2, max_batches=0),
     ValueError, ["batches:", "expected max_batches as an integer >= 1", "got 0"]),
    ("batches shuffle str", lambda p: datasets.batches(datasets.load("gaussian", n=10, dim=2), 2, shuffle="no"),
     TypeError, ["batches:", "expected shuffle as a bool", "got str 'no'"]),
    ("batches of an array", lambda p: datasets.batches(np.zeros((4, 2)), 2), TypeError,
     ["batches:", "expected a Dataset from datasets.load", "got ndarray"]),
]


@pytest.mark.parametrize("label, call, error, parts", BAD_ARGUMENTS, ids=[c[0] for c in BAD_ARGUMENTS])
def test_bad_arguments_give_one_clear_error(tmp_path, label, call, error, parts):
    path = _save(tmp_path / "zeros.npz", np.zeros((2, 3, 3), np.uint8))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(error) as info:
            call(path)
    assert type(info.value) is error
    message = str(info.value)
    assert "\n" not in message
    for part in parts:
        assert part in message, (part, message)


def test_integer_like_batch_arguments_are_accepted():
    ds = datasets.load("gaussian", n=10, dim=2)
    assert [len(b) for b in datasets.batches(ds, np.int64(4), seed=np.int64(1))] == [4, 4, 2]


# --- reliability III -----------------------------------------------------------------------

def test_npz_member_that_is_not_npy_is_one_clear_error(tmp_path):
    import io
    import pickle
    import zipfile

    path = tmp_path / "pickled.npz"
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("x.npy", pickle.dumps([1, 2, 3]))
        buf = io.BytesIO()
        np.save(buf, np.zeros(3))
        z.writestr("y.npy", buf.getvalue())
    with pytest.raises(ValueError, match=r"load: expected x.npy in .* to be a numpy array .* got bytes"):
        datasets.load(str(path), preset="mnist")


def test_gaussian_too_large_is_refused_before_allocating():
    from ntkcond import InsufficientMemoryError

    with pytest.raises(InsufficientMemoryError, match=r"gaussian set of n = 1000000 points in dim = 1000000 .* GiB"):
        datasets.load("gaussian", n=10**6, dim=10**6)


@pytest.mark.parametrize("scale", [1e-300, 1e-3])
def test_pixels_that_contradict_the_preset_are_refused(tmp_path, scale):
    rng = np.random.default_rng(0)
    pixels = rng.integers(0, 256, (20, 28, 28))
    x = pixels.astype(np.float64) * scale
    path = tmp_path / "tiny.npz"
    np.savez(path, x=x, y=np.arange(20) % 10)
    with pytest.raises(ValueError, match=r"load: expected mnist pixels .* reaching at least 0.5"):
        datasets.load(str(path), preset="mnist")
    ds = datasets.load(str(path), mean=0.0, std=1.0)  # stated normalisation: used as given
    assert ds.x.shape == (20, 784)
    ok = tmp_path / "ok.npz"  # the same images as 0..1 floats and as uint8 are accepted
    np.savez(ok, x=pixels / 255.0, y=np.arange(20) % 10)
    a = datasets.load(str(ok), preset="mnist").x
    np.savez(ok, x=pixels.astype(np.uint8), y=np.arange(20) % 10)
    b = datasets.load(str(ok), preset="mnist").x
    assert np.max(np.abs(a - b)) <= 1e-15 * np.max(np.abs(b))  # rel 1e-15: x/255 vs x·(1/255)


def test_downsample_averages_pixel_blocks_and_is_recorded():
    from ntkcond import datasets as D

    full = D.load("digits")
    small = D.load("digits", downsample=2)
    assert small.image_shape == (4, 4) and small.images.shape == (len(full.x), 4, 4, 1)
    want = full.images.reshape(-1, 4, 2, 4, 2, 1).mean(axis=(2, 4))
    assert np.allclose(small.images, want, rtol=0, atol=1e-15)
    assert small.preprocessing["downsample"] == 2 and "downsample" not in full.preprocessing
    for bad, match in ((3, "dividing the images' 8 x 8"), (0, "positive integer"),
                       (True, "positive integer")):
        with pytest.raises(ValueError, match=match):
            D.load("digits", downsample=bad)
    with pytest.raises(ValueError, match="expected images to downsample"):
        D.load("gaussian", downsample=2)
    with pytest.raises(ValueError, match="Dataset.images: expected image data"):
        D.load("gaussian").images
