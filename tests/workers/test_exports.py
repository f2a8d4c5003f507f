"""The public surface of the packages other packages build on is pinned by ``__all__``."""

from __future__ import annotations

import importlib
import types

import pytest

PACKAGES = ["lorelab.io", "lorelab.runners", "lorelab.workers", "lorelab.workspace"]


@pytest.mark.parametrize("name", PACKAGES)
def test_all_lists_exactly_the_public_names_of_the_package(name):
    package = importlib.import_module(name)
    public = {
        attribute
        for attribute in dir(package)
        if not attribute.startswith("_")
        and not isinstance(getattr(package, attribute), types.ModuleType)
        and attribute != "annotations"  # from __future__
    }
    assert sorted(package.__all__) == sorted(public)


@pytest.mark.parametrize("name", PACKAGES)
def test_every_name_in_all_is_importable(name):
    package = importlib.import_module(name)
    for attribute in package.__all__:
        assert getattr(package, attribute) is not None, attribute
