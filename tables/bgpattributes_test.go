package tables

import (
	"slices"
	"strings"
	"testing"
)

func TestBGPAttributes(t *testing.T) {
	lp := int64(150)
	tests := []struct {
		name                string
		standard, wk, large []string
		wantComm, wantLarge []string
		wantErr             string
	}{
		{name: "both notations, sorted, once", standard: []string{"65000:200", "4259840100", "65000:100"}, wantComm: []string{"65000:100", "65000:200"}},
		{name: "well-known names become values", wk: []string{"no-export", "blackhole"}, wantComm: []string{"65535:65281", "65535:666"}},
		{name: "large", large: []string{"65000:1:2", "0004294967295:0:1"}, wantLarge: []string{"4294967295:0:1", "65000:1:2"}},
		{name: "bad ones reported, good ones kept", standard: []string{"65536:1", "1:2"}, wk: []string{"no-such"}, large: []string{"1:2"},
			wantComm: []string{"1:2"}, wantErr: `community "65536:1"; well-known community "no-such"; large community "1:2"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := NewBGPAttributes(tt.standard, tt.wk, tt.large, &lp)
			if !slices.Equal(a.Communities, tt.wantComm) || !slices.Equal(a.LargeCommunities, tt.wantLarge) {
				t.Errorf("got %v %v, want %v %v", a.Communities, a.LargeCommunities, tt.wantComm, tt.wantLarge)
			}
			for _, part := range strings.Split(tt.wantErr, "; ") {
				if !strings.Contains(a.Error, part) {
					t.Errorf("error %q lacks %q", a.Error, part)
				}
			}
			if tt.wantErr == "" && a.Error != "" {
				t.Errorf("unexpected error %q", a.Error)
			}
			if *a.LocalPreference != 150 {
				t.Errorf("local preference %v", a.LocalPreference)
			}
		})
	}
}

func TestBGPAttributesMerge(t *testing.T) {
	lo, hi := int64(100), int64(200)
	a := NewBGPAttributes([]string{"1:1"}, nil, []string{"1:1:1"}, &lo)
	b := NewBGPAttributes([]string{"2:2", "1:1"}, nil, nil, &hi)
	m := a.Merge(b)
	if !slices.Equal(m.Communities, []string{"1:1", "2:2"}) || !slices.Equal(m.LargeCommunities, []string{"1:1:1"}) || *m.LocalPreference != 200 {
		t.Errorf("merged %+v", m)
	}
	if a.Key() == b.Key() || a.Key() != NewBGPAttributes([]string{"1:1"}, nil, []string{"1:1:1"}, &lo).Key() {
		t.Errorf("keys: %q %q", a.Key(), b.Key())
	}
}
