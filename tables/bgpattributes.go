package tables

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// BGPAttributes are the path attributes an advertisement adds to its
// routes, normalized so that equal attributes compare equal: communities
// as "high:low" (well-known names turned into their values), large
// communities as "global:local1:local2", both sorted and deduplicated.
type BGPAttributes struct {
	Communities      []string `json:"communities,omitempty"`
	LargeCommunities []string `json:"largeCommunities,omitempty"`
	// LocalPreference is sent to iBGP peers only (BGP's rule); nil: unset.
	LocalPreference *int64 `json:"localPreference,omitempty"`
	// Error names a community that does not parse; the attributes keep
	// the ones that do.
	Error string `json:"error,omitempty"`
}

// wellKnownCommunities are the RFC 1997/7999/8326 names Cilium accepts.
var wellKnownCommunities = map[string]uint32{
	"internet":                   0x00000000,
	"planned-shut":               0xffff0000,
	"accept-own":                 0xffff0001,
	"route-filter-translated-v4": 0xffff0002,
	"route-filter-v4":            0xffff0003,
	"route-filter-translated-v6": 0xffff0004,
	"route-filter-v6":            0xffff0005,
	"llgr-stale":                 0xffff0006,
	"no-llgr":                    0xffff0007,
	"blackhole":                  0xffff029a,
	"no-export":                  0xffffff01,
	"no-advertise":               0xffffff02,
	"no-export-subconfed":        0xffffff03,
	"no-peer":                    0xffffff04,
}

// NewBGPAttributes normalizes an advertisement's attributes.
func NewBGPAttributes(standard, wellKnown, large []string, localPref *int64) BGPAttributes {
	var a BGPAttributes
	var errs []string
	for _, c := range standard {
		v, err := parseCommunity(c)
		if err != nil {
			errs = append(errs, err.Error())
			continue
		}
		a.Communities = append(a.Communities, communityString(v))
	}
	for _, c := range wellKnown {
		v, ok := wellKnownCommunities[c]
		if !ok {
			errs = append(errs, fmt.Sprintf("well-known community %q is not one of RFC 1997's names", c))
			continue
		}
		a.Communities = append(a.Communities, communityString(v))
	}
	for _, c := range large {
		v, err := parseLargeCommunity(c)
		if err != nil {
			errs = append(errs, err.Error())
			continue
		}
		a.LargeCommunities = append(a.LargeCommunities, v)
	}
	slices.Sort(a.Communities)
	a.Communities = slices.Compact(a.Communities)
	slices.Sort(a.LargeCommunities)
	a.LargeCommunities = slices.Compact(a.LargeCommunities)
	if localPref != nil {
		lp := *localPref
		a.LocalPreference = &lp
	}
	a.Error = strings.Join(errs, "; ")
	return a
}

// parseCommunity reads "high:low" (each 0..65535) or a decimal 32-bit
// value.
func parseCommunity(s string) (uint32, error) {
	if hi, lo, ok := strings.Cut(s, ":"); ok {
		h, err1 := strconv.ParseUint(hi, 10, 16)
		l, err2 := strconv.ParseUint(lo, 10, 16)
		if err1 != nil || err2 != nil {
			return 0, fmt.Errorf("community %q is not <0-65535>:<0-65535>", s)
		}
		return uint32(h)<<16 | uint32(l), nil
	}
	v, err := strconv.ParseUint(s, 10, 32)
	if err != nil {
		return 0, fmt.Errorf("community %q is not <0-65535>:<0-65535> or a 32-bit number", s)
	}
	return uint32(v), nil
}

func communityString(v uint32) string {
	return strconv.FormatUint(uint64(v>>16), 10) + ":" + strconv.FormatUint(uint64(v&0xffff), 10)
}

// parseLargeCommunity reads "global:local1:local2", each a 32-bit number.
func parseLargeCommunity(s string) (string, error) {
	parts := strings.Split(s, ":")
	if len(parts) != 3 {
		return "", fmt.Errorf("large community %q is not <global>:<local1>:<local2>", s)
	}
	for i, p := range parts {
		v, err := strconv.ParseUint(p, 10, 32)
		if err != nil {
			return "", fmt.Errorf("large community %q is not three 32-bit numbers", s)
		}
		parts[i] = strconv.FormatUint(v, 10)
	}
	return strings.Join(parts, ":"), nil
}

// Merge adds b's attributes to a's: communities are unioned, and the
// higher local preference wins (two advertisements selecting one prefix
// for one peer both apply; BGP sends one path).
func (a BGPAttributes) Merge(b BGPAttributes) BGPAttributes {
	out := BGPAttributes{
		Communities:      slices.Compact(slices.Sorted(slices.Values(append(slices.Clone(a.Communities), b.Communities...)))),
		LargeCommunities: slices.Compact(slices.Sorted(slices.Values(append(slices.Clone(a.LargeCommunities), b.LargeCommunities...)))),
		LocalPreference:  a.LocalPreference,
	}
	if b.LocalPreference != nil && (out.LocalPreference == nil || *b.LocalPreference > *out.LocalPreference) {
		lp := *b.LocalPreference
		out.LocalPreference = &lp
	}
	return out
}

// Key is a stable text for the attributes: routes with equal keys share
// one export statement in the BGP speaker.
func (a BGPAttributes) Key() string {
	lp := "-"
	if a.LocalPreference != nil {
		lp = strconv.FormatInt(*a.LocalPreference, 10)
	}
	return "c=" + strings.Join(a.Communities, ",") + ";l=" + strings.Join(a.LargeCommunities, ",") + ";lp=" + lp
}

// String is for tables: empty when there are none.
func (a BGPAttributes) String() string {
	var parts []string
	if len(a.Communities) > 0 {
		parts = append(parts, "communities="+strings.Join(a.Communities, ","))
	}
	if len(a.LargeCommunities) > 0 {
		parts = append(parts, "large="+strings.Join(a.LargeCommunities, ","))
	}
	if a.LocalPreference != nil {
		parts = append(parts, "localPref="+strconv.FormatInt(*a.LocalPreference, 10))
	}
	return strings.Join(parts, " ")
}
