# apt.sh: the one way the project's scripts run apt-get and the dpkg calls
# that change its database. Source it, then:
#
#   apt_install [OPTION...] PKG...   install; `apt-get update` first only when that fails
#   apt_get ARGS...                  any other apt-get call (update, download)
#   dpkg_locked ARGS...              dpkg that writes its database (--add-architecture)
#
# Several installers run at once (.ci/run starts the VM image's, gVisor's and
# the cluster's in the background beside the foreground ones) and dpkg lets
# one at a time in: a second apt-get fails at once ("Could not get lock
# /var/lib/dpkg/lock-frontend"). So every call here first takes the
# project's own lock (flock on $LITTERBOX_APT_LOCK), saying whom it waits
# for, for at most $LITTERBOX_APT_WAIT seconds (900), and then gives apt's
# own lock the same time (DPkg::Lock::Timeout) for an apt-get the project
# did not start (unattended-upgrades, a person's).
#
# scripts/apt_test.go refuses an apt-get or dpkg call in scripts/ that does
# not go through here.

LITTERBOX_APT_LOCK=${LITTERBOX_APT_LOCK:-/var/lock/litterbox-apt.lock}
LITTERBOX_APT_WAIT=${LITTERBOX_APT_WAIT:-900}

# apt_locked CMD... runs CMD holding the project's apt lock.
apt_locked() {
  (
    exec 9>>"$LITTERBOX_APT_LOCK"
    if ! flock -n 9; then
      printf '%s: waiting up to %ss for another installer to finish (lock %s)\n' \
        "${0##*/}" "$LITTERBOX_APT_WAIT" "$LITTERBOX_APT_LOCK" >&2
      if ! flock -w "$LITTERBOX_APT_WAIT" 9; then
        printf '%s: gave up after %ss: another installer still holds %s (fuser -v %s names it)\n' \
          "${0##*/}" "$LITTERBOX_APT_WAIT" "$LITTERBOX_APT_LOCK" "$LITTERBOX_APT_LOCK" >&2
        exit 1
      fi
    fi
    # The lock's fd does not go to the command: a daemon a package's
    # postinst starts (docker.io's dockerd) would hold the lock for its life.
    "$@" 9>&-
  )
}

_apt() {
  DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout="$LITTERBOX_APT_WAIT" "$@"
}
# The first try is silent (it fails when the package lists are missing or
# old); the second, after an update, shows apt's errors.
_apt_install_silent() { _apt install -y -qq --no-install-recommends "$@" >/dev/null 2>&1; }
_apt_install() { _apt install -y -qq --no-install-recommends "$@" >/dev/null; }

apt_get() { apt_locked _apt "$@"; }

apt_install() {
  apt_locked _apt_install_silent "$@" ||
    { apt_get update -qq && apt_locked _apt_install "$@"; }
}

dpkg_locked() { apt_locked dpkg "$@"; }
