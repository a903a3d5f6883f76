package v1

import (
	"path/filepath"

	"github.com/containernetworking/cni/pkg/utils"
)

// PendingDelPath is the file in which the plugin queues the DEL of an
// attachment (stateDir/pending-del/<containerID>_<ifName>.json). Both sides
// need it: the plugin writes it, and the agent removes it when an ADD of the
// same attachment supersedes it.
func PendingDelPath(stateDir string, a Attachment) (string, error) {
	// The runtime's CNI_CONTAINERID and CNI_IFNAME were checked by skel
	// already; checked again because they become a file name here.
	if err := utils.ValidateContainerID(a.ContainerID); err != nil {
		return "", err
	}
	if err := utils.ValidateInterfaceName(a.IfName); err != nil {
		return "", err
	}
	return filepath.Join(stateDir, PendingDelDir, a.ContainerID+"_"+a.IfName+".json"), nil
}
