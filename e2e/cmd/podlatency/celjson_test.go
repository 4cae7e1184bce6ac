package main

import "testing"

func TestCELJSON(t *testing.T) {
	tests := []struct{ in, want string }{
		{`{"name":"a","args":["--x=1"],"restartPolicy":"Always","securityContext":{"runAsUser":1000,"readOnlyRootFilesystem":true},"x":null}`,
			`{"args": dyn(["--x=1"]), "name": dyn("a"), "restartPolicy": dyn("Always"), "securityContext": dyn({"readOnlyRootFilesystem": dyn(true), "runAsUser": dyn(1000)}), "x": dyn(null)}`},
		{`"a\"b"`, `"a\"b"`},
		{`[]`, `[]`},
	}
	for _, tt := range tests {
		got, err := celJSON([]byte(tt.in))
		if err != nil || got != tt.want {
			t.Errorf("celJSON(%s) = %s, %v; want %s", tt.in, got, err, tt.want)
		}
	}
	for _, bad := range []string{`1.5`, `{`} {
		if _, err := celJSON([]byte(bad)); err == nil {
			t.Errorf("celJSON(%s) succeeded, want an error", bad)
		}
	}
}
