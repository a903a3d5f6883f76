# lib.sh: shell functions the hack/ scripts share; source it from the
# repository's root.

# run prints a command, quoted for a shell, then runs it.
run() {
	local a line='$'
	for a in "$@"; do
		if [[ "${a}" =~ ^[A-Za-z0-9_./=:,+-]+$ ]]; then
			line+=" ${a}"
		else
			line+=" '${a//\'/\'\\\'\'}'"
		fi
	done
	echo "${line}"
	"$@"
}
