package hostile

import (
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/graftdev/graft/config"
	"github.com/graftdev/graft/internal/names"
)

// TestReadShipped: the bench runs graft with deploy/base's arguments,
// every mounted path standing for the file it is made from, and its
// limits, probes and webhook timeout.
func TestReadShipped(t *testing.T) {
	tls := t.TempDir()
	s, err := ReadShipped("../../deploy", tls)
	if err != nil {
		t.Fatal(err)
	}
	if s.Args[0] != "serve" {
		t.Errorf("args %v do not start with serve", s.Args)
	}
	want := []string{
		"--config=" + filepath.Join("../../deploy", "base") + "/config.yaml",
		"--templates-dir=" + filepath.Join("../../deploy", "base", "templates"),
		"--tls-cert=" + tls + "/tls.crt",
		"--tls-key=" + tls + "/tls.key",
	}
	for _, w := range want {
		if !slices.Contains(s.Args, w) {
			t.Errorf("args %v lack %s", s.Args, w)
		}
	}
	for _, a := range s.Args {
		if strings.Contains(a, "/etc/") || strings.HasPrefix(a, "--addr") || strings.HasPrefix(a, "--admin-addr") {
			t.Errorf("argument %s: a mounted path or an address left in", a)
		}
	}
	if s.MemoryLimit != 512<<20 || s.CPULimit != 2 {
		t.Errorf("limits %d bytes, %d CPUs; want deploy/base's 512Mi and 2", s.MemoryLimit, s.CPULimit)
	}
	if s.WebhookPath != "/inject" || s.WebhookTimeout != 3*time.Second || s.ProbeTimeout != 2*time.Second {
		t.Errorf("webhook %s timeout %s, probe timeout %s", s.WebhookPath, s.WebhookTimeout, s.ProbeTimeout)
	}
	if s.MaxBodyBytes != config.DefaultMaxBodyBytes {
		t.Errorf("largest body %d, want the default %d", s.MaxBodyBytes, config.DefaultMaxBodyBytes)
	}
}

// TestManyContainersReview: the big Pod has the containers asked for and
// asks for every template.
func TestManyContainersReview(t *testing.T) {
	var r struct {
		Request struct {
			UID    string `json:"uid"`
			Object struct {
				Metadata struct {
					Annotations map[string]string `json:"annotations"`
				} `json:"metadata"`
				Spec struct {
					Containers []struct {
						Name string `json:"name"`
					} `json:"containers"`
				} `json:"spec"`
			} `json:"object"`
		} `json:"request"`
	}
	if err := json.Unmarshal(ManyContainersReview(1000), &r); err != nil {
		t.Fatal(err)
	}
	if n := len(r.Request.Object.Spec.Containers); n != 1000 || r.Request.UID == "" {
		t.Errorf("%d containers, uid %q", n, r.Request.UID)
	}
	if got := r.Request.Object.Metadata.Annotations[names.Templates]; got != AllTemplates {
		t.Errorf("templates annotation %q", got)
	}
}

// TestManyContainersReviewSize: 20,000 containers make the 670 KB review
// of issue 22's measurements.
func TestManyContainersReviewSize(t *testing.T) {
	if n := len(ManyContainersReview(20000)); n < 600<<10 || n > 720<<10 {
		t.Errorf("20,000 containers: %d bytes, want about 670 KB", n)
	}
}
