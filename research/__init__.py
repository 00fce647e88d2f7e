"""edgeway's research: training, cross-validation and evaluation of the classifiers, and their data.

Not installed and imported by nothing that is: run from a checkout (`python -m research.train`,
`python -m research.crossval`, `python -m research.select`, `python -m research.evaluate`). It
writes the artifacts the runtime reads (`classifiers/models/`).
"""
