// Command fluentbit stands in for Fluent Bit (C, in neither registry
// reachable here) on the harness's real nodes. It takes the command-line
// configuration the log-shipper template gives Fluent Bit and refuses any
// other flag, serves the HTTP monitoring endpoint (--http, --port) and
// counts the lines of the files the tail input's path matches (it ships
// nothing: the forward output is only checked for its form).
package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/graftdev/graft/e2e/internal/standin/firstlog"
)

const name = "fluent-bit (stand-in)"

type list []string

func (l *list) String() string     { return strings.Join(*l, ",") }
func (l *list) Set(v string) error { *l = append(*l, v); return nil }

func main() {
	fl := flag.NewFlagSet("fluent-bit", flag.ContinueOnError)
	httpOn := fl.Bool("http", false, "HTTP monitoring server")
	port := fl.Int("port", 2020, "HTTP monitoring port")
	fl.Int("flush", 1, "flush interval, seconds")
	input := fl.String("input", "", "input plugin")
	output := fl.String("output", "", "output plugin URL")
	fl.String("match", "", "output's tag match")
	var props list
	fl.Var(&props, "prop", "KEY=VALUE of the last plugin named (repeatable)")
	if err := fl.Parse(os.Args[1:]); err != nil {
		firstlog.Fail(name, err)
	}
	if fl.NArg() > 0 {
		firstlog.Fail(name, fmt.Errorf("unexpected arguments %q", fl.Args()))
	}
	if *input != "tail" || !strings.HasPrefix(*output, "forward://") {
		firstlog.Fail(name, errors.New("want --input=tail and a forward:// output"))
	}
	var glob string
	for _, p := range props {
		k, v, ok := strings.Cut(p, "=")
		if !ok {
			firstlog.Fail(name, fmt.Errorf("--prop %q: want KEY=VALUE", p))
		}
		if k == "path" {
			glob = v
		}
	}
	if glob == "" {
		firstlog.Fail(name, errors.New("the tail input has no path"))
	}
	if !*httpOn {
		firstlog.Fail(name, errors.New("the stand-in serves --http only"))
	}
	var lines sync.Map
	go tail(glob, &lines)
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintln(w, `{"fluent-bit":{"version":"stand-in"}}`)
	})
	mux.HandleFunc("/api/v1/metrics", func(w http.ResponseWriter, r *http.Request) {
		lines.Range(func(k, v any) bool {
			fmt.Fprintf(w, "%s %d\n", k, v)
			return true
		})
	})
	if err := firstlog.Serve(name, firstlog.Server{Addr: fmt.Sprintf(":%d", *port), Handler: mux}); err != nil {
		firstlog.Fail(name, err)
	}
}

// tail counts, every second, the lines of each file glob matches.
func tail(glob string, lines *sync.Map) {
	for range time.Tick(time.Second) {
		files, _ := filepath.Glob(glob)
		for _, f := range files {
			n, err := countLines(f)
			if err == nil {
				lines.Store(f, n)
			}
		}
	}
}

func countLines(path string) (int, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	n := 0
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		n++
	}
	return n, sc.Err()
}
