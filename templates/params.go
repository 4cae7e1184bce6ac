package templates

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/graftdev/graft/internal/imageref"
	"github.com/graftdev/graft/internal/names"
)

// Param is a typed template parameter. Min and Max are written in the
// parameter's own type (an int, a quantity such as "10m", a duration such as
// "1s"); for a list they bound the number of items. Pattern applies to a
// string, or to each item of a list.
type Param struct {
	// Name is lowerCamelCase letters and digits, at most 63 characters.
	Name string `json:"name"`
	// Type is one of the parameter types; it decides the accepted values
	// and what the fragment sees.
	Type ParamType `json:"type"`
	// Default is the value, written as in an annotation, used when neither
	// the Pod nor the profile sets one. It must obey the parameter's rules.
	Default string `json:"default"`
	// Description says what the parameter changes, for the generated docs.
	Description string `json:"description,omitempty"`
	// Format is what a string, or each item of a list, must be, checked
	// before pattern.
	Format Format `json:"format,omitempty"`
	// Pattern is a Go regular expression a string, or each item of a list,
	// must match (add ^ and $ to match all of it).
	Pattern string `json:"pattern,omitempty"`
	// Min is the smallest value of an int, quantity or duration, or the
	// fewest items of a list, written in the parameter's type.
	Min string `json:"min,omitempty"`
	// Max is the largest value of an int, quantity or duration, or the most
	// items of a list.
	Max string `json:"max,omitempty"`
	// Values lists what an enum accepts; required for enum, and for enum only.
	Values []string `json:"values,omitempty"`
	// PodSecurity maps values of an enum or bool parameter to the Pod
	// Security level the fragment needs with them, where that is more than
	// the template's own podSecurity: {init-container: privileged}.
	PodSecurity map[string]Level `json:"podSecurity,omitempty"`

	re *regexp.Regexp
}

// ParamError is an invalid parameter value. Its message names the
// annotation, the value and the rule it breaks.
type ParamError struct {
	Template, Param, Value, Rule string
}

func (e *ParamError) Error() string {
	return fmt.Sprintf("annotation %s%s.%s=%q: %s", names.Prefix, e.Template, e.Param, e.Value, e.Rule)
}

func (p *Param) init() error {
	if !isParamName(p.Name) {
		return fmt.Errorf("parameter %q: name must be lowerCamelCase letters and digits", p.Name)
	}
	switch p.Type {
	case TypeString, TypeInt, TypeBool, TypeQuantity, TypeEnum, TypeDuration, TypeList:
	default:
		return fmt.Errorf("parameter %s: unknown type %q", p.Name, p.Type)
	}
	if p.Type == TypeEnum && len(p.Values) == 0 {
		return fmt.Errorf("parameter %s: enum needs values", p.Name)
	}
	switch p.Format {
	case "":
	case FormatImage:
		if p.Type != TypeString && p.Type != TypeList {
			return fmt.Errorf("parameter %s: format applies to string and list only", p.Name)
		}
	default:
		return fmt.Errorf("parameter %s: unknown format %q (want image)", p.Name, p.Format)
	}
	if p.Pattern != "" {
		re, err := regexp.Compile(p.Pattern)
		if err != nil {
			return fmt.Errorf("parameter %s: pattern: %w", p.Name, err)
		}
		p.re = re
	}
	for _, b := range []struct{ what, v string }{{"min", p.Min}, {"max", p.Max}} {
		if b.v == "" {
			continue
		}
		if err := p.checkBound(b.v); err != nil {
			return fmt.Errorf("parameter %s: %s %q: %w", p.Name, b.what, b.v, err)
		}
	}
	if _, err := p.Parse(p.Default); err != nil {
		return fmt.Errorf("parameter %s: default %q: %w", p.Name, p.Default, err)
	}
	return nil
}

func (p *Param) checkBound(v string) error {
	switch p.Type {
	case TypeInt, TypeList:
		_, err := strconv.ParseInt(v, 10, 64)
		return err
	case TypeQuantity:
		_, err := resource.ParseQuantity(v)
		return err
	case TypeDuration:
		_, err := time.ParseDuration(v)
		return err
	}
	return errors.New("min/max apply to int, quantity, duration and list only")
}

// Parse validates raw against the parameter's type and rules and returns
// the value templates see: string (string, quantity, enum, duration), int64,
// bool, or []string (list, comma-separated). The error is the rule broken.
func (p *Param) Parse(raw string) (any, error) {
	switch p.Type {
	case TypeString:
		if err := p.Format.check(raw); err != nil {
			return nil, fmt.Errorf("must be %s: %w", p.Format.what(), err)
		}
		if p.re != nil && !p.re.MatchString(raw) {
			return nil, fmt.Errorf("must match %s", p.Pattern)
		}
		return raw, nil
	case TypeInt:
		n, err := strconv.ParseInt(raw, 10, 64)
		if err != nil {
			return nil, errors.New("must be an integer")
		}
		if p.Min != "" {
			if lo, _ := strconv.ParseInt(p.Min, 10, 64); n < lo {
				return nil, fmt.Errorf("must be at least %s", p.Min)
			}
		}
		if p.Max != "" {
			if hi, _ := strconv.ParseInt(p.Max, 10, 64); n > hi {
				return nil, fmt.Errorf("must be at most %s", p.Max)
			}
		}
		return n, nil
	case TypeBool:
		switch raw {
		case "true":
			return true, nil
		case "false":
			return false, nil
		}
		return nil, errors.New(`must be "true" or "false"`)
	case TypeQuantity:
		q, err := resource.ParseQuantity(raw)
		if err != nil {
			return nil, errors.New("must be a Kubernetes quantity such as 100m or 64Mi")
		}
		if p.Min != "" && q.Cmp(resource.MustParse(p.Min)) < 0 {
			return nil, fmt.Errorf("must be at least %s", p.Min)
		}
		if p.Max != "" && q.Cmp(resource.MustParse(p.Max)) > 0 {
			return nil, fmt.Errorf("must be at most %s", p.Max)
		}
		return raw, nil
	case TypeEnum:
		if !slices.Contains(p.Values, raw) {
			return nil, fmt.Errorf("must be one of %s", strings.Join(p.Values, ", "))
		}
		return raw, nil
	case TypeDuration:
		d, err := time.ParseDuration(raw)
		if err != nil {
			return nil, errors.New("must be a duration such as 30s or 5m")
		}
		if p.Min != "" {
			if lo, _ := time.ParseDuration(p.Min); d < lo {
				return nil, fmt.Errorf("must be at least %s", p.Min)
			}
		}
		if p.Max != "" {
			if hi, _ := time.ParseDuration(p.Max); d > hi {
				return nil, fmt.Errorf("must be at most %s", p.Max)
			}
		}
		return raw, nil
	case TypeList:
		var items []string
		if raw != "" {
			items = strings.Split(raw, ",")
		}
		for i, it := range items {
			it = strings.TrimSpace(it)
			items[i] = it
			if it == "" {
				return nil, errors.New("must be a comma-separated list without empty items")
			}
			if err := p.Format.check(it); err != nil {
				return nil, fmt.Errorf("item %q must be %s: %w", it, p.Format.what(), err)
			}
			if p.re != nil && !p.re.MatchString(it) {
				return nil, fmt.Errorf("item %q must match %s", it, p.Pattern)
			}
		}
		if p.Min != "" {
			if lo, _ := strconv.Atoi(p.Min); len(items) < lo {
				return nil, fmt.Errorf("must have at least %s items", p.Min)
			}
		}
		if p.Max != "" {
			if hi, _ := strconv.Atoi(p.Max); len(items) > hi {
				return nil, fmt.Errorf("must have at most %s items", p.Max)
			}
		}
		return items, nil
	}
	return nil, fmt.Errorf("unknown type %q", p.Type)
}

// check returns what is wrong with s for format f; nil when it has
// none.
func (f Format) check(s string) error {
	if f == FormatImage {
		return imageref.Check(s)
	}
	return nil
}

// what names what a value of format f is, for messages.
func (f Format) what() string {
	if f == FormatImage {
		return "a container image reference"
	}
	return string(f)
}

// FormatRule is what Param.Parse says of a value, or each item of a
// list, that is not of its format: the prefix, then the format's own
// words (imageref.Check's for images). graft export's policies say the
// same.
func (p *Param) FormatRule() string {
	if p.Format == "" {
		return ""
	}
	return "must be " + p.Format.what() + ": "
}

var paramNameRE = regexp.MustCompile(`^[a-z][a-zA-Z0-9]*$`)

func isParamName(s string) bool { return len(s) <= 63 && paramNameRE.MatchString(s) }

var dnsLabelRE = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)

func isDNSLabel(s string) bool { return len(s) <= 63 && dnsLabelRE.MatchString(s) }
