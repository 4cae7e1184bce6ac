package inject

import (
	"cmp"
	"slices"
	"strings"
)

// Writing graft.dev/status: the record the Pod carried, merged with what
// this request adds, in one canonical form
// (keys in a fixed order, empty lists and maps left out), so a Pod that
// needs nothing more compares equal byte for byte and is not patched.
//
// The record is written escaped, as the content of the JSON string the
// patch and the API server carry it in: a Pod graft injected sends back
// exactly these bytes, and the patch splices them in as they are. Each
// name is escaped twice (for the record, then for the string), which for
// the DNS names and keys records hold is a copy.

// outEntry is one template entry of the record being written: rec indexes
// the Pod's record (-1: a template injected for the first time), ti the
// plan's templates (-1: this request adds nothing to it).
type outEntry struct{ rec, ti int }

// appendRecord appends the record to write, escaped (see above): r's
// entries of the templates pl injects, in their order, each with what
// this request added for its template and what of it the Pod holds as
// graft renders it, then an entry for each template of pl injected now
// that r lacks, then the kept list: what graft left to the Pod under
// onConflict: keep. An entry of another template, or of one left out,
// is dropped: nothing of such a template is graft's in this Pod. pl nil
// writes r alone, canonically. Names from r and the Pod are raw JSON
// string content, already escaped once; the plan's are not.
func (s *scratch) appendRecord(dst []byte, r *record, pl *plan, p *pod) []byte {
	s.out = s.out[:0]
	for i := range r.entries {
		ti := -1
		if pl != nil {
			ti = pl.templateIndex(r.entries[i].name)
			if ti < 0 || s.skipped[ti] || r.find(r.entries[i].name) != i {
				continue
			}
		}
		s.out = append(s.out, outEntry{rec: i, ti: ti})
	}
	if pl != nil {
		for ti := range pl.tmpls {
			if !s.skipped[ti] && r.find(pl.tmpls[ti].name) < 0 {
				s.out = append(s.out, outEntry{rec: -1, ti: ti})
			}
		}
	}
	dst = append(dst, `{\"version\":2`...)
	open := false
	for _, o := range s.out {
		for _, k := range [...]listKind{kInits, kContainers} {
			dst = s.appendNames(dst, &open, `,\"injected\":[`, r, o, pl, k)
		}
	}
	if open {
		dst = append(dst, ']')
	}
	if len(s.out) > 0 {
		dst = append(dst, `,\"templates\":[`...)
		for i, o := range s.out {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = s.appendEntry(dst, r, o, pl, p)
		}
		dst = append(dst, ']')
	}
	if pl == nil {
		dst = appendKeptRecorded(dst, r)
	} else {
		dst = s.appendKept(dst, pl)
	}
	return append(dst, '}')
}

// appendKept appends the kept list of this request: per template left
// out (in plan order), then per other template whose names the Pod's
// objects take (in the Pod's order), the objects graft left to the Pod.
func (s *scratch) appendKept(dst []byte, pl *plan) []byte {
	open := false
	for ti := range pl.tmpls {
		if s.skipped[ti] {
			t := &pl.tmpls[ti]
			dst = s.appendKeptEntry(dst, &open, t.name, t.form)
		}
	}
	for i := range s.keptObjs {
		k := &s.keptObjs[i]
		if pl.templateIndex(k.template) >= 0 || slices.ContainsFunc(s.keptObjs[:i], func(o keptObject) bool { return o.template == k.template }) {
			continue
		}
		dst = s.appendKeptEntry(dst, &open, k.template, formOf(k.template))
	}
	if open {
		dst = append(dst, ']')
	}
	return dst
}

// appendKeptEntry appends the kept entry of template tmpl: its objects
// in s.keptObjs, by kind.
func (s *scratch) appendKeptEntry(dst []byte, open *bool, tmpl string, f nameForm) []byte {
	if *open {
		dst = append(dst, ',')
	} else {
		dst = append(dst, `,\"kept\":[`...)
		*open = true
	}
	dst = append(dst, `{\"name\":\"`...)
	dst = appendRecordName(dst, tmpl, f)
	dst = append(dst, '\\', '"')
	for _, k := range [...]listKind{kInits, kContainers, kVolumes} {
		listOpen := false
		for i := range s.keptObjs {
			if o := &s.keptObjs[i]; o.template == tmpl && o.kind == k {
				dst = appendName(dst, &listOpen, kindHeads[k], o.name, formRaw)
			}
		}
		if listOpen {
			dst = append(dst, ']')
		}
	}
	return append(dst, '}')
}

// appendKeptRecorded appends r's kept list as it is, canonically.
func appendKeptRecorded(dst []byte, r *record) []byte {
	for i := range r.kept {
		e := &r.kept[i]
		if i == 0 {
			dst = append(dst, `,\"kept\":[`...)
		} else {
			dst = append(dst, ',')
		}
		dst = append(dst, `{\"name\":\"`...)
		dst = appendRecordName(dst, e.name, r.form())
		dst = append(dst, '\\', '"')
		for _, k := range [...]listKind{kInits, kContainers, kVolumes} {
			open := false
			for _, n := range r.list(e.lists[k]) {
				dst = appendName(dst, &open, kindHeads[k], n, r.form())
			}
			if open {
				dst = append(dst, ']')
			}
		}
		dst = append(dst, '}')
	}
	if len(r.kept) > 0 {
		dst = append(dst, ']')
	}
	return dst
}

func (s *scratch) appendEntry(dst []byte, r *record, o outEntry, pl *plan, p *pod) []byte {
	dst = append(dst, `{\"name\":\"`...)
	if o.rec >= 0 {
		e, f := &r.entries[o.rec], r.form()
		dst = appendRecordName(dst, e.name, f)
		dst = append(dst, `\",\"revision\":\"`...)
		dst = appendRecordName(dst, e.revision, f)
		dst = append(dst, `\",\"digest\":\"`...)
		dst = appendRecordName(dst, e.digest, f)
	} else {
		t := &pl.tmpls[o.ti]
		dst = appendRecordName(dst, t.name, t.form)
		dst = append(dst, `\",\"revision\":\"`...)
		dst = appendRecordName(dst, t.revision, t.form)
		dst = append(dst, `\",\"digest\":\"`...)
		dst = appendRecordName(dst, t.digest, formVerbatim)
	}
	dst = append(dst, '\\', '"')
	for k := range numKinds {
		open := false
		dst = s.appendNames(dst, &open, kindHeads[k], r, o, pl, k)
		if open {
			dst = append(dst, ']')
		}
	}
	dst = s.appendApps(dst, r, o, pl, p)
	dst = s.appendPodResources(dst, r, o)
	return append(dst, '}')
}

// appendNames appends list k of entry o: the recorded names, then those
// this request added, or found the Pod holds as graft renders them, that
// the record lacks. The first name writes head.
func (s *scratch) appendNames(dst []byte, open *bool, head string, r *record, o outEntry, pl *plan, k listKind) []byte {
	var have []string
	if o.rec >= 0 {
		have = r.list(r.entries[o.rec].lists[k])
		for _, n := range have {
			dst = appendName(dst, open, head, n, r.form())
		}
	}
	if o.ti < 0 {
		return dst
	}
	els := pl.kind(k)
	for i := range els {
		if el := &els[i]; el.tmpl == o.ti && (s.added[el.ref] || s.owned[el.ref]) && !contains(have, el.name) {
			dst = appendName(dst, open, head, el.name, el.form)
		}
	}
	return dst
}

// appendName appends one quoted name of a list, opening it with head.
func appendName(dst []byte, open *bool, head, name string, f nameForm) []byte {
	if *open {
		dst = append(dst, ',')
	} else {
		dst = append(dst, head...)
		*open = true
	}
	dst = append(dst, '\\', '"')
	dst = appendRecordName(dst, name, f)
	return append(dst, '\\', '"')
}

// nameForm says how a name reaches the record's escaped text.
type nameForm uint8

const (
	// formRaw: raw JSON string content (the request's, a record's):
	// escaped once more, for the string the record travels in.
	formRaw nameForm = iota
	// formValue: a value (the plan's): escaped for the record, then again.
	formValue
	// formVerbatim: needs no escaping (see unescaped).
	formVerbatim
)

// formOf is the form of a value: verbatim when escaping leaves it as it is.
func formOf(value string) nameForm {
	if unescaped(value) {
		return formVerbatim
	}
	return formValue
}

// form is the form of the record's names: raw JSON string content,
// verbatim when the record's text held no backslash (no name can then
// hold a quote either).
func (r *record) form() nameForm {
	if r.plain {
		return formVerbatim
	}
	return formRaw
}

// appendRecordName appends name, in form f, as the record's text.
func appendRecordName(dst []byte, name string, f nameForm) []byte {
	switch {
	case f == formVerbatim || unescaped(name):
		return append(dst, name...) // both escapes leave it as it is
	case f == formValue:
		var buf [64]byte
		return appendEscaped(dst, b2s(appendEscaped(buf[:0], name)))
	}
	return appendEscaped(dst, name)
}

// appendApps appends entry o's appContainers: by container name, sorted,
// the env var names and mounts recorded and those added now.
//
// Its cost is linear in the Pod's size (sort aside): one row per
// recorded container and per edit this request makes to an app
// container, sorted by name, so each container's lists are written from
// its own rows. (Searching every edit for each container made a Pod with
// 10,000 app containers take seconds.)
func (s *scratch) appendApps(dst []byte, r *record, o outEntry, pl *plan, p *pod) []byte {
	rows := s.appRows[:0]
	if o.rec >= 0 {
		e := &r.entries[o.rec]
		for i := e.apps.from; i < e.apps.to; i++ {
			rows = append(rows, appRow{name: r.apps[i].name, rec: i, edit: -1})
		}
	}
	if o.ti >= 0 {
		for i := range s.edits {
			ed := &s.edits[i]
			if (ed.target == tEnv || ed.target == tMounts) && s.editAddsFor(ed, pl, o.ti) {
				rows = append(rows, appRow{name: p.containers[ed.index].name, rec: -1, edit: i})
			}
		}
	}
	slices.SortFunc(rows, compareAppRows)
	s.appRows = rows
	open := false
	for i := 0; i < len(rows); {
		if s.budget.spent() {
			break // admit answers budget-exceeded
		}
		j := i + 1
		for j < len(rows) && rows[j].name == rows[i].name {
			j++
		}
		group := rows[i:j]
		i = j
		// The record's own entry for the name, if any, sorts first; a
		// record naming a container twice keeps its first entry.
		var rec *recApp
		if group[0].rec >= 0 {
			rec = &r.apps[group[0].rec]
		}
		mark := len(dst)
		if open {
			dst = append(dst, ',')
		} else {
			dst = append(dst, `,\"appContainers\":{`...)
		}
		dst = append(dst, '\\', '"')
		dst = appendRecordName(dst, group[0].name, formRaw)
		dst = append(dst, `\":{`...)
		body := len(dst)
		for _, k := range [...]target{tEnv, tMounts} {
			dst = s.appendAppList(dst, body, r, rec, group, o, pl, k)
		}
		if len(dst) == body {
			dst = dst[:mark] // nothing recorded for this container
			continue
		}
		dst = append(dst, '}')
		open = true
	}
	if open {
		dst = append(dst, '}')
	}
	return dst
}

// appRow is one source of an app container's record entry: the Pod's
// record (rec indexes record.apps) or an edit of this request (edit
// indexes scratch.edits); the other index is -1.
type appRow struct {
	name      string
	rec, edit int
}

// compareAppRows orders rows by name, then the record's before the
// edits, each in its own order: a total order, so the output is
// deterministic.
func compareAppRows(a, b appRow) int {
	if c := strings.Compare(a.name, b.name); c != 0 {
		return c
	}
	if c := cmp.Compare(a.edit, b.edit); c != 0 {
		return c
	}
	return cmp.Compare(a.rec, b.rec)
}

// appendAppList appends the env (tEnv) or volumeMounts (tMounts) list of
// one app container, from its rows; body is where the container's object
// starts.
func (s *scratch) appendAppList(dst []byte, body int, r *record, rec *recApp, rows []appRow, o outEntry, pl *plan, t target) []byte {
	head := `\"env\":[`
	if t == tMounts {
		head = `\"volumeMounts\":[`
	}
	if len(dst) > body {
		head = "," + head
	}
	var have []string
	if rec != nil {
		have = r.list(rec.env)
		if t == tMounts {
			have = r.list(rec.mounts)
		}
	}
	open := false
	for _, n := range have {
		dst = appendName(dst, &open, head, n, r.form())
	}
	if o.ti >= 0 {
		for _, row := range rows {
			if row.edit < 0 || s.edits[row.edit].target != t {
				continue
			}
			ed := &s.edits[row.edit]
			for _, in := range s.inserts[ed.from:ed.to] {
				el := pl.byRef[in.ref]
				if el.tmpl == o.ti && !contains(have, el.name) {
					dst = appendName(dst, &open, head, el.name, el.form)
				}
			}
		}
	}
	if open {
		dst = append(dst, ']')
	}
	return dst
}

// unescaped reports whether escaping leaves s as it is: printable ASCII
// without quotes or backslashes, as DNS names and annotation keys are.
func unescaped(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}

// editAddsFor reports whether edit ed adds an element of template ti.
func (s *scratch) editAddsFor(ed *edit, pl *plan, ti int) bool {
	for _, in := range s.inserts[ed.from:ed.to] {
		if pl.byRef[in.ref].tmpl == ti {
			return true
		}
	}
	return false
}
