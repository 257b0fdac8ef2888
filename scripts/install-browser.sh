#!/usr/bin/env bash
# Install Debian's chromium for the browser smoke tests (tests/leaderboard/test_*browser*.py).
# Playwright drives this binary through executable_path; it never downloads its own browsers.
set -euo pipefail

CHROMIUM=/usr/bin/chromium

if [[ -x "$CHROMIUM" ]]; then
    exit 0
fi

if [[ "$(id -u)" -eq 0 ]]; then
    SUDO=()
elif command -v sudo >/dev/null 2>&1; then
    SUDO=(sudo)
else
    echo "install-browser.sh: $CHROMIUM is missing and we are not root and have no sudo;" \
        "install it with: apt-get install chromium" >&2
    exit 1
fi

echo "install-browser.sh: installing chromium with apt-get (about a minute)" >&2
# apt's own errors go to stderr; dpkg's progress lines (stdout) are dropped
if ! "${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -qq >/dev/null \
    || ! "${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive \
        apt-get install -y -qq chromium >/dev/null; then
    echo "install-browser.sh: apt-get could not install chromium; install it by hand" \
        "(apt-get install chromium) and rerun" >&2
    exit 1
fi

if [[ ! -x "$CHROMIUM" ]]; then
    echo "install-browser.sh: apt-get finished but $CHROMIUM is still missing" >&2
    exit 1
fi
