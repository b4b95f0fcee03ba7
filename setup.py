"""The C split path (logan/_split.c). Optional: without a C compiler logan installs all the
same and reads with the SQL split path (logan.native.available() says which)."""

from setuptools import Extension, setup

setup(ext_modules=[Extension("logan._split", ["logan/_split.c"], optional=True, extra_compile_args=["-O3"])])
