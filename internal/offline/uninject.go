package offline

import (
	"strings"

	"github.com/graftdev/graft/inject"
	"github.com/graftdev/graft/internal/manifest"
	"github.com/graftdev/graft/internal/names"
)

// Uninject removes from every Pod and Pod template of docs, in place,
// exactly what its graft.dev/status record says graft added, reporting
// each object to rep. Without keepText (the output is JSON), the
// documents' text is dropped. It returns every document's errors.
func Uninject(docs []*manifest.Document, rep *Report, keepText bool) error {
	var errs []error
	for _, d := range docs {
		errs = append(errs, uninjectDocument(d, rep, keepText)...)
	}
	return manifest.JoinProblems(errs...)
}

// uninjectDocument removes graft's parts from every Pod of d, in place.
// Errors name the document.
func uninjectDocument(d *manifest.Document, rep *Report, keepText bool) []error {
	spots, err := manifest.FindPods(d)
	if err != nil {
		return []error{d.WrapError("", err)}
	}
	var errs []error
	var ops []manifest.PatchOp
	for _, s := range spots {
		if s.Holder == nil {
			reportNoTemplate(d, s, rep)
			continue
		}
		pod, err := s.PodJSON()
		if err != nil {
			errs = append(errs, d.WrapErrorAt(s.Object, s.What, err))
			continue
		}
		un, err := inject.Uninject(pod)
		if err != nil {
			errs = append(errs, d.WrapErrorAt(s.Object, s.What, err))
			continue
		}
		if string(un.Patch) == "[]" {
			rep.object(d, s.Ref(), "no "+names.Status+": unchanged")
			continue
		}
		o, err := s.DocumentOps(un.Patch)
		if err != nil {
			errs = append(errs, d.WrapErrorAt(s.Object, s.What, err))
			continue
		}
		ops = append(ops, o...)
		rep.object(d, s.Ref(), "uninjected "+recordedTemplates(un.Status))
	}
	if len(errs) > 0 || len(ops) == 0 {
		return errs
	}
	return patchDocument(d, ops, keepText, rep)
}

// recordedTemplates names what a record says graft injected.
func recordedTemplates(st inject.Status) string {
	var names []string
	for _, t := range st.Templates {
		names = append(names, t.Name)
	}
	if len(names) == 0 {
		return "a version 1 record's containers"
	}
	return strings.Join(names, ", ")
}
