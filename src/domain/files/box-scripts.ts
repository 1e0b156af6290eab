/**
 * Shell scripts that move file bytes inside a box. They run as the devbox user in the box's own mount
 * namespace, so every path (relative to the home directory, absolute, `..`, symlinks) resolves inside the
 * box. Each checks the path first and exits with a code of its own on a problem; once the path is good it
 * prints READY (one byte) and only then execs `cat`, so the server knows the outcome before any file byte
 * flows and can still answer with a proper status.
 */

export const READY = 'K';

export const EXIT = {
  notFound: 10,
  isDirectory: 11,
  denied: 12,
  empty: 13,
  parentNotDirectory: 14,
} as const;

/** $1 = path. Writes stdin to it, creating parent directories; replaces the file's contents. */
export const WRITE_SCRIPT = `
p=$1
[ -n "$p" ] || exit ${EXIT.empty}
case "$p" in */) exit ${EXIT.isDirectory};; esac
[ -d "$p" ] && exit ${EXIT.isDirectory}
d=$(dirname -- "$p")
if [ ! -d "$d" ]; then
  if [ -e "$d" ]; then exit ${EXIT.parentNotDirectory}; fi
  if ! err=$(mkdir -p -- "$d" 2>&1); then
    case "$err" in *"Not a directory"*|*"File exists"*) exit ${EXIT.parentNotDirectory};; esac
    exit ${EXIT.denied}
  fi
fi
if [ -e "$p" ]; then [ -w "$p" ] || exit ${EXIT.denied}; else [ -w "$d" ] && [ -x "$d" ] || exit ${EXIT.denied}; fi
printf ${READY}
exec cat > "$p"
`;

/** $1 = path. Writes the file to stdout. */
export const READ_SCRIPT = `
p=$1
[ -n "$p" ] || exit ${EXIT.empty}
if [ ! -e "$p" ]; then
  d=$(dirname -- "$p")
  [ -d "$d" ] && [ ! -x "$d" ] && exit ${EXIT.denied}
  exit ${EXIT.notFound}
fi
[ -d "$p" ] && exit ${EXIT.isDirectory}
[ -r "$p" ] || exit ${EXIT.denied}
printf ${READY}
exec cat -- "$p"
`;

/** $1 = staged file, $2 = final path: moves an upload whose path arrived after its bytes into place. */
export const MOVE_SCRIPT = `
p=$2
[ -n "$p" ] || { rm -f -- "$1"; exit ${EXIT.empty}; }
case "$p" in */) rm -f -- "$1"; exit ${EXIT.isDirectory};; esac
[ -d "$p" ] && { rm -f -- "$1"; exit ${EXIT.isDirectory}; }
d=$(dirname -- "$p")
if [ ! -d "$d" ]; then
  if [ -e "$d" ]; then rm -f -- "$1"; exit ${EXIT.parentNotDirectory}; fi
  if ! err=$(mkdir -p -- "$d" 2>&1); then
    rm -f -- "$1"
    case "$err" in *"Not a directory"*|*"File exists"*) exit ${EXIT.parentNotDirectory};; esac
    exit ${EXIT.denied}
  fi
fi
if [ -e "$p" ]; then [ -w "$p" ] || { rm -f -- "$1"; exit ${EXIT.denied}; }; fi
mv -f -- "$1" "$p" 2>/dev/null || { rm -f -- "$1"; exit ${EXIT.denied}; }
printf ${READY}
`;
