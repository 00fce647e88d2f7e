"""The maintained secret rule sets side by side: what each finds of secrets as people paste them,
what it flags of look-alikes and of public prompts, and what a call costs (the choice behind
`classifiers/privacy/secrets.py: maintained`).

detect-secrets is not a dependency; put it beside the packages for this run only:

    pip install --no-deps --target /tmp/detect-secrets detect-secrets==1.5.0
    PYTHONPATH=/tmp/detect-secrets python -m research.secret_rule_sets
"""

from __future__ import annotations

import json
import statistics
import time
from collections.abc import Callable
from pathlib import Path

from classifiers.privacy.secrets import maintained, rule_set
from classifiers.tokens import TokenEstimator
from gateway.bench.classify import conversations

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
# Secrets as they reach a provider (the forms of tests/test_secrets_and_accounts.py that a key's
# rule set may read), and look-alikes no one's secret.
SECRETS = [
    "shopify token 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",
    "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYzQ9RbLkT3m",
    "ghp_0123456789abcdefABCDEF0123456789abcd",
    "xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx",
    "sk_live_4eC39HqLyjWDarjtT1zdp7dc",
    "AIzaSyA1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q",
    "glpat-a1B2c3D4e5F6g7H8i9J0",
    "hf_aBcDeFgHiJaBcDeFgHiJaBcDeFgHiJabcd",
    "DATABASE_URL=postgres://app:S3cretPw9@db.internal:5432/shop",
    "curl -u admin:Tr0ub4dor3 https://intranet/api",
    "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
    "SK0123456789abcdef0123456789abcdef",
]
LOOK_ALIKES = [
    "uuid 123e4567-e89b-12d3-a456-426614174000 in the log",
    "commit 9fceb02d0ae598e95dc970b74767f19372d61af8 broke the build",
    "sha256 e8f32e723decf4051aefac8e2c93c9c5b214313817cdb01a1494b917c8436b35 of the tarball",
    "Set AWS_ACCESS_KEY_ID to your key, e.g. AKIAIOSFODNN7EXAMPLE, as the docs show.",
    "2^127 - 1 = 170141183460469231731687303715884105727, a Mersenne prime",
]


def detect_secrets_reader() -> Callable[[str], list[str]]:
    from detect_secrets.core.plugins.util import get_mapping_from_secret_type_to_class  # type: ignore[import-not-found]

    plugins = [plugin() for plugin in get_mapping_from_secret_type_to_class().values()]
    return lambda text: [secret for plugin in plugins for secret in plugin.analyze_line(filename="prompt", line=text)]


def kingfisher_reader(text: str) -> list[str]:
    return [text[f.start : f.end] for f in maintained(text)]


def main() -> None:
    rule_set()
    readers = {"kingfisher": kingfisher_reader, "detect-secrets": detect_secrets_reader()}
    public = [json.loads(line)["prompt"] for line in (DATA / "routing/alpaca_eval_dev.jsonl").open(encoding="utf-8")]
    texts = [
        "\n".join(m["content"] for m in conversation)
        for conversation in conversations(1000, 60, TokenEstimator().estimate)
    ]
    print(f"{'rule set':>15}  secrets found  look-alikes flagged  public prompts flagged  ms a 1,000-token text")
    for name, read in readers.items():
        found = sum(bool(read(text)) for text in SECRETS)
        flagged = sum(bool(read(text)) for text in LOOK_ALIKES)
        prompts = sum(bool(read(text)) for text in public)
        costs = []
        for text in texts:
            start = time.perf_counter()
            read(text)
            costs.append(time.perf_counter() - start)
        print(
            f"{name:>15}  {found:>5} of {len(SECRETS):<5}  {flagged:>8} of {len(LOOK_ALIKES):<7}  "
            f"{prompts:>10} of {len(public):<9}  {statistics.median(costs) * 1000:.3f}"
        )


if __name__ == "__main__":
    main()
