#!/usr/bin/env bash
# Installs and builds what devboxd needs on the host (idempotent; fast when everything is present):
# Debian packages for the base image build (mmdebstrap) and the native helpers (a C toolchain), then
# `make -C native`; nftables, iproute2 and conntrack (cutting a box's connections) for box networking;
# openssl (the SSH port's self-signed TLS pair) and openssh-client (the SSH tests' stock client);
# zstd, and docker-registry, skopeo, umoci, busybox-static and htpasswd (apache2-utils) for registry images and their tests;
# the `devboxd` system user the API server runs as; the base image boxes start from; with --test, Chromium for
# the console's browser tests. Runs as root on Debian 12.
set -euo pipefail
cd "$(dirname "$0")/.."

# command -> Debian package providing it
declare -A need=([mmdebstrap]=mmdebstrap [gcc]=gcc [make]=make [flock]=util-linux [du]=coreutils [mkfs.ext4]=e2fsprogs [nft]=nftables [ip]=iproute2 [conntrack]=conntrack [openssl]=openssl [ssh]=openssh-client
  [zstd]=zstd [docker-registry]=docker-registry [skopeo]=skopeo [umoci]=umoci [htpasswd]=apache2-utils)
missing=()
for cmd in "${!need[@]}"; do
  command -v "$cmd" >/dev/null 2>&1 || missing+=("${need[$cmd]}")
done
# PostgreSQL server binaries: `npm test` runs the store contract suite and API suites on a throwaway
# cluster of its own (test/helpers/postgres.ts); the server itself only needs it with DEVBOXD_DATABASE_URL.
compgen -G '/usr/lib/postgresql/*/bin/postgres' >/dev/null || missing+=(postgresql)
# The console's browser tests (`npm test` runs setup with --test) drive Debian's Chromium with playwright-core;
# a server alone never needs it, so `npm start` does not install it.
if [ "${1:-}" = "--test" ]; then
  command -v chromium >/dev/null 2>&1 || missing+=(chromium)
fi
# The SSH tests copy sftp-server into a box (the base image has none) to show sftp and scp through the SSH port.
[ -x /usr/lib/openssh/sftp-server ] || missing+=(openssh-sftp-server)
# Registry images: zstd unpacks zstd layers; the tests serve images from a registry of their own
# (docker-registry), built with umoci from a static busybox and pushed with skopeo.
dpkg-query -W -f='${Status}' busybox-static 2>/dev/null | grep -q 'ok installed' || missing+=(busybox-static)
# Static linking of the helpers needs libc.a.
[ -f /usr/lib/x86_64-linux-gnu/libc.a ] || [ -f /usr/lib/aarch64-linux-gnu/libc.a ] || missing+=(libc6-dev)
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" -ne 0 ]; then
    echo "setup: missing packages ${missing[*]}; run as root or install them" >&2
    exit 1
  fi
  echo "setup: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  # Another setup (a second checkout, a test run beside) may hold dpkg's lock: wait for it.
  apt-get -o DPkg::Lock::Timeout=600 update -qq
  apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

make -s -C native

# The API server's user (DEVBOXD_ROLE=all runs it so): a system user with no login and no home of its own;
# setpriv (util-linux, above) drops to it.
if ! id devboxd >/dev/null 2>&1; then
  if [ "$(id -u)" -ne 0 ]; then
    echo "setup: no user devboxd; run as root to make it" >&2
    exit 1
  fi
  useradd --system --user-group --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin devboxd
fi

# The base image (about 100 s of mmdebstrap once per machine): here, so that neither the first server start
# nor a test run pays for it. As root only: a non-root checkout runs the fast tier, which needs none.
if [ "$(id -u)" -eq 0 ]; then
  node --import tsx scripts/base-image.ts
fi
