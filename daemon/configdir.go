package daemon

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/spf13/pflag"

	"github.com/heraldlb/herald/cells/ground/dbgshell"
)

// ApplyConfigDir sets flags from a mounted ConfigMap: one file per key, the
// file name being the flag name. A flag given on the command line wins over
// the file; a file wins over the default. A key that is not a flag, or a
// value the flag does not accept, is an error naming the key; so is a flag
// of a library cell that is no Herald option (dbgshell.LibraryFlags).
func ApplyConfigDir(flags *pflag.FlagSet, dir string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("config-dir %s: %w", dir, err)
	}
	sort.Slice(entries, func(i, j int) bool { return entries[i].Name() < entries[j].Name() })
	for _, e := range entries {
		key := e.Name()
		// ConfigMap volumes hold "..data" links and dot-directories.
		if strings.HasPrefix(key, ".") || e.IsDir() {
			continue
		}
		f := flags.Lookup(key)
		if f == nil || slices.Contains(dbgshell.LibraryFlags, key) {
			return fmt.Errorf("config-dir %s: unknown key %q", dir, key)
		}
		if f.Changed || key == "config-dir" {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, key))
		if err != nil {
			return fmt.Errorf("config-dir %s: key %q: %w", dir, key, err)
		}
		if err := flags.Set(key, strings.TrimSpace(string(b))); err != nil {
			return fmt.Errorf("config-dir %s: key %q: %w", dir, key, err)
		}
	}
	return nil
}
