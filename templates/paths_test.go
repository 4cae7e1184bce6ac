package templates

import (
	"strings"
	"testing"
	"testing/fstest"
)

// TestPathsRefuseDotDot: the log-shipper's path parameter refuses . and
// .. elements, and any template whose render mounts at a path with a ..
// element (or a subPath leaving the volume) fails to render, whatever
// parameter wrote it.
func TestPathsRefuseDotDot(t *testing.T) {
	s, err := Builtin()
	if err != nil {
		t.Fatal(err)
	}
	ls, _ := s.Get("log-shipper")
	p, _ := ls.Param("path")
	for _, tt := range []struct {
		path string
		ok   bool
	}{
		{"/var/log/app", true},
		{"/var/log/.hidden", true},
		{"/var/log/..x", true},
		{"/var/log/...", true},
		{"/var/log/../../var/run/secrets/kubernetes.io/serviceaccount", false},
		{"/var/log/..", false},
		{"/var/log/./app", false},
		{"/var/log//app", false},
		{"var/log", false},
		{"/", false},
	} {
		if _, err := p.Parse(tt.path); (err == nil) != tt.ok {
			t.Errorf("log-shipper path %q: accepted %v, want %v (%v)", tt.path, err == nil, tt.ok, err)
		}
	}

	set, err := LoadFS(fstest.MapFS{"m.yaml": {Data: []byte(`name: m
description: mounts where a free parameter says.
podSecurity: baseline
parameters:
  - {name: dir, type: string, default: /data, description: d}
  - {name: sub, type: string, default: "", description: s}
fragment: |
  initContainers:
    - name: graft-m
      image: example.com/m:1
      restartPolicy: Always
      volumeMounts: [{name: graft-m, mountPath: {{ .dir | quote }}, subPath: {{ .sub | quote }}}]
  volumes: [{name: graft-m, emptyDir: {}}]
  appContainers:
    volumeMounts: [{name: graft-m, mountPath: {{ .dir | quote }}}]
`)}})
	if err != nil {
		t.Fatal(err)
	}
	m, _ := set.Get("m")
	for _, tt := range []struct {
		overrides map[string]string
		want      string
	}{
		{map[string]string{"dir": "/data/x"}, ""},
		{map[string]string{"dir": "/data/../etc"}, `initContainers[graft-m]: volumeMounts[graft-m]: mountPath "/data/../etc" must not contain '..'`},
		{map[string]string{"dir": "/data/../etc"}, `appContainers.volumeMounts[graft-m]: mountPath "/data/../etc" must not contain '..'`},
		{map[string]string{"sub": "../../x"}, `subPath "../../x" must be a relative path without '..'`},
		{map[string]string{"sub": "/abs"}, `subPath "/abs" must be a relative path without '..'`},
		{map[string]string{"sub": "logs/app"}, ""},
	} {
		_, err := m.Render(tt.overrides)
		if tt.want == "" {
			if err != nil {
				t.Errorf("%v: %v", tt.overrides, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%v: %v, want %q", tt.overrides, err, tt.want)
		}
	}
}
