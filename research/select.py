"""Choose the hyperparameters on the validation folds and write them to research/chosen.json.

    python -m research.select

The privacy thresholds (`research.crossval_privacy.thresholds`), chosen on held-out scores only.
Prints what changed against the file; `python -m research.train` then rebuilds the models with it.
"""

from __future__ import annotations

from research import chosen
from research.crossval_privacy import thresholds


def main() -> None:
    before = chosen.CHOSEN.read_text(encoding="utf-8") if chosen.CHOSEN.exists() else ""
    chosen.write(thresholds())
    after = chosen.CHOSEN.read_text(encoding="utf-8")
    print(after if after != before else "research/chosen.json: unchanged")


if __name__ == "__main__":
    main()
