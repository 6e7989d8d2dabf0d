"""Data sets as float64 (n, d) arrays, with the preprocessing that was applied recorded.

Names:
  ``mnist``, ``fashion_mnist``, ``cifar10``, ``svhn_cropped``
                tensorflow-datasets (the ``tfds`` extra), read from the TFDS data dir (or
                downloaded when there is a network), or an exported file
                ``<name>_<split>.npz`` (arrays ``x``, ``y``; e.g. ``cifar10_test.npz``) in
                ``data_dir``, which is used first when present. Either way the papers'
                normalisation of that set is applied. Without data and network,
                ``DataUnavailableError`` says where it looked and the ways out.
  ``digits``    scikit-learn's bundled 8×8 handwritten digits (1797 images, d = 64), real
                data with no download: the offline default. Pixels 0…16 are scaled to [0, 1],
                then normalised with mean 0.5, std 0.5, as for MNIST.
  ``gaussian``  synthetic N(0, I_d) inputs (``n``, ``dim``), as in the papers' synthetic runs.
  a path        an ``.npz`` file with arrays ``x`` (images or vectors) and ``y``. Its
                normalisation must be given: ``preset`` (a named set's), ``mean`` and ``std``,
                or ``normalize="none"`` (the values as they are). A file with none of them is
                refused rather than used raw: raw 0…1 pixels give a different κ than the
                papers' normalised ones (CIFAR-10 test, 512 images, depth 0: κ_eff 7.8e5
                raw against 6.0e4 normalised), and a silent default (the file's own mean and
                std, say) would give a third, plausible-looking number.

Pixel scaling follows the values (``pixel_scale`` and ``pixel_scaling`` in
``Dataset.preprocessing``): uint8 → /255; other pixels with min ≥ 0 and 1 < max ≤ 255 → /255;
pixels within [0, 1] → as they are; anything else (negative values, > 255) is refused unless
``normalize="none"``. With a named set's normalisation (its name or ``preset``) the scaled
pixels must also reach the top of that range: images of these sets have a largest pixel of
(nearly) 1 after scaling, so a file whose largest scaled pixel is below ``MIN_TOP_PIXEL`` =
0.5 (say pixels ×1e-300, or 0…255 pixels stored ×1e-3) contradicts the preset and is
refused, instead of normalising every row to nearly the same vector (κ_eff 1, angle 0). The per-channel normalisation is then (x·scale − mean)/std, as in the
papers' code (Liu & Hui).
"""
from __future__ import annotations

import contextlib
import dataclasses
import logging
import os
import zipfile
import zlib

import numpy as np

from ._core.checks import as_count
from ._core.memory import check_memory
from ._core.quiet import quiet_import

__all__ = ["Dataset", "DataUnavailableError", "TFDS_NAMES", "load", "batches"]

#: Papers' preprocessing per tensorflow-datasets name: pixels/255, then (x − mean)/std per channel.
TFDS_NAMES = {
    "mnist": (0.5, 0.5),
    "fashion_mnist": (0.5, 0.5),
    "svhn_cropped": ((0.5, 0.5, 0.5), (0.5, 0.5, 0.5)),
    "cifar10": (
        tuple(v / 255 for v in (125.3, 123.0, 113.9)),
        tuple(v / 255 for v in (63.0, 62.1, 66.7)),
    ),
}
#: Smallest largest pixel, after scaling to [0, 1], that a file normalised as a named set may
#: have (module docstring).
MIN_TOP_PIXEL = 0.5

# Image shapes of the named sets, to recognise an exported file of the wrong set.
_IMAGE_SHAPES = {
    "mnist": ((28, 28), (28, 28, 1)),
    "fashion_mnist": ((28, 28), (28, 28, 1)),
    "svhn_cropped": ((32, 32, 3),),
    "cifar10": ((32, 32, 3),),
}
_NORMALIZE = ("default", "unit", "none")
_DOWNLOAD_HOST = "storage.googleapis.com"


class DataUnavailableError(ValueError):
    """A named data set is neither on disk nor downloadable. The message is one line."""


@dataclasses.dataclass(frozen=True)
class Dataset:
    """A loaded data set.

    Attributes:
      x: (n, d) float64 inputs, preprocessed and flattened.
      y: (n,) labels.
      name: data-set name or path.
      split: split name as given; by default "train" for the tensorflow-datasets names, "all"
        for ``digits`` and ``gaussian`` (one split), and the file's stem for an ``.npz`` path
        (e.g. "cifar10_test"); never a guess.
      image_shape: shape of one example before flattening, e.g. (28, 28) or (32, 32, 3).
      preprocessing: what was applied (JSON-serialisable), written into every output file:
        source, pixel_scale, pixel_scaling (in words), pixel_range (min, max before scaling),
        mean, std, normalize.
    """

    x: np.ndarray
    y: np.ndarray
    name: str
    split: str
    image_shape: tuple
    preprocessing: dict

    @property
    def images(self) -> np.ndarray:
        """x as NHWC images (n, H, W, C) for convolutional nets (C = 1 for grey images), a
        view of ``x``; ValueError for data that are not images (``gaussian``, 1-D shapes)."""
        shape = tuple(self.image_shape)
        if len(shape) == 2:
            shape = shape + (1,)
        if len(shape) != 3 or int(np.prod(shape)) != self.x.shape[1]:
            raise ValueError(f"Dataset.images: expected image data (H, W) or (H, W, C), got "
                             f"{self.name!r} with example shape {tuple(self.image_shape)}")
        return self.x.reshape((len(self.x),) + shape)


def _as_stats(value, name: str, where: str):
    """``mean``/``std`` as a 1-D float64 array of finite values (None passes through)."""
    if value is None:
        return None
    try:
        arr = np.atleast_1d(np.asarray(value, dtype=np.float64))
    except (TypeError, ValueError):
        raise TypeError(f"{where}: expected {name} as a number or a sequence of numbers (one per "
                        f"channel), got {value!r}") from None
    if arr.ndim != 1 or arr.size == 0 or isinstance(value, (str, bytes)):
        raise TypeError(f"{where}: expected {name} as a number or a sequence of numbers (one per "
                        f"channel), got {value!r}")
    if not np.all(np.isfinite(arr)) or (name == "std" and np.any(arr <= 0)):
        bound = "finite values > 0" if name == "std" else "finite values"
        raise ValueError(f"{where}: expected {name} with {bound}, got {arr.tolist()}")
    return arr


def _pixel_scale(images: np.ndarray, what: str, where: str):
    """(scale, description, [min, max]) of ``images`` by their values (module docstring)."""
    lo, hi = float(np.min(images)), float(np.max(images))
    kind = str(images.dtype)
    if images.dtype == np.uint8:
        return 1.0 / 255.0, "uint8 pixels divided by 255", [lo, hi]
    if lo >= 0 and hi <= 1:
        return 1.0, f"{kind} pixels within [0, 1] used as they are", [lo, hi]
    if lo >= 0 and hi <= 255:
        return 1.0 / 255.0, f"{kind} pixels in [0, 255] with max {hi:g} > 1 divided by 255", [lo, hi]
    raise ValueError(
        f"{where}: expected pixels in [0, 1] or [0, 255] in {what}, got {kind} values in "
        f"[{lo:.6g}, {hi:.6g}]; pass normalize='none' (--normalize none) to use the values as "
        "they are"
    )


def _normalise(x: np.ndarray, scale: float, mean, std, where: str):
    """(x·scale − mean)/std per channel (last axis of images with channels, else scalar)."""
    channels = x.shape[-1] if x.ndim == 4 else 1
    for name, v in (("mean", mean), ("std", std)):
        if v.size not in (1, channels):
            want = "1 value (the images have one channel)" if channels == 1 else \
                f"1 or {channels} values (one per channel)"
            raise ValueError(f"{where}: expected {name} with {want}, got {v.size}: {v.tolist()}")
    with np.errstate(over="ignore", invalid="ignore"):
        out = (x.astype(np.float64) * scale - mean) / std
    if not np.all(np.isfinite(out)):
        raise ValueError(f"{where}: expected finite inputs after normalisation, got an overflow "
                         f"from mean {mean.tolist()} and std {std.tolist()}")
    return out, mean.tolist(), std.tolist()


def load(
    name,
    split: str | None = None,
    *,
    data_dir=None,
    n: int = 512,
    dim: int = 784,
    seed: int = 0,
    mean=None,
    std=None,
    preset: str | None = None,
    normalize: str = "default",
    downsample: int = 1,
) -> Dataset:
    """Load a data set as float64 (n, d) arrays.

    Args:
      name: ``mnist``, ``fashion_mnist``, ``cifar10``, ``svhn_cropped`` (tensorflow-datasets,
        or ``<name>_<split>.npz`` in ``data_dir``), ``digits``, ``gaussian``, or a path (str
        or ``os.PathLike``) to an ``.npz`` file with arrays ``x`` and ``y``.
      split: split name; default "train" for the tensorflow-datasets names. ``digits``,
        ``gaussian`` and ``.npz`` files have one split: it is recorded as given, by default
        "all" (``digits``, ``gaussian``) or the file's stem (e.g. "cifar10_test").
      data_dir: TFDS data dir (default ``$TFDS_DATA_DIR`` or ``~/tensorflow_datasets``), also
        searched for an exported ``<name>_<split>.npz``, which is used first when present
        (e.g. ``load("cifar10", "test", data_dir="../shared/data")`` reads
        ``../shared/data/cifar10_test.npz`` with CIFAR-10's normalisation).
      n, dim, seed: size and seed of the ``gaussian`` set.
      mean, std: per-channel normalisation after pixel scaling (a number or one per channel);
        override a named set's values. An ``.npz`` path needs both (or ``preset``).
      preset: for an ``.npz`` path, the papers' mean/std of a named set (``mnist``,
        ``fashion_mnist``, ``cifar10``, ``svhn_cropped``); ``mean``/``std`` override it.
      normalize: ``default`` (pixel scaling and mean/std as above), ``unit`` (additionally
        project every input onto the unit sphere) or ``none`` (raw values as float64; not
        with mean, std or preset).
      downsample: k ≥ 1: each image averaged over k × k pixel blocks after the normalisation
        (k must divide H and W; ``image_shape`` becomes (H/k, W/k, …); recorded in
        ``preprocessing`` when k > 1): smaller images for convolutional nets that pool.

    Raises:
      DataUnavailableError: a TFDS set neither on disk nor downloadable (a ValueError).
      TypeError: name, split, data_dir, preset, normalize, mean, std, n, dim or seed of the
        wrong type.
      ValueError: unknown name; unreadable, truncated or malformed file; NaN/Inf values;
        pixels outside [0, 1] and [0, 255] (unless normalize="none"); an ``.npz`` path
        without ``preset``, ``mean``/``std`` or ``normalize="none"``; bad sizes.
    """
    where = "datasets.load"
    name = _as_path_or_name(name, "name", where)
    if split is not None and not isinstance(split, str):
        raise TypeError(f"{where}: expected split as a str (e.g. 'train', 'test') or None, "
                        f"got {type(split).__name__} {split!r}")
    if data_dir is not None:
        data_dir = _as_path_or_name(data_dir, "data_dir", where)
    if not isinstance(normalize, str):
        raise TypeError(f"{where}: expected normalize as one of {_NORMALIZE}, got "
                        f"{type(normalize).__name__} {normalize!r}")
    if normalize not in _NORMALIZE:
        raise ValueError(f"{where}: expected normalize 'default', 'unit' or 'none', got {normalize!r}")
    if preset is not None and not isinstance(preset, str):
        raise TypeError(f"{where}: expected preset as a str in {sorted(TFDS_NAMES)} or None, got "
                        f"{type(preset).__name__} {preset!r}")
    if preset is not None and preset not in TFDS_NAMES:
        raise ValueError(f"{where}: expected preset in {sorted(TFDS_NAMES)}, got {preset!r}")
    mean, std = _as_stats(mean, "mean", where), _as_stats(std, "std", where)
    given = [k for k, v in (("mean", mean), ("std", std), ("preset", preset)) if v is not None]
    if normalize == "none" and given:
        raise ValueError(f"{where}: expected no {'/'.join(given)} with normalize='none' (raw "
                         f"values), got {', '.join(given)}; drop them or use normalize='default'")
    if isinstance(downsample, (bool, np.bool_)) or not isinstance(downsample, (int, np.integer)) \
            or downsample < 1:
        raise ValueError(f"{where}: expected downsample a positive integer, got {downsample!r}")
    if name == "gaussian":
        if downsample != 1:
            raise ValueError(f"{where}: expected images to downsample, got the gaussian set "
                             f"(rows of dimension {dim})")
        return _gaussian(split, n, dim, seed, normalize, given, where)
    if name in TFDS_NAMES or name == "digits":
        if preset not in (None, name):
            raise ValueError(f"{where}: expected preset only for an .npz path (or equal to the "
                             f"name), got preset={preset!r} for the named set {name!r}")
    if name in TFDS_NAMES:
        split = "train" if split is None else split
        exported = _exported_file(name, split, data_dir)
        if exported is not None:
            images, y = _read_npz(exported, where)
            if tuple(images.shape[1:]) not in _IMAGE_SHAPES[name]:
                raise ValueError(
                    f"{where}: expected {name} images of shape "
                    f"{' or '.join(map(str, _IMAGE_SHAPES[name]))} in {exported}, got "
                    f"{tuple(images.shape[1:])}")
            source = os.path.abspath(exported)
        else:
            images, y, source = _load_tfds(name, split, data_dir, where)
        default_mean, default_std = TFDS_NAMES[name]
    elif name == "digits":
        from sklearn.datasets import load_digits

        bunch = load_digits()
        images, y = bunch.images, bunch.target
        split = "all" if split is None else split
        default_mean, default_std = 0.5, 0.5
        source = "sklearn.datasets.load_digits"
    elif name.endswith(".npz") or os.path.exists(name):
        images, y = _read_npz(name, where)
        split = _file_stem(name) if split is None else split
        if preset is not None:
            default_mean, default_std = TFDS_NAMES[preset]
        elif normalize != "none" and (mean is None or std is None):
            missing = "mean and std" if mean is None and std is None else ("mean" if mean is None else "std")
            raise ValueError(
                f"{where}: expected the normalisation of {name} (an .npz file has none built in), "
                f"got no {missing}; pass preset= (--preset {'|'.join(sorted(TFDS_NAMES))}), "
                "mean= and std= (--mean/--std), or normalize='none' (--normalize none) for the raw values"
            )
        else:
            default_mean = default_std = None
        source = os.path.abspath(name)
    else:
        raise ValueError(
            f"{where}: unknown data set {name!r}; expected one of {sorted(TFDS_NAMES)}, "
            "'digits', 'gaussian' or a path to an .npz file"
        )
    prep = {"source": source}
    if normalize == "none":
        x = images.astype(np.float64)
        prep.update(pixel_scale=1.0, pixel_scaling="none (raw values)", mean=None, std=None)
    else:
        if name == "digits":
            scale, scaling = 1.0 / 16.0, "digits pixels 0..16 divided by 16"
        else:
            scale, scaling, (_, top) = _pixel_scale(images, source, where)
            named = preset if preset is not None else (name if name in TFDS_NAMES else None)
            if named is not None and mean is None and std is None and top * scale < MIN_TOP_PIXEL:
                raise ValueError(
                    f"{where}: expected {named} pixels (uint8 0..255, or floats in [0, 1] or "
                    f"[0, 255]) reaching at least {MIN_TOP_PIXEL} of the top after scaling, got "
                    f"{images.dtype} values in [{float(np.min(images)):.6g}, {top:.6g}] in "
                    f"{source} ({scaling}: largest {top * scale:.3g}); these are not {named} "
                    "images as the preset assumes: pass --mean/--std for them, or "
                    "--normalize none")
        mean = _as_stats(default_mean, "mean", where) if mean is None else mean
        std = _as_stats(default_std, "std", where) if std is None else std
        x, mean_used, std_used = _normalise(images, scale, mean, std, where)
        prep.update(pixel_scale=scale, pixel_scaling=scaling, mean=mean_used, std=std_used)
    prep["pixel_range"] = [float(np.min(images)), float(np.max(images))]
    shape = tuple(images.shape[1:])
    if downsample != 1:
        x, shape = _downsample(x.reshape((len(x),) + shape), downsample, name, where)
        prep["downsample"] = downsample
    x = x.reshape(len(x), -1)
    if normalize == "unit":
        x = _unit_rows(x, name, where)
    prep["normalize"] = normalize
    return Dataset(x, np.asarray(y), name, split, shape, prep)


def _downsample(images, k, name, where):
    """(images averaged over k × k pixel blocks, their shape (H/k, W/k, …))."""
    if images.ndim < 3:
        raise ValueError(f"{where}: expected images to downsample, got {name!r} with example "
                         f"shape {images.shape[1:]}")
    h, w = images.shape[1:3]
    if h % k or w % k:
        raise ValueError(f"{where}: expected downsample dividing the images' {h} x {w} pixels, "
                         f"got {k}")
    rest = images.shape[3:]
    blocks = images.reshape((len(images), h // k, k, w // k, k) + rest)
    out = blocks.mean(axis=(2, 4))
    return out, tuple(out.shape[1:])


def _as_path_or_name(value, what: str, where: str) -> str:
    if isinstance(value, os.PathLike):
        value = os.fspath(value)
    if not isinstance(value, str):
        raise TypeError(f"{where}: expected {what} as a str (a data-set name or a path) or "
                        f"os.PathLike, got {type(value).__name__} {value!r}")
    return value


def _file_stem(path: str) -> str:
    base = os.path.basename(os.path.normpath(path))
    stem = base[: -len(".npz")] if base.lower().endswith(".npz") else os.path.splitext(base)[0]
    return stem or "file"


def _gaussian(split, n, dim, seed, normalize, given, where) -> Dataset:
    if given:
        raise ValueError(f"{where}: expected no {'/'.join(given)} for the gaussian set (its inputs "
                         f"are N(0, I) as drawn), got {', '.join(given)}")
    n, dim = as_count(n, "gaussian n", where), as_count(dim, "gaussian dim", where)
    seed = as_count(seed, "seed", where, minimum=0)
    check_memory(2 * 8 * n * dim, f"the gaussian set of n = {n} points in dim = {dim} (float64, "
                 "and one working copy)", None, where, "use a smaller --n or --dim")
    x = np.random.default_rng(seed).standard_normal((n, dim))
    prep = {"source": "N(0, I)", "n": n, "dim": dim, "seed": seed, "normalize": normalize}
    if normalize == "unit":
        x = _unit_rows(x, "gaussian", where)
    return Dataset(x, np.zeros(n, dtype=np.int64), "gaussian", "all" if split is None else split, (dim,), prep)


def _unit_rows(x: np.ndarray, name: str, where: str) -> np.ndarray:
    """Every row divided by its norm (computed after dividing by the row's max |x|, so no
    overflow for large values)."""
    top = np.max(np.abs(x), axis=1, keepdims=True)
    if np.any(top == 0):
        row = int(np.argmax(top[:, 0] == 0))
        raise ValueError(f"{where}: expected nonzero inputs to project onto the unit sphere, got "
                         f"a zero row {row} ({name})")
    x = x / top
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def _exported_file(name: str, split: str, data_dir) -> str | None:
    """``<data_dir>/<name>_<split>.npz`` if that file exists (data_dir default: the TFDS dir)."""
    path = os.path.join(data_dir or _default_tfds_dir(), f"{name}_{split}.npz")
    return path if os.path.isfile(path) else None


def _exported_splits(name: str, folder: str) -> list:
    """The splits S of the exported files ``<folder>/<name>_S.npz`` (sorted; [] if none or no
    such folder)."""
    try:
        files = os.listdir(folder)
    except OSError:
        return []
    prefix = f"{name}_"
    return sorted(f[len(prefix):-len(".npz")] for f in files
                  if f.startswith(prefix) and f.endswith(".npz")
                  and os.path.isfile(os.path.join(folder, f)))


def _default_tfds_dir() -> str:
    return os.environ.get("TFDS_DATA_DIR") or os.path.join(os.path.expanduser("~"), "tensorflow_datasets")


def _download_reachable(timeout: float = 3.0) -> bool:
    """Whether the TFDS download host answers; avoids tfds' minutes of retries offline."""
    import socket

    try:
        with socket.create_connection((_DOWNLOAD_HOST, 443), timeout=timeout):
            return True
    except OSError:
        return False


def _load_tfds(name: str, split: str, data_dir, where: str):
    """Images (n, H, W, C) uint8 and labels of a tensorflow-datasets split, as numpy."""
    searched = data_dir or _default_tfds_dir()
    ways_out = (
        f"pass --data-dir DIR (data_dir=) holding an exported {name}_{split}.npz (arrays x and y; "
        f"{name}_SPLIT.npz with --split SPLIT) or a prepared TFDS directory, or --dataset "
        f"path/to/file.npz --preset {name}"
    )
    others = _exported_splits(name, searched)
    if others:  # the folder has this set for another split: say how to use it first
        ways_out = (f"{searched} holds {', '.join(f'{name}_{o}.npz' for o in others)}: pass "
                    f"--split {others[0]} (split={others[0]!r}) to use it; or " + ways_out)
    try:
        tfds = quiet_import("tensorflow_datasets")  # without TensorFlow's C++ start-up lines
    except ImportError:
        raise DataUnavailableError(
            f"{where}: {name} needs tensorflow-datasets (pip install 'ntkcond[tfds]'); or {ways_out}"
        ) from None
    kwargs = dict(split=split, data_dir=data_dir, as_supervised=True)
    with _quiet_absl():
        return _load_tfds_quietly(tfds, name, split, searched, ways_out, where, kwargs)


@contextlib.contextmanager
def _quiet_absl():
    """Silence absl's warnings (e.g. 'Variant folder … has no dataset_info.json') for a while."""
    logger = logging.getLogger("absl")
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        yield
    finally:
        logger.setLevel(level)


def _load_tfds_quietly(tfds, name, split, searched, ways_out, where, kwargs):
    try:
        ds = tfds.load(name, download=False, **kwargs)
    except (AssertionError, OSError, tfds.core.registered.DatasetNotFoundError):
        if not _download_reachable():
            raise DataUnavailableError(
                f"{where}: {name} ({split}) is not in the TFDS data dir {searched} and cannot be "
                f"downloaded (no network); {ways_out}"
            ) from None
        try:
            ds = tfds.load(name, download=True, **kwargs)
        except Exception as err:  # tfds raises many kinds; the user needs one line
            cause = str(err).splitlines()[0][:200] if str(err) else type(err).__name__
            raise DataUnavailableError(
                f"{where}: {name} ({split}) is not in the TFDS data dir {searched} and its "
                f"download failed ({cause}); {ways_out}"
            ) from None
    except ValueError as err:  # e.g. an unknown split
        raise ValueError(f"{where}: {name}: {str(err).splitlines()[0]}") from None
    xs, ys = zip(*tfds.as_numpy(ds.batch(4096)))
    return np.concatenate(xs), np.concatenate(ys), f"tfds:{name}:{split}:{searched}"


def _read_npz(path: str, where: str):
    """Arrays x (n, ...) and y (n,) of an ``.npz`` file; one ValueError naming the file and what
    is wrong for a missing, empty, truncated, non-zip or malformed file (no warnings)."""
    if os.path.isdir(path):
        raise ValueError(f"{where}: expected an .npz file, got the folder {path}")
    try:
        with open(path, "rb") as f:
            magic = f.read(6)
    except OSError as err:
        raise ValueError(f"{where}: cannot read {path} ({err.strerror or type(err).__name__})") from None
    if not magic:
        raise ValueError(f"{where}: cannot read {path} as an .npz file: expected a zip archive of "
                         "arrays, got an empty file")
    if magic.startswith(b"\x93NUMPY"):
        raise ValueError(f"{where}: cannot read {path} as an .npz file: expected a zip archive with "
                         "arrays x and y (numpy.savez), got a single .npy array")
    if not magic.startswith(b"PK"):
        raise ValueError(f"{where}: cannot read {path} as an .npz file: expected a zip archive of "
                         f"arrays (numpy.savez), got a file starting with {magic!r}")
    try:  # our own file object: closed even when numpy's zipfile fails half-way
        with open(path, "rb") as handle, np.load(handle, allow_pickle=False) as f:
            if "x" not in f.files or "y" not in f.files:
                raise ValueError(f"{where}: expected arrays 'x' and 'y' in {path}, got {sorted(f.files)}")
            x, y = f["x"], f["y"]
            for key, value in (("x", x), ("y", y)):
                if not isinstance(value, np.ndarray):  # a member that is not .npy: raw bytes
                    raise ValueError(
                        f"{where}: expected {key}.npy in {path} to be a numpy array (numpy.savez), "
                        f"got {type(value).__name__} ({len(value)} bytes that are not in .npy "
                        "format; pickled data are not loaded, as that could run code)")
    except (zipfile.BadZipFile, zlib.error, EOFError, OSError, ValueError) as err:
        if str(err).startswith(where):
            raise
        text = str(err).splitlines()[0] if str(err) else type(err).__name__
        if "allow_pickle" in text:
            raise ValueError(f"{where}: expected numeric arrays x and y in {path}, got an object "
                             "array (Python objects; not loaded, as that could run code)") from None
        raise ValueError(f"{where}: cannot read {path}: a truncated or corrupt .npz file "
                         f"({type(err).__name__}: {text})") from None
    if x.ndim < 2 or len(x) == 0:
        raise ValueError(f"{where}: expected x of shape (n, ...) with n >= 1 in {path}, got {x.shape}")
    if y.ndim != 1 or len(y) != len(x):
        raise ValueError(f"{where}: expected y of shape ({len(x)},) (one label per row of x) in {path}, "
                         f"got {y.shape}")
    if x.dtype == np.bool_ or not (np.issubdtype(x.dtype, np.integer) or np.issubdtype(x.dtype, np.floating)):
        raise ValueError(f"{where}: expected numeric x (integer or floating) in {path}, got dtype {x.dtype}")
    if np.issubdtype(x.dtype, np.floating) and not np.all(np.isfinite(x)):
        row = int(np.argmax(~np.isfinite(x.reshape(len(x), -1)).all(axis=1)))
        raise ValueError(f"{where}: expected finite pixels in {path}, got NaN or Inf in row {row}")
    return x, y


def batches(
    dataset: Dataset,
    batch: int,
    *,
    seed: int = 0,
    shuffle: bool = True,
    max_batches: int | None = None,
    drop_last: bool = False,
):
    """Split a data set into batches of indices.

    Args:
      dataset: a ``Dataset``.
      batch: batch size, an integer with 1 ≤ batch ≤ n.
      seed: shuffling seed (integer ≥ 0); ``shuffle=False`` keeps the file order.
      max_batches: at most this many batches (integer ≥ 1), or None for all.
      drop_last: drop a final batch smaller than ``batch``.

    Returns:
      list of index arrays.

    Raises:
      TypeError: dataset not a ``Dataset``; batch, seed or max_batches not an integer (a bool,
        2.5 or '64' is refused); shuffle or drop_last not a bool.
      ValueError: batch outside [1, n], seed < 0, max_batches < 1.
    """
    where = "batches"
    if not isinstance(dataset, Dataset):
        raise TypeError(f"{where}: expected a Dataset from datasets.load, got {type(dataset).__name__}")
    n = len(dataset.x)
    batch = as_count(batch, "batch", where)
    if batch > n:
        raise ValueError(
            f"{where}: expected 1 <= batch <= n = {n} ({dataset.name}), got batch = {batch}"
        )
    seed = as_count(seed, "seed", where, minimum=0)
    if max_batches is not None:
        max_batches = as_count(max_batches, "max_batches", where)
    for flag, value in (("shuffle", shuffle), ("drop_last", drop_last)):
        if not isinstance(value, (bool, np.bool_)):
            raise TypeError(f"{where}: expected {flag} as a bool, got {type(value).__name__} {value!r}")
    order = np.random.default_rng(seed).permutation(n) if shuffle else np.arange(n)
    out = [order[i : i + batch] for i in range(0, n, batch)]
    if drop_last and len(out[-1]) < batch:
        out = out[:-1]
    if max_batches is not None:
        out = out[:max_batches]
    return out
