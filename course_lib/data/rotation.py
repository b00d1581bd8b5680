"""Data for chapters 01-05: the seed's image-rotation task (data folder).

Seed 000 (§2.4) trains an RNN to rotate images: the input at step t is an image rotated t times
by 10° anti-clockwise, flattened; the target is the next one, ``y_t = x_{t+1}``.

* :func:`shape_images` -- small grayscale pictures drawn in code (no download, any size).
* :func:`sample_images` -- patches of the photo that ships inside matplotlib (``grace_hopper.jpg``).
* :func:`rotate` -- anti-clockwise rotation with bilinear interpolation (numpy only).
* :func:`rotation_sequences` -- the task: ``(X, Y)`` of shape ``(T, B, H*W)``.
* :func:`load_cifar10` -- the seed's data set, read from a local copy of CIFAR-10's python
  batches (grayscale, flattened, truncated to ``n_features`` = 1000 as in the seed). Nothing is
  downloaded: point it at the folder you extracted ``cifar-10-python.tar.gz`` into.

Pixel values are in ``[0, 1]``, float32 unless ``dtype`` says otherwise.
"""
from __future__ import annotations

import math
import pickle
from pathlib import Path

import numpy as np

from ..core.validate import check_alloc, check_array, check_dtype, check_float, check_int, check_positive_int

__all__ = ["shape_images", "sample_images", "rotate", "rotation_sequences", "load_cifar10", "CIFAR10_URL"]

CIFAR10_URL = "https://www.cs.toronto.edu/~kriz/cifar-10-python.tar.gz"


def _dtype(dtype) -> np.dtype:
    return check_dtype(dtype, "dtype")


# --------------------------------------------------------------------------- images made in code
def shape_images(n: int = 8, size: int = 16, *, seed: int = 0, dtype=np.float32) -> np.ndarray:
    """``n`` grayscale ``(size, size)`` pictures of simple, asymmetric shapes (so that a rotation
    is visible): an "L", a bar, a triangle, an off-centre disc, a cross with one long arm, ...
    with random positions/sizes/brightness from ``np.random.default_rng(seed)``.

    Returns ``(n, size, size)`` in ``[0, 1]``.
    """
    n = check_positive_int(n, "n")
    size = check_int(size, "size", low=6, high=512)
    seed = check_int(seed, "seed", low=0)
    dt = _dtype(dtype)
    check_alloc((n, size, size), np.float64, "n", what="the pictures")
    rng = np.random.default_rng(seed)
    c = (size - 1) / 2
    yy, xx = np.mgrid[0:size, 0:size].astype(np.float64)
    u, v = (xx - c) / size, (c - yy) / size          # centred coordinates in [-0.5, 0.5], v points up
    out = np.zeros((n, size, size), dtype=np.float64)
    for i in range(n):
        kind = i % 6
        a, b = rng.uniform(-0.08, 0.08, 2)               # small random offset
        w = rng.uniform(0.06, 0.1)                       # stroke half-width
        L = rng.uniform(0.25, 0.38)                      # arm length
        x, y = u - a, v - b
        if kind == 0:    # an "L"
            img = ((np.abs(x + L / 2) < w) & (np.abs(y) < L)) | ((np.abs(y + L - w) < w) & (x > -L / 2 - w) & (x < L / 2))
        elif kind == 1:  # a bar with a blob on one end
            img = ((np.abs(y) < w) & (np.abs(x) < L)) | ((x - L) ** 2 + y ** 2 < (1.8 * w) ** 2)
        elif kind == 2:  # a right triangle
            img = (x > -L / 2) & (y > -L / 2) & (x + y < L / 2)
        elif kind == 3:  # a disc next to a small square
            img = ((x + 0.12) ** 2 + y ** 2 < (1.9 * w) ** 2) | ((np.abs(x - 0.2) < w) & (np.abs(y - 0.18) < w))
        elif kind == 4:  # a cross with one long arm
            img = ((np.abs(x) < w) & (y > -L / 2) & (y < L)) | ((np.abs(y) < w) & (np.abs(x) < L / 2))
        else:            # a "T"
            img = ((np.abs(x) < w) & (np.abs(y + 0.05) < L / 1.3)) | ((np.abs(y - L / 1.3 + 0.05) < w) & (np.abs(x) < L / 1.2))
        out[i] = img * rng.uniform(0.6, 1.0)
    return out.astype(dt)


def sample_images(n: int = 8, size: int = 16, *, seed: int = 0, dtype=np.float32) -> np.ndarray:
    """``n`` grayscale ``(size, size)`` patches cut at random places from the photo that ships
    with matplotlib (``grace_hopper.jpg`` in ``matplotlib.cbook.get_sample_data``), each patch a
    block-average of a ``4 size`` pixel square (nearly flat patches are skipped). Returns ``(n, size, size)`` in ``[0, 1]``.
    """
    n = check_positive_int(n, "n")
    size = check_int(size, "size", low=4, high=128)
    seed = check_int(seed, "seed", low=0)
    dt = _dtype(dtype)
    check_alloc((n, size, size), np.float64, "n", what="the patches")
    import matplotlib.cbook as cbook
    import matplotlib.image as mpimg

    with cbook.get_sample_data("grace_hopper.jpg") as f:
        rgb = mpimg.imread(f, format="jpg").astype(np.float64)
    if rgb.max() > 1.0:
        rgb /= 255.0
    gray = rgb[..., :3] @ np.array([0.299, 0.587, 0.114])
    k = 4
    side = size * k
    if side > min(gray.shape):
        raise ValueError(f"size: expected at most {min(gray.shape) // k} for this photo, got {size}")
    rng = np.random.default_rng(seed)
    out = np.empty((n, size, size))
    for i in range(n):
        for _ in range(20):  # skip flat patches (background): something should be visible turning
            r0 = int(rng.integers(0, gray.shape[0] - side + 1))
            c0 = int(rng.integers(0, gray.shape[1] - side + 1))
            patch = gray[r0:r0 + side, c0:c0 + side].reshape(size, k, size, k).mean(axis=(1, 3))
            if patch.std() > 0.1:
                break
        out[i] = patch
    return out.astype(dt)


# --------------------------------------------------------------------------- rotation
def rotate(images: np.ndarray, angle_deg: float) -> np.ndarray:
    """Rotate ``(..., H, W)`` images anti-clockwise by ``angle_deg`` about their centre, with
    bilinear interpolation; pixels that come from outside the picture are 0. Same dtype out."""
    images = check_array(images, "images", ndim=(2, 3, 4))
    angle = math.radians(check_float(angle_deg, "angle_deg"))
    Hh, Ww = images.shape[-2:]
    check_alloc((3,) + images.shape, np.float64, "images", what="rotate's float64 work arrays")
    cy, cx = (Hh - 1) / 2, (Ww - 1) / 2
    yy, xx = np.mgrid[0:Hh, 0:Ww].astype(np.float64)
    # inverse map: where in the source does each output pixel come from (rotate back by -angle);
    # rows grow downwards, so an anti-clockwise turn on screen uses +sin on the row axis.
    dx, dy = xx - cx, yy - cy
    sx = cx + math.cos(angle) * dx - math.sin(angle) * dy
    sy = cy + math.sin(angle) * dx + math.cos(angle) * dy
    x0, y0 = np.floor(sx).astype(int), np.floor(sy).astype(int)
    fx, fy = sx - x0, sy - y0
    src = images.astype(np.float64)
    out = np.zeros(src.shape, dtype=np.float64)
    for oy, ox, wgt in ((0, 0, (1 - fx) * (1 - fy)), (0, 1, fx * (1 - fy)), (1, 0, (1 - fx) * fy), (1, 1, fx * fy)):
        px, py = x0 + ox, y0 + oy
        ok = (px >= 0) & (px < Ww) & (py >= 0) & (py < Hh)
        vals = src[..., np.clip(py, 0, Hh - 1), np.clip(px, 0, Ww - 1)]
        out += np.where(ok, wgt, 0.0) * vals
    return out.astype(images.dtype)


def rotation_sequences(images: np.ndarray | None = None, T: int = 10, angle_deg: float = 10.0, *,
                       n_features: int | None = None, dtype=None) -> tuple[np.ndarray, np.ndarray]:
    """The seed's task. ``images (B, H, W)`` (default: ``shape_images(8, 16)``) ->
    ``X, Y`` of shape ``(T, B, H*W)`` with ``X[t]`` = the images rotated ``t * angle_deg``
    anti-clockwise and ``Y[t] = X[t+1]`` (the next rotation).

    Each frame is rotated from the original picture by ``t * angle_deg`` (the same as rotating
    the previous frame by ``angle_deg``, without piling up interpolation blur).
    ``n_features`` keeps only the first ``n_features`` pixels of each flattened image, as the
    seed does (1024 -> 1000 for CIFAR-10).
    """
    if images is None:
        images = shape_images(8, 16)
    images = check_array(images, "images", ndim=3)
    T = check_positive_int(T, "T")
    angle = check_float(angle_deg, "angle_deg")
    B, Hh, Ww = images.shape
    if B < 1:
        raise ValueError(f"images: expected at least one image, got shape {tuple(images.shape)}")
    n = Hh * Ww
    if n_features is not None:
        n_features = check_int(n_features, "n_features", low=1, high=n)
    dt = images.dtype if dtype is None else _dtype(dtype)
    # T + 1 rotated copies of every picture, in float64 while rotating: refuse before looping T times
    check_alloc((T + 1, B, Hh, Ww), np.float64, "T", what="the rotated frames")
    frames = np.stack([rotate(images, k * angle) for k in range(T + 1)])   # (T+1, B, H, W)
    flat = frames.reshape(T + 1, B, n)[:, :, :n_features].astype(dt)
    return np.ascontiguousarray(flat[:-1]), np.ascontiguousarray(flat[1:])


# --------------------------------------------------------------------------- CIFAR-10
def _cifar_dir(path: Path) -> Path:
    for cand in (path, path / "cifar-10-batches-py"):
        if (cand / "data_batch_1").is_file() or (cand / "test_batch").is_file():
            return cand
    raise FileNotFoundError(
        f"path: no CIFAR-10 python batches (data_batch_1 ... data_batch_5, test_batch) in {path} "
        f"or {path / 'cifar-10-batches-py'}. Download {CIFAR10_URL} yourself, extract it "
        f"(tar xzf cifar-10-python.tar.gz) and pass the folder it creates. The course never downloads it.")


def load_cifar10(path, n_features: int = 1000, *, batches=None, max_images: int | None = None,
                 dtype=np.float32) -> np.ndarray:
    """CIFAR-10 images as the seed uses them: grayscale, flattened, truncated.

    ``path``: the extracted ``cifar-10-batches-py`` folder (or its parent). ``batches``: file
    names to read (default: ``data_batch_1`` ... ``data_batch_5`` that exist, else ``test_batch``).
    Each file is a pickle of a dict with ``b"data"``: ``(N, 3072)`` uint8 (1024 red, 1024 green,
    1024 blue values per image, row-major 32x32). Grayscale is ``0.299 R + 0.587 G + 0.114 B``
    scaled to ``[0, 1]``. Returns ``(N, n_features)`` (``n_features <= 1024``; the seed uses 1000
    to avoid power-of-two matrix sizes). Raises ``FileNotFoundError`` when the folder is missing.
    """
    n_features = check_int(n_features, "n_features", low=1, high=1024)
    dt = _dtype(dtype)
    if not isinstance(path, (str, Path)):
        raise TypeError(f"path: expected a folder path (str or pathlib.Path), got {type(path).__name__}")
    if max_images is not None:
        max_images = check_positive_int(max_images, "max_images")
    root = Path(path).expanduser()
    if not root.is_dir():
        raise FileNotFoundError(
            f"path: CIFAR-10 folder {root} does not exist. Download {CIFAR10_URL} yourself, extract it "
            f"and pass the 'cifar-10-batches-py' folder. The course never downloads it.")
    folder = _cifar_dir(root)
    if batches is None:
        names = [f"data_batch_{i}" for i in range(1, 6) if (folder / f"data_batch_{i}").is_file()] or ["test_batch"]
    else:
        names = [batches] if isinstance(batches, str) else list(batches)
        if not names or not all(isinstance(b, str) and b and "/" not in b and b not in (".", "..") for b in names):
            raise ValueError(f"batches: expected batch file names such as 'data_batch_1' or 'test_batch', got {batches!r}")
    parts, count = [], 0
    for name in names:
        file = folder / name
        if not file.is_file():
            raise FileNotFoundError(f"batches: {file} does not exist")
        try:
            with open(file, "rb") as fh:
                entry = pickle.load(fh, encoding="bytes")
        except (pickle.UnpicklingError, EOFError, ValueError, AttributeError, ImportError, IndexError) as exc:
            raise ValueError(f"{file}: not a CIFAR-10 python batch ({type(exc).__name__}: {exc})") from None
        data = entry.get(b"data", entry.get("data")) if isinstance(entry, dict) else None
        if data is None:
            raise ValueError(f"{file}: expected a pickled dict with a b'data' entry, got {type(entry).__name__}")
        data = np.asarray(data)
        if data.ndim != 2 or data.shape[1] != 3072:
            raise ValueError(f"{file}: expected b'data' of shape (N, 3072), got {data.shape}")
        rgb = data.reshape(-1, 3, 1024).astype(np.float64) / 255.0
        gray = 0.299 * rgb[:, 0] + 0.587 * rgb[:, 1] + 0.114 * rgb[:, 2]
        parts.append(gray[:, :n_features])
        count += len(gray)
        if max_images is not None and count >= max_images:
            break
    out = np.concatenate(parts)
    if max_images is not None:
        out = out[:max_images]
    return out.astype(dt)
