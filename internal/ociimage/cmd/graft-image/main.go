// Command graft-image writes graft's container image (package graftimage)
// without a daemon: `make images` runs it.
//
//	graft-image archive --out FILE --ref REPO:TAG --created RFC3339 \
//	    [--version V] [--revision R] OS/ARCH=BINARY...
//	graft-image rootfs --binary FILE --out DIR
//
// archive writes the OCI layout archive of one image per platform, each
// holding the binary built for it, and prints the digest the reference
// points at. rootfs writes the same files into a directory, for the
// Dockerfile's final stage to copy.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/graftdev/graft/internal/ociimage"
	"github.com/graftdev/graft/internal/ociimage/graftimage"
)

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "graft-image:", err)
		os.Exit(1)
	}
}

func run(args []string, stdout io.Writer) error {
	if len(args) == 0 {
		return errors.New("want a command: archive or rootfs")
	}
	switch args[0] {
	case "archive":
		return archive(args[1:], stdout)
	case "rootfs":
		return rootfs(args[1:])
	default:
		return fmt.Errorf("unknown command %q: want archive or rootfs", args[0])
	}
}

func archive(args []string, stdout io.Writer) error {
	fl := flag.NewFlagSet("archive", flag.ContinueOnError)
	out := fl.String("out", "", "archive to write")
	ref := fl.String("ref", "", "the image's reference, repository:tag")
	created := fl.String("created", "", "the image's date, RFC 3339 (the commit's time)")
	version := fl.String("version", "", "graft's version, for the manifest's annotation")
	revision := fl.String("revision", "", "the commit, for the manifest's annotation")
	if err := fl.Parse(args); err != nil {
		return err
	}
	if *out == "" || *ref == "" || *created == "" || fl.NArg() == 0 {
		return errors.New("archive needs --out, --ref, --created and at least one OS/ARCH=BINARY")
	}
	when, err := time.Parse(time.RFC3339, *created)
	if err != nil {
		return fmt.Errorf("--created: %w", err)
	}
	var images []ociimage.Image
	for _, a := range fl.Args() {
		platform, binary, ok := strings.Cut(a, "=")
		osName, arch, ok2 := strings.Cut(platform, "/")
		if !ok || !ok2 || binary == "" {
			return fmt.Errorf("%q: want OS/ARCH=BINARY", a)
		}
		p := ocispec.Platform{OS: osName, Architecture: arch}
		images = append(images, graftimage.Build(p, binary, when, *version, *revision))
	}
	d, err := ociimage.WriteFile(*out, *ref, images...)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(stdout, "%s@%s\n", *ref, d)
	return err
}

func rootfs(args []string) error {
	fl := flag.NewFlagSet("rootfs", flag.ContinueOnError)
	binary := fl.String("binary", "", "graft's binary")
	out := fl.String("out", "", "directory to write the image's files under")
	if err := fl.Parse(args); err != nil {
		return err
	}
	if *binary == "" || *out == "" {
		return errors.New("rootfs needs --binary and --out")
	}
	return ociimage.WriteTree(*out, graftimage.Files(*binary))
}
