package manifest

import (
	"bytes"
	"testing"

	jsonpatch "github.com/evanphx/json-patch/v5"
	yaml "go.yaml.in/yaml/v3"
)

// A patch applied through the node round trip changes only what it
// touches: comments, quoting and spellings elsewhere stay as written.
func TestKeepOriginalChangesOnlyWhatThePatchTouches(t *testing.T) {
	const pod = `# the app
apiVersion: v1
kind: Pod
metadata:
  name: web # inline
  annotations: {team: 'web', ratio: "0.5"}
spec:
  containers:
    # the main container
    - name: app
      image: app:1
      resources: {requests: {cpu: 0.250}}
    - name: helper
      image: "helper:1"
  enabled: yes
`
	tests := []struct {
		name, patch, want string
	}{
		{
			name:  "no-op",
			patch: `[]`,
			want:  pod,
		},
		{
			name: "insert first, add map key, edit one container",
			patch: `[
			 {"op":"add","path":"/metadata/annotations/graft.dev~1status","value":"{\"injected\":[\"agent\"]}"},
			 {"op":"add","path":"/spec/initContainers","value":[{"name":"graft-agent","image":"agent:1","restartPolicy":"Always"}]},
			 {"op":"add","path":"/spec/containers/1/env","value":[{"name":"ADDR","value":"yes"}]}
			]`,
			want: `# the app
apiVersion: v1
kind: Pod
metadata:
  name: web # inline
  annotations:
    team: 'web'
    ratio: "0.5"
    graft.dev/status: '{"injected":["agent"]}'
spec:
  containers:
    # the main container
    - name: app
      image: app:1
      resources: {requests: {cpu: 0.250}}
    - name: helper
      image: "helper:1"
      env:
        - name: ADDR
          value: "yes"
  enabled: yes
  initContainers:
    - name: graft-agent
      image: agent:1
      restartPolicy: Always
`,
		},
		{
			name:  "container inserted at index 0 keeps the others' comments",
			patch: `[{"op":"add","path":"/spec/containers/0","value":{"name":"proxy","image":"p:1"}}]`,
			want: `# the app
apiVersion: v1
kind: Pod
metadata:
  name: web # inline
  annotations: {team: 'web', ratio: "0.5"}
spec:
  containers:
    - name: proxy
      image: p:1
    # the main container
    - name: app
      image: app:1
      resources: {requests: {cpu: 0.250}}
    - name: helper
      image: "helper:1"
  enabled: yes
`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var doc yaml.Node
			if err := yaml.Unmarshal([]byte(pod), &doc); err != nil {
				t.Fatal(err)
			}
			js, err := NodeJSON(&doc)
			if err != nil {
				t.Fatal(err)
			}
			p, err := jsonpatch.DecodePatch([]byte(tt.patch))
			if err != nil {
				t.Fatal(err)
			}
			patched, err := p.Apply(js)
			if err != nil {
				t.Fatal(err)
			}
			updated, err := jsonNode(patched)
			if err != nil {
				t.Fatal(err)
			}
			doc.Content[0] = keepOriginal(doc.Content[0], updated)
			var buf bytes.Buffer
			enc := yaml.NewEncoder(&buf)
			enc.SetIndent(2)
			if err := enc.Encode(&doc); err != nil {
				t.Fatal(err)
			}
			if buf.String() != tt.want {
				t.Errorf("got:\n%s\nwant:\n%s", buf.String(), tt.want)
			}
			// And the YAML means exactly the patched JSON.
			var back yaml.Node
			if err := yaml.Unmarshal(buf.Bytes(), &back); err != nil {
				t.Fatal(err)
			}
			got, _ := NodeJSON(&back)
			if !jsonpatch.Equal(got, patched) {
				t.Errorf("output means\n%s\nwant\n%s", got, patched)
			}
		})
	}
}
