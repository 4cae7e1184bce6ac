package manifest

import (
	"errors"
	"fmt"
	"strings"
)

// MaxProblems bounds how many problems one run reports: enough to fix a
// batch at once, not a screen per broken Pod of a 10,000-item List.
const MaxProblems = 20

// JoinProblems returns errs as one error, a problem per line (joined
// errors among them flattened), the first MaxProblems of them and then
// how many more there were; nil when there are none.
func JoinProblems(errs ...error) error {
	var flat []error
	var add func(err error)
	add = func(err error) {
		if err == nil {
			return
		}
		if j, ok := err.(interface{ Unwrap() []error }); ok {
			for _, e := range j.Unwrap() {
				add(e)
			}
			return
		}
		flat = append(flat, err)
	}
	for _, err := range errs {
		add(err)
	}
	switch {
	case len(flat) == 0:
		return nil
	case len(flat) == 1:
		return flat[0]
	}
	return &problems{errs: flat}
}

// problems is several errors, reported one per line, bounded.
type problems struct{ errs []error }

func (p *problems) Error() string {
	var b strings.Builder
	for i, err := range p.errs {
		if i == MaxProblems {
			fmt.Fprintf(&b, "\n... and %d more problems", len(p.errs)-MaxProblems)
			break
		}
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(err.Error())
	}
	return b.String()
}

func (p *problems) Unwrap() []error { return p.errs }

// NoObjectsError is the error for inputs none of which holds an object,
// naming them; nil when one does. kubectl refuses such input too.
func NoObjectsError(files []*File) error {
	for _, f := range files {
		if HasObjects(f.docs) {
			return nil
		}
	}
	names := make([]string, len(files))
	for i, f := range files {
		names[i] = f.name
	}
	switch len(files) {
	case 0:
		return errors.New("no objects in the input")
	case 1:
		return fmt.Errorf("%s: no objects: it is empty or holds only comments", names[0])
	}
	return fmt.Errorf("no objects in %s: each is empty or holds only comments", strings.Join(names, ", "))
}
