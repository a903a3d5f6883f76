package nodeipam

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"time"

	ipamv1 "github.com/heraldlb/herald/api/ipam/v1"
)

// entry is one address given to one attachment, as journaled on the host.
type entry struct {
	IP      netip.Addr    `json:"ip"`
	CIDR    netip.Prefix  `json:"cidr"` // the node CIDR it comes from
	Pool    string        `json:"pool"`
	Network string        `json:"network"`
	Pod     ipamv1.PodRef `json:"pod"`
	ipamv1.Attachment
	Since time.Time `json:"since"`
}

// journal keeps every allocation of this node on the host, one file per
// address under <state-dir>/allocations, written before the CNI plugin
// hears of the address: an agent killed at any moment restarts with every
// address it ever handed out and not released.
//
// A file is created with link(2), which fails if the name exists: two
// attachments can never be journaled with one address, whatever the agent
// believed in memory. Files are not fsynced: they survive the agent's
// death (the page cache is the kernel's); a crash of the whole node also
// ends every pod, and the garbage collector then releases their addresses.
type journal struct {
	dir string
}

func openJournal(stateDir string) (*journal, error) {
	j := &journal{dir: filepath.Join(stateDir, "allocations")}
	if err := os.MkdirAll(j.dir, 0o700); err != nil {
		return nil, fmt.Errorf("journal: %w", err)
	}
	return j, nil
}

func (j *journal) path(ip netip.Addr) string { return filepath.Join(j.dir, ip.String()) }

// load returns every journaled allocation. Files that do not parse are
// reported (and kept: their address stays taken until someone looks).
func (j *journal) load() ([]entry, []error) {
	names, err := os.ReadDir(j.dir)
	if err != nil {
		return nil, []error{err}
	}
	var out []entry
	var errs []error
	for _, n := range names {
		if strings.HasSuffix(n.Name(), ".tmp") {
			_ = os.Remove(filepath.Join(j.dir, n.Name())) // a write the agent did not finish
			continue
		}
		data, err := os.ReadFile(filepath.Join(j.dir, n.Name()))
		if err != nil {
			errs = append(errs, err)
			continue
		}
		var e entry
		if err := json.Unmarshal(data, &e); err != nil || e.IP.String() != n.Name() {
			errs = append(errs, fmt.Errorf("journal file %s: not an allocation (%v)", n.Name(), err))
			continue
		}
		out = append(out, e)
	}
	return out, errs
}

// errTaken: the address is journaled already.
var errTaken = errors.New("address already journaled")

// put journals an allocation; errTaken if its address is already there.
func (j *journal) put(e entry) error {
	data, err := json.Marshal(e)
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(j.dir, e.IP.String()+"-*.tmp")
	if err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return fmt.Errorf("journal: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	if err := os.Link(tmp.Name(), j.path(e.IP)); err != nil {
		if errors.Is(err, os.ErrExist) {
			return fmt.Errorf("%w: %s", errTaken, e.IP)
		}
		return fmt.Errorf("journal: %w", err)
	}
	return nil
}

// remove forgets an allocation; removing one that is not there is fine.
func (j *journal) remove(ip netip.Addr) error {
	if err := os.Remove(j.path(ip)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("journal: %w", err)
	}
	return nil
}

// pendingDels returns the DELs the plugin queued while the agent was down,
// with the file each came from (remove it once replayed).
func pendingDels(stateDir string) (reqs []ipamv1.DelRequest, files []string, errs []error) {
	dir := filepath.Join(stateDir, ipamv1.PendingDelDir)
	names, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, []error{err}
	}
	for _, n := range names {
		if !strings.HasSuffix(n.Name(), ".json") {
			continue
		}
		path := filepath.Join(dir, n.Name())
		data, err := os.ReadFile(path)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		var r ipamv1.DelRequest
		if err := json.Unmarshal(data, &r); err != nil || r.ContainerID == "" {
			errs = append(errs, fmt.Errorf("queued DEL %s: does not parse (%v)", n.Name(), err))
			continue
		}
		reqs = append(reqs, r)
		files = append(files, path)
	}
	return reqs, files, errs
}
