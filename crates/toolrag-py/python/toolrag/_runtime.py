"""Where the native side finds its model and ONNX Runtime.

The wheel carries the shipped model in ``toolrag/models`` and depends on the
``onnxruntime`` wheel, whose shared library it loads (its Python side is never
imported). Both are handed to the native side through the environment
variables the command line reads, unless the user set them: then theirs win.
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

_done = False

#: The models folder inside the installed package.
PACKAGE_MODELS = Path(__file__).resolve().parent / "models"


def onnxruntime_library() -> str | None:
    """The path of ``libonnxruntime`` inside the installed ``onnxruntime`` wheel."""
    spec = importlib.util.find_spec("onnxruntime")
    if spec is None or not spec.submodule_search_locations:
        return None
    for folder in spec.submodule_search_locations:
        capi = Path(folder) / "capi"
        if not capi.is_dir():
            continue
        libs = sorted(
            p
            for p in capi.iterdir()
            if p.name.startswith("libonnxruntime.so") or p.name in ("libonnxruntime.dylib", "onnxruntime.dll")
        )
        # libonnxruntime.so.1.22.0 sorts after libonnxruntime.so; take the versioned file.
        if libs:
            return str(libs[-1])
    return None


def ensure() -> None:
    """Points the native side at the model and ONNX Runtime (once)."""
    global _done
    if _done:
        return
    if not os.environ.get("TOOLRAG_MODEL_DIR") and (PACKAGE_MODELS / "minilm-tools" / "model.onnx").is_file():
        os.environ["TOOLRAG_MODEL_DIR"] = str(PACKAGE_MODELS)
    if not os.environ.get("ORT_DYLIB_PATH"):
        lib = onnxruntime_library()
        if lib:
            os.environ["ORT_DYLIB_PATH"] = lib
    _done = True
