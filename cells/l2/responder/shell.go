package responder

import (
	"encoding/json"
	"path/filepath"

	"github.com/cilium/hive"
	"github.com/cilium/hive/script"

	"github.com/heraldlb/herald/bpf"
	"github.com/heraldlb/herald/cells/l2/l2config"
)

// shellCommand is herald/responder (bpf.ResponderInfo), for herald-dbg
// bpf responder.
func shellCommand(c Config, pin pinDir, l2 l2config.Config) hive.ScriptCmdsOut {
	info, _ := json.Marshal(bpf.ResponderInfo{Enabled: l2.EnableL2Announcements, PinDir: filepath.Join(c.BPFRoot, string(pin))})
	return hive.NewScriptCmds(map[string]script.Cmd{
		"herald/responder": script.Command(
			script.CmdUsage{Summary: "Whether this agent runs the L2 responder, and where its maps are pinned, as JSON"},
			func(*script.State, ...string) (script.WaitFunc, error) {
				return func(*script.State) (string, string, error) { return string(info) + "\n", "", nil }, nil
			}),
	})
}
