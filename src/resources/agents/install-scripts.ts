/**
 * Programs that install an agent inside a box, as the box user in the box's own namespaces and network (so
 * npm and pip reach their registries through the box's egress, under its network policy). Arguments come as
 * argv, never spliced into the script. A refusal exits with EXIT_REFUSED and one line on stderr saying why.
 */

export const EXIT_REFUSED = 3;

/** $1 = install prefix (empty: ~/.local), $2 = package spec, $3 = registry URL (may be empty). Bins land in <prefix>/bin. */
export const NPM_SCRIPT = `command -v npm >/dev/null 2>&1 || { echo "npm is not installed in the box's image (the base image has python3 and pip, not Node.js): boot from a blueprint or image with npm" >&2; exit ${EXIT_REFUSED}; }
dir=\${1:-$HOME/.local}
mkdir -p -- "$dir" || exit 1
exec npm install --global --prefix "$dir" --no-audit --no-fund --loglevel=error \${3:+--registry "$3"} -- "$2"`;

/** $1 = target directory (empty: the user's site-packages), $2 = requirement, $3 = index URL (may be empty). */
export const PIP_SCRIPT = `python3 -m pip --version >/dev/null 2>&1 || { echo "pip is not installed in the box's image" >&2; exit ${EXIT_REFUSED}; }
if [ -n "$1" ]; then where=(--target "$1"); else where=(--user); fi
exec python3 -m pip install --disable-pip-version-check --no-input --no-warn-script-location --retries 1 --timeout 20 --break-system-packages "\${where[@]}" \${3:+--index-url "$3"} "$2"`;

/**
 * $1 = repository, $2 = directory, $3 = ref (may be empty: the default branch). A directory that exists and is
 * not empty is refused (a clone would fail with a less clear message). A token for a private repository
 * comes in the environment as git configuration (GIT_CONFIG_*), so it is in no argument and no file.
 */
export const GIT_SCRIPT = `command -v git >/dev/null 2>&1 || { echo "git is not installed in the box's image" >&2; exit ${EXIT_REFUSED}; }
if [ -d "$2" ] && [ -n "$(ls -A -- "$2" 2>/dev/null)" ]; then echo "$2 exists and is not empty" >&2; exit ${EXIT_REFUSED}; fi
GIT_TERMINAL_PROMPT=0 git clone --quiet -- "$1" "$2" || exit 1
[ -z "$3" ] && exit 0
cd -- "$2" && exec git -c advice.detachedHead=false checkout --quiet "$3"`;
