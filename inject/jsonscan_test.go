package inject

import (
	"strings"
	"testing"
)

func TestScannerSkip(t *testing.T) {
	tests := []struct {
		in      string
		wantEnd int
		wantErr bool
	}{
		{`"abc"x`, 5, false},
		{`"a\"b"x`, 6, false},
		{`"a\\"x`, 5, false},
		{`{"a":{"b":[1,2]}} x`, 17, false},
		{`[1,[2,[3]]],`, 11, false},
		{`true,`, 4, false},
		{`null`, 4, false},
		{`-12.5e3,`, 7, false},
		{`"unterminated`, 0, true},
		{`{"a":`, 0, true},
		{`nul`, 0, true},
		{``, 0, true},
		{`}`, 0, true},
	}
	for _, tt := range tests {
		sc := scanner{s: tt.in}
		err := sc.skip()
		if (err != nil) != tt.wantErr {
			t.Errorf("%q: err = %v, want error %v", tt.in, err, tt.wantErr)
			continue
		}
		if err == nil && sc.i != tt.wantEnd {
			t.Errorf("%q: end %d, want %d", tt.in, sc.i, tt.wantEnd)
		}
	}
}

func TestHasQuoteOrBackslash(t *testing.T) {
	for i := range 8 {
		for _, c := range []byte{'"', '\\'} {
			b := []byte("abcdefgh")
			b[i] = c
			if !hasQuoteOrBackslash(load64(string(b), 0)) {
				t.Errorf("%q: missed %q at %d", b, c, i)
			}
		}
	}
	for _, s := range []string{"abcdefgh", "\x00\x01!#[]\\x7f", "\xff\xfe\x80\x81!#$%"} {
		if len(s) >= 8 && hasQuoteOrBackslash(load64(s, 0)) && !strings.ContainsAny(s[:8], "\"\\") {
			t.Errorf("%q: false positive", s)
		}
	}
}

func TestScannerStrings(t *testing.T) {
	for _, tt := range []struct {
		in, raw string
		esc     bool
	}{
		{`"short"`, "short", false},
		{`"exactly8"`, "exactly8", false},
		{`"a much longer string that spans several words"`, "a much longer string that spans several words", false},
		{`"long with escape \" in the middle of it all"`, `long with escape \" in the middle of it all`, true},
		{`"ends with escaped backslash\\"`, `ends with escaped backslash\\`, true},
		{`"12345678\"12345678"`, `12345678\"12345678`, true},
	} {
		sc := scanner{s: tt.in + ",rest"}
		raw, esc, err := sc.str()
		if err != nil || raw != tt.raw || esc != tt.esc || sc.s[sc.i:] != ",rest" {
			t.Errorf("%s: got %q %v %v at %d", tt.in, raw, esc, err, sc.i)
		}
	}
}
