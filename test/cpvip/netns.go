package cpvip

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/heraldlb/herald/test/netlab"
)

// PIDs lists the processes in the named network namespace (`ip netns
// pids`): what Freeze stops, whoever started it.
func PIDs(netns string) ([]int, error) {
	out, err := exec.Command("ip", "netns", "pids", netns).Output()
	if err != nil {
		return nil, fmt.Errorf("ip netns pids %s: %w", netns, err)
	}
	var pids []int
	for _, f := range strings.Fields(string(out)) {
		if pid, err := strconv.Atoi(f); err == nil {
			pids = append(pids, pid)
		}
	}
	return pids, nil
}

// signalNetns sends sig to every process in the namespace.
func signalNetns(netns string, sig syscall.Signal) error {
	pids, err := PIDs(netns)
	if err != nil {
		return err
	}
	for _, pid := range pids {
		if err := syscall.Kill(pid, sig); err != nil && err != syscall.ESRCH {
			return fmt.Errorf("%v to pid %d in %s: %w", sig, pid, netns, err)
		}
	}
	return nil
}

// killNetns SIGKILLs every process in the namespace and waits until they
// are gone (or 10 s passed).
func killNetns(netns string) error {
	pids, err := PIDs(netns)
	if err != nil {
		return err
	}
	for _, pid := range pids {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	for _, pid := range pids {
		for i := 0; i < 200; i++ {
			if _, err := os.Stat("/proc/" + strconv.Itoa(pid)); err != nil {
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	return nil
}

// DialerIn returns a DialContext that opens its connections inside the
// named network namespace: clients in the test process talk as a process
// of that host would (to its loopback, or to the LAN from its eth0).
func DialerIn(netns string, timeout time.Duration) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		var conn net.Conn
		err := netlab.InNetns(netns, func() error {
			d := net.Dialer{Timeout: timeout, KeepAlive: 30 * time.Second}
			var err error
			conn, err = d.DialContext(ctx, network, addr)
			return err
		})
		return conn, err
	}
}

// httpClientIn is an HTTPS client in the namespace that trusts ca, with
// one timeout per request and no connection reuse: every call is a fresh
// probe.
func httpClientIn(netns string, ca *x509.CertPool, timeout time.Duration) *http.Client {
	return &http.Client{
		Timeout: timeout,
		Transport: &http.Transport{
			DialContext:       DialerIn(netns, timeout),
			TLSClientConfig:   &tls.Config{RootCAs: ca},
			DisableKeepAlives: true,
		},
	}
}

// enableLoopback6 turns IPv6 on for lo in the namespace, which netlab
// leaves IPv4-only but for eth0: a control-plane node has ::1, and the
// kernel refuses local IPv6 routes (the agent's, for the IPv6 VIP) on a
// device without IPv6. Nothing of lo reaches the LAN.
func enableLoopback6(netns string) error {
	out, err := exec.Command("ip", "netns", "exec", netns, "sysctl", "-q", "-w", "net.ipv6.conf.lo.disable_ipv6=0").CombinedOutput()
	if err != nil {
		return fmt.Errorf("enabling IPv6 on lo in %s: %w: %s", netns, err, strings.TrimSpace(string(out)))
	}
	return nil
}
