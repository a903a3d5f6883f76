package nodeipam

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// preAllocation parses ipam-multi-pool-pre-allocation in either of the
// forms Cilium's map options take: pool=count items separated by commas or
// spaces, or a JSON object ({"default":"8"}, counts as strings or numbers),
// so that a value copied from a Cilium ConfigMap starts the agent.
func (c Config) preAllocation() (map[string]int, error) {
	value := strings.TrimSpace(c.IPAMMultiPoolPreAllocation)
	if strings.HasPrefix(value, "{") {
		return preAllocationJSON(value)
	}
	out := map[string]int{}
	for _, item := range strings.FieldsFunc(value, func(r rune) bool { return r == ',' || r == ' ' }) {
		pool, v, ok := strings.Cut(item, "=")
		if !ok {
			return nil, badPreAllocation(item)
		}
		if err := setPreAllocation(out, pool, v); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func preAllocationJSON(value string) (map[string]int, error) {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal([]byte(value), &raw); err != nil {
		return nil, fmt.Errorf("ipam-multi-pool-pre-allocation: %q is not a JSON object of <pool>: <count of addresses>: %w", value, err)
	}
	out := map[string]int{}
	for pool, r := range raw {
		var s string
		if json.Unmarshal(r, &s) != nil {
			s = string(r) // a number, or something setPreAllocation refuses
		}
		if err := setPreAllocation(out, pool, s); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func setPreAllocation(out map[string]int, pool, count string) error {
	n, err := strconv.Atoi(strings.TrimSpace(count))
	if pool == "" || err != nil || n < 0 {
		return badPreAllocation(pool + "=" + count)
	}
	out[pool] = n
	return nil
}

func badPreAllocation(item string) error {
	return fmt.Errorf("ipam-multi-pool-pre-allocation: %q is not <pool>=<count of addresses>", item)
}
