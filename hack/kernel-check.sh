#!/usr/bin/env bash
# kernel-check.sh: loads and runs the eBPF responder programs on older
# kernels than the build machine's, in a virtual machine (qemu, emulated:
# KVM is not needed, a boot takes seconds):
# the tests of ./bpf that need no network device (BPF_PROG_TEST_RUN of the
# XDP and tc programs for ARP, neighbour discovery and conflicts; maps;
# pinning) run as the VM's init, on each kernel below.
#
# Kernels: Debian's, the oldest still served (bullseye, 5.10: the minimum
# Herald documents for xdp mode, and older than the 5.15 of Ubuntu 22.04)
# and bookworm's 6.1.
# tcx mode needs 6.6 and is not attachable there; its program is still
# loaded and test-run (it is a plain tc program). Kernel packages and
# qemu are fetched once, cached in ${HERALD_CACHE:-$HOME/.cache/herald}/kernels.
# Needs qemu-system-x86 and cpio (make tools installs them). make test runs
# it (make kernel-check alone).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

cache=${HERALD_CACHE:-$HOME/.cache/herald}/kernels
mirror=http://deb.debian.org/debian
# suite|package: the cloud flavour (small; the console and initramfs
# support we need are built in).
kernels=(
	"bullseye|linux-image-5.10.0-30-cloud-amd64-unsigned"
	"bookworm|linux-image-6.1.0-50-cloud-amd64-unsigned"
)
run=${KERNELCHECK_RUN:-TestProgram|TestMaps|TestPinned}

log() { printf 'kernel-check: %s\n' "$*" >&2; }
die() { log "$*"; exit 1; }

for tool in qemu-system-x86_64 cpio curl xz dpkg-deb; do
	command -v "$tool" >/dev/null || die "$tool is missing (apt-get install qemu-system-x86 cpio curl xz-utils)"
done
mkdir -p "$cache"

# vmlinuz SUITE PACKAGE: the kernel image of the newest PACKAGE in SUITE.
vmlinuz() {
	local suite=$1 pkg=$2 out="$cache/$2.vmlinuz"
	if [[ ! -s $out ]]; then
		local file
		file=$(curl -sf "$mirror/dists/$suite/main/binary-amd64/Packages.xz" | xz -d |
			awk -v p="$pkg" '$1=="Package:"{m=($2==p)} m&&$1=="Filename:"{print $2; exit}')
		[[ -n $file ]] || die "$pkg not found in $suite"
		log "fetching $file"
		local tmp
		tmp=$(mktemp -d)
		curl -sf "$mirror/$file" -o "$tmp/k.deb"
		dpkg-deb -x "$tmp/k.deb" "$tmp/x"
		cp "$tmp"/x/boot/vmlinuz-* "$out"
		rm -rf "$tmp"
	fi
	echo "$out"
}

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/root"
CGO_ENABLED=0 go test -c -o "$work/root/bpf.test" ./bpf/
CGO_ENABLED=0 go build -o "$work/root/init" ./hack/kernelcheck
(cd "$work/root" && find . | cpio -o -H newc --quiet) >"$work/initrd"

status=0
for k in "${kernels[@]}"; do
	suite=${k%%|*} pkg=${k#*|}
	kernel=$(vmlinuz "$suite" "$pkg")
	log "booting $pkg"
	out=$(timeout 300 qemu-system-x86_64 -accel tcg -m 1024 -nographic -no-reboot \
		-kernel "$kernel" -initrd "$work/initrd" \
		-append "console=ttyS0 panic=-1 quiet KERNELCHECK_RUN=$run" 2>&1) || true
	verdict=$(grep -a '^KERNELCHECK ' <<<"$out" | tr -d '\r' || true)
	if [[ $verdict != *" PASS" ]]; then
		status=1
		grep -a -E -- '--- (FAIL|PASS)|^(FAIL|ok|PASS)|_test.go|verifier|Error' <<<"$out" | tr -d '\r' | tail -40 >&2 || true
		log "$pkg: ${verdict:-no verdict (the VM did not finish)}"
	else
		grep -a -E -- '^--- (PASS|FAIL)' <<<"$out" | tr -d '\r' >&2 || true
		log "$verdict"
	fi
done
exit $status
