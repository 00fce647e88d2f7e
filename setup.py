"""The one compiled part of edgeway: the span model's scanner (classifiers/privacy/_spans.c).
Everything else about the package is in pyproject.toml."""

from setuptools import Extension, setup

setup(ext_modules=[Extension("classifiers.privacy._spans", ["classifiers/privacy/_spans.c"],
                             extra_compile_args=["-O2"])])
