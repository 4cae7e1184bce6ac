package templates

import (
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/graftdev/graft/templates/linttest"
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

// sharedCases are the shared table of template trees and the problems lint
// reports for them (templates/linttest/testdata).
func sharedCases(t *testing.T) []linttest.Case {
	t.Helper()
	cases, err := linttest.Cases()
	if err != nil {
		t.Fatal(err)
	}
	if len(cases) < 20 {
		t.Fatalf("only %d lint cases", len(cases))
	}
	return cases
}

func TestLintFindsProblems(t *testing.T) {
	for _, tc := range sharedCases(t) {
		t.Run(tc.Name, func(t *testing.T) {
			problems, err := Lint(tc.FS())
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, p := range problems {
				got = append(got, p.String())
			}
			wantLines(t, got, tc.Want)
		})
	}
}

// TestLoadRefusesWhatLintRefuses: loading each set of the table refuses
// it exactly when lint finds a problem in it, with the same lines.
func TestLoadRefusesWhatLintRefuses(t *testing.T) {
	for _, tc := range sharedCases(t) {
		for _, set := range tc.Sets() {
			t.Run(set.Name, func(t *testing.T) {
				s, err := LoadFS(set.FS())
				if len(set.Want) == 0 {
					if err != nil {
						t.Fatalf("lint accepts the set, load refuses it: %v", err)
					}
					if len(s.Names()) == 0 {
						t.Fatal("empty set loaded")
					}
					return
				}
				se, ok := errors.AsType[*SetError](err)
				if !ok {
					t.Fatalf("err = %v, want a *SetError", err)
				}
				wantLines(t, se.Lines(), set.Want)
			})
		}
	}
}

// wantLines checks that got has one line per want, each starting with it.
func wantLines(t *testing.T, got, want []string) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("got %d problems, want %d:\n%s", len(got), len(want), strings.Join(got, "\n"))
	}
	for i, w := range want {
		if !strings.HasPrefix(got[i], w) {
			t.Errorf("problem %d:\n got %s\nwant %s...", i, got[i], w)
		}
	}
}
