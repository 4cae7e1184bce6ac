package templates

import (
	"errors"
	"os"
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
			if err := tc.Match("", got); err != nil {
				t.Error(err)
			}
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
				if bad := set.CheckLoad("", err); bad != nil {
					t.Fatal(bad)
				}
				if _, ok := errors.AsType[*SetError](err); err != nil && !ok {
					t.Fatalf("err %T, want a *SetError", err)
				}
				if err == nil && len(s.Names()) == 0 {
					t.Fatal("empty set loaded")
				}
			})
		}
	}
}
