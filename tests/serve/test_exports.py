"""The serve package exports exactly its public names, and its fast path stays light."""

import subprocess
import sys
import types

import lorelab.serve


def test_the_serve_package_exports_exactly_its_public_names():
    public = {
        name
        for name in dir(lorelab.serve)
        if not name.startswith("_")
        and name != "annotations"
        and not isinstance(getattr(lorelab.serve, name), types.ModuleType)
    }
    assert set(lorelab.serve.__all__) == public
    for name in lorelab.serve.__all__:
        assert getattr(lorelab.serve, name) is not None


def test_the_hooks_fast_path_imports_neither_pydantic_click_numpy_nor_the_sdk():
    code = (
        "import sys, lorelab.cli._entry, lorelab.serve._fast\n"
        "heavy = ('pydantic', 'click', 'numpy', 'mcp', 'starlette', 'uvicorn')\n"
        "print([m for m in sys.modules if m.split('.')[0] in heavy])\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"
