package manifest

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/graftdev/graft/internal/bounded"
)

// -f URL: a GET answered 200 is read like a file, named by its URL; any
// other answer, a body past the cap and a server too slow are errors that
// say which.
func TestReadInputsURL(t *testing.T) {
	release := make(chan struct{})
	mux := http.NewServeMux()
	mux.HandleFunc("/pod.yaml", func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte("apiVersion: v1\nkind: Pod\nmetadata: {name: web}\n"))
	})
	mux.HandleFunc("/big-declared", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Length", "40000000")
		w.WriteHeader(http.StatusOK)
	})
	mux.HandleFunc("/big-chunked", func(w http.ResponseWriter, _ *http.Request) {
		chunk := []byte(strings.Repeat("# padding\n", 1<<16))
		for written := 0; written <= maxManifestBytes; written += len(chunk) {
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	})
	mux.HandleFunc("/slow", func(http.ResponseWriter, *http.Request) { <-release })
	srv := httptest.NewServer(mux)
	defer srv.Close()
	defer close(release)

	files, err := ReadInputs([]string{srv.URL + "/pod.yaml"}, false, Sources{HTTP: srv.Client()})
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 1 || files[0].name != srv.URL+"/pod.yaml" || files[0].path != "" || MapString(MapGet(files[0].docs[0].Root(), "metadata"), "name") != "web" {
		t.Fatalf("read %+v", files)
	}
	if err := CheckInPlace(files); err == nil || !strings.Contains(err.Error(), "--in-place cannot rewrite "+srv.URL) {
		t.Errorf("--in-place on a URL: %v", err)
	}

	slow := *srv.Client() // a copy: srv.Client() is one shared client
	slow.Timeout = 200 * time.Millisecond
	tests := []struct {
		path   string
		client *http.Client
		want   string
		is     error
	}{
		{"/missing.yaml", srv.Client(), srv.URL + "/missing.yaml: the server answered 404 Not Found", nil},
		{"/big-declared", srv.Client(), "over 33554432", bounded.ErrTooLarge},
		{"/big-chunked", srv.Client(), "over 33554432 bytes", bounded.ErrTooLarge},
		{"/slow", &slow, "Client.Timeout exceeded", nil},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			_, err := ReadInputs([]string{srv.URL + tt.path}, false, Sources{HTTP: tt.client})
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), srv.URL+tt.path) {
				t.Fatalf("got %v, want an error naming the URL and %q", err, tt.want)
			}
			if tt.is != nil && !errors.Is(err, tt.is) {
				t.Errorf("got %v, want %v", err, tt.is)
			}
		})
	}
}
