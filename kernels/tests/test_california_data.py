"""Reference tests of the California Housing loader: both accepted files give the same data, the
known figures hold, a damaged file is DataCorrupt, and no data without a download is DataUnavailable
naming the file and the option."""

from __future__ import annotations

import shutil

import numpy as np
import pytest

from workloads.data import dataset_or_skip
from kernels.datasets import DataCorrupt, DataUnavailable
from kernels.datasets import california as cal


def _file(options, name: str):
    if options.data_dir is None or not (options.data_dir / name).is_file():
        pytest.skip(f"data file {name} needed: pass --data-dir or set $CLAIMS_DATA_DIR")
    return options.data_dir / name


@pytest.mark.smoke
def test_npz_and_raw_statlib_agree(options, tmp_path):
    npz, raw = _file(options, cal.NPZ_NAME), _file(options, cal.RAW_NAME)
    (tmp_path / "npz").mkdir()
    (tmp_path / "raw").mkdir()
    shutil.copy(npz, tmp_path / "npz")
    shutil.copy(raw, tmp_path / "raw")
    a, b = cal.load_california(tmp_path / "npz"), cal.load_california(tmp_path / "raw")
    assert a.source.endswith(cal.NPZ_NAME) and b.source.endswith(cal.RAW_NAME)
    np.testing.assert_allclose(b.data, a.data, rtol=1e-12)  # raw ratios recomputed: equal to rounding
    np.testing.assert_allclose(b.target, a.target, rtol=1e-15)


@pytest.mark.smoke
def test_known_figures(options):
    data = dataset_or_skip(cal.load_california, options.data_dir)
    assert data.data.shape == (20640, 8) and data.target.shape == (20640,)
    np.testing.assert_allclose(data.data[0], cal.ROW0, atol=5e-6, rtol=0)
    assert data.target[0] == 4.526
    assert round(float(data.target.mean()), 6) == 2.068558
    assert np.all(data.data[:, 4] >= 3) and np.all(data.target <= 5.00001)  # population counts; the 500001-dollar cap


@pytest.mark.smoke
@pytest.mark.parametrize("name", [cal.NPZ_NAME, cal.RAW_NAME])
def test_truncated_file_is_data_corrupt(options, tmp_path, name):
    content = _file(options, name).read_bytes()
    (tmp_path / name).write_bytes(content[: len(content) // 2])
    with pytest.raises(DataCorrupt, match="sha256"):
        cal.load_california(tmp_path)
    with pytest.raises(DataCorrupt, match=name):  # past the checksum, the parse or the figures catch it
        cal.load_california(tmp_path, verify_checksum=False)


@pytest.mark.smoke
def test_altered_value_is_data_corrupt(options, tmp_path):
    lines = _file(options, cal.RAW_NAME).read_bytes().split(b"\n")
    lines[0] = lines[0].replace(b"452600.000000", b"452700.000000")
    (tmp_path / cal.RAW_NAME).write_bytes(b"\n".join(lines))
    with pytest.raises(DataCorrupt, match="sha256"):
        cal.load_california(tmp_path)
    with pytest.raises(DataCorrupt, match="row 0"):
        cal.load_california(tmp_path, verify_checksum=False)


@pytest.mark.smoke
@pytest.mark.parametrize("where", ["no data dir", "empty data dir"])
def test_missing_data_without_download_is_unavailable(monkeypatch, tmp_path, where):
    monkeypatch.setenv("CLAIMS_NO_DOWNLOAD", "1")
    data_dir = None if where == "no data dir" else tmp_path
    with pytest.raises(DataUnavailable) as info:
        cal.load_california(data_dir)
    message = str(info.value)
    assert cal.NPZ_NAME in message and cal.RAW_NAME in message and "--data-dir" in message and "\n" not in message
    with pytest.raises(pytest.skip.Exception, match="--data-dir"):
        dataset_or_skip(cal.load_california, data_dir)
