/**
 * Programs that place an object inside a box. They run as the box user in the box's own namespaces, reading
 * the object's bytes on stdin, so every path resolves inside the box and nothing on the host is written.
 * A refusal exits with EXIT_REFUSED and one line on stderr that names the problem.
 */

export const EXIT_REFUSED = 3;

/** $1 = path: the bytes become that file (parent directories made). */
export const FILE_SCRIPT = `p=$1
case "$p" in */*) d=\${p%/*}; mkdir -p -- "\${d:-/}" || exit 1;; esac
[ -d "$p" ] && { echo "$p is a directory" >&2; exit ${EXIT_REFUSED}; }
exec cat > "$p"`;

/**
 * argv: destination directory, kind (tar: plain or gzip, detected; zip), most bytes, most entries. Unpacks
 * member by member, counting what it writes (not what headers claim), so an archive that unpacks to more
 * than the bounds (a zip bomb) stops with a message before it fills the box. Names that are absolute or
 * climb out with `..`, and writes through a link that leads out of the directory, are refused.
 */
export const UNPACK_SCRIPT = String.raw`
import os, stat, sys, tarfile, tempfile, zipfile
dest, kind, max_bytes, max_entries = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
def fail(msg):
    sys.stderr.write(msg + "\n")
    sys.exit(${EXIT_REFUSED})
os.makedirs(dest, exist_ok=True)
root = os.path.realpath(dest)
count = 0
total = 0
def place(name):
    global count
    count += 1
    if count > max_entries:
        fail("the archive has more than %d entries (DEVBOXD_OBJECT_MOUNT_MAX_ENTRIES)" % max_entries)
    parts = [p for p in name.replace("\\", "/").split("/") if p not in ("", ".")]
    if name.startswith("/") or ".." in parts:
        fail("archive entry %r points outside %s" % (name, dest))
    if not parts:
        return root
    path = os.path.join(root, *parts)
    parent = os.path.realpath(os.path.dirname(path))
    if parent != root and not parent.startswith(root + os.sep):
        fail("archive entry %r leads through a link outside %s" % (name, dest))
    return path
def clear(path):
    if os.path.lexists(path) and not os.path.isdir(path) or os.path.islink(path):
        os.unlink(path)
def copy(src, path, mode):
    global total
    os.makedirs(os.path.dirname(path), exist_ok=True)
    clear(path)
    with open(path, "wb") as out:
        while True:
            chunk = src.read(1 << 20)
            if not chunk:
                break
            total += len(chunk)
            if total > max_bytes:
                out.close()
                os.unlink(path)
                fail("the archive unpacks to more than %d bytes (DEVBOXD_OBJECT_MOUNT_MAX_BYTES)" % max_bytes)
            out.write(chunk)
    os.chmod(path, (mode & 0o777) or 0o644)
def link(target, path):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    clear(path)
    os.symlink(target, path)
try:
    if kind == "zip":
        spool = tempfile.TemporaryFile(dir=root)
        while True:
            chunk = sys.stdin.buffer.read(1 << 20)
            if not chunk:
                break
            spool.write(chunk)
        spool.seek(0)
        with zipfile.ZipFile(spool) as zf:
            for info in zf.infolist():
                path = place(info.filename)
                mode = info.external_attr >> 16
                if info.is_dir():
                    os.makedirs(path, exist_ok=True)
                elif stat.S_ISLNK(mode):
                    link(zf.read(info, pwd=None)[:4096].decode("utf-8", "replace"), path)
                else:
                    with zf.open(info) as src:
                        copy(src, path, mode)
    else:
        with tarfile.open(fileobj=sys.stdin.buffer, mode="r|*") as tf:
            for m in tf:
                path = place(m.name)
                if m.isdir():
                    os.makedirs(path, exist_ok=True)
                elif m.isfile():
                    copy(tf.extractfile(m), path, m.mode)
                elif m.issym():
                    link(m.linkname, path)
                elif m.islnk():
                    source = place(m.linkname)
                    count -= 1
                    clear(path)
                    # The member itself, a symlink included, never what a symlink points at (out of dest).
                    os.link(source, path, follow_symlinks=False)
except SystemExit:
    raise
except Exception as e:
    fail("the archive could not be unpacked: %s" % e)
`;
