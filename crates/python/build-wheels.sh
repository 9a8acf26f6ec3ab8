#!/usr/bin/env bash
# Builds the Python package `leveltable` for distribution, into OUT (default: wheels/ in
# cargo's target directory, target/wheels at the top of the repository unless
# CARGO_TARGET_DIR says otherwise):
#
#   leveltable-<version>-cp310-abi3-manylinux2014_<arch>.manylinux_2_17_<arch>.whl
#       one wheel for CPython 3.10 and later (abi3) on every Linux with glibc 2.17 or newer
#       (CentOS 7, RHEL 8 and 9, Debian 8 on, Ubuntu 14.04 on, Amazon Linux 2, ...), for the
#       architecture of the machine that builds it. Zig links it against glibc 2.17's symbols,
#       so no manylinux container is needed; maturin's auditwheel check refuses a wheel that
#       needs a newer glibc or a library outside the manylinux set.
#   leveltable-<version>.tar.gz
#       the sdist, with the workspace crates it depends on: `pip install` of it compiles the
#       extension (it needs cargo, Rust 1.85 or later, and a C compiler for zstd).
#
# Needs cargo and python3 (3.10 or later). maturin and zig (PyPI's `ziglang`) are installed
# into a virtual environment of their own, LEVELTABLE_BUILD_VENV (default:
# $TMPDIR/leveltable-build-venv), kept for the next run.
#
# Usage: crates/python/build-wheels.sh [OUT]
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
out="${1:-${CARGO_TARGET_DIR:-$here/../../target}/wheels}"
mkdir -p "$out"
out="$(cd "$out" && pwd)"
venv="${LEVELTABLE_BUILD_VENV:-${TMPDIR:-/tmp}/leveltable-build-venv}"

if [ ! -x "$venv/bin/python" ]; then
    python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet --upgrade pip
fi
# The versions this script was last checked with; a newer zig may drop glibc versions or
# change its command line under maturin.
"$venv/bin/pip" install --quiet "maturin>=1.16,<2" "ziglang>=0.17.1,<0.18"

# maturin runs zig as `python -m ziglang` with the first python on PATH: the build venv's.
export PATH="$venv/bin:$PATH"
maturin build --release --zig --compatibility manylinux2014 \
    --manifest-path "$here/Cargo.toml" --out "$out"
maturin sdist --manifest-path "$here/Cargo.toml" --out "$out"
ls -l "$out"
