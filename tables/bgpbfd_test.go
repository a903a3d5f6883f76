package tables

import (
	"reflect"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/heraldlb/herald/api/cilium.io/v2alpha1"
)

func TestBGPPeerConfigBFD(t *testing.T) {
	for _, c := range []struct {
		name string
		bfd  *v2alpha1.CiliumBGPBFD
		want *BGPBFD
		errs int
	}{
		{"none", nil, nil, 0},
		{"defaults", &v2alpha1.CiliumBGPBFD{}, &BGPBFD{ReceiveIntervalMs: 300, TransmitIntervalMs: 300, DetectMultiplier: 3}, 0},
		{"set", &v2alpha1.CiliumBGPBFD{ReceiveIntervalMilliseconds: ptr.To[int32](100), TransmitIntervalMilliseconds: ptr.To[int32](50),
			DetectMultiplier: ptr.To[int32](5), PassiveMode: ptr.To(true)},
			&BGPBFD{ReceiveIntervalMs: 100, TransmitIntervalMs: 50, DetectMultiplier: 5, Passive: true}, 0},
		{"out of bounds", &v2alpha1.CiliumBGPBFD{ReceiveIntervalMilliseconds: ptr.To[int32](5), TransmitIntervalMilliseconds: ptr.To[int32](70000),
			DetectMultiplier: ptr.To[int32](0)},
			&BGPBFD{ReceiveIntervalMs: 5, TransmitIntervalMs: 70000, DetectMultiplier: 0}, 3},
	} {
		t.Run(c.name, func(t *testing.T) {
			pc := BGPPeerConfigFromK8s(&v2alpha1.CiliumBGPPeerConfig{ObjectMeta: metav1.ObjectMeta{Name: "pc"},
				Spec: v2alpha1.CiliumBGPPeerConfigSpec{BFD: c.bfd}})
			if !reflect.DeepEqual(pc.BFD, c.want) || len(pc.Errors) != c.errs {
				t.Fatalf("BFD %+v, errors %q; want %+v with %d errors", pc.BFD, pc.Errors, c.want, c.errs)
			}
		})
	}
}
