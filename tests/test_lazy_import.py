"""``import toolstitch`` loads the assembler alone: rendering, replay and tool sets (and
the standard modules only they need) load when one of their names is first asked for,
and every public name stays importable from the package."""

from __future__ import annotations

import json
import subprocess
import sys

import toolstitch

# What only rendering, replay or tool sets need.
LAZY_MODULES = [
    "toolstitch.render",
    "toolstitch.replay",
    "toolstitch.tools",
    "json",
    "gzip",
    "zlib",
    "base64",
    "hashlib",
]


def loaded_after(code: str) -> set[str]:
    # The json that prints them is imported after the modules were listed.
    script = f"import sys\n{code}\nmods = sorted(sys.modules)\nimport json\nprint(json.dumps(mods))"
    out = subprocess.run(
        [sys.executable, "-c", script], check=True, capture_output=True, text=True
    ).stdout
    return set(json.loads(out))


def test_import_toolstitch_loads_none_of_the_applications() -> None:
    loaded = loaded_after("import toolstitch")
    assert "toolstitch.streams" in loaded
    assert loaded.isdisjoint(LAZY_MODULES), sorted(loaded & set(LAZY_MODULES))


def test_a_lazy_name_loads_its_module_on_first_use() -> None:
    loaded = loaded_after("from toolstitch import Toolset")
    assert "toolstitch.tools" in loaded
    assert "toolstitch.render" not in loaded and "toolstitch.replay" not in loaded
    assert "toolstitch.render" in loaded_after("import toolstitch\ntoolstitch.render_turn")


def test_every_public_name_is_importable_and_listed() -> None:
    for name in toolstitch.__all__:
        assert getattr(toolstitch, name) is not None, name
        assert name in dir(toolstitch)
    from toolstitch import RECORD_KEYS, IdMap, Toolset, replay_path
    from toolstitch.replay import RECORD_KEYS as keys
    from toolstitch.tools import Toolset as tools

    assert (RECORD_KEYS, Toolset) == (keys, tools)
    assert callable(replay_path) and IdMap is not None


def test_an_unknown_name_is_an_attribute_error() -> None:
    try:
        toolstitch.no_such_name  # type: ignore[attr-defined]  # noqa: B018
    except AttributeError as e:
        assert "no_such_name" in str(e)
    else:
        raise AssertionError("no AttributeError")
