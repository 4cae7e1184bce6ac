package manifest

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/graftdev/graft/internal/bounded"
)

// URLTimeout bounds the fetch of one -f URL, headers and body, when the
// caller's client sets no timeout of its own.
const URLTimeout = 30 * time.Second

// isURL reports whether an input names a manifest by http or https URL,
// as kubectl's -f takes one.
func isURL(in string) bool {
	return strings.HasPrefix(in, "https://") || strings.HasPrefix(in, "http://")
}

// readURL fetches one manifest: a GET answered 200, its body read up to
// the same cap as a file's (and refused past it, not cut).
func readURL(client *http.Client, url string) ([]byte, error) {
	if client == nil {
		client = &http.Client{}
	}
	ctx := context.Background()
	if client.Timeout == 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, URLTimeout)
		defer cancel()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", url, err)
	}
	resp, err := client.Do(req)
	if err != nil {
		// *url.Error already names the method and URL.
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s: the server answered %s", url, resp.Status)
	}
	if resp.ContentLength > maxManifestBytes {
		return nil, fmt.Errorf("%s: %w (%d bytes, over %d)", url, bounded.ErrTooLarge, resp.ContentLength, maxManifestBytes)
	}
	return bounded.Read(resp.Body, url, maxManifestBytes)
}
