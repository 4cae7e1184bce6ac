// Command sh is a POSIX shell for stand-in images, the interpreter of
// mvdan.cc/sh: enough for what a template runs through /bin/sh (-c, -e,
// printf, test, redirections, exec), with nothing else in the image.
//
//	sh [-e] -c SCRIPT [NAME [ARG...]]
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"mvdan.cc/sh/v3/expand"
	"mvdan.cc/sh/v3/interp"
	"mvdan.cc/sh/v3/syntax"
)

func main() {
	os.Exit(run(os.Args[1:]))
}

func run(args []string) int {
	var script string
	var haveScript, errexit bool
	for len(args) > 0 && strings.HasPrefix(args[0], "-") && args[0] != "-" {
		for _, f := range args[0][1:] {
			switch f {
			case 'c':
				haveScript = true
			case 'e':
				errexit = true
			default:
				fmt.Fprintf(os.Stderr, "sh: option -%c: only -c and -e are known\n", f)
				return 2
			}
		}
		args = args[1:]
	}
	if !haveScript || len(args) == 0 {
		fmt.Fprintln(os.Stderr, "sh: only sh -c SCRIPT is known")
		return 2
	}
	script, args = args[0], args[1:]
	file, err := syntax.NewParser().Parse(strings.NewReader(script), "sh -c")
	if err != nil {
		fmt.Fprintln(os.Stderr, "sh:", err)
		return 2
	}
	params := []string{}
	if errexit {
		params = append(params, "-e")
	}
	if len(args) > 0 {
		params = append(params, "--")
		params = append(params, args[1:]...)
	}
	r, err := interp.New(
		interp.StdIO(os.Stdin, os.Stdout, os.Stderr),
		interp.Env(expand.ListEnviron(os.Environ()...)),
		interp.Params(params...),
	)
	if err != nil {
		fmt.Fprintln(os.Stderr, "sh:", err)
		return 2
	}
	err = r.Run(context.Background(), file)
	var status interp.ExitStatus
	switch {
	case err == nil:
		return 0
	case errors.As(err, &status):
		return int(status)
	default:
		fmt.Fprintln(os.Stderr, "sh:", err)
		return 1
	}
}
