package export

import (
	"testing"
)

func TestPatternChars(t *testing.T) {
	cases := []struct {
		pattern          string
		any              bool
		all, first, last string // runes that must be in each set
		notIn            string // runes that must not be in all
		nullable         bool
	}{
		{pattern: "", any: true, nullable: true},
		{pattern: "[a-z]+", any: true, nullable: true},  // unanchored: any text around a match
		{pattern: "^[a-z]+", any: true, nullable: true}, // anchored at one end only
		{pattern: "^[a-z]+$", all: "az", first: "a", last: "z", notIn: "A:0"},
		{pattern: "^(ab|c)*$", all: "abc", first: "ac", last: "bc", nullable: true},
		{pattern: "^x(?i:y)$", all: "xyY", first: "x", last: "yY", notIn: "X"},
		{pattern: "^[^,]+$", any: true},
		{pattern: `^([1-9][0-9]{0,3}|6553[0-5])$`, all: "0123456789", first: "16", last: "05", notIn: ":"},
		{pattern: "^a$|^b$", all: "ab", first: "ab", last: "ab"},
	}
	for _, tc := range cases {
		c := patternChars(tc.pattern)
		if c.all.any != tc.any {
			t.Errorf("%q: any %t, want %t", tc.pattern, c.all.any, tc.any)
			continue
		}
		if c.nullable != tc.nullable {
			t.Errorf("%q: nullable %t, want %t", tc.pattern, c.nullable, tc.nullable)
		}
		for set, want := range map[string]string{"all": tc.all, "first": tc.first, "last": tc.last} {
			rs := map[string]runeSet{"all": c.all, "first": c.first, "last": c.last}[set]
			for _, r := range want {
				if !rs.has(r) {
					t.Errorf("%q: %s lacks %q", tc.pattern, set, r)
				}
			}
		}
		for _, r := range tc.notIn {
			if c.all.has(r) {
				t.Errorf("%q: all holds %q", tc.pattern, r)
			}
		}
	}
}
