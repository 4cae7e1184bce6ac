package cluster

import (
	"bytes"
	_ "embed"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/yaml"
)

//go:embed standin.yaml
var standinYAML []byte

// Shipped is the admission wiring graft ships in deploy/base: the webhook
// registration, the policy that guarantees the final state, and graft's
// own namespace. Parts deploy/ does not have yet come from the suite's
// stand-in, and Sources says which is which.
type Shipped struct {
	Webhook   *admissionv1.MutatingWebhookConfiguration
	Policy    *admissionv1.ValidatingAdmissionPolicy
	Binding   *admissionv1.ValidatingAdmissionPolicyBinding
	Service   *corev1.Service // graft's Service, when deploy/ has one
	Namespace string
	Sources   []string
}

// LoadShipped reads deploy/base under repoRoot, falling back to the
// stand-in for anything it lacks.
func LoadShipped(repoRoot string) (*Shipped, error) {
	s, err := ReadManifests(filepath.Join(repoRoot, "deploy", "base"))
	if err != nil {
		return nil, err
	}
	if s.Webhook == nil || s.Policy == nil || s.Binding == nil {
		if err := s.add(standinYAML, "e2e stand-in"); err != nil {
			return nil, err
		}
	}
	if s.Namespace == "" {
		s.Namespace = "graft-system"
	}
	if s.Webhook == nil || s.Policy == nil || s.Binding == nil {
		return nil, errors.New("no MutatingWebhookConfiguration, ValidatingAdmissionPolicy or binding found")
	}
	return s, nil
}

// ReadManifests reads what it knows (see Shipped) from the YAML files of
// dir, such as one of deploy/examples, without filling in what is missing.
func ReadManifests(dir string) (*Shipped, error) {
	s := &Shipped{}
	files, err := filepath.Glob(filepath.Join(dir, "*.y*ml"))
	if err != nil {
		return nil, err
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, fmt.Errorf("deploy: %w", err)
		}
		if strings.HasPrefix(filepath.Base(f), "kustomization.") {
			if ns := kustomizeNamespace(data); ns != "" {
				s.Namespace = ns
			}
			continue
		}
		if err := s.add(data, f); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// add takes from the YAML stream data the objects s does not have yet.
func (s *Shipped) add(data []byte, source string) error {
	dec := yaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	for {
		var u unstructured.Unstructured
		if err := dec.Decode(&u.Object); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return fmt.Errorf("%s: %w", source, err)
		}
		if u.Object == nil {
			continue
		}
		var (
			into any
			took bool
		)
		switch u.GetKind() {
		case "MutatingWebhookConfiguration":
			if s.Webhook == nil {
				s.Webhook = &admissionv1.MutatingWebhookConfiguration{}
				into, took = s.Webhook, true
			}
		case "ValidatingAdmissionPolicy":
			if s.Policy == nil {
				s.Policy = &admissionv1.ValidatingAdmissionPolicy{}
				into, took = s.Policy, true
			}
		case "ValidatingAdmissionPolicyBinding":
			if s.Binding == nil {
				s.Binding = &admissionv1.ValidatingAdmissionPolicyBinding{}
				into, took = s.Binding, true
			}
		case "Service":
			if s.Service == nil {
				s.Service = &corev1.Service{}
				into, took = s.Service, true
			}
		case "Namespace":
			if s.Namespace == "" {
				s.Namespace = u.GetName()
			}
		case "Deployment":
			if s.Namespace == "" {
				s.Namespace = u.GetNamespace()
			}
		}
		if !took {
			continue
		}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, into); err != nil {
			return fmt.Errorf("%s: %s: %w", source, u.GetKind(), err)
		}
		src := u.GetKind() + " from " + source
		if !slices.Contains(s.Sources, src) {
			s.Sources = append(s.Sources, src)
		}
	}
}

func kustomizeNamespace(data []byte) string {
	var k struct {
		Namespace string `json:"namespace"`
	}
	if err := yaml.Unmarshal(data, &k); err != nil {
		return ""
	}
	return k.Namespace
}

// LoopbackWebhook returns the shipped registration pointed at graft on
// addr: each webhook's Service reference becomes
// https://<addr><its path> and the CA bundle is ca.
func (s *Shipped) LoopbackWebhook(addr string, ca []byte) *admissionv1.MutatingWebhookConfiguration {
	w := s.Webhook.DeepCopy()
	w.ResourceVersion = ""
	for i := range w.Webhooks {
		cc := &w.Webhooks[i].ClientConfig
		path := "/inject"
		if cc.Service != nil && cc.Service.Path != nil {
			path = *cc.Service.Path
		} else if cc.URL != nil {
			if _, p, ok := strings.Cut(strings.TrimPrefix(*cc.URL, "https://"), "/"); ok {
				path = "/" + p
			}
		}
		u := "https://" + addr + path
		cc.Service = nil
		cc.URL = &u
		cc.CABundle = ca
	}
	return w
}
