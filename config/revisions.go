package config

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	yamlv3 "go.yaml.in/yaml/v3"

	"github.com/graftdev/graft/inject"
	"github.com/graftdev/graft/templates"
)

// Revision is a revision served besides the top level's, under
// `revisions:`. What it leaves out it takes from the top level.
type Revision struct {
	// TemplatesDir overlays the built-in templates for this revision;
	// empty: the top level's templates.
	TemplatesDir string `json:"templatesDir,omitempty"`
	// DefaultProfile is served on /inject; empty: the top level's.
	DefaultProfile string `json:"defaultProfile,omitempty"`
	// Profiles replace the top level's profiles of the same names; the
	// others are the top level's. A revision cannot add a profile: every
	// profile has its webhooks for every revision.
	Profiles map[string]inject.Profile `json:"profiles,omitempty"`
}

// Tag names one revision, or splits Pods between revisions by percentage.
type Tag struct {
	// Revision is the revision the tag names; set it or split, not both.
	Revision string `json:"revision,omitempty"`
	// Split shares the tag's Pods between revisions, whole percentages
	// adding up to 100; all Pods of one controller get the same revision.
	Split []Share `json:"split,omitempty"`
}

// Share is one revision's whole percentage of a split tag.
type Share struct {
	// Revision is the revision that gets this share.
	Revision string `json:"revision"`
	// Percent is the share, 1 to 100.
	Percent int `json:"percent"`
}

// topRevision is the top level's revision name, defaulted.
func (f *File) topRevision() string {
	if f.Revision == "" {
		return inject.DefaultRevision
	}
	return f.Revision
}

// checkRevisions validates revisions, tags and defaultRevision, naming the
// line of each problem.
func (f *File) checkRevisions(file string, root *yamlv3.Node) error {
	fail := func(path []string, format string, args ...any) error {
		return &Error{File: file, Line: lineAt(root, path...), Path: strings.Join(path, "."), Msg: fmt.Sprintf(format, args...)}
	}
	top := f.topRevision()
	if err := inject.CheckName(top); err != nil {
		return fail([]string{"revision"}, "%v", err)
	}
	isRevision := func(name string) bool {
		_, ok := f.Revisions[name]
		return name == top || ok
	}
	for _, name := range slices.Sorted(maps.Keys(f.Revisions)) {
		r := f.Revisions[name]
		path := []string{"revisions", name}
		if err := inject.CheckName(name); err != nil {
			return fail(path, "%v", err)
		}
		if name == top {
			return fail(path, "%q is the top level's revision (revision: %s); name this one otherwise", name, top)
		}
		for _, p := range slices.Sorted(maps.Keys(r.Profiles)) {
			if _, ok := f.Profiles[p]; !ok {
				return fail(append(path, "profiles", p), "the top level has no profile %q: a revision may only replace the top level's profiles, "+
					"since each profile has webhooks for every revision", p)
			}
		}
		if r.DefaultProfile != "" {
			if _, ok := f.Profiles[r.DefaultProfile]; !ok {
				return fail(append(path, "defaultProfile"), "no profile %q", r.DefaultProfile)
			}
		}
	}
	for _, name := range slices.Sorted(maps.Keys(f.Tags)) {
		t := f.Tags[name]
		path := []string{"tags", name}
		if err := inject.CheckName(name); err != nil {
			return fail(path, "%v", err)
		}
		if isRevision(name) {
			return fail(path, "%q is a revision: a tag needs a name of its own", name)
		}
		switch {
		case (t.Revision == "") == (len(t.Split) == 0):
			return fail(path, "give either revision or split")
		case t.Revision != "" && !isRevision(t.Revision):
			return fail(append(path, "revision"), "no revision %q (revisions: %s)", t.Revision, strings.Join(f.RevisionNames(), ", "))
		}
		total := 0
		for i, s := range t.Split {
			at := append(slices.Clone(path), fmt.Sprintf("split[%d]", i))
			switch {
			case !isRevision(s.Revision):
				return fail(append(at, "revision"), "no revision %q (revisions: %s)", s.Revision, strings.Join(f.RevisionNames(), ", "))
			case slices.ContainsFunc(t.Split[:i], func(o Share) bool { return o.Revision == s.Revision }):
				return fail(append(at, "revision"), "revision %q is already in this split", s.Revision)
			case s.Percent < 0 || s.Percent > 100:
				return fail(append(at, "percent"), "%d: want a whole percentage from 0 to 100", s.Percent)
			}
			total += s.Percent
		}
		if len(t.Split) > 0 && total != 100 {
			return fail(append(path, "split"), "the percentages add up to %d, want 100", total)
		}
	}
	if d := f.DefaultRevision; d != "" {
		if _, tag := f.Tags[d]; !tag && !isRevision(d) {
			return fail([]string{"defaultRevision"}, "%q is neither a revision nor a tag", d)
		}
	}
	return nil
}

// RevisionNames lists the top level's revision, then the others sorted.
func (f *File) RevisionNames() []string {
	return append([]string{f.topRevision()}, slices.Sorted(maps.Keys(f.Revisions))...)
}

// TagNames lists the tags, sorted.
func (f *File) TagNames() []string { return slices.Sorted(maps.Keys(f.Tags)) }

// EngineConfig returns the engine configuration of a revision: the top
// level's, or a revision's with what it leaves out taken from the top
// level. False for a name that is not a revision.
func (f *File) EngineConfig(revision string) (inject.Config, bool) {
	if revision == f.topRevision() {
		top := f.Config
		top.Revision = revision
		return top, true
	}
	r, ok := f.Revisions[revision]
	if !ok {
		return inject.Config{}, false
	}
	cfg := inject.Config{
		Revision:           revision,
		DefaultProfile:     cmp.Or(r.DefaultProfile, f.DefaultProfile),
		Profiles:           maps.Clone(f.Profiles),
		ExcludedNamespaces: f.ExcludedNamespaces,
		MaxPatchBytes:      f.MaxPatchBytes,
	}
	maps.Copy(cfg.Profiles, r.Profiles)
	return cfg, true
}

// Targets returns the revisions a graft.dev/rev value serves from: a
// revision itself, or a tag's revisions with a share above 0; nil for an
// unknown name. An empty name is the default revision's.
func (f *File) Targets(name string) []string {
	if name == "" {
		name = cmp.Or(f.DefaultRevision, f.topRevision())
	}
	t, ok := f.Tags[name]
	switch {
	case !ok && slices.Contains(f.RevisionNames(), name):
		return []string{name}
	case !ok:
		return nil
	case t.Revision != "":
		return []string{t.Revision}
	}
	var out []string
	for _, s := range t.Split {
		if s.Percent > 0 {
			out = append(out, s.Revision)
		}
	}
	return out
}

// RevisionsConfig returns what inject.NewRevisions builds from: the top
// level as the first revision, with the templates of templatesDir (the
// built-in ones overlaid; the caller resolves flags against
// server.templatesDir), then each revision in name order with its own
// templates, and the tags.
func (f File) RevisionsConfig(templatesDir string) (inject.RevisionsConfig, error) {
	return f.RevisionsConfigWith(templatesDir, Templates)
}

// TemplatesLoader returns the template set of a templates directory as
// Templates does: the built-in set, overlaid by dir's when dir is not
// empty.
type TemplatesLoader func(dir string) (*templates.Set, error)

// RevisionsConfigWith is RevisionsConfig with the template directories
// (templatesDir and the revisions') read by load: graft's live commands
// read the directories graft's Pods mount from ConfigMaps in the cluster.
func (f File) RevisionsConfigWith(templatesDir string, load TemplatesLoader) (inject.RevisionsConfig, error) {
	topSet, err := load(templatesDir)
	if err != nil {
		return inject.RevisionsConfig{}, err
	}
	out := inject.RevisionsConfig{Default: f.DefaultRevision}
	for _, name := range f.RevisionNames() {
		cfg, _ := f.EngineConfig(name)
		set := topSet
		if dir := f.Revisions[name].TemplatesDir; dir != "" {
			if set, err = load(dir); err != nil {
				return inject.RevisionsConfig{}, fmt.Errorf("revisions.%s.templatesDir: %w", name, err)
			}
		}
		out.Revisions = append(out.Revisions, inject.RevisionConfig{Config: cfg, Templates: set})
	}
	for _, name := range f.TagNames() {
		t := f.Tags[name]
		split := make([]inject.Share, 0, max(1, len(t.Split)))
		if t.Revision != "" {
			split = append(split, inject.Share{Revision: t.Revision, Percent: 100})
		}
		for _, s := range t.Split {
			split = append(split, inject.Share{Revision: s.Revision, Percent: s.Percent})
		}
		out.Tags = append(out.Tags, inject.TagConfig{Name: name, Split: split})
	}
	return out, nil
}

// lineAt is the line of the key at path, whose segments are mapping keys,
// each optionally followed by list indices as in "split[1]" (the form
// Error.Path uses; an index gives its element's line), or of the deepest
// part of it that exists; 1 when not even the first does.
func lineAt(root *yamlv3.Node, path ...string) int {
	line := 1
	n := root
	for _, seg := range path {
		if n == nil {
			break
		}
		k, v := mappingEntry(n, seg)
		var indices []int
		if k == nil {
			var key string
			key, indices = splitIndices(seg)
			k, v = mappingEntry(n, key)
		}
		if k == nil {
			break
		}
		line, n = k.Line, v
		for _, i := range indices {
			n = resolve(n)
			if n.Kind != yamlv3.SequenceNode || i >= len(n.Content) {
				return line
			}
			n = n.Content[i]
			line = n.Line
		}
	}
	return line
}

// mappingEntry returns the key and value nodes of key in the mapping n,
// or nils.
func mappingEntry(n *yamlv3.Node, key string) (k, v *yamlv3.Node) {
	n = resolve(n)
	if n.Kind != yamlv3.MappingNode {
		return nil, nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i], n.Content[i+1]
		}
	}
	return nil, nil
}

// splitIndices splits "split[1][2]" into "split" and [1 2]; anything else
// is returned whole, without indices.
func splitIndices(seg string) (string, []int) {
	key, rest, ok := strings.Cut(seg, "[")
	if !ok {
		return seg, nil
	}
	var indices []int
	for _, part := range strings.Split(strings.TrimSuffix(rest, "]"), "][") {
		i, err := strconv.Atoi(part)
		if err != nil || i < 0 {
			return seg, nil
		}
		indices = append(indices, i)
	}
	return key, indices
}
