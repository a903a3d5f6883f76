package migrate

import (
	"k8s.io/utils/ptr"

	"github.com/heraldlb/herald/api/cilium.io/v2alpha1"
)

// translateBFD copies a BFDProfile into the bfd block of a peer config
// (target) that names it.
func translateBFD(p BFDProfile, bfd *v2alpha1.CiliumBGPBFD, target string) []Finding {
	f := findings{source: p.Ref()}
	ms := func(field string, v *uint32, to string, set func(*int32)) {
		if v != nil {
			set(ptr.To(int32(*v)))
			f.add(field, Exact, target+" spec.bfd."+to, "")
		}
	}
	ms("spec.receiveInterval", p.Spec.ReceiveInterval, "receiveIntervalMilliseconds", func(v *int32) { bfd.ReceiveIntervalMilliseconds = v })
	ms("spec.transmitInterval", p.Spec.TransmitInterval, "transmitIntervalMilliseconds", func(v *int32) { bfd.TransmitIntervalMilliseconds = v })
	ms("spec.detectMultiplier", p.Spec.DetectMultiplier, "detectMultiplier", func(v *int32) { bfd.DetectMultiplier = v })
	if p.Spec.PassiveMode != nil {
		bfd.PassiveMode = ptr.To(*p.Spec.PassiveMode)
		f.add("spec.passiveMode", Exact, target+" spec.bfd.passiveMode", "")
	}
	if p.Spec.EchoMode != nil && *p.Spec.EchoMode {
		f.add("spec.echoMode", None, "", "Herald's BFD has no echo function")
	}
	if p.Spec.EchoInterval != nil {
		f.add("spec.echoInterval", None, "", "Herald's BFD has no echo function")
	}
	if p.Spec.MinimumTTL != nil {
		f.add("spec.minimumTtl", None, "", "Herald's BFD is single hop: it requires TTL 255")
	}
	return f.findings
}
