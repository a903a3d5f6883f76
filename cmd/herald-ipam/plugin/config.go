package plugin

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"path/filepath"
	"strings"

	"github.com/containernetworking/cni/pkg/types"
	current "github.com/containernetworking/cni/pkg/types/100"
	"github.com/containernetworking/cni/pkg/version"

	v1 "github.com/heraldlb/herald/api/ipam/v1"
)

// IPAMConfig is the ipam section of the network configuration:
//
//	"ipam": {
//	  "type": "herald-ipam",
//	  "socket": "/var/run/herald/ipam.sock",   // optional, v1.DefaultSocket
//	  "stateDir": "/var/lib/herald/ipam",      // optional, v1.DefaultStateDir
//	  "routes": [{"dst": "0.0.0.0/0"}]         // optional, replaces the agent's routes
//	}
//
// Any other key is refused: a typo would otherwise silently fall back to a
// default and leave the plugin talking to the wrong socket.
type IPAMConfig struct {
	Type     string  `json:"type"`
	Socket   string  `json:"socket,omitempty"`
	StateDir string  `json:"stateDir,omitempty"`
	Routes   []Route `json:"routes,omitempty"`
}

// Route is a route of the ipam section, as host-local spells it.
type Route struct {
	Dst string `json:"dst"`
	GW  string `json:"gw,omitempty"`
}

// Config is what herald-ipam takes from the configuration on stdin. The
// runtime hands the main plugin (bridge, ...) the whole network
// configuration and the main plugin passes it on unchanged, so everything but
// the ipam section belongs to someone else and is not checked here.
type Config struct {
	Network    string // the network's name
	CNIVersion string
	// Bridge is the bridge plugin's "bridge" key, passed on to the agent.
	Bridge string
	IPAM   IPAMConfig
	// Routes replace the agent's routes when the ipam section has a
	// "routes" key, even an empty one ("routes": [] means no routes).
	Routes []*types.Route
	// PrevResult is the attachment's result, given to CHECK.
	PrevResult *current.Result
	// ValidAttachments are the attachments the runtime still uses, given
	// to GC. HasValidAttachments tells an empty list (release everything)
	// from none at all.
	ValidAttachments    []v1.Attachment
	HasValidAttachments bool
}

// netConf is the part of the network configuration read here.
type netConf struct {
	CNIVersion string                 `json:"cniVersion"`
	Name       string                 `json:"name"`
	Bridge     string                 `json:"bridge"`
	IPAM       json.RawMessage        `json:"ipam"`
	PrevResult map[string]interface{} `json:"prevResult"`
	// libcni sends both keys: CNI 1.1 named it cni.dev/attachments by
	// mistake (containernetworking/cni#1101); valid-attachments wins.
	ValidAttachments  *[]types.GCAttachment `json:"cni.dev/valid-attachments"`
	LegacyAttachments *[]types.GCAttachment `json:"cni.dev/attachments"`
}

// ParseConfig reads the network configuration a verb gets on stdin. Its
// errors are CNI errors: 6 for JSON that does not decode, 2 for a key of the
// ipam section herald-ipam does not know, 7 for a value it cannot use.
func ParseConfig(stdin []byte) (*Config, error) {
	var nc netConf
	if err := json.Unmarshal(stdin, &nc); err != nil {
		return nil, types.NewError(types.ErrDecodingFailure, "herald-ipam: cannot decode the network configuration", err.Error())
	}
	if len(nc.IPAM) == 0 || string(nc.IPAM) == "null" {
		return nil, types.NewError(types.ErrInvalidNetworkConfig, "herald-ipam: the network configuration has no ipam section", "")
	}
	c := &Config{Network: nc.Name, CNIVersion: nc.CNIVersion, Bridge: nc.Bridge}

	dec := json.NewDecoder(bytes.NewReader(nc.IPAM))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c.IPAM); err != nil {
		// encoding/json has no typed error for an unknown field.
		if strings.HasPrefix(err.Error(), "json: unknown field") {
			return nil, types.NewError(types.ErrUnsupportedField, "herald-ipam: unsupported key in the ipam section", err.Error())
		}
		return nil, types.NewError(types.ErrDecodingFailure, "herald-ipam: cannot decode the ipam section", err.Error())
	}
	if err := c.defaultAndCheck(); err != nil {
		return nil, types.NewError(types.ErrInvalidNetworkConfig, "herald-ipam: invalid ipam section", err.Error())
	}

	if nc.PrevResult != nil {
		pc := types.PluginConf{CNIVersion: nc.CNIVersion, RawPrevResult: nc.PrevResult}
		if err := version.ParsePrevResult(&pc); err != nil {
			return nil, types.NewError(types.ErrDecodingFailure, "herald-ipam: cannot decode prevResult", err.Error())
		}
		r, err := current.NewResultFromResult(pc.PrevResult)
		if err != nil {
			return nil, types.NewError(types.ErrDecodingFailure, "herald-ipam: cannot convert prevResult", err.Error())
		}
		c.PrevResult = r
	}

	valid := nc.ValidAttachments
	if valid == nil {
		valid = nc.LegacyAttachments
	}
	if valid != nil {
		c.HasValidAttachments = true
		c.ValidAttachments = make([]v1.Attachment, 0, len(*valid))
		for _, a := range *valid {
			c.ValidAttachments = append(c.ValidAttachments, v1.Attachment{ContainerID: a.ContainerID, IfName: a.IfName})
		}
	}
	return c, nil
}

// defaultAndCheck fills in the defaults and checks what the plugin will use.
func (c *Config) defaultAndCheck() error {
	if c.IPAM.Socket == "" {
		c.IPAM.Socket = v1.DefaultSocket
	}
	if c.IPAM.StateDir == "" {
		c.IPAM.StateDir = v1.DefaultStateDir
	}
	// The runtime's working directory is nobody's business: relative
	// paths would depend on it.
	if !filepath.IsAbs(c.IPAM.Socket) {
		return fmt.Errorf("socket %q is not an absolute path", c.IPAM.Socket)
	}
	if !filepath.IsAbs(c.IPAM.StateDir) {
		return fmt.Errorf("stateDir %q is not an absolute path", c.IPAM.StateDir)
	}
	if c.IPAM.Routes == nil {
		return nil
	}
	c.Routes = make([]*types.Route, 0, len(c.IPAM.Routes))
	for i, r := range c.IPAM.Routes {
		tr, err := parseRoute(r.Dst, r.GW)
		if err != nil {
			return fmt.Errorf("routes[%d]: %w", i, err)
		}
		c.Routes = append(c.Routes, tr)
	}
	return nil
}

// parseRoute parses a destination prefix and an optional gateway of the same
// family.
func parseRoute(dst, gw string) (*types.Route, error) {
	_, n, err := net.ParseCIDR(dst)
	if err != nil {
		return nil, fmt.Errorf("dst %q is not a prefix", dst)
	}
	r := &types.Route{Dst: *n}
	if gw == "" {
		return r, nil
	}
	r.GW = net.ParseIP(gw)
	if r.GW == nil {
		return nil, fmt.Errorf("gw %q is not an address", gw)
	}
	if (r.GW.To4() == nil) != (n.IP.To4() == nil) {
		return nil, fmt.Errorf("gw %s and dst %s are of different families", gw, dst)
	}
	return r, nil
}
