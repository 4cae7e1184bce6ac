// Package yamlerr says where a YAML syntax error is. The YAML library
// reports the line where the enclosing block began, counted from 0 (an
// error on line 10 inside a mapping begun on line 8 says "line 7"); a user
// needs the line where the text went wrong, counted from 1.
package yamlerr

import (
	"bytes"
	"errors"
	"io"
	"regexp"
	"sort"
	"strings"

	yaml "go.yaml.in/yaml/v3"
)

var linePrefix = regexp.MustCompile(`^yaml: (?:line \d+: )?`)

// Locate returns the 1-based line of data at which decoding it (every
// document, as a stream) first fails with err's problem, and the problem
// without the library's "yaml: line N:" prefix. It finds that line as the
// shortest run of whole lines from the start that already fails with the
// same problem: the parser reads forward, so the text before that line
// parsed, and the line is where the problem was met. line is 0 when err
// is not a syntax error of data.
func Locate(data []byte, err error) (line int, problem string) {
	if err == nil {
		return 0, ""
	}
	problem = linePrefix.ReplaceAllString(err.Error(), "")
	if !strings.HasPrefix(err.Error(), "yaml: ") {
		return 0, problem
	}
	ends := lineEnds(data)
	fails := func(n int) bool { return decodeProblem(data[:ends[n-1]]) == problem }
	if len(ends) == 0 || !fails(len(ends)) {
		return 0, problem
	}
	// The smallest n for which the first n lines fail as the whole does.
	n := sort.Search(len(ends), func(i int) bool { return fails(i + 1) })
	return n + 1, problem
}

// lineEnds are the offsets just past each line of data (its line break
// included); the last line may lack one.
func lineEnds(data []byte) []int {
	var ends []int
	for off := 0; off < len(data); {
		i := bytes.IndexByte(data[off:], '\n')
		if i < 0 {
			ends = append(ends, len(data))
			break
		}
		off += i + 1
		ends = append(ends, off)
	}
	return ends
}

// decodeProblem decodes every document of data and returns the first
// error's problem, "" when there is none.
func decodeProblem(data []byte) string {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	for {
		var n yaml.Node
		err := dec.Decode(&n)
		if errors.Is(err, io.EOF) {
			return ""
		}
		if err != nil {
			return linePrefix.ReplaceAllString(err.Error(), "")
		}
	}
}
