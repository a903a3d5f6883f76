# Shared by the demos (demo.sh, demo-cluster.sh) and cluster-up.sh; sourced, not run.
#
#   step TEXT          a heading
#   run CMD...         show the command, run it
#   must CMD...        show it, run it, and try again for up to MUST_TIMEOUT
#                      seconds (default 10) until it succeeds; then its output
#                      of the successful try. If it never does, the demo fails
#                      saying which command, with the output of its last try.
#   until_ok TEXT CMD...  as must, for a check of the demo's own (a shell
#                      function): shows "# TEXT", not the command.
#   close_inherited_fds   closes what the demo inherited besides stdin,
#                      stdout and stderr, before it starts what it leaves
#                      running.
#
# A shown command is quoted as a shell needs it, so that it can be pasted:
# run and must take real commands, never the demo's shell functions.

step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }

# quoted ARGS prints ARGS as one would type them: words of safe characters
# as they are, others in single quotes.
quoted() {
	local a out=()
	for a in "$@"; do
		if [[ $a =~ ^[A-Za-z0-9_@%+=:,./-]+$ ]]; then
			out+=("$a")
		else
			out+=("'${a//\'/\'\\\'\'}'")
		fi
	done
	printf '%s\n' "${out[*]}"
}

run() { printf '$ %s\n' "$(quoted "$@")"; "$@"; }
must() { printf '$ %s\n' "$(quoted "$@")"; retry "$*" "$@"; }
until_ok() { printf '# %s\n' "$1"; retry "$@"; }

# retry NAME CMD... runs CMD until it succeeds, for up to MUST_TIMEOUT
# seconds; NAME is what a failure names.
retry() {
	local name=$1 limit=${MUST_TIMEOUT:-10}
	shift
	local deadline=$((SECONDS + limit)) out tries=1
	until out=$("$@" 2>&1); do
		if ((SECONDS >= deadline)); then
			printf '%s\n' "$out"
			printf '\n\033[1;31mdemo FAILED: "%s" did not succeed in %d tries over %d s\033[0m\n' "$name" "$tries" "$limit" >&2
			exit 1
		fi
		tries=$((tries + 1))
		sleep 0.5
	done
	[[ -z $out ]] || printf '%s\n' "$out"
	((tries == 1)) || printf '(succeeded on try %d)\n' "$tries"
}

# close_inherited_fds: what a demo leaves running (agents, the BGP router)
# must not hold its caller's descriptors: run as `flock LOCK make demo`,
# they held the lock until make demo-down, and `flock LOCK make demo-down`
# waited for it forever. Inherited means not close-on-exec; bash's own
# descriptors (the script it reads) are close-on-exec.
close_inherited_fds() {
	local fd flags
	for fd in /proc/$$/fd/*; do
		fd=${fd##*/}
		((fd > 2)) || continue
		flags=$(sed -n 's/^flags:[[:space:]]*//p' "/proc/$$/fdinfo/$fd" 2>/dev/null) || continue
		[[ -n $flags ]] || continue
		if (((8#$flags & 8#2000000) == 0)); then
			eval "exec $fd>&-"
		fi
	done
}
