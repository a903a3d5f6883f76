package cpvip

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/heraldlb/herald/test/agentproc"
)

// KeepalivedProberOptions describe a health check that runs more often
// than keepalived's own (whole seconds): a prober in the node's namespace
// runs Probe every Interval and writes the verdict into File, the check
// file keepalived tracks (KeepalivedCheck.File), with the same fall and
// rise rule as a vrrp_script.
type KeepalivedProberOptions struct {
	// File is where the verdict goes: 0 healthy, 1 not. It is replaced
	// (rename), never rewritten in place, so keepalived never reads half a
	// verdict.
	File string
	// Probe is the command and its arguments; exit 0 is a success. It
	// should bound its own run time (curl --max-time).
	Probe []string
	// Interval is the pause between the end of one probe and the start of
	// the next, at least 10 ms, in whole milliseconds.
	Interval time.Duration
	// Fall failures in a row make the node unhealthy, Rise successes in a
	// row healthy again. The prober starts unhealthy: a node is eligible
	// after Rise successes.
	Fall, Rise int
}

func (o KeepalivedProberOptions) validate() error {
	var errs []error
	if !filepath.IsAbs(o.File) {
		errs = append(errs, fmt.Errorf("file %q: want an absolute path", o.File))
	}
	if len(o.Probe) == 0 || !filepath.IsAbs(o.Probe[0]) {
		errs = append(errs, fmt.Errorf("probe %q: want an absolute command path", o.Probe))
	}
	if o.Interval < 10*time.Millisecond || o.Interval%time.Millisecond != 0 {
		errs = append(errs, fmt.Errorf("interval %s: want whole milliseconds, at least 10ms", o.Interval))
	}
	if o.Fall < 1 || o.Rise < 1 {
		errs = append(errs, fmt.Errorf("fall %d, rise %d: want at least 1", o.Fall, o.Rise))
	}
	return errors.Join(errs...)
}

// proberScript is the prober, for /bin/sh -c; its arguments: the verdict
// file, the pause in seconds, fall, rise, then the probe command. It logs
// each change of verdict with the time.
const proberScript = `set -u
out=$1 pause=$2 fall=$3 rise=$4
shift 4
verdict() {
	echo "$1" >"$out.tmp" && mv -f "$out.tmp" "$out"
	echo "$(date +%H:%M:%S.%N) $2"
}
healthy=0 ok=0 bad=0
verdict 1 "unhealthy (start)"
while :; do
	if "$@" >/dev/null 2>&1; then ok=$((ok + 1)) bad=0; else bad=$((bad + 1)) ok=0; fi
	if [ "$healthy" = 0 ] && [ "$ok" -ge "$rise" ]; then healthy=1; verdict 0 "healthy after $ok successes"; fi
	if [ "$healthy" = 1 ] && [ "$bad" -ge "$fall" ]; then healthy=0; verdict 1 "unhealthy after $bad failures"; fi
	sleep "$pause"
done
`

// KeepalivedProber is a running prober (the shell loop and its probes, one
// process group).
type KeepalivedProber struct {
	*groupProc
	Netns string
	Dir   string
}

// StartKeepalivedProber starts a prober in network namespace netns,
// logging to dir/prober.log. Start it before keepalived, whose check file
// it creates.
func StartKeepalivedProber(netns, dir string, o KeepalivedProberOptions) (*KeepalivedProber, error) {
	if err := o.validate(); err != nil {
		return nil, fmt.Errorf("prober in %s: %w", netns, err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	ms := o.Interval.Milliseconds()
	argv := append([]string{"/bin/sh", "-c", proberScript, "keepalived-prober",
		o.File, fmt.Sprintf("%d.%03d", ms/1000, ms%1000), strconv.Itoa(o.Fall), strconv.Itoa(o.Rise)}, o.Probe...)
	p, err := startGroup("keepalived prober in "+netns, netns, filepath.Join(dir, "prober.log"), argv)
	if err != nil {
		return nil, err
	}
	return &KeepalivedProber{groupProc: p, Netns: netns, Dir: dir}, nil
}

// Kill SIGKILLs the prober and its probe; the check file keeps its last
// verdict.
func (p *KeepalivedProber) Kill() error { return p.kill() }

// Stop stops the prober (SIGTERM); the check file keeps its last verdict.
func (p *KeepalivedProber) Stop() error { return p.stop() }

// Logs returns the last maxLines lines of the prober's log: its verdicts.
func (p *KeepalivedProber) Logs(maxLines int) string {
	b, err := os.ReadFile(filepath.Join(p.Dir, "prober.log"))
	if err != nil {
		return fmt.Sprintf("prober log of %s: %v", p.Netns, err)
	}
	return fmt.Sprintf("----- keepalived prober in %s (%s) -----\n%s\n", p.Netns, p.Dir, agentproc.Tail(string(b), maxLines))
}

// KeepalivedReadyzProbe is the probe of a kube-apiserver's /readyz at url
// for a prober: curl, which fails on any status but 2xx, within timeout
// (whole milliseconds). It skips certificate checks, as a local liveness
// probe may: the address is the node's own loopback.
func KeepalivedReadyzProbe(url string, timeout time.Duration) []string {
	ms := timeout.Milliseconds()
	return []string{"/usr/bin/curl", "--fail", "--silent", "--insecure", "--output", "/dev/null",
		"--max-time", fmt.Sprintf("%d.%03d", ms/1000, ms%1000), url}
}
