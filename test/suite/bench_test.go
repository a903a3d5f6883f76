package suite

import (
	"fmt"
	"testing"
)

// fatalRecorder keeps what EnvInt fails with instead of stopping the test.
type fatalRecorder struct {
	testing.TB
	msg string
}

func (f *fatalRecorder) Fatalf(format string, args ...any) { f.msg = fmt.Sprintf(format, args...) }

// A knob unset gives the default, a positive integer itself, and anything
// else a failure naming the variable: a typo must not run the default.
func TestEnvInt(t *testing.T) {
	const key = "HERALD_SUITE_TEST_KNOB"
	for _, tc := range []struct {
		value   string
		want    int
		wantErr bool
	}{
		{"", 7, false},
		{"20", 20, false},
		{"2O", 0, true},
		{"0", 0, true},
		{"-3", 0, true},
	} {
		t.Setenv(key, tc.value)
		rec := &fatalRecorder{TB: t}
		got := EnvInt(rec, key, 7)
		switch {
		case tc.wantErr && rec.msg == "":
			t.Errorf("%s=%q: got %d, want a failure", key, tc.value, got)
		case tc.wantErr && rec.msg != fmt.Sprintf("%s=%q: want a positive integer", key, tc.value):
			t.Errorf("%s=%q: failure %q does not name the variable and value", key, tc.value, rec.msg)
		case !tc.wantErr && (rec.msg != "" || got != tc.want):
			t.Errorf("%s=%q: got %d (failure %q), want %d", key, tc.value, got, rec.msg, tc.want)
		}
	}
}
