"""The mini conditions project (10 tasks, verify ``python check.py``), as the conditions tests
build it; shared by the executor tests."""

from pathlib import Path

from tests.evaluation.conditions.conditions_support import (  # the one definition
    MINI_SHARED,
    MINI_TASKS,
    mini_manifest,
    mini_seed,
)

__all__ = ["MINI_SHARED", "MINI_TASKS", "mini_manifest", "mini_seed", "write_mini"]


def write_mini(base: Path, **host) -> dict[str, Path]:
    """The mini project, its manifest and seed file, written under ``base``."""
    import json

    project = base / "mini-project"
    (project / "done").mkdir(parents=True)
    (project / "done" / "README").write_text("markers of done tasks\n")
    (project / "check.py").write_text(
        "import pathlib, sys\n"
        "raise SystemExit(0 if pathlib.Path('done', sys.argv[1]).is_file() else 1)\n"
    )
    manifest = base / "conditions.json"
    manifest.write_text(json.dumps(mini_manifest(project, **host)))
    seed = base / "seed.json"
    seed.write_text(json.dumps(mini_seed()))
    return {"manifest": manifest, "seed": seed, "project": project}
