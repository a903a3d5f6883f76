package binarypages

import (
	"bufio"
	"os"
	"strconv"
	"strings"
	"testing"
)

// residentKiB sums Rss of the read-only mappings of path in
// /proc/self/smaps.
func residentKiB(t *testing.T, path string) int64 {
	t.Helper()
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var sum int64
	counting := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		switch {
		case len(fields) >= 5 && strings.Contains(fields[0], "-") && !strings.HasSuffix(fields[0], ":"):
			counting = len(fields) >= 6 && strings.Join(fields[5:], " ") == path && !strings.Contains(fields[1], "w")
		case counting && len(fields) == 3 && fields[0] == "Rss:":
			kib, err := strconv.ParseInt(fields[1], 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			sum += kib
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if sum == 0 {
		t.Fatalf("no resident read-only mapping of %s in /proc/self/smaps", path)
	}
	return sum
}
