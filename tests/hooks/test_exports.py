"""lorelab.hooks's public names: every one resolves, and none is loaded before it is used."""

import subprocess
import sys

import lorelab.hooks


def test_every_public_name_resolves_and_dir_lists_it():
    for name in lorelab.hooks.__all__:
        assert getattr(lorelab.hooks, name) is not None
    assert set(lorelab.hooks.__all__) <= set(dir(lorelab.hooks))


def test_importing_the_package_loads_none_of_its_modules():
    code = (
        "import sys, lorelab.hooks\n"
        "print([m for m in sys.modules if m.startswith('lorelab.hooks.')])"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    assert done.stdout.strip() == "[]"
