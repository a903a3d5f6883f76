package migrate

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"k8s.io/apimachinery/pkg/util/yaml"
	sigsjson "sigs.k8s.io/json"
)

// Group is the API group of MetalLB's objects.
const Group = "metallb.io"

// Decode reads a stream of YAML or JSON documents (kubectl's List too) and
// adds the MetalLB objects in it to in. Other objects are skipped with a
// finding; a document that is not an object is an error naming source.
func (in *Input) Decode(r io.Reader, source string) error {
	dec := yaml.NewYAMLOrJSONDecoder(r, 4096)
	for i := 0; ; i++ {
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return fmt.Errorf("%s: document %d: %w", source, i+1, err)
		}
		if len(bytes.TrimSpace(raw)) == 0 || string(raw) == "null" {
			continue
		}
		if err := in.add(raw, source); err != nil {
			return fmt.Errorf("%s: document %d: %w", source, i+1, err)
		}
	}
}

// add decodes one object, descending into a List's items.
func (in *Input) add(raw json.RawMessage, source string) error {
	var head struct {
		Object `json:",inline"`
		Items  []json.RawMessage `json:"items"`
	}
	if err := json.Unmarshal(raw, &head); err != nil {
		return err
	}
	if head.Kind == "" {
		return fmt.Errorf("not a Kubernetes object (no kind)")
	}
	if strings.HasSuffix(head.Kind, "List") && head.Items != nil {
		for _, item := range head.Items {
			if err := in.add(item, source); err != nil {
				return err
			}
		}
		return nil
	}
	group, _, _ := strings.Cut(head.APIVersion, "/")
	if group != Group {
		in.Findings = append(in.Findings, Finding{
			Source: head.Ref(), Verdict: None,
			Reason: fmt.Sprintf("skipped: %s is not a MetalLB object (%s)", head.Kind, source),
		})
		return nil
	}
	var err error
	switch head.Kind {
	case "IPAddressPool":
		err = decodeInto(raw, &in.Pools, in)
	case "L2Advertisement":
		err = decodeInto(raw, &in.L2, in)
	case "BGPPeer":
		err = decodeInto(raw, &in.Peers, in)
	case "BGPAdvertisement":
		err = decodeInto(raw, &in.BGPAdverts, in)
	case "Community":
		err = decodeInto(raw, &in.Communities, in)
	case "BFDProfile":
		err = decodeInto(raw, &in.BFDProfiles, in)
	default:
		in.Findings = append(in.Findings, Finding{
			Source: head.Ref(), Verdict: None,
			Reason: fmt.Sprintf("Herald has no equivalent of MetalLB's %s (%s)", head.Kind, source),
		})
		return nil
	}
	if err != nil {
		// A List (kubectl get -o yaml, or the cluster's) holds many
		// objects: say which one is malformed.
		return fmt.Errorf("%s: %w", head.Ref(), err)
	}
	return nil
}

// referenced is what every decoded MetalLB type offers the decoder.
type referenced interface{ Ref() string }

// decodeInto appends the object to list and turns every field the local
// struct does not know (a newer MetalLB's, a typo) into a finding, so that
// nothing is dropped without a word.
func decodeInto[T referenced](raw json.RawMessage, list *[]T, in *Input) error {
	var obj T
	strict, err := sigsjson.UnmarshalStrict(raw, &obj)
	if err != nil {
		return err
	}
	for _, e := range strict {
		in.Findings = append(in.Findings, Finding{
			Source: obj.Ref(), Verdict: None,
			Reason: "not translated: " + e.Error(),
		})
	}
	*list = append(*list, obj)
	return nil
}
