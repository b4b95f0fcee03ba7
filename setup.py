"""The C split path (logan/read/_split.c). Optional: without a C compiler logan installs all the
same and reads with the SQL split path (logan.read.native.available() says which)."""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension("logan.read._split", ["logan/read/_split.c"], optional=True, extra_compile_args=["-O3"])
    ]
)
