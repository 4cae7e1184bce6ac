package offline

import (
	"fmt"
	"strings"
	"testing"
)

// benchDeployment is a Deployment whose Pod template has what real ones
// carry: labels, a foreign annotation, a quantity spelling and a field
// no Kubernetes version knows.
const benchDeployment = `apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  selector: {matchLabels: {app: web}}
  template:
    metadata:
      labels: {app: web}
      annotations: {note: "keep me"}
    spec:
      containers:
        - name: app
          image: example.test/app:1
          resources: {requests: {cpu: "0.25", memory: 64Mi}}
          futureField: {kept: true}
`

// BenchmarkInject measures graft inject on a manifest stream of n
// Deployments (with a ConfigMap each, passed through), from bytes in to
// bytes out, with one engine as a CLI run has.
func BenchmarkInject(b *testing.B) {
	e := newTestEngine(b)
	for _, n := range []int{1, 100} {
		var sb strings.Builder
		for i := range n {
			fmt.Fprintf(&sb, "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: cfg-%d}\ndata: {mode: fast}\n", i)
			fmt.Fprintf(&sb, "---\n%s", strings.Replace(benchDeployment, "name: web", fmt.Sprintf("name: web-%d", i), 1))
		}
		data := []byte(sb.String())
		for _, format := range []string{"yaml", "json"} {
			b.Run(fmt.Sprintf("deployments=%d/%s", n, format), func(b *testing.B) {
				b.ReportAllocs()
				b.SetBytes(int64(len(data)))
				for b.Loop() {
					if _, err := injectBytes(e, data, format); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// benchPod is the i-th Pod of BenchmarkInjectList, as an item of a List
// (indented under items:) or as a document of its own.
func benchPod(i int, item bool) string {
	pod := fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: web-%d
  labels: {app: web}
  annotations: {note: "keep me"}
spec:
  containers:
    - name: app
      image: example.test/app:1
      resources: {requests: {cpu: "0.25", memory: 64Mi}}
`, i)
	if !item {
		return "---\n" + pod
	}
	lines := strings.SplitAfter(strings.TrimSuffix(pod, "\n"), "\n")
	var sb strings.Builder
	for j, l := range lines {
		if j == 0 {
			sb.WriteString("  - " + l)
		} else {
			sb.WriteString("    " + l)
		}
	}
	sb.WriteString("\n")
	return sb.String()
}

// BenchmarkInjectList measures graft inject on n Pods written as one
// kind: List and as n documents of a stream: both linear in n (issue
// 22: a List of 10,000 Pods under 10 s).
func BenchmarkInjectList(b *testing.B) {
	e := newTestEngine(b)
	for _, n := range []int{100, 1000, 10000} {
		for _, shape := range []string{"list", "documents"} {
			var sb strings.Builder
			if shape == "list" {
				sb.WriteString("apiVersion: v1\nkind: List\nitems:\n")
			}
			for i := range n {
				sb.WriteString(benchPod(i, shape == "list"))
			}
			data := []byte(sb.String())
			b.Run(fmt.Sprintf("pods=%d/%s", n, shape), func(b *testing.B) {
				b.ReportAllocs()
				b.SetBytes(int64(len(data)))
				for b.Loop() {
					if _, err := injectBytes(e, data, "yaml"); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
