#!/usr/bin/env bash
# Installs and builds what devboxd needs on the host (idempotent; fast when everything is present).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -f native/Makefile ]; then make -s -C native; fi
