package tables

import (
	"github.com/cilium/statedb"
	corev1 "k8s.io/api/core/v1"
)

// BGPSecretsTableName is the table of the Secrets in the BGP secrets
// namespace: the TCP-MD5 passwords peer configs refer to.
const BGPSecretsTableName = "bgp-secrets"

// BGPSecret is a Secret's "password" key. Tables print whether it is
// there, never the password.
type BGPSecret struct {
	Name            string `json:"name"`
	ResourceVersion string `json:"resourceVersion"`
	HasPassword     bool   `json:"hasPassword"`
	Password        string `json:"-"`
}

func (s *BGPSecret) TableHeader() []string { return []string{"Secret", "HasPassword"} }

func (s *BGPSecret) TableRow() []string {
	if s.HasPassword {
		return []string{s.Name, "yes"}
	}
	return []string{s.Name, "no (the Secret has no \"password\" key)"}
}

// BGPSecretNameIndex is the primary index of bgp-secrets.
var BGPSecretNameIndex = nameIndex(func(s *BGPSecret) string { return s.Name })

// NewBGPSecretsTable creates the bgp-secrets table.
func NewBGPSecretsTable(db *statedb.DB) (statedb.RWTable[*BGPSecret], error) {
	return statedb.NewTable(db, BGPSecretsTableName, BGPSecretNameIndex)
}

// BGPSecretFromK8s keeps a Secret's password key.
func BGPSecretFromK8s(s *corev1.Secret) *BGPSecret {
	pw, ok := s.Data["password"]
	return &BGPSecret{Name: s.Name, ResourceVersion: s.ResourceVersion, HasPassword: ok, Password: string(pw)}
}
