"""The type stubs describe the module as built: every class and function, every public
method and property, so that editors complete what exists."""

import ast
import inspect
import pathlib

import gm
from gm import _gm


def stub_tree():
    text = (pathlib.Path(gm.__file__).parent / "_gm.pyi").read_text()
    classes, functions = {}, set()
    for node in ast.parse(text).body:
        if isinstance(node, ast.ClassDef):
            names = set()
            for item in node.body:
                if isinstance(item, ast.FunctionDef):
                    names.add(item.name)
                elif isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
                    names.add(item.target.id)
            classes[node.name] = names
        elif isinstance(node, ast.FunctionDef):
            functions.add(node.name)
    return classes, functions


def test_every_public_name_has_a_stub():
    classes, functions = stub_tree()
    for name in dir(_gm):
        if name.startswith("_"):
            continue
        obj = getattr(_gm, name)
        if inspect.isclass(obj):
            assert name in classes, f"class {name} has no stub"
            public = {m for m in vars(obj) if not m.startswith("_")}
            missing = public - classes[name]
            if not issubclass(obj, BaseException):
                assert not missing, f"{name}: {sorted(missing)} have no stub"
        elif callable(obj):
            assert name in functions, f"function {name} has no stub"
    # What the package adds in Python (typed in its own source): the transforms module and
    # LeRobotDataset (python/gm/lerobot.py).
    assert set(gm.__all__) - {"transforms", "LeRobotDataset"} <= set(dir(_gm))
