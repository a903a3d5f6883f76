// Package binarypages gives back, once the agent has started, the pages of
// its own binary that only starting it needed.
//
// Starting a Go program runs the initialisation of every linked package and
// the kernel maps the binary in blocks around each page touched: the agent
// ends its start with most of its code resident, though afterwards it runs
// less than half of it. MADV_PAGEOUT on the binary's read-only mappings takes
// those pages out of the agent's memory, and the kernel reclaims from the
// page cache those it can; what the agent still runs comes back from the
// file on its next use, as after any reclaim by the kernel. Measured in
// Documentation/benchmarks.md ("The binary's pages after the start").
//
// The kernel pages out a file's pages only for a process that owns the file
// or may write it (the image's binary and the agent are root's); for any
// other it leaves them mapped, which the log line's RssFile figures show.
//
// Reads: /proc/self/maps and /proc/self/status. Writes: nothing.
package binarypages

import (
	"context"
	"log/slog"

	"github.com/cilium/hive/cell"
	"github.com/cilium/hive/job"
	"github.com/spf13/pflag"
)

// Config of the release.
type Config struct {
	ReleaseStartupPages bool // release-startup-pages
}

// Defaults: on.
var Defaults = Config{ReleaseStartupPages: true}

// Flag is the option's name.
const Flag = "release-startup-pages"

func (def Config) Flags(flags *pflag.FlagSet) {
	flags.Bool(Flag, def.ReleaseStartupPages,
		"Once started, give back the pages of the agent's binary that only its start needed (MADV_PAGEOUT)")
}

// Cell releases the start's pages once every cell listed before it has
// started: list it last but for readiness.
var Cell = cell.Module(
	"binary-pages",
	"Releases the binary pages only the start needed",

	cell.Config(Defaults),
	cell.Invoke(register),
)

func register(cfg Config, jobs job.Group, log *slog.Logger) {
	if !cfg.ReleaseStartupPages {
		return
	}
	// A job, not the start hook itself: the start must not wait for the
	// kernel's reclaim, and nothing depends on it.
	jobs.Add(job.OneShot("release-startup-pages", func(context.Context, cell.Health) error {
		releaseAndLog(log)
		return nil
	}))
}

// releaseAndLog releases the pages and says what it changed, or why it
// could not; it never fails the agent.
func releaseAndLog(log *slog.Logger) {
	before, _ := fileRSS()
	n, err := Release()
	if err != nil {
		log.Info("Could not release the start's pages of the agent's binary; they stay resident", "error", err)
		return
	}
	after, _ := fileRSS()
	log.Info("Released the start's pages of the agent's binary",
		"mappings", n, "rssFileBeforeKiB", before, "rssFileAfterKiB", after)
}
