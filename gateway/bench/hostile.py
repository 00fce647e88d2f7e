"""What the privacy scan costs on texts an attacker shapes: each filler repeated to 12,000 and to
48,000 characters. The scan is linear when the longer text costs four times the shorter (a request
may carry 4 MiB, so anything that grows faster is a way to stall the gateway)."""

from __future__ import annotations

import time
from collections.abc import Callable

SHORT, LONG = 12_000, 48_000
FILLERS = {
    "prose": "On Friday I met Emeka and Jonas from Vireo Pharma about the invoice. ",
    "one place name": "Paris ",
    "overlapping candidates": "DE89  ",
    "card numbers": "4111 1111 1111 1111 ",
    "digits in pairs": "12 ",
    "lone digits": "1 ",
    "numbers said in words": "four thousand five hundred and thirty-nine, ",
    "numbers said as words of parts": "viertausendfünfhundertneununddreißig, ",
    "long words of number parts": "viertausend" * 100 + " ",
    "digits' words run together": "fourfivethreenine ",
    "a record key's cue": "name ",
    "an address's cue": "address is ",
    "an identifier's cue": "passport number 12 ",
    "a sign-off and spaces": "regards" + " " * 200,
    "emails": "a@b.co ",
    "mailboxes spelled in words": "zq.hollander77 chez proton point me ",
    "names a mailbox could have": "anna.k88 ",
    "dots between letters": "a.b.c.d.e.f.g.h.i.j",
    "percent escapes": "%41",
    "a base64 run": "QUJDREVGR0hJSktMTU5PUFFSU1RVVldY",
    "Chinese": "中文的句子，",
    "a language no cue reads": "Mam cukrzycę i biorę metforminę od dwóch lat. ",
    "streets' words and particles": "12 rue de la via della calle de ",
    "JSON escapes": '\\n\\"Jane Roe\\" ',
    "greetings": "Dear Ann, ",
    "uncased names": "hi priya sharma ",
    "Chinese honorifics": "张伟先生，",
}


def _seconds(scan: Callable[[str], object], text: str) -> float:
    best = float("inf")
    for _ in range(3):
        started = time.perf_counter()
        scan(text)
        best = min(best, time.perf_counter() - started)
    return best


def run(scan: Callable[[str], object]) -> None:
    print(f"\nthe privacy scan on shaped texts ({SHORT:,} and {LONG:,} characters; linear: 4x)")
    print(f"{'filler':>24} {'us/char':>8} {'longer/shorter':>15}")
    for name, filler in FILLERS.items():
        short, long = filler * (SHORT // len(filler)), filler * (LONG // len(filler))
        scan(filler)
        a, b = _seconds(scan, short), _seconds(scan, long)
        print(f"{name:>24} {b * 1e6 / len(long):>8.2f} {b / a:>14.1f}x")
