package webhook

import (
	"bytes"
	"crypto/tls"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/graftdev/graft/bench/corpus"
)

// TestHTTPEdges checks every refusal the server makes before or around
// the engine.
func TestHTTPEdges(t *testing.T) {
	ts := startServer(t, serverSetup{})
	review := corpus.Review(corpus.Small)
	cases := []struct {
		name        string
		method      string
		path        string
		contentType string
		body        []byte
		want        int
		wantAllow   string
	}{
		{"GET on inject", http.MethodGet, "/inject", "", nil, http.StatusMethodNotAllowed, "POST"},
		{"PUT on inject profile", http.MethodPut, "/inject/agent", "application/json", review, http.StatusMethodNotAllowed, "POST"},
		{"POST on healthz", http.MethodPost, "/healthz", "application/json", nil, http.StatusMethodNotAllowed, "GET, HEAD"},
		{"text/plain", http.MethodPost, "/inject", "text/plain", review, http.StatusUnsupportedMediaType, ""},
		{"no content type", http.MethodPost, "/inject", "", review, http.StatusUnsupportedMediaType, ""},
		{"json lookalike", http.MethodPost, "/inject", "application/jsonx", review, http.StatusUnsupportedMediaType, ""},
		{"yaml", http.MethodPost, "/inject", "application/yaml", review, http.StatusUnsupportedMediaType, ""},
		{"not json", http.MethodPost, "/inject", "application/json", []byte("not json"), http.StatusBadRequest, ""},
		{"empty body", http.MethodPost, "/inject", "application/json", nil, http.StatusBadRequest, ""},
		{"json but not a review", http.MethodPost, "/inject", "application/json", []byte(`{"kind":"Pod"}`), http.StatusBadRequest, ""},
		{"truncated review", http.MethodPost, "/inject", "application/json", review[:len(review)/2], http.StatusBadRequest, ""},
		{"unknown profile", http.MethodPost, "/inject/nope", "application/json", review, http.StatusNotFound, ""},
		{"nested profile path", http.MethodPost, "/inject/agent/x", "application/json", review, http.StatusNotFound, ""},
		{"trailing slash", http.MethodPost, "/inject/", "application/json", review, http.StatusNotFound, ""},
		{"other path", http.MethodPost, "/mutate", "application/json", review, http.StatusNotFound, ""},
		{"json with charset", http.MethodPost, "/inject", "application/json; charset=utf-8", review, http.StatusOK, ""},
		{"json in capitals", http.MethodPost, "/inject", "Application/JSON", review, http.StatusOK, ""},
		{"named profile", http.MethodPost, "/inject/agent", "application/json", review, http.StatusOK, ""},
		{"profile at a Pod Security level", http.MethodPost, "/inject/agent.restricted", "application/json", review, http.StatusOK, ""},
		{"profile at an unknown level", http.MethodPost, "/inject/agent.strict", "application/json", review, http.StatusNotFound, ""},
		{"a level without a profile", http.MethodPost, "/inject/.baseline", "application/json", review, http.StatusNotFound, ""},
		{"a level and a revision", http.MethodPost, "/inject/agent.baseline/default", "application/json", review, http.StatusOK, ""},
		{"healthz on TLS port", http.MethodGet, "/healthz", "", nil, http.StatusOK, ""},
		{"readyz with a body", http.MethodGet, "/readyz", "", []byte("hello"), http.StatusRequestEntityTooLarge, ""},
		{"metrics on TLS port", http.MethodGet, "/metrics", "", nil, http.StatusNotFound, ""},
		{"version on TLS port", http.MethodGet, "/version", "", nil, http.StatusNotFound, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			req, err := http.NewRequest(tc.method, ts.url+tc.path, bytes.NewReader(tc.body))
			if err != nil {
				t.Fatal(err)
			}
			if tc.contentType != "" {
				req.Header.Set("Content-Type", tc.contentType)
			}
			resp, err := ts.client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tc.want {
				t.Fatalf("status %d, want %d (body %q)", resp.StatusCode, tc.want, body)
			}
			if got := resp.Header.Get("Allow"); got != tc.wantAllow {
				t.Errorf("Allow %q, want %q", got, tc.wantAllow)
			}
			if tc.want == http.StatusOK && tc.path != "/healthz" {
				var r map[string]any
				if err := json.Unmarshal(body, &r); err != nil || r["response"] == nil {
					t.Errorf("not a review response: %q", body)
				}
			}
			if tc.want >= 400 && len(body) > 300 {
				t.Errorf("error message longer than 300 bytes: %d", len(body))
			}
		})
	}
}

// TestBodyLimit: a 7 MiB review is answered; 8 MiB is refused with 413
// before being read, and the client sees the 413 rather than a reset.
func TestBodyLimit(t *testing.T) {
	ts := startServer(t, serverSetup{})
	cases := []struct {
		name string
		size int
		want int
	}{
		{"exactly 7 MiB", 7 << 20, http.StatusOK},
		{"8 MiB", 8 << 20, http.StatusRequestEntityTooLarge},
		{"7 MiB and a byte", 7<<20 + 1, http.StatusRequestEntityTooLarge},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			body := paddedReview(t, tc.size)
			code, out := ts.post(t, "/inject", body)
			if code != tc.want {
				t.Fatalf("status %d, want %d: %.200s", code, tc.want, out)
			}
		})
	}
	// The server still serves after refusing.
	if code, out := ts.post(t, "/inject", corpus.Review(corpus.Small)); code != http.StatusOK {
		t.Fatalf("after 413: status %d: %.200s", code, out)
	}
}

// TestBodyLimitConfigurable: maxBodyBytes from the config file applies.
func TestBodyLimitConfigurable(t *testing.T) {
	ts := startServer(t, serverSetup{configYAML: "server:\n  maxBodyBytes: 100000\n"})
	if code, _ := ts.post(t, "/inject", paddedReview(t, 100001)); code != http.StatusRequestEntityTooLarge {
		t.Fatalf("status %d, want 413", code)
	}
	if code, out := ts.post(t, "/inject", paddedReview(t, 100000)); code != http.StatusOK {
		t.Fatalf("status %d, want 200: %.200s", code, out)
	}
}

// paddedReview is the small corpus review grown to exactly size bytes by a
// padding annotation.
func paddedReview(t *testing.T, size int) []byte {
	t.Helper()
	var r map[string]any
	if err := json.Unmarshal(corpus.Review(corpus.Small), &r); err != nil {
		t.Fatal(err)
	}
	meta := r["request"].(map[string]any)["object"].(map[string]any)["metadata"].(map[string]any)
	ann, _ := meta["annotations"].(map[string]any)
	if ann == nil {
		ann = map[string]any{}
		meta["annotations"] = ann
	}
	ann["example.com/padding"] = ""
	base, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	if size < len(base) {
		t.Fatalf("size %d below the unpadded %d", size, len(base))
	}
	ann["example.com/padding"] = strings.Repeat("x", size-len(base))
	out, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	if len(out) != size {
		t.Fatalf("padded to %d, want %d", len(out), size)
	}
	return out
}

// TestHTTP1Only: the server offers HTTP/1.1 only over ALPN.
func TestHTTP1Only(t *testing.T) {
	ts := startServer(t, serverSetup{})
	conn, err := tls.Dial("tcp", ts.Addr().String(), &tls.Config{
		RootCAs: ts.caPool, ServerName: "localhost", NextProtos: []string{"h2", "http/1.1"},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if got := conn.ConnectionState().NegotiatedProtocol; got != "http/1.1" {
		t.Fatalf("ALPN %q, want http/1.1", got)
	}
}
