"""Point cache files (core.pointcache): streamed a frame at a time, byte for byte what the formats say,
recognised by their headers, and never half-written at their path."""

from __future__ import annotations

import struct

import numpy as np
import pytest

from hybrid_skin.core.pointcache import (
    PointCacheWriter,
    cache_bytes,
    cache_layout,
    read_mdd,
    read_pc2,
    write_mdd,
    write_pc2,
)

RNG = np.random.default_rng(5)


def test_pc2_bytes_are_the_format(tmp_path):
    frames = RNG.normal(size=(4, 3, 3)).astype(np.float32)
    path = tmp_path / "a.pc2"
    write_pc2(path, frames, 10.0, 2.0)
    data = path.read_bytes()
    assert data[:12] == b"POINTCACHE2\0"
    assert struct.unpack("<iiffi", data[12:32]) == (1, 3, 10.0, 2.0, 4)
    assert np.array_equal(np.frombuffer(data, "<f4", offset=32).reshape(4, 3, 3), frames)
    assert len(data) == cache_bytes("PC2", 3, 4) and cache_layout(data) == ("PC2", 3, 4)
    got, start, rate = read_pc2(path)
    assert np.array_equal(got, frames) and (start, rate) == (10.0, 2.0)


def test_writing_over_a_file_leaves_only_the_new_one(tmp_path):
    path = tmp_path / "a.pc2"
    path.write_bytes(b"old")
    write_pc2(path, np.zeros((1, 2, 3), np.float32), 1.0)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.pc2"] and cache_layout(path.read_bytes())


def test_mdd_bytes_are_the_format(tmp_path):
    frames = RNG.normal(size=(5, 2, 3)).astype(np.float32)
    times = np.arange(5) / 24.0
    path = tmp_path / "a.mdd"
    write_mdd(path, frames, times)
    data = path.read_bytes()
    assert struct.unpack(">ii", data[:8]) == (5, 2)
    assert np.array_equal(np.frombuffer(data, ">f4", 5, 8), times.astype(np.float32))
    assert np.array_equal(np.frombuffer(data, ">f4", offset=28).reshape(5, 2, 3), frames)
    assert len(data) == cache_bytes("MDD", 2, 5) and cache_layout(data) == ("MDD", 2, 5)
    assert np.array_equal(read_mdd(path)[0], frames)


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"not a cache at all, just text",
        b"POINTCACHE2\0" + struct.pack("<iiffi", 1, 5, 0.0, 1.0, 3),  # 5 points x 3 frames, none there
        b"\x89PNG\r\n\x1a\n" + bytes(40),
    ],
)
def test_other_files_are_not_caches(data):
    assert cache_layout(data) is None


def test_a_streamed_cache_appears_only_when_complete(tmp_path):
    """The frames go to a temporary file; the path keeps its old bytes until commit, and a discard leaves
    the folder as it was."""
    path = tmp_path / "a.pc2"
    path.write_bytes(b"the previous cache")
    writer = PointCacheWriter(path, "PC2", 2, 3, start_frame=1.0)
    for i in range(3):
        writer.write(np.full((2, 3), i, np.float32))
        assert path.read_bytes() == b"the previous cache"
    writer.commit()
    assert np.array_equal(read_pc2(path)[0][:, 0, 0], [0, 1, 2])
    writer.rollback()  # what a bake does when it fails after its file: the previous one is back
    assert path.read_bytes() == b"the previous cache"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.pc2"]
    writer = PointCacheWriter(path, "PC2", 2, 1, start_frame=1.0)
    writer.write(np.ones((2, 3), np.float32))
    writer.commit()
    writer.finalize()  # the bake succeeded: the previous file goes
    assert np.array_equal(read_pc2(path)[0], np.ones((1, 2, 3)))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.pc2"]

    writer = PointCacheWriter(path, "MDD", 2, 3, times=np.zeros(3))
    writer.write(np.zeros((2, 3)))
    with pytest.raises(ValueError, match="1 of 3 frames"):
        writer.commit()
    writer.discard()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.pc2"]
    with pytest.raises(ValueError, match="frame of this cache"):
        PointCacheWriter(path, "PC2", 2, 1).write(np.zeros((3, 3)))
