#!/usr/bin/env bash
# Installs Debian's chromium for the console's browser tests, if missing.
# playwright-core drives it through executablePath; nothing is downloaded
# by a test tool of its own.
set -euo pipefail
if [ -x /usr/bin/chromium ]; then
  exit 0
fi
if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then
  echo "setup: chromium is missing and cannot be installed here; the console browser test will be skipped" >&2
  exit 0
fi
echo "setup: installing chromium (Debian package)" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq >/dev/null
apt-get install -y -qq chromium >/dev/null
