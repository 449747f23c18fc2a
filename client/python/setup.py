# The extension module is built by cffi from shmkv/_build.py, against the
# libshmkv that pkg-config finds (see README.md).
from setuptools import setup

setup(packages=["shmkv"], cffi_modules=["shmkv/_build.py:ffibuilder"])
