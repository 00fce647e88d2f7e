"""The compiled parts of edgeway: the classifiers' scan (`classifiers._scan`, sources in
classifiers/scan/) and the edge runtime's abort callback (`edge_runtime._interrupt`). Everything
else about the package is in pyproject.toml."""

from glob import glob

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "classifiers._scan",
            sorted(glob("classifiers/scan/*.c")),
            depends=sorted(glob("classifiers/scan/*.h")),
            extra_compile_args=["-O3", "-Wall", "-Wextra"],  # -Werror in CI: tests/test_scan_c.py
        ),
        Extension(
            "edge_runtime._interrupt", ["edge_runtime/_interrupt.c"], extra_compile_args=["-O2", "-Wall", "-Wextra"]
        ),
    ]
)
