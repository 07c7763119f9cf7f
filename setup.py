"""Packaging beyond pyproject.toml: the engine's folder `core/` installs as `hermes_core`.

A top-level `core` would collide with a project's own `core` package in the same venv
(scripts/rename_engine_package.py wrote this and renamed the imports). Everything else is in
pyproject.toml.
"""

from setuptools import find_packages, setup

ENGINE, FOLDER = "hermes_core", "core"

setup(
    package_dir={ENGINE: FOLDER},
    packages=[
        *find_packages(include=["hermes_acp", "hermes_acp.*"]),
        *(ENGINE + name[len(FOLDER) :] for name in find_packages(include=[FOLDER, f"{FOLDER}.*"])),
    ],
)
