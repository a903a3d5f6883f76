# Shared by the demos (demo.sh, demo-cluster.sh); sourced, not run.
#
#   step TEXT       a heading
#   run CMD...      show the command, run it
#   must CMD...     show it, run it, and try again for up to MUST_TIMEOUT
#                   seconds (default 10) until it succeeds; then its output
#                   of the successful try. If it never does, the demo fails
#                   saying which command, with the output of its last try.

step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
run() { printf '$ %s\n' "$*"; "$@"; }
must() {
	printf '$ %s\n' "$*"
	local limit=${MUST_TIMEOUT:-10}
	local deadline=$((SECONDS + limit)) out tries=1
	until out=$("$@" 2>&1); do
		if ((SECONDS >= deadline)); then
			printf '%s\n' "$out"
			printf '\n\033[1;31mdemo FAILED: "%s" did not succeed in %d tries over %d s\033[0m\n' "$*" "$tries" "$limit" >&2
			exit 1
		fi
		tries=$((tries + 1))
		sleep 0.5
	done
	printf '%s\n' "$out"
	((tries == 1)) || printf '(succeeded on try %d)\n' "$tries"
}
