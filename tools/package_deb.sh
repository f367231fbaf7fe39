#!/usr/bin/env bash
# Build the Debian package: the binary, its man pages and shell completions, the
# udev rules and network files, and the hailo-edge@.service unit; then lint it.
#
# Usage: tools/package_deb.sh [--target TRIPLE] [--no-build]
#   --target TRIPLE  package the binary built for TRIPLE (e.g. aarch64-unknown-linux-gnu)
#   --no-build       package the release binary already built
# Needs cargo-deb (`cargo install cargo-deb`); lints with lintian when it is installed.
# Man pages and completions are written by a hailo-edge that runs here:
# $HAILO_EDGE_BIN, else the newer of target/release/hailo-edge and target/debug/hailo-edge.
set -euo pipefail
cd "$(dirname "$0")/.."

deb_args=()
while (($#)); do
  case "$1" in
    --target) deb_args+=(--target "$2"); shift 2 ;;
    --no-build) deb_args+=(--no-build); shift ;;
    *) echo "package_deb.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done

host_bin=${HAILO_EDGE_BIN:-}
if [[ -z "$host_bin" ]]; then
  # The newer of the two builds.
  for candidate in target/release/hailo-edge target/debug/hailo-edge; do
    if [[ -x "$candidate" && ( -z "$host_bin" || "$candidate" -nt "$host_bin" ) ]]; then
      host_bin=$candidate
    fi
  done
fi
if [[ -z "$host_bin" ]]; then
  cargo build --release --bin hailo-edge
  host_bin=target/release/hailo-edge
fi

stage=target/package
rm -rf "$stage"
mkdir -p "$stage/man" "$stage/completions"
"$host_bin" man --out "$stage/man" >/dev/null
gzip -9n "$stage"/man/*.1
"$host_bin" completions bash >"$stage/completions/hailo-edge"
"$host_bin" completions zsh >"$stage/completions/_hailo-edge"
"$host_bin" completions fish >"$stage/completions/hailo-edge.fish"

# cargo deb prints the path of the package it wrote as its last line.
deb=$(cargo deb -p hailo-edge --strip "${deb_args[@]}" | tail -n1)
echo "package: $deb"
dpkg-deb --info "$deb" | sed -n '/Package:/,$p'
dpkg-deb --contents "$deb" | awk '{print $6}'

if command -v lintian >/dev/null; then
  # Errors fail the build; warnings are printed.
  # embedded-library libyaml: serde_yaml's unsafe-libyaml, a Rust translation that lintian
  # takes for a copy of the C library.
  lintian --fail-on error --suppress-tags statically-linked-binary,embedded-library "$deb"
else
  echo "lintian not installed: the package is not linted"
fi
