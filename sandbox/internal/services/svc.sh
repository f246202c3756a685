#!/bin/sh
# Litterbox service supervisor and control, installed read-only (root-owned)
# at /run/litterbox/svc. Plain busybox sh: there is no supervisord or runit.
#
#   svc start NAME...      start the supervisor of each service (no-op if running)
#   svc stop NAME          stop signal to the service's process group, KILL after the timeout
#   svc restart NAME       restart signal if one is configured, else stop then start
#   svc status NAME        key=value lines
#   svc logs NAME LINES    the last LINES lines of the service's log
#   svc run NAME           the supervisor loop itself (started by start, setsid)
#   svc exec NAME          the service command (started by run, setsid)
#
# Definitions: /run/litterbox/services/NAME.spec, written by root at create, so
# the sandbox user cannot change what runs. State: /run/litterbox/state/NAME/
# (written by the supervisor, which runs as the sandbox user like the service
# it must signal): supervisor, pid, state, restarts, exit, started, want, log.
# So the agent can write them too, and they are read as hostile: one line of
# at most 64 bytes of a regular file (get), pids only when they are numbers
# (alive), the log through tail -c; the host parses what this prints strictly.
R=/run/litterbox
S=$R/state
# LOGMAX is the most of the log's end that logs reads (1 MiB).
LOGMAX=1048576

load() {
	name=$1
	spec=$R/services/$name.spec
	if [ ! -f "$spec" ]; then
		echo "error=unknown service"
		echo "services=$(cd "$R/services" 2>/dev/null && ls | sed 's/\.spec$//' | tr '\n' ' ')"
		exit 3
	fi
	. "$spec"
	d=$S/$name
}

# alive PID: PID is a number, not 0 (kill -0 0 is our own group), and its
# process exists.
alive() {
	case $1 in '' | 0* | *[!0-9]*) return 1 ;; esac
	kill -0 "$1" 2>/dev/null
}

# get FILE: the first line of the state file FILE, of at most 64 bytes. A
# file that is not a regular file (a fifo, a link to /dev/zero) reads as
# empty, so no read here blocks or runs on without end.
get() {
	[ -f "$d/$1" ] || return 0
	v=$(head -c 64 "$d/$1" 2>/dev/null)
	printf '%s\n' "${v%%
*}"
}

# put FILE VALUE: writes the state file FILE anew, a temporary file renamed
# over it, so whatever the agent left at that name (a fifo, a link) is
# replaced, never opened: a write never blocks.
put() {
	tmp=$(mktemp "$d/.put.XXXXXX") || return 1
	echo "$2" >"$tmp" && mv -f "$tmp" "$d/$1"
}

# logok: the log is a regular file, or none; a link or anything else there
# (a fifo, a device) is removed, so appending to it never blocks.
logok() {
	if [ -L "$d/log" ] || { [ -e "$d/log" ] && [ ! -f "$d/log" ]; }; then
		rm -f "$d/log"
	fi
}

note() {
	logok
	echo "[litterbox $(date '+%Y-%m-%d %H:%M:%S')] $*" >>"$d/log"
}

status() {
	st=$(get state)
	[ -n "$st" ] || st=not-started
	sup=$(get supervisor)
	pid=$(get pid)
	case $st in
	starting | running | backoff)
		# A supervisor that is gone may have ended the way it should,
		# writing its last state after the read above: read it again.
		if ! alive "$sup"; then
			st=$(get state)
			case $st in
			starting | running | backoff)
				if alive "$pid"; then st=unsupervised; else st=dead; fi
				;;
			esac
		fi
		;;
	esac
	alive "$pid" || pid=
	echo "name=$name"
	echo "state=$st"
	echo "pid=$pid"
	echo "restarts=$(get restarts)"
	echo "exit=$(get exit)"
	echo "started=$(get started)"
}

# wait_gone PID TICKS: until PID has exited, polling every 0.1 s, at most
# TICKS times.
wait_gone() {
	n=0
	while alive "$1" && [ $n -lt "$2" ]; do
		sleep 0.1
		n=$((n + 1))
	done
}

# signal_wait SIG: send SIG to the service's process group, wait up to
# TIMEOUT seconds for it to exit, then KILL the group.
signal_wait() {
	pid=$(get pid)
	alive "$pid" || return 0
	kill -"$1" -"$pid" 2>/dev/null || kill -"$1" "$pid" 2>/dev/null
	wait_gone "$pid" $((TIMEOUT * 10))
	if alive "$pid"; then
		note "still running ${TIMEOUT}s after SIG$1: sending SIGKILL"
		kill -KILL -"$pid" 2>/dev/null || kill -KILL "$pid" 2>/dev/null
		wait_gone "$pid" 50
	fi
}

start() {
	mkdir -p "$d" || exit 1
	sup=$(get supervisor)
	if alive "$sup"; then
		echo "message=already running"
		status
		return
	fi
	# A service left behind by a killed supervisor would hold its port.
	signal_wait "$STOP"
	rm -f "$d/want" "$d/pid" "$d/exit"
	put restarts 0
	put state starting
	setsid "$R/svc" run "$name" </dev/null >/dev/null 2>&1 &
	# Until the supervisor says the service runs (it writes the pid, then
	# the state: waiting for the pid alone, a status between the two read
	# "starting"), or that it ended at once.
	n=0
	while [ "$(get state)" = starting ] && [ $n -lt 50 ]; do
		sleep 0.02
		n=$((n + 1))
	done
	echo "message=started"
	status
}

stop() {
	sup=$(get supervisor)
	if alive "$sup"; then
		put want stop
		note "stopping (SIG$STOP)"
		signal_wait "$STOP"
		# The supervisor notices want=stop within 0.2 s.
		wait_gone "$sup" 100
		echo "message=stopped"
	else
		pid=$(get pid)
		if alive "$pid"; then
			signal_wait "$STOP"
			echo "message=stopped (its supervisor was gone)"
		else
			echo "message=not running"
		fi
		if [ -e "$d/state" ] || [ -L "$d/state" ]; then put state stopped; fi
	fi
	status
}

restart() {
	sup=$(get supervisor)
	if ! alive "$sup"; then
		start
		return
	fi
	old=$(get pid)
	if [ -n "$RESTART_SIG" ] && alive "$old"; then
		# The service restarts itself on this signal (a reload); if it
		# exits instead, want=restart brings it back whatever its policy.
		put want restart
		note "sending SIG$RESTART_SIG (restart)"
		kill -"$RESTART_SIG" "$old" 2>/dev/null
		sleep 0.3
		if alive "$old" && [ "$(get pid)" = "$old" ]; then
			rm -f "$d/want"
			echo "message=sent SIG$RESTART_SIG"
			status
			return
		fi
	else
		put want restart
		note "restarting (SIG$STOP)"
		signal_wait "$STOP"
	fi
	n=0
	while { [ "$(get pid)" = "$old" ] || [ ! -f "$d/pid" ]; } && [ $n -lt 100 ]; do
		sleep 0.05
		n=$((n + 1))
	done
	echo "message=restarted"
	status
}

# run is the supervisor: it starts the service in its own session (so a
# signal reaches its whole process group), records its pid, waits for it,
# records the exit code and restarts it as the policy says, backing off when
# it keeps crashing.
run() {
	put supervisor $$
	restarts=0
	fails=0
	while :; do
		if [ -f "$d/log" ] && [ "$(wc -c <"$d/log")" -gt 4194304 ]; then
			mv "$d/log" "$d/log.1"
		fi
		note "starting: $CMDLINE"
		logok
		setsid "$R/svc" exec "$name" </dev/null >>"$d/log" 2>&1 &
		pid=$!
		t0=$(date +%s)
		put started $t0
		put pid $pid
		put restarts $restarts
		put state running
		wait $pid
		code=$?
		put exit $code
		rm -f "$d/pid"
		lived=$(($(date +%s) - t0))
		want=$(get want)
		rm -f "$d/want"
		note "exited with code $code after ${lived}s"
		case $want in
		stop)
			put state stopped
			exit 0
			;;
		restart)
			restarts=$((restarts + 1))
			fails=0
			continue
			;;
		esac
		case $POLICY in
		always) ;;
		on-failure) [ $code -ne 0 ] || {
			put state exited
			exit 0
		} ;;
		*)
			put state exited
			exit 0
			;;
		esac
		[ $lived -ge 10 ] && fails=0
		case $fails in
		0) ticks=1 ;; 1) ticks=3 ;; 2) ticks=5 ;; 3) ticks=10 ;; 4) ticks=20 ;; *) ticks=40 ;;
		esac
		fails=$((fails + 1))
		put state backoff
		note "restarting in $((ticks * 2 / 10)).$((ticks * 2 % 10))s (policy $POLICY)"
		n=0
		while [ $n -lt $ticks ] && [ ! -f "$d/want" ]; do
			sleep 0.2
			n=$((n + 1))
		done
		if [ "$(get want)" = stop ]; then
			rm -f "$d/want"
			put state stopped
			exit 0
		fi
		rm -f "$d/want"
		restarts=$((restarts + 1))
	done
}

action=$1
shift
case $action in
start)
	for svc in "$@"; do
		load "$svc"
		start
	done
	;;
stop | restart | status | run)
	load "$1"
	$action
	;;
logs)
	load "$1"
	status
	echo "--- log"
	# Bounded here, whatever the service wrote: the last LOGMAX bytes read,
	# lines cut at 4 KiB, the last MiB of them (the host reads at most 4 MiB
	# of any answer).
	if [ -f "$d/log" ]; then
		tail -c $LOGMAX "$d/log" 2>/dev/null | tail -n "${2:-100}" | cut -b 1-4096 | tail -c 1048576
	fi
	;;
exec)
	load "$1"
	cd "$WORKDIR" || exit 126
	service_exec
	;;
*)
	echo "usage: svc start|stop|restart|status|logs|run|exec NAME" >&2
	exit 2
	;;
esac
