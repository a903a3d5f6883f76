package main

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// With -profile-dir, each measurement keeps what says where a contender's
// memory went: /proc/PID/smaps and the resident pages of its binary once it
// is ready (the canary has its IP) and again at the end, and, of herald-agent (run with --pprof), its heap
// profile at both times (go tool pprof -sample_index=inuse_space FILE; the
// .heap.txt of the same ends with the runtime's MemStats). herald-agent's CPU
// profile covers the first -cpu-profile of the measured window, from the
// first Create (DIR/herald-r<round>.cpu.pb.gz; go tool pprof -top FILE).

// profileArgs are the extra herald-agent flags that serve its profiles.
func profileArgs(o options) ([]string, int, error) {
	if o.profileDir == "" {
		return nil, 0, nil
	}
	port, err := freePort()
	if err != nil {
		return nil, 0, err
	}
	return []string{"--pprof", fmt.Sprintf("--pprof-port=%d", port)}, port, nil
}

// saveProfiles writes the contender's smaps (and heap profile, if it
// serves one) as DIR/<label>-r<round>-<when>.*.
func saveProfiles(ctx context.Context, o options, p *proc, round int, when string) error {
	if o.profileDir == "" || p == nil {
		return nil
	}
	if err := os.MkdirAll(o.profileDir, 0o755); err != nil {
		return err
	}
	base := filepath.Join(o.profileDir, fmt.Sprintf("%s-r%d-%s", strings.ReplaceAll(p.label, " ", "-"), round, when))
	smaps, err := os.ReadFile(fmt.Sprintf("/proc/%d/smaps", p.pid()))
	if err != nil {
		return err
	}
	if err := os.WriteFile(base+".smaps", smaps, 0o644); err != nil {
		return err
	}
	if err := saveResidentPages(p.pid(), p.cmd.Path, base+".pages"); err != nil {
		return err
	}
	if p.pprofPort == 0 {
		return nil
	}
	// debug=1: the same profile as text, ending with runtime.MemStats
	// (live heap, what the heap holds free, stacks, the next GC's goal).
	url := fmt.Sprintf("http://localhost:%d/debug/pprof/heap", p.pprofPort)
	if err := fetchTo(ctx, url+"?debug=1", base+".heap.txt", 30*time.Second); err != nil {
		return err
	}
	return fetchTo(ctx, url, base+".heap.pb.gz", 30*time.Second)
}

// startCPUProfile starts recording the agent's CPU profile; the returned
// func waits until the profile is written.
func startCPUProfile(ctx context.Context, o options, p *proc, round int) (wait func() error) {
	if o.profileDir == "" || p == nil || p.pprofPort == 0 || o.cpuProfile <= 0 {
		return func() error { return nil }
	}
	path := filepath.Join(o.profileDir, fmt.Sprintf("%s-r%d.cpu.pb.gz", strings.ReplaceAll(p.label, " ", "-"), round))
	url := fmt.Sprintf("http://localhost:%d/debug/pprof/profile?seconds=%d", p.pprofPort, int(o.cpuProfile.Seconds()))
	done := make(chan error, 1)
	go func() { done <- fetchTo(ctx, url, path, o.cpuProfile+30*time.Second) }()
	return func() error { return <-done }
}

// fetchTo saves what GET url answers, waiting at most timeout.
func fetchTo(ctx context.Context, url, path string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// saveResidentPages writes the address of every page of the contender's
// binary that is in its RSS, one hexadecimal address a line, from
// /proc/PID/pagemap (bit 63: present): with the binary's symbol table
// (go tool nm -size) that says which packages' code and data the process
// touched.
func saveResidentPages(pid int, bin, path string) error {
	maps, err := os.ReadFile(fmt.Sprintf("/proc/%d/maps", pid))
	if err != nil {
		return err
	}
	pm, err := os.Open(fmt.Sprintf("/proc/%d/pagemap", pid))
	if err != nil {
		return err
	}
	defer pm.Close()
	var out strings.Builder
	page := uint64(os.Getpagesize())
	for _, line := range strings.Split(string(maps), "\n") {
		f := strings.Fields(line)
		if len(f) < 6 || f[5] != bin {
			continue
		}
		var lo, hi uint64
		if _, err := fmt.Sscanf(f[0], "%x-%x", &lo, &hi); err != nil {
			return fmt.Errorf("maps: %q: %w", line, err)
		}
		buf := make([]byte, (hi-lo)/page*8)
		if _, err := pm.ReadAt(buf, int64(lo/page*8)); err != nil {
			return err
		}
		for i := 0; i+8 <= len(buf); i += 8 {
			if binary.LittleEndian.Uint64(buf[i:])&(1<<63) != 0 {
				fmt.Fprintf(&out, "%x %s\n", lo+uint64(i/8)*page, f[1])
			}
		}
	}
	return os.WriteFile(path, []byte(out.String()), 0o644)
}
