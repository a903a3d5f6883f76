package plugin

import (
	"errors"
	"strings"
	"testing"

	"github.com/containernetworking/cni/pkg/types"

	v1 "github.com/heraldlb/herald/api/ipam/v1"
)

func TestPodArgs(t *testing.T) {
	for _, tc := range []struct {
		name       string
		args       string
		want       v1.PodRef
		parseErr   string // parsePod's error mentions it; "" for none
		requireErr string // requirePod's
	}{
		{name: "containerd", args: k8sArgs1, want: v1.PodRef{Namespace: "default", Name: "web-0", UID: "uid-1"}},
		{name: "no UID", args: "IgnoreUnknown=1;K8S_POD_NAMESPACE=kube-system;K8S_POD_NAME=dns-1",
			want: v1.PodRef{Namespace: "kube-system", Name: "dns-1"}},
		{name: "known keys need no IgnoreUnknown", args: "K8S_POD_NAMESPACE=a;K8S_POD_NAME=b;K8S_POD_INFRA_CONTAINER_ID=c",
			want: v1.PodRef{Namespace: "a", Name: "b"}},
		{name: "others ignored with IgnoreUnknown", args: "IgnoreUnknown=1;K8S_POD_NAMESPACE=a;K8S_POD_NAME=b;MAC=02:00:00:00:00:01",
			want: v1.PodRef{Namespace: "a", Name: "b"}},
		{name: "others refused without", args: "K8S_POD_NAMESPACE=a;K8S_POD_NAME=b;MAC=02:00:00:00:00:01",
			parseErr: "MAC", requireErr: "MAC"},
		{name: "IgnoreUnknown=0 refuses too", args: "IgnoreUnknown=0;K8S_POD_NAMESPACE=a;K8S_POD_NAME=b;X=y",
			parseErr: "X=y", requireErr: "X=y"},
		{name: "empty", args: "", requireErr: "K8S_POD_NAMESPACE"},
		{name: "namespace only", args: "K8S_POD_NAMESPACE=a", want: v1.PodRef{Namespace: "a"}, requireErr: "K8S_POD_NAME"},
		{name: "empty name", args: "K8S_POD_NAMESPACE=a;K8S_POD_NAME=", want: v1.PodRef{Namespace: "a"}, requireErr: "K8S_POD_NAME"},
		{name: "not key=value", args: "K8S_POD_NAMESPACE", parseErr: "invalid pair", requireErr: "invalid pair"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, f := range []struct {
				name    string
				fn      func(string) (v1.PodRef, error)
				wantErr string
			}{{"parsePod", parsePod, tc.parseErr}, {"requirePod", requirePod, tc.requireErr}} {
				got, err := f.fn(tc.args)
				if f.wantErr == "" {
					if err != nil {
						t.Errorf("%s: %v", f.name, err)
					} else if got != tc.want {
						t.Errorf("%s = %+v, want %+v", f.name, got, tc.want)
					}
					continue
				}
				var e *types.Error
				if !errors.As(err, &e) || e.Code != types.ErrInvalidEnvironmentVariables ||
					!strings.Contains(e.Msg+" "+e.Details, f.wantErr) {
					t.Errorf("%s: error %v, want CNI error 4 mentioning %q", f.name, err, f.wantErr)
				}
			}
		})
	}
}
