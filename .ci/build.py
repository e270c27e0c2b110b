"""Build the installable extension zip with Blender's own extension tooling.

Stages ``build/stage/`` as the zip root (the contents of ``hybrid_skin/`` less what only a source checkout
runs, next to ``blender_manifest.toml``, plus ``shaders/``, the README and the LICENSE), validates it, runs
``blender_ext.py build`` and validates the zip again.

Usage, with Blender as the bpy module (``make build``) or with a Blender binary (its own Python)::

    .venv/bin/python .ci/build.py [--stage-dir DIR] [--output-dir DIR] [--release]
    blender -b --python-exit-code 1 --python .ci/build.py [-- --release]

``--release`` also refuses a manifest whose website or maintainer address is still a placeholder.
Prints the path of the written zip as the last line of stdout; exits non-zero with a message on any failure.
"""

from __future__ import annotations

import argparse
import importlib.util
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
PACKAGE_DIR = REPO_ROOT / "hybrid_skin"
MANIFEST = REPO_ROOT / "blender_manifest.toml"
SHADERS_DIR = REPO_ROOT / "shaders"
#: Files beside the package in the zip; each must exist (the manifest's licence needs its text).
EXTRA_FILES = ("README.md", "LICENSE")
#: Package folders a source checkout runs but the extension does not (the demo needs ``assets/`` and starts
#: a local web server and a browser): left out of the zip (the manifest's paths_exclude_pattern agrees).
SOURCE_ONLY = ("cli/demo",)
#: Hosts that mark a manifest field as not yet filled in for a release.
PLACEHOLDER_HOST = ".example"

# Kept out of the stage even before Blender's own paths_exclude_pattern runs.
STAGE_IGNORE = shutil.ignore_patterns("__pycache__", "*.pyc", ".*", "*.blend[1-9]")


class BuildError(RuntimeError):
    """A build step failed; the message says which and why."""


def blender_scripts_dir() -> Path:
    """Blender's bundled ``scripts/`` directory: the running Blender's, or the installed bpy module's
    (found without importing bpy, which takes seconds)."""
    if "bpy" in sys.modules:  # inside Blender (or a process that imported the module already)
        return Path(sys.modules["bpy"].utils.system_resource("SCRIPTS"))
    spec = importlib.util.find_spec("bpy")
    if spec is None or not spec.submodule_search_locations:
        raise BuildError(f"the bpy module is not installed for {sys.executable}; run `make .venv` first")
    bpy_dir = Path(next(iter(spec.submodule_search_locations)))
    candidates = sorted(bpy_dir.glob("[0-9]*.[0-9]*/scripts"))
    if not candidates:
        raise BuildError(f"no Blender scripts directory under {bpy_dir}")
    return candidates[-1]


def blender_ext_cli() -> Path:
    cli = blender_scripts_dir() / "addons_core" / "bl_pkg" / "cli" / "blender_ext.py"
    if not cli.is_file():
        raise BuildError(f"Blender's extension CLI not found at {cli}")
    return cli


def blender_valid_tags() -> Path:
    """The tag list Blender ships; passing it makes the validator reject unknown tags."""
    tags = blender_scripts_dir() / "modules" / "_bpy_internal" / "extensions" / "tags.py"
    if not tags.is_file():
        raise BuildError(f"Blender's valid tag list not found at {tags}")
    return tags


def read_manifest() -> dict:
    try:
        with MANIFEST.open("rb") as fh:
            return tomllib.load(fh)
    except (OSError, tomllib.TOMLDecodeError) as ex:
        raise BuildError(f"cannot read {MANIFEST}: {ex}") from ex


def zip_name(manifest: dict) -> str:
    return f"{manifest['id']}-{manifest['version']}.zip"


def stage(stage_dir: Path) -> None:
    """Lay out ``stage_dir`` exactly as the zip root must look."""
    if not (PACKAGE_DIR / "__init__.py").is_file():
        raise BuildError(f"{PACKAGE_DIR / '__init__.py'} is missing")
    if stage_dir.exists():
        shutil.rmtree(stage_dir)
    shutil.copytree(PACKAGE_DIR, stage_dir, ignore=STAGE_IGNORE)
    for relative in SOURCE_ONLY:
        shutil.rmtree(stage_dir / relative)
    shutil.copy2(MANIFEST, stage_dir / MANIFEST.name)
    if SHADERS_DIR.is_dir():
        if (stage_dir / "shaders").exists():
            raise BuildError("hybrid_skin/shaders would be overwritten by the top-level shaders/ directory")
        shutil.copytree(SHADERS_DIR, stage_dir / "shaders", ignore=STAGE_IGNORE)
    for name in EXTRA_FILES:
        if not (REPO_ROOT / name).is_file():
            raise BuildError(f"{REPO_ROOT / name} is missing")
        shutil.copy2(REPO_ROOT / name, stage_dir / name)


def check_release(manifest: dict) -> None:
    """A zip for upload names a real home page and a maintainer who can be reached."""
    for field in ("website", "maintainer"):
        value = str(manifest.get(field, ""))
        if not value or PLACEHOLDER_HOST in value:
            raise BuildError(
                f"the manifest's {field} is {value!r}, a placeholder: set the real one before a release"
            )


def run_cli(*args: str) -> None:
    cmd = [sys.executable, str(blender_ext_cli()), *args]
    result = subprocess.run(cmd, capture_output=True, text=True, check=False)
    output = (result.stdout + result.stderr).strip()
    if output:
        print(output)
    # Belt and braces: a FATAL_ERROR line always means failure, whatever the exit status says.
    if result.returncode != 0 or "FATAL_ERROR" in output:
        raise BuildError(f"`{' '.join(cmd[1:])}` failed (exit {result.returncode})")


def validate(path: Path) -> None:
    """Run Blender's validator on a source directory or a built zip."""
    run_cli("validate", "--valid-tags", str(blender_valid_tags()), str(path))


def build(stage_dir: Path, output_dir: Path, *, release: bool = False) -> Path:
    manifest = read_manifest()
    if release:
        check_release(manifest)
    output_dir.mkdir(parents=True, exist_ok=True)
    output = output_dir / zip_name(manifest)
    output.unlink(missing_ok=True)  # never leave a stale zip behind a failed build

    stage(stage_dir)
    validate(stage_dir)
    run_cli(
        "build",
        "--source-dir", str(stage_dir),
        "--output-filepath", str(output),
        "--valid-tags", str(blender_valid_tags()),
    )
    if not output.is_file():
        raise BuildError(f"the builder reported success but wrote no {output}")
    validate(output)
    return output


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stage-dir", type=Path, default=REPO_ROOT / "build" / "stage")
    parser.add_argument("--output-dir", type=Path, default=REPO_ROOT / "dist")
    parser.add_argument("--release", action="store_true", help="refuse placeholder website or maintainer")
    args = parser.parse_args(_own_arguments() if argv is None else argv)
    try:
        output = build(args.stage_dir.resolve(), args.output_dir.resolve(), release=args.release)
    except BuildError as ex:
        print(f"build.py: error: {ex}", file=sys.stderr)
        return 1
    print(output)
    return 0


def _own_arguments() -> list[str]:
    """The script's arguments: under a Blender binary those after ``--`` (Blender reads the rest)."""
    bpy = sys.modules.get("bpy")
    if bpy is None or not getattr(bpy.app, "binary_path", ""):
        return sys.argv[1:]
    return sys.argv[sys.argv.index("--") + 1 :] if "--" in sys.argv else []


if __name__ == "__main__":
    sys.exit(main())
