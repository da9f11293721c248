#!/usr/bin/env bash
# Headless Chromium and its WebDriver for the browser test of the documentation site (tests/docs/).
#
#   scripts/browser.sh install   # Debian's chromium and chromium-driver (root + apt); nothing when already there
#   scripts/browser.sh status    # exit 0 when /usr/bin/chromium and /usr/bin/chromedriver are there
#
# The test drives these two binaries by path through Selenium, offline: Selenium Manager downloads nothing.
# Without root or apt, `install` says so and exits 0 (the browser test then skips with the reason).
set -euo pipefail

CHROMIUM=/usr/bin/chromium
DRIVER=/usr/bin/chromedriver

present() {
    [ -x "$CHROMIUM" ] && [ -x "$DRIVER" ]
}

install() {
    if present; then
        echo "browser: $CHROMIUM and $DRIVER already installed"
        return 0
    fi
    if [ "$(id -u)" != 0 ]; then
        echo "scripts/browser.sh install: chromium is not installed and installing it needs root (apt);" \
            "running as $(id -un); the browser test will skip"
        return 0
    fi
    if ! command -v apt-get >/dev/null; then
        echo "scripts/browser.sh install: no apt-get on this machine; install chromium and chromedriver" \
            "yourself (the browser test skips without them)"
        return 0
    fi
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium chromium-driver >/dev/null
    present || { echo "scripts/browser.sh install: apt finished but $CHROMIUM or $DRIVER is missing" >&2; exit 1; }
    echo "browser: installed $("$CHROMIUM" --version 2>/dev/null || echo chromium)," \
        "$("$DRIVER" --version 2>/dev/null | cut -d' ' -f1-2)"
}

case "${1:-}" in
install) install ;;
status)
    if present; then
        echo "browser: $CHROMIUM and $DRIVER present"
    else
        echo "browser: chromium or chromedriver missing; run scripts/browser.sh install" >&2
        exit 1
    fi
    ;;
*) echo "usage: scripts/browser.sh install|status" >&2; exit 2 ;;
esac
