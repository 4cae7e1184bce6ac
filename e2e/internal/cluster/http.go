package cluster

import (
	"crypto/tls"
	"crypto/x509"
	"net/http"
	"time"
)

// loopbackHTTPClient is an HTTP client that never uses a proxy and, when
// ca is set, trusts only that CA.
func loopbackHTTPClient(ca []byte, timeout time.Duration) *http.Client {
	tr := &http.Transport{Proxy: nil, MaxIdleConnsPerHost: 4}
	if ca != nil {
		pool := x509.NewCertPool()
		pool.AppendCertsFromPEM(ca)
		tr.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	}
	return &http.Client{Transport: tr, Timeout: timeout}
}
