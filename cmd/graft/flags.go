package main

import (
	"fmt"
	"strings"
)

// checkFormat checks an -o value. -o is the format, as in kubectl; a
// value that looks like a file name gets a pointer to --output-file
// (istioctl kube-inject's -o names the output file).
func checkFormat(format string, allowed ...string) error {
	for _, a := range allowed {
		if format == a {
			return nil
		}
	}
	err := fmt.Errorf("-o %s: want one of %v", format, allowed)
	if strings.ContainsAny(format, "./\\") {
		err = fmt.Errorf("%w (-o is the output format, as in kubectl; to write a file, use --output-file %s)", err, format)
	}
	return err
}
