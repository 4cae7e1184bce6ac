package config

import (
	"testing"
)

// FuzzParse: any bytes give a configuration or an *Error, never a panic.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"", "profiles: {a: {templates: [agent]}}\n", "server: {budget: 1s, addr: ':1'}\n",
		"a: &x [*x]\n", "<<: {defaultProfile: x}\n", "profiles:\n  a:\n    <<: [*b]\n",
		"server: [\n", "\t", "---\n---\n", "!!binary x: y\n",
		"revisions: {next: {profiles: {enabled: {templates: [agent]}}}}\ntags: {canary: {split: [{revision: next, percent: 10}, {revision: default, percent: 90}]}}\n",
		"tags: {a: {revision: default}, b: {split: [{revision: a, percent: 100}]}}\ndefaultRevision: a\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		_, err := Parse("f.yaml", data)
		if err != nil && !IsError(err) {
			t.Fatalf("error %v (%T) is not a config *Error", err, err)
		}
	})
}
