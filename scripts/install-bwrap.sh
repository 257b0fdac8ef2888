#!/usr/bin/env bash
# Install Debian's bubblewrap for the `bwrap` sandbox (harness/sandbox/bwrap.py, tests/sandbox/).
# The sandbox runs this binary from PATH; nothing is built from source.
set -euo pipefail

if command -v bwrap >/dev/null 2>&1; then
    exit 0
fi

if [[ "$(id -u)" -eq 0 ]]; then
    SUDO=()
elif command -v sudo >/dev/null 2>&1; then
    SUDO=(sudo)
else
    echo "install-bwrap.sh: bwrap is missing and we are not root and have no sudo;" \
        "install it with: apt-get install bubblewrap" >&2
    exit 1
fi

echo "install-bwrap.sh: installing bubblewrap with apt-get (under a minute)" >&2
# apt's own errors go to stderr; dpkg's progress lines (stdout) are dropped
if ! "${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -qq >/dev/null \
    || ! "${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive \
        apt-get install -y -qq bubblewrap >/dev/null; then
    echo "install-bwrap.sh: apt-get could not install bubblewrap; install it by hand" \
        "(apt-get install bubblewrap) and rerun" >&2
    exit 1
fi

if ! command -v bwrap >/dev/null 2>&1; then
    echo "install-bwrap.sh: apt-get finished but bwrap is still missing from PATH" >&2
    exit 1
fi
