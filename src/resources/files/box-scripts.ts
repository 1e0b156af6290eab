/**
 * Shell scripts that move file bytes inside a box. They run as the devbox user in the box's own mount
 * namespace, so every path (relative to the home directory, absolute, `..`, symlinks) resolves inside the
 * box. Each checks the path first and exits with a code of its own on a problem; once the path is good it
 * prints a READY byte and only then moves bytes, so the server knows the outcome before any file byte flows
 * and can still answer with a proper status. Other failures exit 1 with the tool's message on stderr.
 */

/** Written before the bytes of a write that lands in a temporary file and is renamed into place. */
export const READY = 'K';
/** Written before the bytes of a write that goes straight into the existing file (see WRITE_SCRIPT). */
export const READY_IN_PLACE = 'I';

export const EXIT = {
  notFound: 10,
  isDirectory: 11,
  denied: 12,
  empty: 13,
  parentNotDirectory: 14,
  notRegular: 15,
  /** The bytes ended without the end token: the upload was cut off, nothing was replaced. */
  cut: 16,
} as const;

/** Length of the hex end token a complete upload ends with (see WRITE_SCRIPT). */
export const TOKEN_LENGTH = 32;

/** Temporary names end in `devboxd-` and 16 hex digits; this glob finds them (stale ones are removed). */
const TEMP_GLOB = '.*devboxd-????????????????';
/** A temporary file untouched this long belongs to a writer that is gone (box stopped, server killed). */
const STALE_MINUTES = 60;

/**
 * $1 = path, $2 = 16 hex digits naming the temporary file, $3 = end token, $4 = staged file or empty.
 *
 * Without $4 the bytes come on stdin, followed by the end token: they go to `.<name>.devboxd-<hex>` next to
 * the destination (through symlinks, so a link keeps pointing where it did), and only a stream that ends
 * with the token (the server adds it once every byte arrived) is renamed over the destination; an early end
 * of stdin (client gone, server killed) or SIGTERM removes the temporary file and leaves the old version. With
 * $4 the staged file (an upload whose path came after its bytes) is moved to the temporary name, then renamed.
 * A new file gets mode 0666 & ~umask (the staged file was made so too); an existing one keeps its mode, set
 * on the temporary file before any byte is in it. A file that cannot be replaced by a
 * rename without changing who owns it or what it is (not owned by the user, not a regular file, in a
 * directory the user cannot write) is written in place instead (READY_IN_PLACE: no token, not atomic).
 */
export const WRITE_SCRIPT = `
p=$1 s=$4 t=
fail() { rm -f -- \${t:+"$t"} \${s:+"$s"} 2>/dev/null; exit "$1"; }
trap 'fail 1' HUP INT TERM
[ -n "$p" ] || fail ${EXIT.empty}
case "$p" in */) fail ${EXIT.isDirectory};; esac
[ -d "$p" ] && fail ${EXIT.isDirectory}
case "$p" in */*) d=\${p%/*} && d=\${d:-/};; *) d=.;; esac
if [ ! -d "$d" ]; then
  [ -e "$d" ] && fail ${EXIT.parentNotDirectory}
  if ! err=$(mkdir -p -- "$d" 2>&1); then
    case "$err" in *"Not a directory"*|*"File exists"*) fail ${EXIT.parentNotDirectory};; esac
    printf '%s\\n' "$err" >&2
    fail 1
  fi
fi
f=$p
if [ -L "$p" ]; then f=$(readlink -fv -- "$p" && echo x) || fail 1; f=\${f%??}; fi
case "$f" in */*) d=\${f%/*} && d=\${d:-/};; *) d=.;; esac
b=\${f##*/}
case "$d" in /*) ;; *) d="./$d";; esac
[ -d "$f" ] && fail ${EXIT.isDirectory}
if [ -e "$f" ]; then
  [ -w "$f" ] || fail ${EXIT.denied}
  if ! { [ -f "$f" ] && [ -O "$f" ] && [ -w "$d" ] && [ -x "$d" ]; }; then
    printf ${READY_IN_PLACE}
    if [ -n "$s" ]; then cat -- "$s" > "$f" || fail 1; rm -f -- "$s"; exit 0; fi
    exec cat > "$f"
  fi
else
  [ -w "$d" ] && [ -x "$d" ] || fail ${EXIT.denied}
fi
for o in "$d"/${TEMP_GLOB}; do
  [ -f "$o" ] && find "$d" -maxdepth 1 -name '${TEMP_GLOB}' -type f -mmin +${STALE_MINUTES} -delete 2>/dev/null
  break
done
if [ \${#b} -le 200 ]; then n=".$b.devboxd-$2"; else n=".devboxd-$2"; fi
if [ "$d" = / ]; then t="/$n"; else t="$d/$n"; fi
printf ${READY}
if [ -n "$s" ]; then
  mv -fT -- "$s" "$t" || fail 1
  s=
  if [ -e "$f" ]; then chmod --reference="$f" -- "$t" || fail 1; fi
else
  : > "$t" || fail 1
  if [ -e "$f" ]; then chmod --reference="$f" -- "$t" || fail 1; fi
  cat > "$t" || fail 1
  [ "$(tail -c ${TOKEN_LENGTH} -- "$t")" = "$3" ] || fail ${EXIT.cut}
  truncate -s -${TOKEN_LENGTH} -- "$t" || fail 1
fi
mv -fT -- "$t" "$f" || fail 1
`;

/**
 * $1 = path. Writes the file to stdout. The file is opened once (fd 3) and every check and the copy act on
 * that open file, so a path swapped for a directory or a symlink between the checks and the read cannot
 * make the copy read something the checks did not see.
 */
export const READ_SCRIPT = `
p=$1
[ -n "$p" ] || exit ${EXIT.empty}
[ -p "$p" ] && exit ${EXIT.notRegular}
if ! command exec 3<"$p"; then
  if [ ! -e "$p" ]; then
    d=$(dirname -- "$p")
    [ -d "$d" ] && [ ! -x "$d" ] && exit ${EXIT.denied}
    exit ${EXIT.notFound}
  fi
  [ -d "$p" ] && exit ${EXIT.isDirectory}
  [ -r "$p" ] || exit ${EXIT.denied}
  # A device or socket that cannot be opened (/dev/tty without a terminal: ENXIO) names no file to read.
  [ -f "$p" ] || exit ${EXIT.notRegular}
  exit 1
fi
[ -d /proc/self/fd/3 ] && exit ${EXIT.isDirectory}
printf ${READY}
exec cat <&3 3<&-
`;
