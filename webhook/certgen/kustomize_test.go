package certgen

import (
	"bytes"
	"strings"
	"testing"
)

func TestCABundleExtras(t *testing.T) {
	b, err := Generate(Options{DNSNames: []string{"graft"}})
	if err != nil {
		t.Fatal(err)
	}
	prev, err := Generate(Options{DNSNames: []string{"graft"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		extra []byte
		certs int    // in the bundle, when no error
		err   string // substring, when an error is expected
	}{
		{name: "none", certs: 1},
		{name: "previous CA", extra: prev.CACert, certs: 2},
		{name: "previous CA twice and the new one", extra: bytes.Join([][]byte{prev.CACert, prev.CACert, b.CACert}, nil), certs: 2},
		{name: "surrounding whitespace", extra: append(append([]byte("\n"), prev.CACert...), "\n\n"...), certs: 2},
		{name: "a key", extra: b.TLSKey, err: `"PRIVATE KEY" block`},
		{name: "a serving certificate", extra: b.TLSCert, err: "not a CA"},
		{name: "trailing garbage", extra: append(bytes.Clone(prev.CACert), "garbage"...), err: "not PEM"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := b.CABundle(tc.extra)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if n := bytes.Count(got, []byte("-----BEGIN CERTIFICATE-----")); n != tc.certs {
				t.Errorf("%d certificates, want %d", n, tc.certs)
			}
			if !bytes.HasPrefix(got, b.CACert) {
				t.Error("the bundle does not start with the new CA")
			}
		})
	}
}

func TestManifestsNeedNamespace(t *testing.T) {
	b, err := Generate(Options{DNSNames: []string{"graft"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := b.Manifests(KustomizeOptions{}); err == nil {
		t.Fatal("want an error without a namespace")
	}
}
