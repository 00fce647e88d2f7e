"""Words in capitals in a text that reads as private: "SPARC", "COMAC", "H&R", a résumé's "ABHI
BHALLA".

The span model reads a word in capitals as an acronym ("NASA", "HTML", "GDP"), as it mostly is in
the questions it learned from, so it rarely calls one a name. In someone's own document (an
email, a résumé, a company's text: `PrivateContext`) the employer, the supplier and the applicant
are often written so (out of fold, PUPA recall 57.3% -> 62.8% at 5.2% of public prompts flagged
once these, and Latin words next to Chinese, were candidates). There, a word in capitals is a
finding unless it is a common word ("ANYTHING", "INGREDIENTS"), an acronym of public questions
("USA", "CEO", "TV": seen twice or more in the MMLU and GSM8K prompts) or of the web and code
("JSON", "HTTP", "SELECT": one piece in Llama 2's vocabulary; both `SpanModel.acronyms`) or the
name of a kind of data ("my SSN is", "IBAN:"); out of such a text, none is.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Set

from classifiers.privacy.findings import Finding

CONFIDENCE = 0.3  # never `confident`: found only where the gate says the text is private
DETECTOR = "capitals"
# ASCII letters and digits around, not \w: a name in capitals stands right next to Chinese
# ("除了UNI-EASTERN，"); none after a percent sign, where "%E2" is an escaped byte.
CAPITALS = re.compile(r"(?=[A-Z])(?<![A-Za-z0-9&%-])[A-Z](?:[A-Z0-9&]|-(?=[A-Z0-9]))*[A-Z0-9](?![A-Za-z0-9&-])")


DATA_NAMES = frozenset(
    "SSN IBAN SWIFT BIC PIN DOB ID SSH GPG PGP API URL IP PDF CV EIN TIN VAT NHS MRN ATM ASAP FYI AM PM OK".split()
)


# Where a word in capitals can be: two or more capitals and digits joined by single hyphens, and a
# character either side for the pattern's look-arounds (`structured.windows`' spec, found in the
# scan's one pass over the text; running the pattern over every message cost 9 us of the 35).
CAPITAL_WINDOWS = ("ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789&", "-", 1, 2, 0, 1)


def capitals(
    text: str, common: Set[str], acronyms: Set[str], windows: Iterable[tuple[int, int]] | None = None
) -> list[Finding]:
    """`windows`: per `CAPITAL_WINDOWS`, when the caller has them."""
    return [
        Finding("ORGANIZATION", m.start(), m.end(), CONFIDENCE, DETECTOR)
        for start, end in (((0, len(text)),) if windows is None else windows)
        for m in CAPITALS.finditer(text, start, end)
        if m.group() not in acronyms and m.group() not in DATA_NAMES and m.group().lower() not in common
    ]
