#!/usr/bin/env bash
# Install (or remove) what a Linux box needs to run hailo-edge on a Hailo part:
#   - udev rules: PCIe device nodes for group `hailo` (0660 + uaccess), and the
#     name `usbnet0` for the USB part's Ethernet gadget (0525:a4a1);
#   - the host address 192.168.10.11/24 on usbnet0, for systemd-networkd and
#     for NetworkManager (whichever runs picks its own file up);
#   - the system group `hailo`.
# Then it reloads udev and the network daemon that runs. Running it twice
# changes nothing the second time.
#
# Usage: sudo udev/install.sh [--uninstall] [--dry-run] [--root DIR] [--serial S]...
#   --uninstall  remove the files; remove the group when it has no members
#   --dry-run    print every action, change nothing
#   --serial S   name usbnet0 only the gadget with USB serial number S (repeat
#                for spare cards): 0525:a4a1 is Linux's generic Ethernet
#                gadget, which other boards in gadget mode share. Find S with
#                `udevadm info -a /sys/class/net/usbnet0 | grep serial`
#   --root DIR   work inside DIR instead of / (for tests and images); no
#                daemon is reloaded, and a symbolic link anywhere on the way
#                to a file it writes or removes is refused
set -euo pipefail

readonly GROUP_NAME=hailo
SRC_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
readonly SRC_DIR

# source file | destination | mode
readonly FILES=(
  "60-hailo-edge.rules|/etc/udev/rules.d/60-hailo-edge.rules|644"
  "70-hailo-usbnet.rules|/etc/udev/rules.d/70-hailo-usbnet.rules|644"
  "70-hailo-usbnet0.network|/etc/systemd/network/70-hailo-usbnet0.network|644"
  "hailo-usbnet0.nmconnection|/etc/NetworkManager/system-connections/hailo-usbnet0.nmconnection|600"
)

root=""
serials=()
dry_run=0
uninstall=0
changed=0

# The comment block at the top of this file.
usage() {
  awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"
}

die() {
  echo "install.sh: $*" >&2
  exit 1
}

# Print an action, and run it unless this is a dry run.
act() {
  if ((dry_run)); then
    echo "would run: $*"
  else
    echo "run: $*"
    "$@"
  fi
}

group_file() {
  echo "${root}/etc/group"
}

group_exists() {
  if [[ -n "$root" ]]; then
    grep -q "^${GROUP_NAME}:" "$(group_file)" 2>/dev/null
  else
    getent group "$GROUP_NAME" >/dev/null
  fi
}

group_members() {
  if [[ -n "$root" ]]; then
    grep "^${GROUP_NAME}:" "$(group_file)" | cut -d: -f4
  else
    getent group "$GROUP_NAME" | cut -d: -f4
  fi
}

prefix_args() {
  if [[ -n "$root" ]]; then
    echo "--prefix"
    echo "$root"
  fi
}

# Under --root, refuse a path whose folders or file inside the tree are
# symbolic links: writing through one would land outside the tree.
refuse_links() {
  [[ -n "$root" ]] || return 0
  local rel=${1#/} path=$root part
  local -a parts
  IFS=/ read -r -a parts <<<"$rel"
  for part in "${parts[@]}"; do
    path="$path/$part"
    if [[ -L "$path" ]]; then
      die "--root: $path is a symbolic link; refusing to write through it"
    fi
  done
}

# The usbnet rule restricted to the --serial numbers: the shipped file with
# its match line repeated once per serial, ATTRS{serial} added before NAME.
# `hailo-edge doctor` recognises this form.
write_serial_rules() {
  local out=$1 line s
  : >"$out"
  while IFS= read -r line; do
    if [[ "$line" == "#"* || -z "$line" ]]; then
      echo "$line" >>"$out"
      continue
    fi
    for s in "${serials[@]}"; do
      echo "${line/, NAME=/, ATTRS\{serial\}==\"$s\", NAME=}" >>"$out"
    done
  done <"$SRC_DIR/70-hailo-usbnet.rules"
}

install_files() {
  local entry src dest mode target from generated=""
  if ((${#serials[@]})); then
    generated=$(mktemp)
    # shellcheck disable=SC2064 # the path is fixed now, on purpose
    trap "rm -f '$generated'" EXIT
    write_serial_rules "$generated"
  fi
  for entry in "${FILES[@]}"; do
    IFS='|' read -r src dest mode <<<"$entry"
    target="${root}${dest}"
    from="$SRC_DIR/$src"
    if [[ -n "$generated" && "$src" == 70-hailo-usbnet.rules ]]; then
      from=$generated
    fi
    refuse_links "$dest"
    if [[ -f "$target" ]] && cmp -s "$from" "$target" &&
      [[ "$(stat -c %a "$target")" == "$mode" ]]; then
      echo "unchanged: $dest"
      continue
    fi
    act install -D -m "$mode" "$from" "$target"
    changed=1
  done
}

remove_files() {
  local entry src dest mode target
  for entry in "${FILES[@]}"; do
    IFS='|' read -r src dest mode <<<"$entry"
    target="${root}${dest}"
    refuse_links "$dest"
    if [[ -e "$target" ]]; then
      act rm -f "$target"
      changed=1
    else
      echo "absent: $dest"
    fi
  done
}

add_group() {
  if group_exists; then
    echo "unchanged: group $GROUP_NAME exists"
    return
  fi
  if [[ -n "$root" && ! -f "$(group_file)" ]]; then
    die "$(group_file) is missing: --root needs a tree with etc/group"
  fi
  local args
  mapfile -t args < <(prefix_args)
  act groupadd "${args[@]}" --system "$GROUP_NAME"
  changed=1
}

remove_group() {
  if ! group_exists; then
    echo "absent: group $GROUP_NAME"
    return
  fi
  local members
  members=$(group_members)
  if [[ -n "$members" ]]; then
    echo "kept: group $GROUP_NAME still has members ($members)"
    return
  fi
  local args
  mapfile -t args < <(prefix_args)
  act groupdel "${args[@]}" "$GROUP_NAME"
  changed=1
}

service_active() {
  command -v systemctl >/dev/null && systemctl is-active --quiet "$1"
}

reload_daemons() {
  if ((!changed)); then
    echo "nothing changed: no reload"
    return
  fi
  if [[ -n "$root" ]]; then
    echo "skipped under --root: udevadm control --reload && udevadm trigger"
    return
  fi
  if command -v udevadm >/dev/null; then
    act udevadm control --reload
    act udevadm trigger --action=change --subsystem-match=hailo_chardev --subsystem-match=hailo1x
  else
    echo "skipped: udevadm not found (no udev on this system?)"
  fi
  if service_active systemd-networkd; then
    act networkctl reload
  fi
  if service_active NetworkManager; then
    act nmcli connection reload
  fi
  if ((!uninstall)); then
    echo "note: replug a USB Hailo part so its interface is renamed usbnet0;"
    echo "      add users with: sudo usermod -aG $GROUP_NAME USER (then log in again)"
  fi
}

while (($#)); do
  case "$1" in
  --uninstall) uninstall=1 ;;
  --dry-run) dry_run=1 ;;
  --root)
    (($# >= 2)) || die "--root needs a directory"
    [[ -d "$2" ]] || die "--root $2: not a directory"
    root=$(cd "$2" && pwd)
    shift
    ;;
  --root=*)
    root="${1#--root=}"
    [[ -d "$root" ]] || die "--root $root: not a directory"
    root=$(cd "$root" && pwd)
    ;;
  --serial)
    (($# >= 2)) || die "--serial needs the card's USB serial number"
    [[ "$2" =~ ^[A-Za-z0-9._-]+$ ]] ||
      die "--serial '$2': a USB serial number here is letters, digits, '.', '_' and '-'"
    serials+=("$2")
    shift
    ;;
  -h | --help)
    usage
    exit 0
    ;;
  *) die "unknown argument '$1' (try --help)" ;;
  esac
  shift
done

if [[ "$root" == "/" ]]; then
  root=""
fi
refuse_links /etc/group
if ((!dry_run)) && [[ -z "$root" ]] && ((EUID != 0)); then
  die "must run as root: sudo $0 $*"
fi

if ((uninstall)); then
  remove_files
  remove_group
else
  add_group
  install_files
fi
reload_daemons
