package templates

import (
	"os"
	"strings"
	"testing"
	"testing/fstest"
)

func TestLintBuiltinPasses(t *testing.T) {
	problems, err := Lint(os.DirFS("builtin"))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("builtin template problem: %s", p)
	}
}

// sidecar is a valid template named name whose fragment is the sidecar
// below plus extra (more YAML under the fragment's top level) and whose
// container carries more (YAML at container level).
func sidecar(name, params, more, extra string) string {
	return "name: " + name + "\ndescription: test template.\nparameters:\n" + indent(params, "  ") +
		"fragment: |\n" + indent(`initContainers:
  - name: graft-`+name+`
    image: example.com/x:1
    restartPolicy: Always
`+indent(more, "    ")+extra, "  ")
}

func indent(s, by string) string {
	if s == "" {
		return ""
	}
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return by + strings.Join(lines, "\n"+by) + "\n"
}

func TestLintFindsProblems(t *testing.T) {
	tests := []struct {
		name  string
		files map[string]string
		// want are the problem lines, each as a prefix.
		want []string
	}{
		{
			name:  "valid",
			files: map[string]string{"a.yaml": sidecar("a", "", "", "")},
		},
		{
			name: "container name not a DNS label",
			files: map[string]string{"a.yaml": strings.Replace(sidecar("a", "", "", ""),
				"name: graft-a", "name: Graft_A", 1)},
			want: []string{"a.yaml: a: with defaults: initContainers[Graft_A]: name: a lowercase RFC 1123 label"},
		},
		{
			name: "port out of range at the parameter's max only",
			files: map[string]string{"a.yaml": sidecar("a",
				"- {name: port, type: int, default: \"8080\", min: \"1024\", max: \"70000\", description: p}\n",
				"ports: [{containerPort: {{ .port }}}]\n", "")},
			want: []string{`a.yaml: a: with port="70000": initContainers[graft-a]: ports[0].containerPort: must be between 1 and 65535`},
		},
		{
			name: "an enum value renders a bad volume name",
			files: map[string]string{"a.yaml": sidecar("a",
				"- {name: mode, type: enum, default: fast, values: [fast, Slow], description: m}\n", "",
				"volumes: [{name: 'v-{{ .mode }}', emptyDir: {}}]\n")},
			want: []string{`a.yaml: a: with mode="Slow": volumes[v-Slow]: a lowercase RFC 1123 label`},
		},
		{
			name: "a bool branch adds a bad env var name",
			files: map[string]string{"a.yaml": sidecar("a",
				"- {name: debug, type: bool, default: \"false\", description: d}\n",
				"env:\n- {name: OK, value: x}\n{{ if .debug }}- {name: 1BAD, value: x}{{ end }}\n", "")},
			want: []string{`a.yaml: a: with debug="true": initContainers[graft-a]: env[1BAD]: a valid environment variable name`},
		},
		{
			name: "request above limit at the bounds",
			files: map[string]string{"a.yaml": sidecar("a",
				"- {name: cpu, type: quantity, default: 100m, min: 10m, max: \"2\", description: c}\n",
				"resources: {requests: {cpu: {{ .cpu | quote }}}, limits: {cpu: 500m}}\n", "")},
			want: []string{`a.yaml: a: with cpu="2": initContainers[graft-a]: resources: requests[cpu] 2 exceeds its limit 500m`},
		},
		{
			name: "app env var name",
			files: map[string]string{"a.yaml": sidecar("a", "", "",
				"appContainers: {env: [{name: 'A=B', value: x}]}\n")},
			want: []string{"a.yaml: a: with defaults: appContainers.env[A=B]: a valid environment variable name"},
		},
		{
			name: "mount of an undefined volume and a relative path",
			files: map[string]string{"a.yaml": sidecar("a", "", "",
				"appContainers: {volumeMounts: [{name: nope, mountPath: rel/dir}]}\n")},
			want: []string{
				"a.yaml: a: with defaults: appContainers.volumeMounts[nope]: mounts a volume the template does not define",
				`a.yaml: a: with defaults: appContainers.volumeMounts[nope]: mountPath "rel/dir" must be absolute`,
			},
		},
		{
			name: "volume with two sources",
			files: map[string]string{"a.yaml": sidecar("a", "", "",
				"volumes: [{name: v, emptyDir: {}, secret: {secretName: s}}]\n")},
			want: []string{"a.yaml: a: with defaults: volumes[v]: needs exactly one volume source, has 2"},
		},
		{
			name: "probe on an undeclared named port",
			files: map[string]string{"a.yaml": sidecar("a", "",
				"readinessProbe: {httpGet: {path: /, port: health}}\n", "")},
			want: []string{`a.yaml: a: with defaults: initContainers[graft-a]: readinessProbe: httpGet.port: names port "health" the container does not declare`},
		},
		{
			name: "port name too long",
			files: map[string]string{"a.yaml": sidecar("a", "",
				"ports: [{name: a-very-long-port-name, containerPort: 80}]\n", "")},
			want: []string{"a.yaml: a: with defaults: initContainers[graft-a]: ports[0].name: must be no more than 15 characters"},
		},
		{
			name: "restartPolicy on an app-level container",
			files: map[string]string{"a.yaml": sidecar("a", "", "",
				"containers: [{name: c, image: x, restartPolicy: Always}]\n")},
			want: []string{"a.yaml: a: with defaults: containers[c]: restartPolicy: may only be set on init containers"},
		},
		{
			name: "reserved and invalid metadata",
			files: map[string]string{"a.yaml": sidecar("a", "", "",
				"annotations: {graft.dev/mine: x}\nlabels: {team: 'not valid!'}\n")},
			want: []string{
				"a.yaml: a: with defaults: annotations[graft.dev/mine]: keys under graft.dev/ are reserved for graft",
				"a.yaml: a: with defaults: labels[team]: a valid label must be",
			},
		},
		{
			name: "the longest list repeats a port",
			files: map[string]string{"a.yaml": sidecar("a",
				"- {name: ports, type: list, default: \"80\", max: \"2\", pattern: '^[0-9]+$', description: p}\n",
				"ports:\n{{ range .ports }}- {containerPort: {{ . }}}\n{{ end }}", "")},
			want: []string{"a.yaml: a: with 2 items in ports: initContainers[graft-a]: port TCP/80 is also opened by graft-a"},
		},
		{
			name: "every parameter at its max together",
			files: map[string]string{"a.yaml": sidecar("a",
				"- {name: p, type: int, default: \"1\", max: \"2\", description: p}\n"+
					"- {name: q, type: int, default: \"1\", max: \"2\", description: q}\n",
				"env: [{name: '{{ if and (eq .p 2) (eq .q 2) }}1XY{{ else }}XY{{ end }}', value: v}]\n", "")},
			want: []string{"a.yaml: a: with every parameter at its max: initContainers[graft-a]: env[1XY]: a valid environment variable name"},
		},
		{
			name: "names shared across templates",
			files: map[string]string{
				"a.yaml": sidecar("a", "", "ports: [{containerPort: 9000}]\n",
					"volumes: [{name: shared, emptyDir: {}}]\nappContainers: {env: [{name: X, value: a}]}\n"),
				"b.yaml": strings.Replace(sidecar("b", "", "ports: [{containerPort: 9000}]\n",
					"volumes: [{name: shared, emptyDir: {}}]\nappContainers: {env: [{name: X, value: b}]}\n"),
					"name: graft-b", "name: graft-a", 1),
			},
			want: []string{
				`b.yaml: b: container "graft-a" is also injected by template a (a.yaml)`,
				`b.yaml: b: port TCP/9000 is also injected by template a (a.yaml)`,
				`b.yaml: b: volume "shared" is also injected by template a (a.yaml)`,
				`b.yaml: b: app env var X is also injected by template a (a.yaml)`,
			},
		},
		{
			name:  "unparsable file",
			files: map[string]string{"a.yaml": "name: [", "b.yaml": sidecar("b", "", "", "")},
			want:  []string{"a.yaml: a: error converting YAML to JSON"},
		},
		{
			name: "invalid parameter declaration",
			files: map[string]string{"a.yaml": sidecar("a",
				"- {name: num, type: int, default: \"5\", min: \"10\", description: n}\n", "", "")},
			want: []string{`a.yaml: a: template a: parameter num: default "5": must be at least 10`},
		},
		{
			name:  "name does not match the file",
			files: map[string]string{"x.yaml": sidecar("a", "", "", "")},
			want:  []string{`x.yaml: a: template name "a" does not match the file name`},
		},
		{
			name: "each directory is a set; testdata and hidden directories are skipped",
			files: map[string]string{
				"one/a.yaml":             sidecar("a", "", "", ""),
				"two/a.yaml":             sidecar("a", "", "", ""),
				"two/testdata/bad.yaml":  "name: [",
				"two/.hidden/bad.yaml":   "name: [",
				"three/deeper/b.yaml":    strings.Replace(sidecar("b", "", "", ""), "image: example.com/x:1", "image: ' '", 1),
				"three/deeper/notes.txt": "not a template",
			},
			want: []string{"three/deeper/b.yaml: b: with defaults: initContainers[graft-b]: image: is required"},
		},
		{
			name: "unquoted YAML 1.1 booleans",
			files: map[string]string{"a.yaml": sidecar("a",
				"- {name: level, type: enum, default: info, values: [info, off], description: l}\n"+
					"- {name: flag, type: bool, default: yes, description: f}\n", "", "")},
			want: []string{"a.yaml: a: parameter level: values[1] reads as the boolean false (YAML 1.1 takes unquoted on, off, yes, no, y and n as booleans): quote it"},
		},
		{
			name:  "no templates",
			files: map[string]string{"notes.txt": "hello"},
			want:  []string{".: -: no templates (*.yaml) found"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fsys := fstest.MapFS{}
			for name, body := range tc.files {
				fsys[name] = &fstest.MapFile{Data: []byte(body)}
			}
			problems, err := Lint(fsys)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, p := range problems {
				got = append(got, p.String())
			}
			if len(got) != len(tc.want) {
				t.Fatalf("got %d problems, want %d:\n%s", len(got), len(tc.want), strings.Join(got, "\n"))
			}
			for i, want := range tc.want {
				if !strings.HasPrefix(got[i], want) {
					t.Errorf("problem %d:\n got %s\nwant %s...", i, got[i], want)
				}
			}
		})
	}
}
