package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// clockTick is the unit of /proc/<pid>/stat's CPU times (USER_HZ, 100 on
// every Linux architecture Herald runs on).
const clockTick = 10 * time.Millisecond

// cpuUse is CPU time (user + system) spent by the processes of a run.
type cpuUse struct {
	agents, apiserver, etcd time.Duration
	// children is what this process's exited children used: the CNI
	// plugins the runtime ran and `ip` commands.
	children time.Duration
	self     time.Duration
}

// procCPU returns a process's CPU time, and with children the CPU time of
// its waited-for children.
func procCPU(pid string, children bool) time.Duration {
	b, err := os.ReadFile(filepath.Join("/proc", pid, "stat"))
	if err != nil {
		return 0
	}
	// Fields after "(comm)": state is field 3; utime 14, stime 15, cutime
	// 16, cstime 17.
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 15 {
		return 0
	}
	idx := []int{11, 12}
	if children {
		idx = []int{13, 14}
	}
	var ticks int64
	for _, i := range idx {
		v, _ := strconv.ParseInt(f[i], 10, 64)
		ticks += v
	}
	return time.Duration(ticks) * clockTick
}

// cpu reads the CPU time of the agents, etcd, kube-apiserver and this
// process so far.
func (l *lab) cpu() cpuUse {
	var u cpuUse
	for _, a := range l.agents {
		if pid := a.PID(); pid != 0 {
			u.agents += procCPU(strconv.Itoa(pid), false)
		}
	}
	if pid, err := l.c.APIServerPID(); err == nil {
		u.apiserver = procCPU(strconv.Itoa(pid), false)
	}
	if b, err := os.ReadFile(filepath.Join(l.c.Dir, "etcd.pid")); err == nil {
		u.etcd = procCPU(strings.TrimSpace(string(b)), false)
	}
	u.self = procCPU("self", false)
	u.children = procCPU("self", true)
	return u
}

// since is the CPU time used between two readings.
func (u cpuUse) since(before cpuUse) cpuUse {
	return cpuUse{
		agents: u.agents - before.agents, apiserver: u.apiserver - before.apiserver, etcd: u.etcd - before.etcd,
		children: u.children - before.children, self: u.self - before.self,
	}
}

// plus adds two spans of CPU time.
func (u cpuUse) plus(o cpuUse) cpuUse {
	return cpuUse{
		agents: u.agents + o.agents, apiserver: u.apiserver + o.apiserver, etcd: u.etcd + o.etcd,
		children: u.children + o.children, self: u.self + o.self,
	}
}

// String says where the CPU went over a window of the given length.
func (u cpuUse) describe(window time.Duration) string {
	pct := func(d time.Duration) string {
		return fmt.Sprintf("%.1fs (%.0f%% of a CPU)", d.Seconds(), 100*d.Seconds()/window.Seconds())
	}
	return fmt.Sprintf("agents %s, kube-apiserver %s, etcd %s, CNI plugins and ip run by the benchmark %s, the benchmark itself %s",
		pct(u.agents), pct(u.apiserver), pct(u.etcd), pct(u.children), pct(u.self))
}
