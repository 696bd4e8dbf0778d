"""Builds tandem._tandem with CMake from the repository this folder belongs to.

    pip install --no-build-isolation ./python

Environment: TANDEM_CMAKE_ARGS (extra configure arguments, e.g. "-DTANDEM_CUDA=OFF"),
TANDEM_BUILD_JOBS (parallel build jobs; default: the CPU count).
"""
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

REPOSITORY = Path(__file__).resolve().parent.parent


class CMakeExtension(Extension):
    def __init__(self, name):
        super().__init__(name, sources=[])


class CMakeBuild(build_ext):
    def build_extension(self, ext):
        if not (REPOSITORY / "CMakeLists.txt").exists():
            raise RuntimeError(f"{REPOSITORY} is not the tandem repository: build from its python/ folder")
        build = Path(self.build_temp).resolve() / "cmake"
        build.mkdir(parents=True, exist_ok=True)
        configure = ["cmake", "-S", str(REPOSITORY), "-B", str(build), "-DCMAKE_BUILD_TYPE=Release", "-DTANDEM_PYTHON=ON",
                     f"-DPython_EXECUTABLE={sys.executable}", "-DTANDEM_BUILD_TESTS=OFF", "-DTANDEM_BUILD_BENCH=OFF"]
        if shutil.which("ninja") and not (build / "CMakeCache.txt").exists():
            configure += ["-G", "Ninja"]
        configure += shlex.split(os.environ.get("TANDEM_CMAKE_ARGS", ""))
        jobs = os.environ.get("TANDEM_BUILD_JOBS", str(os.cpu_count() or 1))
        subprocess.run(configure, check=True)
        subprocess.run(["cmake", "--build", str(build), "--target", "_tandem", "-j", jobs], check=True)
        built = sorted((build / "python" / "tandem").glob("_tandem*"))
        if not built:
            raise RuntimeError(f"CMake built no _tandem module in {build / 'python' / 'tandem'}")
        target = Path(self.get_ext_fullpath(ext.name))
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(built[0], target)


setup(ext_modules=[CMakeExtension("tandem._tandem")], cmdclass={"build_ext": CMakeBuild})
