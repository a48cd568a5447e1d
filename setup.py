"""Keeps tests, which live beside the code they test, out of the wheel."""

import fnmatch

from setuptools import setup
from setuptools.command.build_py import build_py


class BuildPyWithoutTests(build_py):
    def find_package_modules(self, package, package_dir):
        modules = super().find_package_modules(package, package_dir)
        return [
            (pkg, mod, path)
            for pkg, mod, path in modules
            if not (fnmatch.fnmatch(mod, "test_*") or mod == "conftest")
        ]


setup(cmdclass={"build_py": BuildPyWithoutTests})
