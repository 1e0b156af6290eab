#!/bin/bash
# Builds the devboxd base image once per machine: a Debian 12 (bookworm) root filesystem made with
# mmdebstrap from Debian packages, with a default user `user` (uid 1000), owned by the id range boxes
# map to (see shiftids.c). Concurrent callers serialise on a lock file; the image appears atomically
# (built under a temporary name, then renamed), so a half-built image is never used.
#
# usage: mkimage.sh IMAGE_DIR NAME PACKAGES   (PACKAGES comma-separated)
set -euo pipefail
dir=$1 name=$2 packages=$3
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$dir"
exec 9>"$dir/.lock"
flock 9
if [ -d "$dir/$name" ]; then
  echo "base image $name is ready (built by another process)"
  exit 0
fi
rm -rf "$dir/.tmp-$name"   # what a build that died left behind; we hold the lock
tmp="$dir/.tmp-$name"
echo "building base image $name with mmdebstrap (about a minute)"
# Documentation, man pages and translations are left out: they double the unpack time.
mmdebstrap --mode=root --variant=minbase --include="$packages" \
  --dpkgopt='path-exclude=/usr/share/man/*' --dpkgopt='path-exclude=/usr/share/info/*' \
  --dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-include=/usr/share/doc/*/copyright' \
  --dpkgopt='path-exclude=/usr/share/locale/*' --dpkgopt='path-include=/usr/share/locale/locale.alias' \
  bookworm "$tmp" </dev/null
echo "configuring base image"
echo 'user:x:1000:1000:user:/home/user:/bin/bash' >>"$tmp/etc/passwd"
echo 'user:x:1000:' >>"$tmp/etc/group"
echo 'user:*:19000:0:99999:7:::' >>"$tmp/etc/shadow"
mkdir -p "$tmp/home/user"
cp -a "$tmp/etc/skel/." "$tmp/home/user/"
chown -R 1000:1000 "$tmp/home/user"
chmod 1777 "$tmp/tmp"
# The box is the user's own machine: let pip install into it without --break-system-packages.
rm -f "$tmp"/usr/lib/python3*/EXTERNALLY-MANAGED
rm -f "$tmp/etc/hostname"
"$here/build/shiftids" "$tmp"
sync -f "$tmp"
mv -T "$tmp" "$dir/$name"
echo "base image $name built: $(du -sh "$dir/$name" | cut -f1)"
