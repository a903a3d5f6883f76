package e2e

import (
	"context"
	"fmt"
	"maps"
	"net/netip"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/heraldlb/herald/tables"
	"github.com/heraldlb/herald/test/realcluster"
)

// The takeover from MetalLB (Documentation/migrating-from-metallb.md):
// MetalLB's controller and speakers give 200 Services their IPs and
// answer ARP for them; Herald takes over, step by step as documented,
// while a client on the LAN asks who has each IP.

const (
	// vipPool is MetalLB's pool: off the LAN's /24, which has no room for
	// 200 more addresses. The client reaches it on the link (onLink), and
	// both MetalLB and Herald answer ARP for an address of any subnet.
	vipPool = "198.18.18.0/24"
	// takeoverServices is how many Services MetalLB has given IPs.
	takeoverServices = 200
	// takeoverProbeEvery: 200 VIPs asked this often are 2000 requests a
	// second, which MetalLB's speakers answer from user space.
	takeoverProbeEvery = 100 * time.Millisecond
	metallbConfig      = `
apiVersion: metallb.io/v1beta1
kind: IPAddressPool
metadata: {name: vips, namespace: metallb-system}
spec:
  addresses: [` + vipPool + `]
---
apiVersion: metallb.io/v1beta1
kind: L2Advertisement
metadata: {name: vips, namespace: metallb-system}
spec:
  ipAddressPools: [vips]
  interfaces: [eth0]
`
)

// testTakeoverFromMetalLB: no IP changes, never two MACs for one request,
// the longest time each VIP went unanswered (logged), and new Services
// get IPs from the pool migrated from MetalLB's.
func testTakeoverFromMetalLB(t *testing.T) {
	clusterForMetalLB(t)
	manifest := installMetalLB(t)
	kubectlStdin(t, metallbConfig, "apply", "-f", "-")
	onLink(t, netip.MustParsePrefix(vipPool))
	ns := newNamespace(t, "takeover", nil)
	deployBackend(t, ns, "web", 3, nil)
	before := metallbServices(t, ns)
	vips := make([]netip.Addr, 0, len(before))
	for _, ip := range before {
		vips = append(vips, ip)
	}
	for _, vip := range vips {
		ownerOf(t, vip) // MetalLB answers for every one
	}

	// 1. Herald's pools, translated from MetalLB's.
	migrateMetalLB(t, "lb-ipam")
	t.Cleanup(func() {
		kubectlQuiet("delete", "--ignore-not-found", "ciliumloadbalancerippool/vips", "ciliuml2announcementpolicy/vips")
	})
	t.Logf("%s takeover", time.Now().Format("15:04:05.000"))
	reports, l2advertisements := takeOver(t, ns, before, vips)
	logTakeover(t, "takeover", reports)
	// Rolling back, as documented, with MetalLB still installed: MetalLB
	// answers and allocates again, no IP changes.
	t.Logf("%s rollback", time.Now().Format("15:04:05.000"))
	logTakeover(t, "rollback", rollBack(t, ns, before, vips, l2advertisements))
	// And over again, this time to the end: MetalLB goes.
	t.Logf("%s takeover again", time.Now().Format("15:04:05.000"))
	reports, _ = takeOver(t, ns, before, vips)
	logTakeover(t, "takeover after the rollback", reports)
	removeMetalLB(t, manifest)
	for _, vip := range vips {
		ownerOf(t, vip) // Herald answers for every one, one MAC each
	}

	after := serviceIPs(t, ns)
	changed := 0
	for name, ip := range before {
		if after[name] != ip {
			changed++
			t.Errorf("Service %s had %s from MetalLB, has %s after the takeover", name, ip, after[name])
		}
	}
	t.Logf("%d of %d Services changed IP", changed, len(before))
	for _, vip := range vips[:5] {
		waitCurl(t, vip)
	}
	// New Services get IPs from the migrated pool, none taken twice.
	taken := map[netip.Addr]bool{}
	for _, ip := range before {
		taken[ip] = true
	}
	for i := 1; i <= 3; i++ {
		_, ip := loadBalancer(t, ns, fmt.Sprintf("new-%d", i), func(s *corev1.Service) { s.Spec.Selector = map[string]string{"app": "web"} })
		if !netip.MustParsePrefix(vipPool).Contains(ip) || taken[ip] {
			t.Fatalf("new Service new-%d got %s: want a free address of the migrated pool %s", i, ip, vipPool)
		}
		taken[ip] = true
	}
}

// takeOver runs steps 4 to 7 of the takeover (migrating-from-metallb.md)
// while the client watches the VIPs: from MetalLB allocating and
// answering to Herald doing both. It returns what the client saw, its
// double answers judged by judgeTakeover, and MetalLB's L2Advertisements
// as step 7 saves them for a rollback.
func takeOver(t *testing.T, ns string, before map[string]netip.Addr, vips []netip.Addr) (map[netip.Addr]vipReport, string) {
	t.Helper()
	watch := watchVIPsEvery(t, takeoverProbeEvery, vips...)
	// MetalLB's controller stops allocating; the IPs stay in the Services' status.
	kubectl(t, "-n", metallbNS, "scale", "deployment/controller", "--replicas=0")
	metallbControllerGone(t)
	// Herald allocates: it keeps every IP.
	helmSet(t, "defaultLBServiceIPAM=lbipam")
	waitHeraldSatisfied(t, ns, before)
	// Herald's L2 policy, while MetalLB's speakers still answer: the node
	// that is to answer probes first, hears MetalLB and waits.
	conflicts := len(warnings(t, ns, "L2AddressConflict"))
	policy := time.Now()
	migrateMetalLB(t, "l2")
	waitFor(t, timeout, func() (bool, string) {
		n := len(warnings(t, ns, "L2AddressConflict"))
		return n > conflicts, "no new L2AddressConflict Event: Herald's probes have not heard MetalLB"
	})
	// MetalLB stops answering; Herald answers within its probe retry.
	// MetalLB withdraws at once, so a reply a second later is Herald's.
	saved := kubectl(t, "-n", metallbNS, "get", "l2advertisements", "-o", "yaml")
	kubectl(t, "-n", metallbNS, "delete", "l2advertisements", "--all")
	waitAnswered(t, watch, time.Now().Add(time.Second))
	reports := watch.report(t)
	judgeTakeover(t, reports, policy)
	return reports, saved
}

// judgeTakeover sorts a takeover's double answers by who gave them.
// Before Herald's L2 policy exists only MetalLB answers: a double then is
// two of MetalLB's speakers at once (its election over memberlist, under
// this machine's load). After it, a double with the MAC that answered for
// MetalLB before is MetalLB's: a speaker busy withdrawing 200 addresses
// can stall for longer than Herald's probe listens, and then answer
// requests it had queued after Herald took the address. Both are logged.
// Any other double would be Herald's own, and fails the test.
func judgeTakeover(t *testing.T, reports map[netip.Addr]vipReport, policy time.Time) {
	t.Helper()
	var metallbAlone, metallbLate []string
	for vip, r := range reports {
		metallbMAC := r.ownerAt(policy)
		for _, d := range r.Doubles {
			switch {
			case d.At.Before(policy):
				metallbAlone = append(metallbAlone, fmt.Sprintf("%s: %s", vip, d))
			case slices.Contains(d.MACs, metallbMAC):
				metallbLate = append(metallbLate, fmt.Sprintf("%s: %s", vip, d))
			default:
				t.Errorf("%s: %s, neither of them MetalLB's (%s)", vip, d, metallbMAC)
			}
		}
	}
	if len(metallbAlone) > 0 {
		t.Logf("MetalLB answered %d requests with two MACs before Herald's policy existed: %v", len(metallbAlone), metallbAlone)
	}
	if len(metallbLate) > 0 {
		t.Logf("MetalLB answered %d requests after Herald had taken the address (a stalled speaker's queued replies): %v", len(metallbLate), metallbLate)
	}
}

// rollBack runs the rollback of migrating-from-metallb.md while the
// client watches the VIPs: Herald stops allocating and MetalLB's
// controller starts again (it serves MetalLB's admission webhook, without
// which its objects cannot be created) while Herald still answers; then
// Herald's L2 policy goes, and the L2Advertisements saved in step 7 come
// back. MetalLB keeps every IP
// and gives a new Service one of its pool. Until MetalLB answers again, a
// double answer would be Herald's and fails the test; after, MetalLB's
// own are logged.
func rollBack(t *testing.T, ns string, before map[string]netip.Addr, vips []netip.Addr, l2advertisements string) map[netip.Addr]vipReport {
	t.Helper()
	watch := watchVIPsEvery(t, takeoverProbeEvery, vips...)
	helmSet(t, "defaultLBServiceIPAM=none")
	kubectl(t, "-n", metallbNS, "scale", "deployment/controller", "--replicas=1")
	kubectl(t, "-n", metallbNS, "rollout", "status", "deployment/controller", "--timeout=5m")
	kubectl(t, "delete", "ciliuml2announcementpolicy", "vips")
	waitSilent(t, watch, len(vips))
	back := time.Now()
	kubectlStdin(t, l2advertisements, "create", "-f", "-")
	waitAnswered(t, watch, back)
	_, ip := loadBalancer(t, ns, "rollback", func(s *corev1.Service) { s.Spec.Selector = map[string]string{"app": "web"} })
	if !netip.MustParsePrefix(vipPool).Contains(ip) || slices.Contains(slices.Collect(maps.Values(before)), ip) {
		t.Fatalf("after the rollback MetalLB gave a new Service %s: want a free address of its pool %s", ip, vipPool)
	}
	kubectl(t, "delete", "-n", ns, "service", "rollback")
	for name, ip := range serviceIPs(t, ns) {
		if want, ok := before[name]; ok && ip != want {
			t.Errorf("after the rollback Service %s has %s, had %s", name, ip, want)
		}
	}
	reports := watch.report(t)
	var metallb []string
	for vip, r := range reports {
		for _, d := range r.Doubles {
			if d.At.Before(back) {
				t.Errorf("%s: %s while Herald withdrew", vip, d)
			} else {
				metallb = append(metallb, fmt.Sprintf("%s: %s", vip, d))
			}
		}
	}
	if len(metallb) > 0 {
		t.Logf("MetalLB answered %d requests with two MACs after it came back: %v", len(metallb), metallb)
	}
	return reports
}

// waitAnswered waits until every watched VIP has been answered since t.
func waitAnswered(t *testing.T, w *vipWatch, since time.Time) {
	t.Helper()
	waitFor(t, timeout, func() (bool, string) {
		if time.Now().Before(since.Add(2 * takeoverProbeEvery)) {
			return false, "waiting for the probes after " + since.Format(time.StampMilli)
		}
		missing := w.unansweredSince(t, since)
		return len(missing) == 0, fmt.Sprintf("%d VIPs unanswered since %s, e.g. %v", len(missing), since.Format(time.StampMilli), missing[:min(3, len(missing))])
	})
}

// waitSilent waits until none of the n watched VIPs has been answered
// for three rounds of asking: whoever answered has stopped.
func waitSilent(t *testing.T, w *vipWatch, n int) {
	t.Helper()
	waitFor(t, timeout, func() (bool, string) {
		quiet := w.unansweredSince(t, time.Now().Add(-3*takeoverProbeEvery))
		return len(quiet) == n, fmt.Sprintf("%d of %d VIPs still answered", n-len(quiet), n)
	})
}

// clusterForMetalLB makes the cluster one where MetalLB owns every
// LoadBalancer Service: none of the suite's are left, its pool and L2
// policy are set aside, and Herald runs as the CNI only
// (defaultLBServiceIPAM=none). All of it is put back when the test ends.
func clusterForMetalLB(t *testing.T) {
	t.Helper()
	waitFor(t, timeout, func() (bool, string) {
		svcs, err := cl.Client.CoreV1().Services("").List(context.Background(), metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		var lbs []string
		for _, s := range svcs.Items {
			if s.Spec.Type == corev1.ServiceTypeLoadBalancer {
				lbs = append(lbs, s.Namespace+"/"+s.Name)
			}
		}
		return len(lbs) == 0, fmt.Sprintf("LoadBalancer Services of earlier tests left: %v", lbs)
	})
	lan := fmt.Sprintf(lanFixtures, lanPoolStart, lanPoolStop)
	kubectlStdin(t, lan, "delete", "--ignore-not-found", "-f", "-")
	t.Cleanup(func() { _, _ = cl.RunKubectlStdin(context.Background(), lan, "apply", "-f", "-") })
	helmSet(t, "defaultLBServiceIPAM=none")
	t.Cleanup(func() { helmSet(t, "defaultLBServiceIPAM=lbipam") })
}

// helmSet upgrades Herald's release with its values plus set, and waits
// for the rollout.
func helmSet(t *testing.T, set string) {
	t.Helper()
	ctx := ctxTimeout(t)
	if _, err := cl.RunHelm(ctx, "upgrade", realcluster.HeraldRelease, realcluster.ChartDir(),
		"--namespace", heraldNS, "--reuse-values", "--set", set); err != nil {
		t.Fatal(err)
	}
	if err := cl.WaitDaemonSet(ctx, heraldNS, heraldDS); err != nil {
		t.Fatal(err)
	}
}

// onLink routes prefix onto the client's LAN interface: the client asks
// who has its addresses there.
func onLink(t *testing.T, prefix netip.Prefix) {
	t.Helper()
	args := []string{"-n", cl.ClientHost.Netns, "route", "replace", prefix.String(), "dev", "eth0"}
	if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
		t.Fatalf("ip %v: %v: %s", args, err, out)
	}
	t.Cleanup(func() { _ = exec.Command("ip", "-n", cl.ClientHost.Netns, "route", "del", prefix.String()).Run() })
}

// metallbServices creates the Services MetalLB gives IPs, as its users
// write them: most plain, some naming MetalLB's pool, some their address,
// with MetalLB's annotations. It returns each one's IP.
func metallbServices(t *testing.T, ns string) map[string]netip.Addr {
	t.Helper()
	ctx := context.Background()
	for i := 1; i <= takeoverServices; i++ {
		svc := &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("web-%d", i), Annotations: map[string]string{}},
			Spec: corev1.ServiceSpec{
				Type:     corev1.ServiceTypeLoadBalancer,
				Selector: map[string]string{"app": "web"},
				Ports:    []corev1.ServicePort{{Port: 80, TargetPort: intstr.FromInt32(backendPort)}},
			},
		}
		switch {
		case i <= 10:
			svc.Annotations["metallb.io/loadBalancerIPs"] = fmt.Sprintf("198.18.18.%d", 240+i)
		case i%10 == 0:
			svc.Annotations["metallb.io/address-pool"] = "vips"
		}
		if _, err := cl.Client.CoreV1().Services(ns).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	var ips map[string]netip.Addr
	waitFor(t, timeout, func() (bool, string) {
		ips = serviceIPs(t, ns)
		return len(ips) == takeoverServices, fmt.Sprintf("%d of %d Services have an IP from MetalLB", len(ips), takeoverServices)
	})
	for name, ip := range ips {
		if !netip.MustParsePrefix(vipPool).Contains(ip) {
			t.Fatalf("MetalLB gave Service %s %s, outside its pool %s", name, ip, vipPool)
		}
	}
	return ips
}

// serviceIPs returns the IP of every Service of ns that has one.
func serviceIPs(t *testing.T, ns string) map[string]netip.Addr {
	t.Helper()
	svcs, err := cl.Client.CoreV1().Services(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]netip.Addr{}
	for _, s := range svcs.Items {
		if len(s.Status.LoadBalancer.Ingress) == 1 {
			if ip, err := netip.ParseAddr(s.Status.LoadBalancer.Ingress[0].IP); err == nil {
				out[s.Name] = ip
			}
		}
	}
	return out
}

// migrateMetalLB runs herald-dbg migrate metallb --apply with the
// administrator's kubeconfig, for the part given (--only).
func migrateMetalLB(t *testing.T, part string) {
	t.Helper()
	bin := filepath.Join(work, "bin", "herald-dbg")
	ctx := ctxTimeout(t)
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/herald-dbg")
	build.Dir = realcluster.RepoRoot()
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build herald-dbg: %v\n%s", err, out)
	}
	out, err := exec.CommandContext(ctx, bin, "migrate", "metallb", "--kubeconfig", cl.Kubeconfig,
		"-n", metallbNS, "--apply", "--only", part).CombinedOutput()
	if err != nil {
		t.Fatalf("herald-dbg migrate metallb --only %s: %v\n%s", part, err, out)
	}
	for _, line := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(line, "# applied") {
			t.Log(line)
		}
	}
}

// waitHeraldSatisfied waits until Herald has taken every Service over:
// its condition says the request is satisfied, and the IP is the one
// MetalLB gave.
func waitHeraldSatisfied(t *testing.T, ns string, ips map[string]netip.Addr) {
	t.Helper()
	waitFor(t, timeout, func() (bool, string) {
		svcs, err := cl.Client.CoreV1().Services(ns).List(context.Background(), metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		var waiting []string
		for _, s := range svcs.Items {
			want, ok := ips[s.Name]
			if !ok {
				continue
			}
			if len(s.Status.LoadBalancer.Ingress) != 1 || s.Status.LoadBalancer.Ingress[0].IP != want.String() {
				t.Fatalf("Service %s: status %+v, had %s from MetalLB", s.Name, s.Status.LoadBalancer.Ingress, want)
			}
			if !slices.ContainsFunc(s.Status.Conditions, func(c metav1.Condition) bool {
				return c.Type == tables.ConditionRequestSatisfied && c.Status == metav1.ConditionTrue
			}) {
				waiting = append(waiting, s.Name)
			}
		}
		return len(waiting) == 0, fmt.Sprintf("%d Services without Herald's %s condition, e.g. %v", len(waiting), tables.ConditionRequestSatisfied, waiting[:min(3, len(waiting))])
	})
}

// warnings returns the messages of the Warning Events of reason in ns.
func warnings(t *testing.T, ns, reason string) []string {
	t.Helper()
	evs, err := cl.Client.CoreV1().Events(ns).List(context.Background(), metav1.ListOptions{FieldSelector: "reason=" + reason})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range evs.Items {
		if e.Type == corev1.EventTypeWarning {
			out = append(out, e.Message)
		}
	}
	return out
}

// logTakeover logs, over every VIP, the longest time it went unanswered
// during a phase, and how many changed MAC.
func logTakeover(t *testing.T, phase string, reports map[netip.Addr]vipReport) {
	t.Helper()
	var gaps []time.Duration
	moved := 0
	for _, r := range reports {
		gaps = append(gaps, r.LongestGap)
		if len(r.Owners) > 1 {
			moved++
		}
	}
	t.Logf("%s of %d VIPs (asked every %s): longest time unanswered per VIP p50 %s, p99 %s, max %s; %d moved to another node's MAC, %d stayed on the same node",
		phase, len(reports), takeoverProbeEvery, ms(percentile(gaps, 50)), ms(percentile(gaps, 99)), ms(percentile(gaps, 100)), moved, len(reports)-moved)
}

// kubectlQuiet runs kubectl for a cleanup, ignoring the outcome.
func kubectlQuiet(args ...string) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	_, _ = cl.RunKubectl(ctx, args...)
}
