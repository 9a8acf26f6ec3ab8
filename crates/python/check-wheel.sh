#!/usr/bin/env bash
# Checks a wheel that build-wheels.sh made: that it is the one wheel for every CPython from 3.10
# on (abi3) and every Linux with glibc 2.17 or newer (manylinux2014), by its name, by the tags
# its WHEEL file lists, and by what its extension module links against: no glibc symbol
# version newer than 2.17, and no shared library outside the system's C runtime.
#
# Needs python3 and objdump (binutils).
#
# Usage: crates/python/check-wheel.sh WHEEL
set -euo pipefail

if [ "$#" -ne 1 ] || [ ! -f "$1" ]; then
    echo "usage: $0 WHEEL (an existing .whl file)" >&2
    exit 2
fi
wheel="$1"
name="$(basename "$wheel")"
arch="$(uname -m)"
fail() {
    echo "$name: $*" >&2
    exit 1
}

case "$name" in
leveltable-*-cp310-abi3-manylinux2014_"$arch".manylinux_2_17_"$arch".whl) ;;
*) fail "the name does not say cp310-abi3-manylinux2014_$arch.manylinux_2_17_$arch" ;;
esac

dir="$(mktemp -d)"
trap 'rm -rf "$dir"' EXIT
python3 -m zipfile -e "$wheel" "$dir"

tags="$(grep -h '^Tag: ' "$dir"/leveltable-*.dist-info/WHEEL | sed 's/^Tag: //' | sort)"
want="$(printf 'cp310-abi3-manylinux2014_%s\ncp310-abi3-manylinux_2_17_%s\n' "$arch" "$arch" | sort)"
[ "$tags" = "$want" ] || fail "WHEEL lists the tags [$(echo $tags)], not [$(echo $want)]"

so="$dir/leveltable/_leveltable.abi3.so"
[ -f "$so" ] || fail "no leveltable/_leveltable.abi3.so (the abi3 extension module) in it"

newest="$(objdump -T "$so" | grep -o 'GLIBC_[0-9][0-9.]*' | sed 's/^GLIBC_//' | sort -uV | tail -n 1)"
[ -n "$newest" ] || fail "objdump lists no glibc symbol version in the extension module"
if [ "$(printf '%s\n2.17\n' "$newest" | sort -V | tail -n 1)" != "2.17" ]; then
    fail "the extension module needs glibc $newest (manylinux2014 allows 2.17 at most)"
fi

needed="$(objdump -p "$so" | awk '$1 == "NEEDED" { print $2 }')"
for library in $needed; do
    case "$library" in
    libc.so.6 | libm.so.6 | libdl.so.2 | libpthread.so.0 | librt.so.1 | libgcc_s.so.1 | ld-linux-*.so.2) ;;
    *) fail "the extension module links $library, which is not in every glibc 2.17 system" ;;
    esac
done

echo "$name: abi3 (CPython >= 3.10), manylinux2014; newest glibc symbol version $newest; links $(echo $needed)"
