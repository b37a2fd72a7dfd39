"""Models behind the DIAL tuner: one interface (:class:`~pfstune.models._base.Model`), one implementation per file.

A model is a directory: model files in a documented, non-executable format plus ``model.json``
(design rule 5).  :func:`load_model` opens one by path, dispatching on the ``kind`` that
``model.json`` names; the name ``"default"`` stands for the model shipped inside the package
(:data:`DEFAULT_MODEL_DIR`, trained on the real dataset: docs/models.md says how).
"""

from __future__ import annotations

import json
from pathlib import Path

from pfstune.errors import UserError
from pfstune.models._base import DIAL99, METADATA_FILE, Model, check_model_directory, grid_candidates
from pfstune.models.gbdt import GBDTModel

__all__ = ["DEFAULT_MODEL_DIR", "DIAL99", "MODELS", "GBDTModel", "Model", "grid_candidates", "load_model"]

#: The model shipped with pfstune (package data; ``pfstune train ... --out`` writes the same layout).
DEFAULT_MODEL_DIR = Path(__file__).parent / "default"

#: Every model implementation by the ``kind`` its ``model.json`` carries.
MODELS: dict[str, type[Model]] = {GBDTModel.kind: GBDTModel}


def load_model(directory: str | Path = "default") -> Model:
    """The model saved in ``directory``; UserError if it is not one.

    The string ``"default"`` means :data:`DEFAULT_MODEL_DIR` (a local directory of that name is
    ``"./default"`` or a :class:`~pathlib.Path`).
    """
    path = DEFAULT_MODEL_DIR if isinstance(directory, str) and directory == "default" else Path(directory)
    meta_file = path / METADATA_FILE
    check_model_directory(path)
    try:
        kind = json.loads(meta_file.read_text(encoding="utf-8")).get("kind")
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, AttributeError) as err:
        raise UserError(f"{meta_file}: not valid model metadata ({err})") from None
    if not isinstance(kind, str) or kind not in MODELS:
        raise UserError(f"{meta_file}: unknown model kind {kind!r}; known: {', '.join(sorted(MODELS))}")
    return MODELS[kind].load(path)
