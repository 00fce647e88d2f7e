"""Choose the hyperparameters on the validation folds and write them to research/chosen.json.

    python -m research.select

The terms' weights and the calibration (`research.crossval.weights_and_calibration`) and the
privacy thresholds (`research.crossval_privacy.thresholds`), each chosen on held-out scores only.
Prints what changed against the file; `python -m research.train` then rebuilds the models with it.
"""

from __future__ import annotations

from research import chosen
from research.crossval import weights_and_calibration
from research.crossval_privacy import thresholds


def main() -> None:
    before = chosen.CHOSEN.read_text(encoding="utf-8") if chosen.CHOSEN.exists() else ""
    weights, scale, shift = weights_and_calibration()
    chosen.write(weights, scale, shift, thresholds())
    after = chosen.CHOSEN.read_text(encoding="utf-8")
    print(after if after != before else "research/chosen.json: unchanged")


if __name__ == "__main__":
    main()
