#!/bin/sh
# Cargo's runner for aarch64 test binaries (.cargo/config.toml): qemu-user with one glibc.
#
# With `-L /usr/aarch64-linux-gnu`, qemu looks for each file under that prefix first and falls
# back to the host's own paths. When Debian's multiarch libc6:arm64 is installed as well (the
# libjpeg-turbo feature's cross link pulls it in), the loader then comes from the cross package
# and libc.so.6 from multiarch, two patch levels whose private structures differ, and the first
# pthread_create loops forever. So the multiarch glibc is used whole when it is there, and the
# cross package's otherwise.
if [ -e /lib/ld-linux-aarch64.so.1 ]; then
    exec qemu-aarch64 "$@"
fi
exec qemu-aarch64 -L /usr/aarch64-linux-gnu "$@"
