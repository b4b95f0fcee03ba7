"""The C split path (logan/read/_split.c), the route templates (logan/read/_route.c), the
cache replay (logan/answer/_replay.c) and the requests-in-flight sweep (logan/answer/_sweep.c).
Optional: without a C compiler logan installs all the same, reads with the SQL split path
(logan.read.native.available() says which), templates routes in SQL and counts requests in
flight with numpy; `logan cache` then says it is not built."""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(name, [source], optional=True, extra_compile_args=["-O3"])
        for name, source in [
            ("logan.read._split", "logan/read/_split.c"),
            ("logan.read._route", "logan/read/_route.c"),
            ("logan.answer._replay", "logan/answer/_replay.c"),
            ("logan.answer._sweep", "logan/answer/_sweep.c"),
        ]
    ]
)
