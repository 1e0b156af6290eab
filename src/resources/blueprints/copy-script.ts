/**
 * COPY/ADD inside the build sandbox: the context archive arrives on stdin and is unpacked there (never on
 * the host), into a staging directory removed before the layer is taken; sources are globs relative to it.
 * Arguments: gzip (1/0), destination (a trailing / means a directory), --chown, --chmod, sources…
 */
export const COPY_SCRIPT = `set -e
z=$1; dest=$2; own=$3; mode=$4; shift 4
ctx=/tmp/.devboxd-context
rm -rf "$ctx"; mkdir -p "$ctx"
if [ "$z" = 1 ]; then tar -xzf - -C "$ctx" --no-same-owner; else tar -xf - -C "$ctx" --no-same-owner; fi
cd "$ctx"
multi=0
[ $# -gt 1 ] && multi=1
case "$dest" in */) multi=1 ;; esac
IFS=''
for src in "$@"; do
  src=\${src#/}; src=\${src#./}; [ -n "$src" ] || src=.
  found=0
  for f in $src; do
    [ -e "$f" ] || [ -L "$f" ] || continue
    found=1
    if [ -d "$f" ] && [ ! -L "$f" ]; then
      # A directory's content, not the directory: the destination keeps its own owner and mode.
      mkdir -p "$dest"
      for c in "$f"/* "$f"/.[!.]* "$f"/..?*; do
        [ -e "$c" ] || [ -L "$c" ] || continue
        cp -a "$c" "$dest"/
        [ -z "$own" ] || chown -R "$own" "\${dest%/}/\${c##*/}"
        [ -z "$mode" ] || chmod -R "$mode" "\${dest%/}/\${c##*/}"
      done
      continue
    elif [ "$multi" = 1 ] || [ -d "$dest" ]; then
      mkdir -p "$dest"; cp -a "$f" "$dest"/; t="\${dest%/}/\${f##*/}"
    else
      mkdir -p "$(dirname "$dest")"; cp -a "$f" "$dest"; t=$dest
    fi
    [ -z "$own" ] || chown -R "$own" "$t"
    [ -z "$mode" ] || chmod -R "$mode" "$t"
  done
  if [ "$found" = 0 ]; then echo "COPY $src: no such file or directory in the build context" >&2; cd /; rm -rf "$ctx"; exit 1; fi
done
cd /; rm -rf "$ctx"
`;
