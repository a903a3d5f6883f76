package cpvip

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/heraldlb/herald/test/agentproc"
)

// KeepalivedBin is the Debian package's daemon (install/dev/ensure-tools.sh
// installs it).
const KeepalivedBin = "/usr/sbin/keepalived"

// Keepalived is one node's keepalived, run in the foreground inside the
// node's network namespace. Everything it writes is in its directory: the
// configuration, the pid files of its parent and VRRP processes, its log;
// nothing in /etc or /run is shared between nodes. It dies with the test
// process (parent-death signal; its VRRP child then gets SIGTERM from
// keepalived itself). Pid and Exited are those of the parent.
//
// keepalived puts a VIP on the node's interface as an address: the node's
// kernel answers ARP and NDP for it as long as it is there, also while
// keepalived is frozen or after it was killed. Only a running keepalived
// removes it (on FAULT, BACKUP, a clean stop, or at its next start).
type Keepalived struct {
	*groupProc
	Netns string
	Dir   string
}

// StartKeepalived writes conf to dir/keepalived.conf, has keepalived test
// it inside network namespace netns, where its interface is (any warning
// is an error), and starts keepalived with it there: VRRP only (no health
// checker, no BFD), logging to dir/keepalived.log instead of syslog. The
// parent process leads a process group of its own, which Kill signals as a
// whole.
func StartKeepalived(netns, dir, conf string) (*Keepalived, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	confPath := filepath.Join(dir, "keepalived.conf")
	if err := os.WriteFile(confPath, []byte(conf), 0o644); err != nil {
		return nil, err
	}
	// keepalived skips what it cannot use, with a warning, and runs with
	// the rest: its configuration test says whether it takes all of it.
	if out, err := exec.Command("ip", "netns", "exec", netns, KeepalivedBin, "--config-test", "--use-file", confPath).CombinedOutput(); err != nil || len(bytes.TrimSpace(out)) > 0 {
		return nil, fmt.Errorf("keepalived --config-test of %s in %s: %v: %s", confPath, netns, err, bytes.TrimSpace(out))
	}
	argv := []string{KeepalivedBin,
		"--dont-fork", "--log-console", "--no-syslog", "--log-detail",
		"--vrrp", "--no_bfd",
		"--use-file", confPath,
		"--pid", filepath.Join(dir, "keepalived.pid"),
		"--vrrp_pid", filepath.Join(dir, "vrrp.pid"),
		"--checkers_pid", filepath.Join(dir, "checkers.pid"),
		"--bfd_pid", filepath.Join(dir, "bfd.pid"),
	}
	p, err := startGroup("keepalived in "+netns, netns, filepath.Join(dir, "keepalived.log"), argv)
	if err != nil {
		return nil, err
	}
	return &Keepalived{groupProc: p, Netns: netns, Dir: dir}, nil
}

// Kill SIGKILLs keepalived's whole process group at once, parent, VRRP
// process and any check script running, as a crash would: nothing sends a
// last advert or removes the VIP, which stays on the node's interface (and
// its kernel keeps answering ARP for it) until someone deletes it. It
// returns when every process of the group is gone.
func (k *Keepalived) Kill() error { return k.kill() }

// Stop is keepalived's clean shutdown (SIGTERM): its instances send a
// priority 0 advert, so a backup takes over at once, and it removes the
// VIPs. If it has not exited after groupStopTimeout, Stop kills it.
func (k *Keepalived) Stop() error { return k.stop() }

// Logs returns the last maxLines lines of keepalived's log, every run that
// used the directory included.
func (k *Keepalived) Logs(maxLines int) string {
	b, err := os.ReadFile(filepath.Join(k.Dir, "keepalived.log"))
	if err != nil {
		return fmt.Sprintf("keepalived log of %s: %v", k.Netns, err)
	}
	return fmt.Sprintf("----- keepalived in %s (%s) -----\n%s\n", k.Netns, k.Dir, agentproc.Tail(string(b), maxLines))
}

// keepalivedState matches keepalived's state transitions in its log:
// "(vip4) Entering MASTER STATE", and from its start straight into a
// fault "(vip4) entering FAULT state".
var keepalivedState = regexp.MustCompile(`\((\S+)\) [Ee]ntering (\S+) (?:STATE|state)`)

// State is the state the latest keepalived run in the directory last
// logged for instance (vip4, vip6): BACKUP, MASTER or FAULT; "" before its
// first transition.
func (k *Keepalived) State(instance string) string {
	b, err := os.ReadFile(filepath.Join(k.Dir, "keepalived.log"))
	if err != nil {
		return ""
	}
	run := string(b)
	if i := strings.LastIndex(run, runMarker); i >= 0 {
		run = run[i:]
	}
	state := ""
	for _, m := range keepalivedState.FindAllStringSubmatch(run, -1) {
		if m[1] == instance {
			state = strings.ToUpper(m[2])
		}
	}
	return state
}

// KeepalivedOptionsFor is node n's keepalived on the harness's LAN: both
// VIPs on its LAN device, unicast adverts to the other nodes (VRRPv3),
// equal priorities (100) with nopreempt, as the agents have no preference
// either, and the given advert interval and check.
func (cp *ControlPlane) KeepalivedOptionsFor(n *CPNode, advert time.Duration, check KeepalivedCheck) KeepalivedOptions {
	o := KeepalivedOptions{
		Node: n.Name, Interface: agentDevice,
		VIP: VIP, SourceIP: n.Host.IP,
		VIP6: VIP6, SourceIP6: n.Host.IP6,
		RouterID: 40, Priority: 100, AdvertInterval: advert,
		Check: check,
	}
	for _, m := range cp.Nodes {
		if m != n {
			o.Peers, o.Peers6 = append(o.Peers, m.Host.IP), append(o.Peers6, m.Host.IP6)
		}
	}
	return o
}
