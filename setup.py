"""The one compiled part of edgeway: the privacy scan's hot loops (classifiers/_scan.c).
Everything else about the package is in pyproject.toml."""

from setuptools import Extension, setup

setup(ext_modules=[Extension("classifiers._scan", ["classifiers/_scan.c"],
                             extra_compile_args=["-O3"])])
