// Package frr runs FRR (zebra and bgpd, and bfdd on request; Debian's frr package, 8.4) as a BGP
// router inside a network namespace, for tests: the peer that Herald's
// embedded BGP speaker talks to.
//
// Each Router is one zebra + bgpd pair started with `ip netns exec`, with
// everything of its own in its work directory: the configuration files,
// pid files, the vty sockets vtysh talks to, the zserv socket bgpd and
// zebra share, and the logs. Nothing goes to /etc/frr or /var/run/frr, so
// any number of routers (one per namespace) run at once, next to a system
// FRR if there is one. zebra installs bgpd's best routes (ECMP included)
// into the namespace's kernel routing table.
//
// The daemons run as root (-u root) with the group frrvty (-g), which
// Debian's FRR requires the daemon user to belong to; they are killed when
// the test binary dies (Pdeathsig). Needs root.
package frr

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Where Debian's frr package puts things.
const (
	DaemonDir = "/usr/lib/frr"
	VtyshPath = "/usr/bin/vtysh"
)

// Options describe one router.
type Options struct {
	// Netns is the network namespace (a name in /var/run/netns) the
	// daemons run in. Required.
	Netns string
	// Dir is the router's own work directory (created if missing): at most
	// 90 bytes long, the sockets' paths have to fit in sun_path.
	// Required.
	Dir string
	// Name is the router's hostname in FRR (its prompt, the BGP hostname
	// capability, log lines); default Netns.
	Name string
	// Config is bgpd's configuration: `router bgp ...` and whatever it
	// needs (route-maps, prefix-lists). Written as is to Dir/bgpd.conf
	// after a hostname line. Note that FRR 8.4 refuses to exchange eBGP
	// routes without policy unless the config says
	// `no bgp ebgp-requires-policy`.
	Config string
	// ZebraConfig is extra configuration for zebra (interfaces, `ip route`
	// needs staticd and is not run: add kernel routes with ip instead).
	ZebraConfig string
	// BFD starts bfdd too (before bgpd), with BFDConfig as its
	// configuration (e.g. `bfd` and `profile` blocks); bgpd's `neighbor
	// ... bfd` lines register their sessions with it through zebra.
	BFD       bool
	BFDConfig string
	// StartTimeout bounds the wait for the daemons to answer vtysh;
	// default 30s.
	StartTimeout time.Duration
}

// Router is a running zebra + bgpd.
type Router struct {
	opts  Options
	group string

	mu    sync.Mutex
	zebra *daemon
	bgpd  *daemon
	bfdd  *daemon
}

type daemon struct {
	name string
	cmd  *exec.Cmd
	done chan struct{}
	err  error
}

func (d *daemon) exited() bool {
	select {
	case <-d.done:
		return true
	default:
		return false
	}
}

// Start writes the configuration, starts zebra, then bgpd, and waits until
// both answer vtysh. On error nothing is left running.
func Start(opts Options) (*Router, error) {
	if opts.Netns == "" || opts.Dir == "" {
		return nil, errors.New("frr: Options need Netns and Dir")
	}
	if opts.Name == "" {
		opts.Name = opts.Netns
	}
	if opts.StartTimeout == 0 {
		opts.StartTimeout = 30 * time.Second
	}
	dir, err := filepath.Abs(opts.Dir)
	if err != nil {
		return nil, err
	}
	opts.Dir = dir
	// sun_path is 108 bytes; the longest socket is Dir/zserv.api.
	if len(dir) > 90 {
		return nil, fmt.Errorf("frr: work directory %s is longer than 90 bytes (unix socket paths)", dir)
	}
	if _, err := os.Stat(filepath.Join("/var/run/netns", opts.Netns)); err != nil {
		return nil, fmt.Errorf("frr: network namespace %s: %w", opts.Netns, err)
	}
	for _, bin := range []string{filepath.Join(DaemonDir, "zebra"), filepath.Join(DaemonDir, "bgpd"), VtyshPath} {
		if _, err := os.Stat(bin); err != nil {
			return nil, fmt.Errorf("frr: %w (install Debian's frr package: install/dev/ensure-tools.sh)", err)
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	files := map[string]string{
		"zebra.conf": fmt.Sprintf("hostname %s\n%s\n", opts.Name, opts.ZebraConfig),
		"bgpd.conf":  fmt.Sprintf("hostname %s\n%s\n", opts.Name, opts.Config),
		// vtysh --config_dir reads it; empty: no integrated frr.conf, so
		// `write memory` writes the files above, never /etc/frr.
		"vtysh.conf": "",
	}
	if opts.BFD {
		files["bfdd.conf"] = fmt.Sprintf("hostname %s\n%s\n", opts.Name, opts.BFDConfig)
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o600); err != nil {
			return nil, err
		}
	}
	r := &Router{opts: opts, group: daemonGroup()}
	if err := r.start("zebra"); err != nil {
		r.Stop()
		return nil, err
	}
	if err := r.waitVty("zebra"); err != nil {
		r.Stop()
		return nil, err
	}
	if opts.BFD {
		if err := r.start("bfdd"); err != nil {
			r.Stop()
			return nil, err
		}
		if err := r.waitVty("bfdd"); err != nil {
			r.Stop()
			return nil, err
		}
	}
	if err := r.StartBGPD(); err != nil {
		r.Stop()
		return nil, err
	}
	return r, nil
}

// StartT starts a router for a test: a failed start fails the test, and
// the router is stopped when the test ends (after logging the tail of its
// logs if the test failed).
func StartT(t testing.TB, opts Options) *Router {
	t.Helper()
	r, err := Start(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("----- FRR router %s (%s) -----\n%s", r.opts.Name, r.opts.Netns, r.LogTail(40))
		}
		if err := r.Stop(); err != nil {
			t.Error(err)
		}
	})
	return r
}

// daemonGroup is the group the daemons run as: Debian's FRR checks that
// the daemon user is in its vty group, frrvty, and root is not; running
// with that group as the primary one passes the check.
func daemonGroup() string {
	if _, err := user.LookupGroup("frrvty"); err == nil {
		return "frrvty"
	}
	return "root"
}

func (r *Router) path(name string) string { return filepath.Join(r.opts.Dir, name) }

// start runs one daemon in the foreground (no -d: the process is ours to
// wait for and kill). ip execs it: the child is the daemon itself.
func (r *Router) start(name string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if d := r.daemon(name); d != nil && !d.exited() {
		return fmt.Errorf("frr %s: %s already runs", r.opts.Name, name)
	}
	out, err := os.OpenFile(r.path(name+".out"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	args := []string{
		"netns", "exec", r.opts.Netns, filepath.Join(DaemonDir, name),
		"-f", r.path(name + ".conf"),
		"-i", r.path(name + ".pid"),
		"--vty_socket", r.opts.Dir,
		"-z", r.path("zserv.api"),
		"-u", "root", "-g", r.group,
		"--log", "file:" + r.path(name+".log"),
	}
	if name == "bfdd" {
		args = append(args, "--bfdctl", r.path("bfdd.sock"))
	}
	cmd := exec.Command("ip", args...)
	cmd.Stdout, cmd.Stderr = out, out
	// Should the test binary die, the daemon goes with it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		out.Close()
		return fmt.Errorf("frr %s: starting %s: %w", r.opts.Name, name, err)
	}
	d := &daemon{name: name, cmd: cmd, done: make(chan struct{})}
	go func() {
		d.err = cmd.Wait()
		out.Close()
		close(d.done)
	}()
	switch name {
	case "zebra":
		r.zebra = d
	case "bfdd":
		r.bfdd = d
	default:
		r.bgpd = d
	}
	return nil
}

func (r *Router) daemon(name string) *daemon {
	switch name {
	case "zebra":
		return r.zebra
	case "bfdd":
		return r.bfdd
	}
	return r.bgpd
}

// waitVty waits until the daemon answers on its vty socket.
func (r *Router) waitVty(name string) error {
	r.mu.Lock()
	d := r.daemon(name)
	r.mu.Unlock()
	deadline := time.Now().Add(r.opts.StartTimeout)
	var last error
	for {
		if d.exited() {
			return fmt.Errorf("frr %s: %s exited: %v\n%s", r.opts.Name, name, d.err, r.LogTail(20))
		}
		_, _, err := r.vtysh([]string{"-d", name}, "show version")
		if err == nil {
			return nil
		}
		last = err
		if time.Now().After(deadline) {
			return fmt.Errorf("frr %s: %s does not answer vtysh after %s: %v\n%s", r.opts.Name, name, r.opts.StartTimeout, last, r.LogTail(20))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// StartBGPD starts bgpd (again, after KillBGPD) with the same
// configuration file and waits until it answers vtysh.
func (r *Router) StartBGPD() error {
	if err := r.start("bgpd"); err != nil {
		return err
	}
	return r.waitVty("bgpd")
}

// KillBGPD kills bgpd with SIGKILL, as a crash: no NOTIFICATION goes out,
// the peers see the TCP session die (or time out), and with graceful
// restart keep its routes as stale. zebra keeps running.
func (r *Router) KillBGPD() error {
	r.mu.Lock()
	d := r.bgpd
	r.mu.Unlock()
	return stop(d, syscall.SIGKILL)
}

// stopTimeout bounds how long a daemon may take to exit on SIGTERM.
const stopTimeout = 10 * time.Second

func stop(d *daemon, sig syscall.Signal) error {
	if d == nil || d.exited() {
		return nil
	}
	_ = d.cmd.Process.Signal(sig)
	select {
	case <-d.done:
		return nil
	case <-time.After(stopTimeout):
		_ = d.cmd.Process.Kill()
		<-d.done
		return fmt.Errorf("frr: %s did not exit within %s of %v; killed", d.name, stopTimeout, sig)
	}
}

// Stop ends bgpd, then zebra (SIGTERM, SIGKILL after 10s), and removes the
// sockets and pid files; the configuration and logs stay in Dir. Safe to
// call more than once.
func (r *Router) Stop() error {
	r.mu.Lock()
	b, f, z := r.bgpd, r.bfdd, r.zebra
	r.mu.Unlock()
	err := errors.Join(stop(b, syscall.SIGTERM), stop(f, syscall.SIGTERM), stop(z, syscall.SIGTERM))
	for _, name := range []string{"bgpd.vty", "zebra.vty", "bfdd.vty", "zserv.api", "bfdd.sock", "bgpd.pid", "zebra.pid", "bfdd.pid"} {
		_ = os.Remove(r.path(name))
	}
	return err
}

// Vtysh runs vtysh against this router's daemons, one -c per command: e.g.
// Vtysh("show bgp summary"), or Vtysh("configure terminal", "router bgp
// 65001", "neighbor 198.18.40.12 shutdown"). It returns vtysh's output
// (stdout and stderr); an error if vtysh failed, e.g. on an unknown
// command.
func (r *Router) Vtysh(cmd ...string) ([]byte, error) {
	stdout, stderr, err := r.vtysh(nil, cmd...)
	return append(stdout, stderr...), err
}

// show runs one command and returns only what vtysh printed on stdout
// (JSON, for the readers).
func (r *Router) show(cmd string) ([]byte, error) {
	stdout, _, err := r.vtysh(nil, cmd)
	return stdout, err
}

// Configure runs the lines in configuration mode.
func (r *Router) Configure(lines ...string) error {
	out, err := r.Vtysh(append(append([]string{"configure terminal"}, lines...), "end")...)
	if err != nil {
		return err
	}
	// vtysh exits 0 on some rejected lines; they print a % message.
	if bytes.Contains(out, []byte("% ")) {
		return fmt.Errorf("frr %s: configuring: %s", r.opts.Name, bytes.TrimSpace(out))
	}
	return nil
}

func (r *Router) vtysh(pre []string, cmds ...string) (stdout, stderr []byte, err error) {
	args := append([]string{"--vty_socket", r.opts.Dir, "--config_dir", r.opts.Dir}, pre...)
	for _, c := range cmds {
		args = append(args, "-c", c)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var o, e bytes.Buffer
	cmd := exec.CommandContext(ctx, VtyshPath, args...)
	cmd.Stdout, cmd.Stderr = &o, &e
	if err := cmd.Run(); err != nil {
		return o.Bytes(), e.Bytes(), fmt.Errorf("frr %s: vtysh %s: %w: %s", r.opts.Name, strings.Join(cmds, "; "), err,
			firstLines(append(o.Bytes(), e.Bytes()...), 5))
	}
	return o.Bytes(), e.Bytes(), nil
}

func firstLines(b []byte, n int) string {
	lines := strings.SplitN(strings.TrimSpace(string(b)), "\n", n+1)
	if len(lines) > n {
		lines = lines[:n]
	}
	return strings.Join(lines, "\n")
}

// LogTail returns the last n lines of each daemon's log and output.
func (r *Router) LogTail(n int) string {
	var b strings.Builder
	for _, name := range []string{"zebra.out", "zebra.log", "bfdd.out", "bfdd.log", "bgpd.out", "bgpd.log"} {
		data, err := os.ReadFile(r.path(name))
		if err != nil || len(bytes.TrimSpace(data)) == 0 {
			continue
		}
		lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
		if len(lines) > n {
			lines = lines[len(lines)-n:]
		}
		fmt.Fprintf(&b, "--- %s ---\n%s\n", name, strings.Join(lines, "\n"))
	}
	return b.String()
}

// KillInNetns kills (SIGKILL) every FRR daemon (a process whose
// executable is in DaemonDir) running in the named network namespace,
// whoever started it: leftovers of an interrupted run, before the
// namespace is removed. It returns how many it killed.
func KillInNetns(netns string) int {
	var want syscall.Stat_t
	if err := syscall.Stat(filepath.Join("/var/run/netns", netns), &want); err != nil {
		return 0
	}
	procs, _ := os.ReadDir("/proc")
	killed := 0
	for _, p := range procs {
		pid := 0
		if _, err := fmt.Sscan(p.Name(), &pid); err != nil || pid <= 0 {
			continue
		}
		exe, err := os.Readlink(filepath.Join("/proc", p.Name(), "exe"))
		if err != nil || filepath.Dir(exe) != DaemonDir {
			continue
		}
		var st syscall.Stat_t
		if err := syscall.Stat(filepath.Join("/proc", p.Name(), "ns", "net"), &st); err != nil {
			continue
		}
		if st.Dev == want.Dev && st.Ino == want.Ino {
			if syscall.Kill(pid, syscall.SIGKILL) == nil {
				killed++
			}
		}
	}
	return killed
}
