#!/usr/bin/env bash
# Every libhailort symbol that hailort-sys's compiled shim references is exported by HailoRT.
#
#   tools/hailort_symbols.sh [--lib LIBHAILORT_SO] [--inject MANGLED]... INCLUDE_DIR
#   tools/hailort_symbols.sh --self-test [--lib LIBHAILORT_SO] INCLUDE_DIR
#
# INCLUDE_DIR holds HailoRT's public headers (hailo/hailort.h, ...), e.g. the
# hailort/libhailort/include directory of https://github.com/hailo-ai/hailort at tag v5.2.0.
# The shim is compiled against them (g++ -std=c++17 -c) and `nm -u` lists what it needs from
# outside; the symbols of HailoRT (C `hailo_*`, C++ `hailort::*`) are checked:
# - with --lib: each is a defined dynamic symbol of that libhailort.so (the exact link check);
# - without: each is declared exported in the headers: a C function declared HAILORTAPI, a C++
#   member of a class or struct declared HAILORTAPI (libhailort builds with hidden visibility,
#   platform.h's HAILORTAPI is visibility("default")), or a free function declared HAILORTAPI.
# --inject adds a symbol as if the shim referenced it. --self-test runs the check and then, as
# its negative controls, checks that an injected symbol that HailoRT does not export
# (hailort::VDeviceBase::create, internal and hidden; a C function that does not exist) fails it.
set -euo pipefail

repo="$(cd "$(dirname "$0")/.." && pwd)"
lib=""
self_test=0
inject=()
while (($#)); do
    case "$1" in
        --lib) lib="$2"; shift 2 ;;
        --inject) inject+=("$2"); shift 2 ;;
        --self-test) self_test=1; shift ;;
        -*) echo "hailort_symbols: unknown option $1" >&2; exit 2 ;;
        *) break ;;
    esac
done
inc="${1:-}"
if [ -z "$inc" ] || [ ! -f "$inc/hailo/hailort.h" ]; then
    echo "hailort_symbols: pass HailoRT's include directory (holding hailo/hailort.h)" >&2
    exit 2
fi
[ -z "$lib" ] || [ -f "$lib" ] || { echo "hailort_symbols: no library at $lib" >&2; exit 2; }

if ((self_test)); then
    self="$repo/tools/hailort_symbols.sh"
    libarg=()
    [ -z "$lib" ] || libarg=(--lib "$lib")
    "$self" "${libarg[@]}" "$inc"
    for bad in _ZN7hailort11VDeviceBase6createERK22hailo_vdevice_params_t hailo_no_such_function; do
        if "$self" "${libarg[@]}" --inject "$bad" "$inc" >/dev/null 2>&1; then
            echo "hailort_symbols: negative control FAILED: $bad was accepted" >&2
            exit 1
        fi
        echo "negative control: $bad is caught"
    done
    exit 0
fi

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
g++ -std=c++17 -Wall -Wextra -c -I"$inc" -I"$repo/hailort-sys/shim" \
    "$repo/hailort-sys/shim/hailo_edge_shim.cpp" -o "$tmp/shim.o"

# HailoRT's symbols among the shim's undefined ones: mangled, then demangled, line by line.
{ nm -u --format=just-symbols "$tmp/shim.o"; printf '%s\n' "${inject[@]}"; } \
    | sed '/^$/d' | sort -u >"$tmp/all"
c++filt <"$tmp/all" >"$tmp/all.dem"
paste -d '\t' "$tmp/all" "$tmp/all.dem" \
    | awk -F'\t' '$2 ~ /^hailo_/ || $2 ~ /^hailort::/ || $2 ~ /^(vtable|typeinfo) for hailort::/' \
    >"$tmp/needed"
[ -s "$tmp/needed" ] || { echo "hailort_symbols: the shim references no HailoRT symbol" >&2; exit 1; }

exported_by_lib() {
    grep -qxF "$1" "$tmp/exported"
}

# The innermost class of a demangled member name, or empty for a free function.
class_of() {
    local name="$1"
    name="${name#vtable for }"
    name="${name#typeinfo for }"
    name="${name%%(*}"
    name="${name//\[abi:cxx11\]/}"
    local parts
    IFS=':' read -r -a parts <<<"${name//::/:}"
    # parts[0] is "hailort"; the last part is the member unless the name was a class (vtable).
    local n=${#parts[@]}
    if [[ "$1" == vtable\ for* || "$1" == typeinfo\ for* ]]; then
        echo "${parts[n - 1]}"
    elif ((n > 2)); then
        echo "${parts[n - 2]}"
    fi
}

declared_exported() {
    local mangled="$1" demangled="$2"
    if [[ "$demangled" == hailo_* ]]; then
        grep -qE "HAILORTAPI[^;]*[^A-Za-z0-9_]${mangled}\(" "$inc/hailo/hailort.h"
        return
    fi
    local cls
    cls="$(class_of "$demangled")"
    if [ -n "$cls" ]; then
        grep -rqE "(class|struct) HAILORTAPI ${cls}([^A-Za-z0-9_]|$)" "$inc/hailo"
    else
        local fn="${demangled%%(*}"
        fn="${fn##*::}"
        grep -rqE "HAILORTAPI[^;]*[^A-Za-z0-9_]${fn}\(" "$inc/hailo"
    fi
}

if [ -n "$lib" ]; then
    nm -D --defined-only --format=just-symbols "$lib" | sort -u >"$tmp/exported"
    how="a defined dynamic symbol of $lib"
else
    how="declared exported (HAILORTAPI) in $inc"
fi
missing=0
total=0
while IFS=$'\t' read -r mangled demangled; do
    total=$((total + 1))
    if [ -n "$lib" ]; then
        exported_by_lib "$mangled" && continue
    else
        declared_exported "$mangled" "$demangled" && continue
    fi
    echo "NOT EXPORTED: $demangled ($mangled)"
    missing=$((missing + 1))
done <"$tmp/needed"

if ((missing)); then
    echo "hailort_symbols: $missing of $total HailoRT symbols the shim references are not $how" >&2
    exit 1
fi
echo "hailort_symbols: all $total HailoRT symbols the shim references are $how"
