#!/usr/bin/env bash
# ensure-tmux.sh: make tmux available. The end-to-end test of `litterbox ui`
# (testdata/script/activity_ui.txtar) and the bench's activity group drive
# the UI in a real terminal: tmux runs it, send-keys types and capture-pane
# reads the screen.
#
# Idempotent: when tmux is on PATH it does nothing; otherwise it installs it
# with apt-get (as root).
set -euo pipefail

log() { printf 'ensure-tmux: %s\n' "$*" >&2; }

if command -v tmux >/dev/null 2>&1; then
  log "$(tmux -V) already present"
  exit 0
fi
if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
  log "tmux is missing: install Debian's tmux package (or brew install tmux), then run this again"
  exit 1
fi
. "$(dirname "${BASH_SOURCE[0]}")/apt.sh"
apt_install tmux
log "installed $(tmux -V)"
