package binarypages

import (
	"os"
	"testing"
)

func TestParseMaps(t *testing.T) {
	data := []byte(`00400000-02198000 r-xp 00000000 fe:00 123 /usr/bin/herald agent
02198000-04461000 r--p 01d98000 fe:00 123 /usr/bin/herald agent
04461000-04525000 rw-p 04061000 fe:00 123 /usr/bin/herald agent
7f85099cc000-7f8509cfc000 rw-p 00000000 00:00 0 
7ffd1c5e3000-7ffd1c604000 rw-p 00000000 00:00 0                          [stack]
`)
	maps, err := parseMaps(data)
	if err != nil {
		t.Fatal(err)
	}
	if len(maps) != 5 {
		t.Fatalf("got %d mappings, want 5", len(maps))
	}
	if maps[4].path != "[stack]" || maps[3].path != "" {
		t.Errorf("paths: %q, %q", maps[3].path, maps[4].path)
	}
	ro := readOnlyOf(maps, "/usr/bin/herald agent")
	if len(ro) != 2 || ro[0].start != 0x400000 || ro[0].end != 0x2198000 || ro[1].perms != "r--p" {
		t.Errorf("read-only mappings of the binary: %+v", ro)
	}
}

func TestParseMapsRefusesGarbage(t *testing.T) {
	for _, line := range []string{"nonsense", "zz-00 r-xp 0 0:0 0", "2000-1000 r-xp 0 0:0 0 /x"} {
		if _, err := parseMaps([]byte(line + "\n")); err == nil {
			t.Errorf("parseMaps(%q) accepted it", line)
		}
	}
}

// TestReleaseLowersResidentPages: the test binary's own code and read-only
// data, all touched by its start, are mostly resident; after Release far
// fewer are, and the program goes on running code from them.
func TestReleaseLowersResidentPages(t *testing.T) {
	exe, err := os.Readlink("/proc/self/exe")
	if err != nil {
		t.Fatal(err)
	}
	before := residentKiB(t, exe)
	n, err := Release()
	if err != nil {
		t.Fatal(err)
	}
	if n < 2 {
		t.Errorf("advised %d mappings, want code and read-only data at least", n)
	}
	after := residentKiB(t, exe)
	if after >= before/2 {
		t.Errorf("resident pages of %s: %d KiB before, %d KiB after the release; want less than half", exe, before, after)
	}
	t.Logf("resident read-only pages of the test binary: %d KiB before, %d KiB after", before, after)
}
