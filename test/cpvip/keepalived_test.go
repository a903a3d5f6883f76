package cpvip

import (
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func kaAddrs(s ...string) []netip.Addr {
	var out []netip.Addr
	for _, a := range s {
		out = append(out, netip.MustParseAddr(a))
	}
	return out
}

// kaTestOptions is a valid dual-stack node of a three-node control plane.
func kaTestOptions() KeepalivedOptions {
	return KeepalivedOptions{
		Node:      "cp1",
		Interface: "eth0",
		VIP:       netip.MustParseAddr("198.18.40.100"),
		VIP6:      netip.MustParseAddr("fd00:18:0:40::100"),
		SourceIP:  netip.MustParseAddr("198.18.40.11"),
		SourceIP6: netip.MustParseAddr("fd00:18:0:40::11"),
		Peers:     kaAddrs("198.18.40.12", "198.18.40.13"),
		Peers6:    kaAddrs("fd00:18:0:40::12", "fd00:18:0:40::13"),
		RouterID:  40, Priority: 100, AdvertInterval: 20 * time.Millisecond,
		Check: KeepalivedCheck{
			Script:   []string{"/usr/bin/curl", "-fsk", "--max-time", "1", "https://127.0.0.1:6443/readyz"},
			Interval: time.Second, Timeout: time.Second, Fall: 3, Rise: 10,
		},
	}
}

const kaWantDualStack = `# keepalived.conf of cp1 (test/cpvip)
global_defs {
	router_id cp1
	vrrp_version 3
	enable_script_security
	script_user root
}

vrrp_script check {
	script "/usr/bin/curl -fsk --max-time 1 https://127.0.0.1:6443/readyz"
	interval 1
	timeout 1
	fall 3
	rise 10
}

vrrp_instance vip4 {
	state BACKUP
	nopreempt
	interface eth0
	virtual_router_id 40
	priority 100
	advert_int 0.02
	unicast_src_ip 198.18.40.11
	unicast_peer {
		198.18.40.12
		198.18.40.13
	}
	virtual_ipaddress {
		198.18.40.100/32
	}
	track_script {
		check weight 0
	}
}

vrrp_instance vip6 {
	state BACKUP
	nopreempt
	interface eth0
	virtual_router_id 40
	priority 100
	advert_int 0.02
	unicast_src_ip fd00:18:0:40::11
	unicast_peer {
		fd00:18:0:40::12
		fd00:18:0:40::13
	}
	virtual_ipaddress {
		fd00:18:0:40::100/128
	}
	track_script {
		check weight 0
	}
}
`

func TestKeepalivedConfigDualStack(t *testing.T) {
	got, err := KeepalivedConfig(kaTestOptions())
	if err != nil {
		t.Fatal(err)
	}
	if got != kaWantDualStack {
		t.Errorf("got\n%s\nwant\n%s", got, kaWantDualStack)
	}
}

func TestKeepalivedConfigVariants(t *testing.T) {
	for _, tc := range []struct {
		name      string
		change    func(*KeepalivedOptions)
		want, not []string // lines (trimmed) that must, must not appear
	}{{
		name: "IPv4 only",
		change: func(o *KeepalivedOptions) {
			o.VIP6, o.SourceIP6, o.Peers6 = netip.Addr{}, netip.Addr{}, nil
		},
		want: []string{"vrrp_instance vip4 {", "198.18.40.100/32"},
		not:  []string{"vrrp_instance vip6 {"},
	}, {
		name: "IPv6 only",
		change: func(o *KeepalivedOptions) {
			o.VIP, o.SourceIP, o.Peers = netip.Addr{}, netip.Addr{}, nil
		},
		want: []string{"vrrp_instance vip6 {", "fd00:18:0:40::100/128"},
		not:  []string{"vrrp_instance vip4 {"},
	}, {
		name:   "multicast: no peers, no unicast source",
		change: func(o *KeepalivedOptions) { o.Peers, o.Peers6 = nil, nil },
		not:    []string{"unicast_src_ip 198.18.40.11", "unicast_src_ip fd00:18:0:40::11", "unicast_peer {"},
	}, {
		name:   "advert interval: the minimum",
		change: func(o *KeepalivedOptions) { o.AdvertInterval = KeepalivedMinAdvertInterval },
		want:   []string{"advert_int 0.01"},
	}, {
		name:   "advert interval: seconds and centiseconds",
		change: func(o *KeepalivedOptions) { o.AdvertInterval = 2350 * time.Millisecond },
		want:   []string{"advert_int 2.35"},
	}, {
		name: "check: whole seconds",
		change: func(o *KeepalivedOptions) {
			o.Check.Interval, o.Check.Timeout, o.Check.Fall, o.Check.Rise = 2*time.Second, 5*time.Second, 1, 2
		},
		want: []string{"interval 2", "timeout 5", "fall 1", "rise 2"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			o := kaTestOptions()
			tc.change(&o)
			conf, err := KeepalivedConfig(o)
			if err != nil {
				t.Fatal(err)
			}
			lines := map[string]bool{}
			for _, l := range strings.Split(conf, "\n") {
				lines[strings.TrimSpace(l)] = true
			}
			for _, l := range tc.want {
				if !lines[l] {
					t.Errorf("no line %q in\n%s", l, conf)
				}
			}
			for _, l := range tc.not {
				if lines[l] {
					t.Errorf("line %q in\n%s", l, conf)
				}
			}
		})
	}
}

func TestKeepalivedConfigRefuses(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(*KeepalivedOptions)
		want   string // in the error
	}{
		{"no node name", func(o *KeepalivedOptions) { o.Node = "" }, `node name ""`},
		{"node name with a blank", func(o *KeepalivedOptions) { o.Node = "cp 1" }, `node name "cp 1"`},
		{"no interface", func(o *KeepalivedOptions) { o.Interface = "" }, `interface ""`},
		{"no VIP", func(o *KeepalivedOptions) {
			o.VIP, o.SourceIP, o.Peers = netip.Addr{}, netip.Addr{}, nil
			o.VIP6, o.SourceIP6, o.Peers6 = netip.Addr{}, netip.Addr{}, nil
		}, "no VIP"},
		{"IPv6 address as IPv4 VIP", func(o *KeepalivedOptions) { o.VIP = netip.MustParseAddr("fd00::1") }, "IPv4 VIP fd00::1 is not IPv4"},
		{"IPv4-mapped IPv6 VIP", func(o *KeepalivedOptions) { o.VIP6 = netip.MustParseAddr("::ffff:198.18.40.100") }, "is not IPv6"},
		{"peers without a source", func(o *KeepalivedOptions) { o.SourceIP = netip.Addr{} }, "IPv4 peers but no IPv4 source address"},
		{"peer of the other family", func(o *KeepalivedOptions) { o.Peers6 = kaAddrs("198.18.40.12") }, "IPv6 peer 198.18.40.12 is not IPv6"},
		{"node's own address as peer", func(o *KeepalivedOptions) { o.Peers = kaAddrs("198.18.40.11") }, "peer 198.18.40.11 is the node's own address"},
		{"peers without a VIP", func(o *KeepalivedOptions) { o.VIP6 = netip.Addr{} }, "IPv6 source or peers without an IPv6 VIP"},
		{"router id 0", func(o *KeepalivedOptions) { o.RouterID = 0 }, "virtual_router_id 0"},
		{"priority 0", func(o *KeepalivedOptions) { o.Priority = 0 }, "priority 0"},
		{"priority 255 (address owner)", func(o *KeepalivedOptions) { o.Priority = 255 }, "priority 255"},
		{"advert interval below 10ms", func(o *KeepalivedOptions) { o.AdvertInterval = 5 * time.Millisecond }, "advert interval 5ms"},
		{"advert interval not in centiseconds", func(o *KeepalivedOptions) { o.AdvertInterval = 15 * time.Millisecond }, "advert interval 15ms"},
		{"advert interval over VRRPv3's field", func(o *KeepalivedOptions) { o.AdvertInterval = 41 * time.Second }, "advert interval 41s"},
		{"no script", func(o *KeepalivedOptions) { o.Check.Script = nil }, "want an absolute command path"},
		{"relative command", func(o *KeepalivedOptions) { o.Check.Script = []string{"curl", "x"} }, "want an absolute command path"},
		{"script word with a blank", func(o *KeepalivedOptions) { o.Check.Script = []string{"/usr/bin/test", "-e", "/a b"} }, `word "/a b"`},
		{"script word with a quote", func(o *KeepalivedOptions) { o.Check.Script = []string{"/usr/bin/test", `"x`} }, "quotes"},
		{"check interval under a second", func(o *KeepalivedOptions) { o.Check.Interval = 100 * time.Millisecond }, "check interval 100ms"},
		{"check interval not whole seconds", func(o *KeepalivedOptions) { o.Check.Interval = 1500 * time.Millisecond }, "check interval 1.5s"},
		{"check timeout 0", func(o *KeepalivedOptions) { o.Check.Timeout = 0 }, "check timeout 0s"},
		{"fall 0", func(o *KeepalivedOptions) { o.Check.Fall = 0 }, "check fall 0"},
		{"rise 0", func(o *KeepalivedOptions) { o.Check.Rise = 0 }, "rise 0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := kaTestOptions()
			tc.change(&o)
			conf, err := KeepalivedConfig(o)
			if err == nil {
				t.Fatalf("no error; rendered\n%s", conf)
			}
			if !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "keepalived options for ") {
				t.Errorf("error %q does not say %q", err, tc.want)
			}
			if conf != "" {
				t.Errorf("rendered a configuration with the error:\n%s", conf)
			}
		})
	}
}

func TestKeepalivedConfigFileCheck(t *testing.T) {
	o := kaTestOptions()
	o.Check = KeepalivedCheck{File: "/var/lib/cp1/check"}
	conf, err := KeepalivedConfig(o)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"track_file check {\n\tfile \"/var/lib/cp1/check\"\n}\n", "\ttrack_file {\n\t\tcheck weight 0\n\t}\n"} {
		if strings.Count(conf, want) == 0 {
			t.Errorf("no %q in\n%s", want, conf)
		}
	}
	if strings.Contains(conf, "vrrp_script") || strings.Contains(conf, "track_script") {
		t.Errorf("a file check with a script:\n%s", conf)
	}

	for _, tc := range []struct {
		name  string
		check KeepalivedCheck
		want  string
	}{
		{"relative file", KeepalivedCheck{File: "check"}, `check file "check"`},
		{"file with a blank", KeepalivedCheck{File: "/a b"}, `check file "/a b"`},
		{"file and script", KeepalivedCheck{File: "/a", Script: []string{"/bin/true"}}, "a file check has no script"},
		{"file and fall", KeepalivedCheck{File: "/a", Fall: 3}, "a file check has no script"},
	} {
		o.Check = tc.check
		if _, err := KeepalivedConfig(o); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want %q", tc.name, err, tc.want)
		}
	}
}

func TestKeepalivedProberOptions(t *testing.T) {
	good := KeepalivedProberOptions{File: "/x/check", Probe: []string{"/bin/true"}, Interval: 100 * time.Millisecond, Fall: 3, Rise: 10}
	if err := good.validate(); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		change func(*KeepalivedProberOptions)
		want   string
	}{
		{"relative file", func(o *KeepalivedProberOptions) { o.File = "check" }, `file "check"`},
		{"no probe", func(o *KeepalivedProberOptions) { o.Probe = nil }, "probe []"},
		{"relative probe", func(o *KeepalivedProberOptions) { o.Probe = []string{"true"} }, `probe ["true"]`},
		{"interval under 10ms", func(o *KeepalivedProberOptions) { o.Interval = time.Millisecond }, "interval 1ms"},
		{"interval not in milliseconds", func(o *KeepalivedProberOptions) { o.Interval = 10500 * time.Microsecond }, "interval 10.5ms"},
		{"fall 0", func(o *KeepalivedProberOptions) { o.Fall = 0 }, "fall 0"},
		{"rise 0", func(o *KeepalivedProberOptions) { o.Rise = 0 }, "rise 0"},
	} {
		o := good
		tc.change(&o)
		if err := o.validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want %q", tc.name, err, tc.want)
		}
	}
}

func TestKeepalivedReadyzProbe(t *testing.T) {
	got := strings.Join(KeepalivedReadyzProbe("https://127.0.0.1:6443/readyz", 250*time.Millisecond), " ")
	want := "/usr/bin/curl --fail --silent --insecure --output /dev/null --max-time 0.250 https://127.0.0.1:6443/readyz"
	if got != want {
		t.Errorf("got %s, want %s", got, want)
	}
}

func TestKeepalivedState(t *testing.T) {
	dir := t.TempDir()
	k := &Keepalived{Dir: dir}
	if got := k.State("vip4"); got != "" {
		t.Errorf("no log: state %q", got)
	}
	log := runMarker + "first run\n" +
		"Fri Nov 27 19:08:15 2026: (vip4) Entering BACKUP STATE\n" +
		"Fri Nov 27 19:08:15 2026: (vip4) Entering MASTER STATE\n" +
		runMarker + "second run\n" +
		"Fri Nov 27 19:20:19 2026: (vip4): entering FAULT state (tracked file check has status -254)\n" +
		"Fri Nov 27 19:20:19 2026: (vip4) entering FAULT state\n" +
		"Fri Nov 27 19:20:20 2026: (vip6) Entering BACKUP STATE\n"
	if err := os.WriteFile(filepath.Join(dir, "keepalived.log"), []byte(log), 0o644); err != nil {
		t.Fatal(err)
	}
	for inst, want := range map[string]string{"vip4": "FAULT", "vip6": "BACKUP", "vip7": ""} {
		if got := k.State(inst); got != want {
			t.Errorf("State(%s) = %q, want %q", inst, got, want)
		}
	}
	// The latest run only: before its first transition, no state.
	if err := os.WriteFile(filepath.Join(dir, "keepalived.log"), []byte(log+runMarker+"third run\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := k.State("vip4"); got != "" {
		t.Errorf("a new run without transitions: state %q", got)
	}
}
