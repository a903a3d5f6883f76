package cidrallocator

import (
	"encoding/json"
	"fmt"
	"strings"
)

// poolSpecs splits auto-create-cilium-pod-ip-pools into name → spec, in
// each form the value takes where it comes from:
//   - Herald's chart and documentation: pools separated by spaces;
//   - Cilium's map options: pools separated by commas, where a comma that
//     is not followed by name= belongs to the spec before it (the list of
//     CIDRs, "ipv4-cidrs:a,b");
//   - a JSON object {"name": "spec"}, which Cilium's map options take too.
//
// So a value copied from a Cilium ConfigMap starts the agent.
func poolSpecs(value string) (map[string]string, error) {
	value = strings.TrimSpace(value)
	specs := map[string]string{}
	if strings.HasPrefix(value, "{") {
		if err := json.Unmarshal([]byte(value), &specs); err != nil {
			return nil, fmt.Errorf("%q is not a JSON object of <pool>: <spec>: %w", value, err)
		}
		return specs, nil
	}
	for _, field := range strings.Fields(value) {
		for _, item := range splitPools(field) {
			name, spec, ok := strings.Cut(item, "=")
			if !ok || name == "" {
				return nil, fmt.Errorf("%q is not <pool>=<spec>", item)
			}
			if _, dup := specs[name]; dup {
				return nil, fmt.Errorf("pool %s is given twice", name)
			}
			specs[name] = spec
		}
	}
	return specs, nil
}

// splitPools splits "a=ipv4-cidrs:x,y;ipv4-mask-size:24,b=..." at the
// commas that start another pool (the next piece holds an "=").
func splitPools(s string) []string {
	var out []string
	for _, piece := range strings.Split(s, ",") {
		if len(out) > 0 && !strings.Contains(piece, "=") {
			out[len(out)-1] += "," + piece
			continue
		}
		out = append(out, piece)
	}
	return out
}
