package webhook

import (
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/graftdev/graft/bench/corpus"
	"github.com/graftdev/graft/config"
	"github.com/graftdev/graft/templates/linttest"
)

// lintSets are the template sets of lint's shared table, one per
// directory lint checks.
func lintSets(t *testing.T) []linttest.Case {
	t.Helper()
	cases, err := linttest.Cases()
	if err != nil {
		t.Fatal(err)
	}
	var sets []linttest.Case
	for _, c := range cases {
		sets = append(sets, c.Sets()...)
	}
	return sets
}

// TestStartRefusesWhatLintRefuses: graft serve does not start on a
// templates directory lint refuses, and says why in lint's words.
func TestStartRefusesWhatLintRefuses(t *testing.T) {
	for _, set := range lintSets(t) {
		if len(set.Want) == 0 {
			continue // TestReloadRefusesWhatLintRefuses serves these
		}
		t.Run(set.Name, func(t *testing.T) {
			dir := t.TempDir()
			if err := set.Write(dir); err != nil {
				t.Fatal(err)
			}
			_, err := New(Options{
				Logger:   zap.NewNop(),
				Registry: prometheus.NewRegistry(),
				Override: func(s *config.Server) { s.TemplatesDir = dir },
			})
			if bad := set.CheckLoad(dir, err); bad != nil {
				t.Fatal(bad)
			}
		})
	}
}

// TestReloadRefusesWhatLintRefuses: a running server handed each set of
// lint's table in its templates directory refuses exactly the sets lint
// refuses: the previous state serves on, the refusal is counted as
// reloads{result="error"} and logged with lint's problem lines; the sets
// lint accepts are served.
func TestReloadRefusesWhatLintRefuses(t *testing.T) {
	dir := t.TempDir()
	sets := lintSets(t)
	for _, set := range sets {
		if len(set.Want) == 0 {
			if err := set.Write(dir); err != nil {
				t.Fatal(err)
			}
			break
		}
	}
	// The profiles use built-in templates only, so every set is about
	// lint alone, not about a profile losing its template.
	ts := startServer(t, serverSetup{
		configYAML: "profiles:\n  enabled: {templates: [otel-agent]}\n",
		override:   func(s *config.Server) { s.TemplatesDir = dir },
	})
	review := corpus.Review(corpus.Small)
	for _, set := range sets {
		t.Run(set.Name, func(t *testing.T) {
			errorsBefore := metric(t, ts.reg, "graft_config_reloads_total", "result", "error")
			replaceDir(t, dir, set)
			// Writing a set is several file events; a reload may see part
			// of it. Wait for the reload that judges the whole set.
			deadline := time.After(20 * time.Second)
			for {
				before := ts.state.Load()
				var err error
				select {
				case err = <-ts.reloads:
				case <-deadline:
					t.Fatalf("no reload judged the set as lint does; logs:\n%s", ts.logs.String())
				}
				if set.CheckLoad(dir, err) != nil {
					continue
				}
				if err != nil && ts.state.Load() != before {
					t.Fatal("a refused reload replaced the serving state")
				}
				break
			}
			if len(set.Want) > 0 {
				if got := metric(t, ts.reg, "graft_config_reloads_total", "result", "error"); got <= errorsBefore {
					t.Errorf("reloads{error} = %v, was %v: the refusal is not counted", got, errorsBefore)
				}
				rejected := ts.logs.lines(t, "config reload rejected; the previous configuration keeps serving")
				if len(rejected) == 0 {
					t.Fatal("refusal not logged")
				}
				if bad := set.Match(dir, logStrings(rejected[len(rejected)-1]["problems"])); bad != nil {
					t.Errorf("logged problems: %v", bad)
				}
			}
			if code, out := ts.post(t, "/inject", review); code != http.StatusOK {
				t.Fatalf("not serving after the set: %d %.300s", code, out)
			}
		})
	}
}

// replaceDir empties dir and writes set into it.
func replaceDir(t *testing.T, dir string, set linttest.Case) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
			t.Fatal(err)
		}
	}
	if err := set.Write(dir); err != nil {
		t.Fatal(err)
	}
}

// logStrings reads a JSON log field holding a list of strings.
func logStrings(v any) []string {
	list, _ := v.([]any)
	out := make([]string, 0, len(list))
	for _, s := range list {
		str, _ := s.(string)
		out = append(out, str)
	}
	return out
}
