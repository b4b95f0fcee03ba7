"""The C split path (logan/read/_split.c) and the cache replay (logan/answer/_replay.c).
Optional: without a C compiler logan installs all the same and reads with the SQL split path
(logan.read.native.available() says which); `logan cache` then says it is not built."""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(name, [source], optional=True, extra_compile_args=["-O3"])
        for name, source in [
            ("logan.read._split", "logan/read/_split.c"),
            ("logan.answer._replay", "logan/answer/_replay.c"),
        ]
    ]
)
