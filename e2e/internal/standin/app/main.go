// Command app is the application container of the real-node tests: it
// records when it started (to the nanosecond, on stdout), checks once at
// start what a template promises an app container finds when it starts
// (a sidecar answering, a file rendered), fails at once if any is
// missing, then serves /healthz until SIGTERM, or exits 0 after --exit-after
// (a Job's work).
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"
)

type list []string

func (l *list) String() string     { return strings.Join(*l, ",") }
func (l *list) Set(v string) error { *l = append(*l, v); return nil }

func main() {
	started := time.Now()
	var requireHTTP, requireFile list
	listen := flag.String("listen", ":8080", "address of /healthz")
	exitAfter := flag.Duration("exit-after", 0, "exit 0 after this long (0: run until SIGTERM)")
	flag.Var(&requireHTTP, "require-http", "URL that must answer 200 when the app starts (repeatable)")
	flag.Var(&requireFile, "require-file", "file that must exist when the app starts (repeatable)")
	flag.Parse()
	fmt.Printf("app started at %s\n", started.Format(time.RFC3339Nano))

	client := &http.Client{Timeout: 2 * time.Second}
	for _, u := range requireHTTP {
		resp, err := client.Get(u)
		if err != nil {
			fail("%s at start: %v", u, err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			fail("%s at start: %s", u, resp.Status)
		}
		fmt.Printf("app found %s answering 200 at start\n", u)
	}
	for _, f := range requireFile {
		if _, err := os.Stat(f); err != nil {
			fail("%s at start: %v", f, err)
		}
		fmt.Printf("app found %s at start\n", f)
	}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	if *exitAfter > 0 {
		select {
		case <-time.After(*exitAfter):
			fmt.Println("app done")
		case <-ctx.Done():
		}
		return
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) { fmt.Fprintln(w, "ok") })
	mux.HandleFunc("/dial", dial)
	srv := &http.Server{Addr: *listen, Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		<-ctx.Done()
		srv.Close()
	}()
	if err := srv.ListenAndServe(); err != nil && err != http.ErrServerClosed {
		fail("%v", err)
	}
}

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "app: "+format+"\n", args...)
	os.Exit(1)
}

// dialReply is /dial's answer.
type dialReply struct {
	// Peer is the address the /dial request came from.
	Peer string `json:"peer"`
	// Reply is what the server at addr sent, at most 4 KiB.
	Reply string `json:"reply"`
}

func dial(w http.ResponseWriter, r *http.Request) {
	addr := r.URL.Query().Get("addr")
	c, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	b, err := io.ReadAll(io.LimitReader(c, 4<<10))
	if err != nil {
		http.Error(w, fmt.Sprintf("%s: %v", addr, err), http.StatusBadGateway)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(dialReply{Peer: r.RemoteAddr, Reply: string(b)})
}
