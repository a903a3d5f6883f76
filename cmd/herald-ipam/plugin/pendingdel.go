package plugin

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	v1 "github.com/heraldlb/herald/api/ipam/v1"
)

// A DEL the agent did not answer is not lost: the plugin queues it as a file
// and reports success, because a runtime retries a failed DEL for as long as
// it takes and a Pod would hang in Terminating while the agent is down. The
// agent replays the queue when it starts.
//
// File format: one file per attachment,
//
//	<stateDir>/pending-del/<containerID>_<ifName>.json
//
// (stateDir from the ipam section, v1.DefaultStateDir by default;
// pending-del is v1.PendingDelDir), holding the v1.DelRequest exactly as it
// would have been posted to /v1/del, e.g.
//
//	{"containerID":"4f3c9a...","ifName":"eth0","pod":{"namespace":"default","name":"web-0","uid":"6b1e..."}}
//
// The content is authoritative, not the name (container IDs may contain
// "_"). A file appears whole or not at all: it is written under a temporary
// name that starts with "." and does not end in ".json", synced, then
// renamed, so a reader that takes only "*.json" never sees half a request. A
// repeated DEL of the same attachment rewrites the same file. The agent
// posts each request to its own DEL handler and removes the file once the
// release is in its journal; a leftover ".*.tmp-*" file is an interrupted
// write and can be deleted.

// queueDel writes req to the queue, atomically.
func queueDel(stateDir string, req v1.DelRequest) (path string, err error) {
	path, err = v1.PendingDelPath(stateDir, req.Attachment)
	if err != nil {
		return "", err
	}
	b, err := json.Marshal(req)
	if err != nil {
		return "", err
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return "", err
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	if _, err = f.Write(append(b, '\n')); err != nil {
		return "", err
	}
	// Synced before the rename: after a power cut the file is either
	// absent or whole, never empty.
	if err = f.Sync(); err != nil {
		return "", err
	}
	if err = f.Close(); err != nil {
		return "", err
	}
	if err = os.Rename(f.Name(), path); err != nil {
		return "", err
	}
	return path, syncDir(dir)
}

// dropPendingDel removes the queued DEL of an attachment, if there is one:
// called when the agent has just answered an ADD or a DEL of that
// attachment, which supersedes it. A stale DEL replayed later would release
// the addresses of a newer ADD.
func dropPendingDel(stateDir string, a v1.Attachment) error {
	path, err := v1.PendingDelPath(stateDir, a)
	if err != nil {
		return err
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// syncDir makes a rename in dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("syncing %s: %w", dir, err)
	}
	return nil
}
