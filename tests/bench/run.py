"""Hybrid Skin benchmarks: every target of issue 17 measured against Blender in one run (``make bench``).

Ours and Blender's runs are interleaved and each figure is the minimum of at least seven rounds, with
the spread printed (see :mod:`measure`). The end of the output is the Markdown table; ``--record`` also
writes the run to ``docs/measured.json``, the one source of every measured number in the docs (``make
tools`` writes them into the pages). Missed targets are reported, never fatal: the exit status is 0
unless something raised.

    P1   hybrid positions ÷ Blender's two-modifier mix, 10k / 100k / 1M vertices (target ≤ 0.8, stretch 0.5)
    P1n  positions + normals ÷ the mix + reading its vertex normals (≤ 1.0 at every size)
    API  api.deformed_positions end to end ÷ native evaluated positions, 110k vertices, scaled bones (≤ 1.0)
    BAKE shape-key bake per frame ÷ the same job on Blender's own mix (≤ 1.0)
    P5   animation-texture bake (VERTEX, BONE_DQ), texture only (≤ 1.0) and whole (≤ 3) ÷ native evaluation
    P3   bind, seconds per million weight entries (≤ 0.3)
    P2   GPU display CPU per frame, 1M ÷ 10k vertices (≤ 1.2), and ÷ Blender's Armature modifier (≤ 0.05)
    D1   each display's CPU per frame (pose change, evaluation with the add-on's handlers, the preview's
         pose upload) ÷ Blender's Armature modifier alone, 1M vertices: Evaluated (≤ 2.5: Blender's own
         LBS + DQS mix), Evaluated Auto (informative: the factor group is written every frame), the GPU
         preview during playback (≤ 0.1: pose evaluation, handlers and the pose upload, at any size)
    P4   GPU draw, hybrid ÷ DQS-only shader (informative)
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = ROOT = HERE.parents[1]
MEASURED = REPO / "docs" / "measured.json"
sys.path[:0] = [str(REPO), str(HERE)]

import bpy  # noqa: E402
import core_figures  # noqa: E402
import display_figures  # noqa: E402
import glue_figures  # noqa: E402
import gpu_figures  # noqa: E402
import measure  # noqa: E402
import scene  # noqa: E402

from hybrid_skin.core.skinning import THREADS  # noqa: E402

SIZES = (10_000, 100_000, 1_000_000)
BIND_SIZES = {100_000: 7, 1_000_000: 7}  # rounds
ORDER = ("P1", "P1n", "API", "BAKE", "P5", "P3", "P2", "D1", "P4")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="make bench: every speed and memory target against Blender")
    parser.add_argument(
        "--record", action="store_true",
        help=f"also write the run to {MEASURED.relative_to(ROOT)}, the docs' one source of measured numbers "
        "(then `make tools` writes them into the pages)",
    )  # fmt: skip
    args = parser.parse_args(argv)
    t_start = time.perf_counter()
    header = measure.machine()
    header["blender"] = bpy.app.version_string
    try:
        header["renderer"] = gpu_figures.renderer()
    except Exception as err:  # noqa: BLE001  (no OpenGL at all: the GPU figures say so below)
        header["renderer"] = f"unavailable ({err})"
    print(
        f"{header['date']}: Blender {header['blender']}, numpy {header['numpy']}, {header['cpu']}, "
        f"OpenGL {header['renderer']}, load average {header['load']}"
    )
    print(
        f"{core_figures.BONES} bones, {scene.INFLUENCES} influences per vertex, deform factor "
        f"{core_figures.FACTOR}; the numpy core runs chunks on {THREADS} threads, Blender's modifiers use "
        f"every core too; peak memory: tracemalloc (Python and numpy heap), one extra untimed run\n",
        flush=True,
    )
    figures: list[measure.Figure] = []

    def add(new: list[measure.Figure]) -> None:
        figures.extend(new)
        for fig in new:
            print(
                f"  [{time.perf_counter() - t_start:6.1f} s] {fig.key} {fig.name}: {fig.ratio:.3g}",
                flush=True,
            )

    for n in SIZES:
        scene.clear_scene()
        arm, obj, entries = scene.bench_rig("Bench", n, core_figures.BONES)
        bpy.context.view_layer.update()
        if n in BIND_SIZES:
            add([glue_figures.bind(obj, entries, BIND_SIZES[n])])
        add(core_figures.p1(n, arm, obj))
    with glue_figures.registered():  # the API, bakes and GPU display use the add-on's runtime, as a user's
        add([core_figures.api_end_to_end()])
        add([glue_figures.shape_key_bake()])
        add(glue_figures.texture_bake())
        if header["renderer"].startswith("unavailable"):
            print("GPU figures skipped: no OpenGL")
        else:
            add(gpu_figures.gpu_display())
            add(display_figures.displays())
            add(gpu_figures.gpu_draw())
    scene.clear_scene()
    try:
        header["load_end"] = "{:.2f} {:.2f} {:.2f}".format(*os.getloadavg())
    except OSError:
        header["load_end"] = "?"
    figures.sort(key=lambda f: ORDER.index(f.key))
    print()
    print(measure.text_table(figures))
    print("\nREADME table:\n")
    print(measure.markdown_table(figures, header))
    print(f"\ntotal {time.perf_counter() - t_start:.0f} s")
    if args.record:
        MEASURED.write_text(json.dumps(measure.record(figures, header), indent=1) + "\n", encoding="utf-8")
        print(f"recorded in {MEASURED}: run `make tools` to write the numbers into the docs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
